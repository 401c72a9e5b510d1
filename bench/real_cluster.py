"""What the benchmarks need of a real API server: install, the controller's credentials, and its own counters.

A figure measured on the fake API server overstates what users get (the fake costs a fraction of a real
request), so the benchmarks that matter run against a real kube-apiserver, such as the control plane of
``../shared/kube``. Three things are common to them and live here:

* **install**: the CRDs, the namespace, the ServiceAccount and its RBAC, and the ConfigMap of ``manifests/``
  (everything but the Deployment and the webhook configurations), applied with kubectl as a user would;
* **credentials**: a kubeconfig with the ServiceAccount's token, so ``kueue-webhook serve`` runs with exactly
  the RBAC it has in a Pod;
* **the API server's own view**: ``apiserver_request_total`` from its ``/metrics`` (writes by verb and
  resource, whatever client sent them) and the CPU time of the kube-apiserver, etcd and
  kube-controller-manager processes when they run on this machine;
* **the cluster's other actors**: there is no kubelet, so a benchmark reports Pods Succeeded itself
  (``succeeded_status``) from a watch (``watch``); and a run's namespace is gone, a previous run's
  terminating one included, before the next run starts (``wait_namespace_gone``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import LEASES, Kind
from kueue_webhook.control.replica.controller import LEASE_NAME

ROOT = Path(__file__).resolve().parents[1]
CONTROLLER_NAMESPACE = "kueue-system"
SERVICE_ACCOUNT = "kueue-webhook"
#: applied from manifests/: everything the controller needs but its Deployment and the webhook configurations
INSTALL = [
    "crds",
    "controller/namespace.yaml",
    "controller/serviceaccount.yaml",
    "controller/rbac.yaml",
    "controller/configmap.yaml",
]
#: the verbs of apiserver_request_total that change state (a watch, get or list does not)
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"})
#: the control-plane processes whose CPU a run costs, by /proc/<pid>/comm (truncated to 15 characters)
CONTROL_PLANE = {
    "kube-apiserver": "kube-apiserver",
    "etcd": "etcd",
    "kube-controller": "kube-controller-manager",
}
PODS = Kind("Pod", "", "v1", "pods", namespaced=True)
JSON = dict[str, Any]


def kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args], input=input, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


#: the controller reads its own /metrics in the benchmark, with its ServiceAccount's token
METRICS_BINDING = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: kueue-webhook-bench-metrics}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kueue-webhook-metrics-reader}}
subjects: [{{kind: ServiceAccount, name: {SERVICE_ACCOUNT}, namespace: {CONTROLLER_NAMESPACE}}}]
"""


def install(admin: Path) -> None:
    for part in INSTALL:
        kubectl(admin, "apply", "-k" if part == "crds" else "-f", str(ROOT / "manifests" / part))
    kubectl(admin, "apply", "-f", "-", input=METRICS_BINDING)


def server_version(admin: Path) -> str:
    return str(json.loads(kubectl(admin, "get", "--raw", "/version"))["gitVersion"])


def service_account_kubeconfig(admin: Path, out: Path) -> Path:
    """A kubeconfig with the ServiceAccount's token: the controller runs with its RBAC, as in a Pod."""
    config = yaml.safe_load(admin.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    cluster = dict(next(c for c in config["clusters"] if c["name"] == context["cluster"])["cluster"])
    if "certificate-authority" in cluster:
        ca = Path(cluster.pop("certificate-authority")).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    token = kubectl(admin, "-n", CONTROLLER_NAMESPACE, "create", "token", SERVICE_ACCOUNT, "--duration=2h")
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token.strip()}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": SERVICE_ACCOUNT}}],
        "current-context": "c",
    }
    out.write_text(yaml.safe_dump(document))
    out.chmod(0o600)
    return out


def request_counts(admin: Path) -> Counter[str]:
    """``apiserver_request_total`` summed over codes and clients, keyed ``"<VERB> <resource>[/<sub>]"``."""
    counts: Counter[str] = Counter()
    text = kubectl(admin, "get", "--raw", "/metrics")
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":  # the parser drops the counter's _total suffix
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            labels = sample.labels
            resource = labels.get("resource", "")
            if not resource:
                continue
            sub = labels.get("subresource", "")
            counts[f"{labels.get('verb', '')} {resource}{'/' + sub if sub else ''}"] += int(sample.value)
    return counts


def writes_between(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """The write requests the API server served between two ``request_counts``, largest first."""
    delta = {
        key: after[key] - before.get(key, 0)
        for key in after
        if key.split(" ", 1)[0] in WRITE_VERBS and after[key] > before.get(key, 0)
    }
    return dict(sorted(delta.items(), key=lambda item: -item[1]))


@dataclass(frozen=True)
class ControlPlaneCpu:
    """CPU seconds of the local control plane's processes (empty when the API server runs elsewhere)."""

    seconds: dict[str, float]

    @classmethod
    def sample(cls, *, under: str | None = None) -> ControlPlaneCpu:
        """``under``: count only the processes whose command line names this directory (one instance's,
        e.g. ``/tmp/kube-2/``), not another control plane running on the same machine."""
        seconds: dict[str, float] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                comm = (entry / "comm").read_text().strip()
                name = CONTROL_PLANE.get(comm)
                if name is None:
                    continue
                if under is not None and under.encode() not in (entry / "cmdline").read_bytes():
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks = int(fields[11]) + int(fields[12])
            seconds[name] = seconds.get(name, 0.0) + ticks / os.sysconf("SC_CLK_TCK")
        return cls(seconds)

    def since(self, earlier: ControlPlaneCpu) -> dict[str, float]:
        return {
            name: round(value - earlier.seconds.get(name, 0.0), 1)
            for name, value in sorted(self.seconds.items())
        }


def succeeded_status(pod: JSON) -> JSON:
    """The status patch a kubelet sends when every container of ``pod`` exited 0."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    terminated = {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": terminated},
        }
        for c in pod["spec"]["containers"]
    ]
    return {"status": {"phase": "Succeeded", "containerStatuses": statuses}}


async def watch(
    api: Any, kind: Kind, handle: Callable[[str, JSON], None], *, namespace: str | None = None
) -> None:
    """List, then watch ``kind`` (in ``namespace``, or everywhere) for ever, calling ``handle(event type,
    object)``; an expired resourceVersion (410) lists again and replays every object as MODIFIED. ``api`` is a
    ``KubeClient`` or anything with its ``list_all`` and ``watch``."""
    scope = {"namespace": namespace} if namespace else {}
    items, version = await api.list_all(kind, **scope)
    for item in items:
        handle("ADDED", item)
    while True:
        try:
            async for event in api.watch(kind, resource_version=version, timeout_seconds=3600, **scope):
                obj = event.get("object") or {}
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if event.get("type") != "BOOKMARK":
                    handle(str(event.get("type")), obj)
        except ApiError as exc:
            if exc.status != 410:
                raise
            items, version = await api.list_all(kind, **scope)
            for item in items:
                handle("MODIFIED", item)


async def lease_holder(api: KubeClient) -> str:
    """Who holds the controller's leader Lease ("" when no one does)."""
    try:
        lease = await api.get(LEASES, name=LEASE_NAME, namespace=CONTROLLER_NAMESPACE)
    except ApiError as exc:
        if exc.status == 404:
            return ""
        raise
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def wait_namespaces_gone(admin: Path, names: Iterable[str], *, timeout: float) -> None:
    """``wait_namespace_gone`` for several namespaces (a previous run's, still terminating)."""
    for name in names:
        await wait_namespace_gone(admin, name, timeout=timeout)


async def wait_namespace_gone(admin: Path, name: str, *, timeout: float) -> None:
    """Delete ``name`` if it exists (a previous run's leftover) and wait until the API server has removed it:
    the objects of a terminating namespace cannot be created again, and its deletion load would
    otherwise overlap the run that follows."""
    deadline = time.monotonic() + timeout
    asked = False
    while kubectl(admin, "get", "namespace", name, "--ignore-not-found", "-o", "name").strip():
        if not asked:
            kubectl(admin, "delete", "namespace", name, "--wait=false", "--ignore-not-found")
            asked = True
            print(f"waiting for namespace {name} to be deleted", flush=True)
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {name} still terminating after {timeout:.0f}s")
        await asyncio.sleep(2)  # the namespace controller of another process: poll it
