"""Real Helm for the e2e tests: the ``helm`` binary when it is on PATH, else Helm's Go library through the
``helm-sdkpy`` bindings in the Python interpreter ``KUEUE_HELM_SDK_PYTHON`` names (they need Python >= 3.12,
so not this project's environment: ``python3.12 -m venv v && v/bin/pip install helm-sdkpy``). Neither:
``available()`` says why, and the tests skip.

Each verb returns what the helm CLI would print, parsed: ``lint`` the messages at warning or worse,
``install`` the release's manifest as objects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

SDK_PYTHON = os.environ.get("KUEUE_HELM_SDK_PYTHON", "")
#: run by SDK_PYTHON: argv is verb, kubeconfig, namespace, then the verb's arguments; prints JSON
_SDK_SCRIPT = """
import asyncio, json, sys
import helm_sdkpy as helm
verb, kubeconfig, namespace, *rest = sys.argv[1:]
config = helm.Configuration(namespace=namespace, kubeconfig=kubeconfig)
if verb == "lint":
    result = asyncio.run(helm.Lint(config).run(rest[0]))
    print(json.dumps([m for m in result.get("Messages") or [] if m["Severity"] >= 2]))
elif verb == "install":
    name, chart, values = rest
    release = asyncio.run(helm.Install(config).run(
        name, chart, values=json.loads(values), wait=False, take_ownership=True))
    print(json.dumps(release["manifest"]))
elif verb == "uninstall":
    asyncio.run(helm.Uninstall(config).run(rest[0], wait=False))
    print("null")
"""

Obj = dict[str, Any]


def available() -> str:
    """Empty when a Helm can run here, else why not."""
    if shutil.which("helm") or SDK_PYTHON:
        return ""
    return "no helm binary on PATH and KUEUE_HELM_SDK_PYTHON unset (a Python with helm-sdkpy)"


class Helm:
    def __init__(self, kubeconfig: Path, namespace: str = "default") -> None:
        self.kubeconfig, self.namespace = kubeconfig, namespace

    def _sdk(self, *args: str) -> Any:
        result = subprocess.run(
            [SDK_PYTHON, "-c", _SDK_SCRIPT, args[0], str(self.kubeconfig), self.namespace, *args[1:]],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise AssertionError(f"helm {args[0]}: {result.stderr}")
        return json.loads(result.stdout)

    def _cli(self, *args: str) -> str:
        result = subprocess.run(
            ["helm", "--kubeconfig", str(self.kubeconfig), "--namespace", self.namespace, *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)}: {result.stdout}{result.stderr}")
        return result.stdout

    def lint(self, chart: Path) -> list[Any]:
        if shutil.which("helm"):
            self._cli("lint", str(chart))  # exit status 1 on an error
            return []
        return list(self._sdk("lint", str(chart)))

    def install(self, name: str, chart: Path, values: Obj) -> list[Obj]:
        if shutil.which("helm"):
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
                file.write(yaml.safe_dump(values))
                file.flush()
                self._cli("install", name, str(chart), "-f", file.name, "--take-ownership")
            manifest = self._cli("get", "manifest", name)
        else:
            manifest = self._sdk("install", name, str(chart), json.dumps(values))
        return [doc for doc in yaml.safe_load_all(manifest) if doc]

    def uninstall(self, name: str) -> None:
        if shutil.which("helm"):
            self._cli("uninstall", name)
        else:
            self._sdk("uninstall", name)
