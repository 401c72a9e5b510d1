"""What the controller tests read back from the fake API server: conditions, a Job's Workloads, whether
a Job runs, the events recorded on an object; and how a test reaches a ``serve`` process (a free port, its
/readyz)."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from kueue_webhook.http.certs import ca_bundle
from tests.fakeapi import FakeApiServer
from tests.support.replica import Replica, certificates, replica, webhook_configurations

JSON = dict[str, Any]


def condition(obj: JSON | None, kind: str) -> JSON | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def is_true(obj: JSON | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def workloads_of(fake_api: FakeApiServer, namespace: str, job: str) -> list[JSON]:
    """The Workloads in ``namespace`` owned by the Job named ``job``, in listing order."""
    return [
        w
        for w in fake_api.list("workloads", namespace)
        if any(ref.get("name") == job for ref in w["metadata"].get("ownerReferences") or [])
    ]


def workload_of(fake_api: FakeApiServer, namespace: str, job: str) -> JSON | None:
    found = workloads_of(fake_api, namespace, job)
    return found[0] if found else None


def running(fake_api: FakeApiServer, namespace: str, name: str) -> bool:
    job = fake_api.get("jobs", name, namespace)
    return job is not None and job["spec"].get("suspend") is False


def events_of(fake_api: FakeApiServer, namespace: str, name: str) -> dict[str, str]:
    return {
        e["reason"]: e["message"]
        for e in fake_api.list("events", namespace)
        if e.get("involvedObject", {}).get("name") == name
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def readyz(port: int, ca: Path) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"https://127.0.0.1:{port}/readyz", ssl=context) as response,
        ):
            return response.status
    except aiohttp.ClientConnectionError:
        return 0


def controller_config(body: str) -> str:
    """Namespace kueue-system and the controller's ConfigMap with ``body`` as its config.yaml."""
    indented = "\n".join(f"    {line}" for line in body.strip().splitlines())
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: kueue-system}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: kueue-webhook-config, namespace: kueue-system}}
data:
  config.yaml: |
{indented}
"""


#: the user the controller runs as once installed: its ServiceAccount
CONTROLLER_USER = "system:serviceaccount:kueue-system:kueue-webhook"


def as_controller(fake_api: FakeApiServer) -> Path:
    """A kubeconfig of the fake API server for the controller's ServiceAccount (``CONTROLLER_USER``)."""
    return fake_api.kubeconfig_path(user=CONTROLLER_USER, groups=["system:serviceaccounts"])


@contextlib.asynccontextmanager
async def serving_webhook(
    fake_api: FakeApiServer, tmp_path: Path, *, kubeconfig: Path | None = None, **options: Any
) -> AsyncIterator[Replica]:
    """A controller replica (as the fake's admin, or ``kubeconfig``'s user) whose webhook the fake API server
    calls, through the shipped webhook configurations pointed at it, as kube-apiserver would."""
    tls = certificates(tmp_path / "tls")
    async with replica(kubeconfig or fake_api.kubeconfig_path(), tls=tls, **options) as serving:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}"):
            await fake_api.create(config)
        yield serving
