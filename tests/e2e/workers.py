"""Worker control planes for the MultiKueue e2e tests: which ones there are, and stopping and starting one as
an outage would.

``KUEUE_E2E_WORKER_KUBECONFIGS`` names their admin kubeconfigs, comma-separated (``make e2e`` starts two
beside the manager and sets it). Each is a control plane of this host started by ``up.sh`` with its own
``KUBE_DIR`` (the kubeconfig's directory) and ``KUBE_INSTANCE`` (read back from its API server's port,
6443+N); the scripts are ``KUEUE_E2E_KUBE_SCRIPTS``, by default ``../shared/kube`` beside the repository.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_KUBECONFIGS = [Path(p) for p in os.environ.get("KUEUE_E2E_WORKER_KUBECONFIGS", "").split(",") if p]
KUBE_SCRIPTS = Path(os.environ.get("KUEUE_E2E_KUBE_SCRIPTS") or REPO_ROOT.parent / "shared" / "kube")
#: whether the tests may stop and start a worker (its scripts are there)
CAN_STOP_WORKERS = (KUBE_SCRIPTS / "down.sh").is_file() and (KUBE_SCRIPTS / "up.sh").is_file()
NO_WORKERS = (
    "KUEUE_E2E_WORKER_KUBECONFIGS names no worker control planes (make e2e starts two; by hand: "
    "KUBE_INSTANCE=N KUBE_DIR=/tmp/kube-N ../shared/kube/up.sh)"
)
NO_SCRIPTS = f"no down.sh/up.sh in {KUBE_SCRIPTS} (KUEUE_E2E_KUBE_SCRIPTS) to stop a worker with"


def instance_of(kubeconfig: Path) -> str:
    """The ``KUBE_INSTANCE`` of a control plane of this host: its API server listens on 6443+N."""
    server = next(line for line in kubeconfig.read_text().splitlines() if "server:" in line)
    return str(int(server.rsplit(":", 1)[1].strip().strip("/")) - 6443)


async def control_plane(script: str, kubeconfig: Path) -> None:
    """``down.sh`` or ``up.sh`` for the worker of ``kubeconfig``, off the event loop (replicas run on it)."""
    env = {**os.environ, "KUBE_DIR": str(kubeconfig.parent), "KUBE_INSTANCE": instance_of(kubeconfig)}
    await asyncio.to_thread(
        subprocess.run, [str(KUBE_SCRIPTS / script)], env=env, check=True, capture_output=True, timeout=300
    )


def install_crds(kubeconfig: Path, *extra: Path) -> list[str]:
    """Kueue's CRDs (``manifests/crds``) and ``extra`` CRD files applied to the cluster of ``kubeconfig``, as
    the other e2e modules apply them (client-side: an install's own conversion settings stay), and waited for
    until established, so its controller and the tests can use the kinds at once. Returns the names of the
    ``extra`` CRDs that were not there before, for ``remove_crds`` once the module is done: a JobSet CRD left
    behind changes what later runs see (the garbage collector then deletes a Job whose JobSet is absent)."""
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}"]
    present = set(_run([*kubectl, "get", "crd", "-o", "name"]).split())
    created = []
    for path in extra:
        name = _run([*kubectl, "create", "--dry-run=client", "-o", "name", "-f", str(path)]).strip()
        if name not in present:
            created.append(name.removeprefix("customresourcedefinition.apiextensions.k8s.io/"))
    commands = [
        [*kubectl, "apply", "-k", str(REPO_ROOT / "manifests" / "crds")],
        *([*kubectl, "apply", "-f", str(path)] for path in extra),
        [*kubectl, "wait", "--for=condition=established", "crd", "--all", "--timeout=120s"],
    ]
    for command in commands:
        _run(command)
    return created


def remove_crds(kubeconfig: Path, names: list[str]) -> None:
    """Delete the CRDs ``install_crds`` created (and with them their objects), leaving the cluster's own."""
    if names:
        _run(["kubectl", f"--kubeconfig={kubeconfig}", "delete", "crd", "--ignore-not-found", *names])


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=150)
    if done.returncode:
        raise AssertionError(f"{' '.join(command[1:])} exited {done.returncode}: {done.stderr}")
    return done.stdout
