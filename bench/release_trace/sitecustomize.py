"""Loaded by ``kueue-webhook serve`` only when ``bench.e2e --kubeconfig ... --trace-release`` starts it with
this folder on PYTHONPATH: writes, as JSON lines to ``$KUEUE_BENCH_TRACE``, when the controller saw each
serial Job's change and when each of its API writes for them went out and was answered, so the release
latency can be split into the controller's own time and the API server's round trips
(``bench.e2e_real.release_trace``). It wraps two methods and changes nothing they do.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson

_PATH = os.environ.get("KUEUE_BENCH_TRACE")
_PREFIX = "serial-"


def _install(path: str) -> None:
    from kueue_webhook.control.cache.store import Store
    from kueue_webhook.control.kube.client import KubeClient

    out = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the process's life

    def record(**fields: Any) -> None:
        out.write(orjson.dumps(fields) + b"\n")

    send = KubeClient._send

    async def traced_send(self: KubeClient, method: str, path: str, *args: Any) -> Any:
        if method == "GET" or _PREFIX not in path:
            return await send(self, method, path, *args)
        sent = time.time()
        try:
            return await send(self, method, path, *args)
        finally:
            body = args[1] if len(args) > 1 and isinstance(args[1], bytes) else b""
            admits = b'"admission"' in body  # the scheduler's admission write, not a pending reason's
            record(event="write", method=method, path=path, admits=admits, sent=sent, answered=time.time())

    upsert = Store.upsert

    def traced_upsert(self: Store, kind: Any, obj: dict[str, Any]) -> bool:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind.kind == "Job" and name.startswith(_PREFIX):
            conditions = (obj.get("status") or {}).get("conditions") or []
            true = [c.get("type") for c in conditions if c.get("status") == "True"]
            record(event="job", name=name, true=true, at=time.time())
        return upsert(self, kind, obj)

    KubeClient._send = traced_send  # type: ignore[method-assign]
    Store.upsert = traced_upsert  # type: ignore[method-assign]


if _PATH and "serve" in sys.argv:
    sys.path.insert(0, os.getcwd())  # ``python -m`` has not put the tree first yet
    _install(_PATH)
