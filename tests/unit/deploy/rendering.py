"""What the install files render to: ``kubectl kustomize`` of a directory, as a list of objects, and the
objects keyed by kind, namespace and name for comparing two renderings."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
MANIFESTS = REPO / "manifests"
OBSERVABILITY = MANIFESTS / "components" / "observability"
CHART = REPO / "charts" / "kueue-webhook"

Obj = dict[str, Any]
Key = tuple[str, str, str]


def kubectl() -> str:
    found = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not Path(found).exists():
        pytest.skip("kubectl is not installed")
    return found


def kustomize(directory: Path) -> list[Obj]:
    rendered = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=120
    )
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def keyed(objects: list[Obj]) -> dict[Key, Obj]:
    out: dict[Key, Obj] = {}
    for obj in objects:
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in out, f"{key} rendered twice"
        out[key] = obj
    return out


def load_yaml_documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
