"""A real cluster for e2e tests: kubectl on ``KUEUE_E2E_KUBECONFIG``, and the kubelet's part where none runs.

The e2e tests drive a real kube-apiserver through the real kubectl, as a user would. The control plane in
``../shared/kube`` (what ``make e2e`` starts) has no kubelet: the Job controller creates Pods and they stay
Pending. :meth:`Cluster.finish_pods` then plays the kubelet and reports the Pods of started Jobs as
Succeeded (through the Pod status subresource, as a kubelet does), so the Job controller completes the Jobs.
On a cluster with nodes it only waits for the Pods to finish by themselves.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

KUBECONFIG = os.environ.get("KUEUE_E2E_KUBECONFIG", "")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
NO_CLUSTER = (
    "KUEUE_E2E_KUBECONFIG is not set: the admin kubeconfig of an API server on this host "
    "(`make e2e` starts one from ../shared/kube when it exists)"
)
JSON = dict[str, Any]


def until(check: Callable[[], bool], what: str, timeout: float = 120.0, every: float = 0.5) -> None:
    """Poll ``check`` (a real cluster seen through kubectl offers nothing to await) until it holds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(every)


async def kubectl_async(
    *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60.0
) -> tuple[int, str, str]:
    """kubectl without blocking the event loop, for tests whose in-process replica answers on it."""
    process = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={KUBECONFIG}",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), timeout)
    code = process.returncode or 0
    if check and code != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {code}: {err.decode()}")
    return code, out.decode(), err.decode()


def condition(obj: JSON, kind: str) -> JSON:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def workload_of(cluster: Cluster, namespace: str, owner: str) -> JSON:
    """The Workload in ``namespace`` whose ownerReferences name ``owner``, {} while there is none."""
    for item in cluster.items("workloads", "-n", namespace):
        if owner in {ref.get("name") for ref in item["metadata"].get("ownerReferences") or []}:
            return dict(item)
    return {}


def events_of(cluster: Cluster, namespace: str, name: str, *, type: str = "") -> dict[str, str]:
    """The Events on object ``name`` in ``namespace`` (only those of ``type``, Normal or Warning, when
    given), reason -> message (the latest of each reason)."""
    events = json.loads(
        cluster.kubectl(
            "get", "events", "-n", namespace, "-o", "json", "--field-selector", f"involvedObject.name={name}"
        ).stdout
    )["items"]
    return {e["reason"]: e["message"] for e in events if not type or e.get("type") == type}


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr}")
        return result

    def apply(self, manifest: str) -> None:
        self.kubectl("apply", "-f", "-", input=manifest)

    def get(self, *args: str) -> JSON:
        return dict(json.loads(self.kubectl("get", *args, "-o", "json").stdout))

    def items(self, *args: str) -> list[JSON]:
        return list(self.get(*args)["items"])

    @property
    def server(self) -> str:
        return str(self._cluster()["server"])

    def ca_certificate(self) -> bytes:
        """The cluster CA as the kubeconfig carries it (inline data or a file)."""
        cluster = self._cluster()
        if cluster.get("certificate-authority-data"):
            return base64.b64decode(cluster["certificate-authority-data"])
        return Path(cluster["certificate-authority"]).read_bytes()

    def _cluster(self) -> JSON:
        config = yaml.safe_load(self.kubeconfig.read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
        return dict(next(c for c in config["clusters"] if c["name"] == context["cluster"])["cluster"])

    def has_nodes(self) -> bool:
        return bool(self.items("nodes"))

    def finish_pods(self, namespace: str, *, jobs: set[str] | None = None) -> set[str]:
        """Report the Pods of (some) Jobs as Succeeded where no kubelet will; returns the Jobs touched."""
        if self.has_nodes():
            return set()
        finished: set[str] = set()
        for pod in self.items("pods", "-n", namespace):
            job = (pod["metadata"].get("labels") or {}).get("job-name", "")
            if not job or (jobs is not None and job not in jobs):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            statuses = [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": now,
                            "finishedAt": now,
                        }
                    },
                }
                for container in pod["spec"]["containers"]
            ]
            status = {"phase": "Succeeded", "containerStatuses": statuses}
            self.kubectl(
                "-n",
                namespace,
                "patch",
                "pod",
                pod["metadata"]["name"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": status}),
            )
            finished.add(job)
        return finished
