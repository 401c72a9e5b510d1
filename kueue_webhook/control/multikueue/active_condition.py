"""A MultiKueueCluster's ``Active`` condition: what it says, and writing it.

The messages are read by anyone who may read MultiKueueClusters, so an error is described without what it
may carry (a proxy password, a token in a URL): redacted as in the logs. A failed connection says how many
attempts were made and when the next one is, as Kueue's ``ClientConnectionFailed`` does.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import MULTIKUEUE_CLUSTERS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.conditions import ConditionsEdit, now_rfc3339
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.logs import redact

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")


async def write_active(
    context: ControlContext, cluster: JSON, status: str, reason: str, message: str
) -> None:
    """Set the cluster's ``Active`` condition (no write when it already says so)."""

    def build(current: JSON) -> JSON | None:
        edit = ConditionsEdit.of(current, now_rfc3339())
        return {"conditions": edit.conditions} if edit.set("Active", status, reason, message) else None

    try:
        await context.writer.patch_status(MULTIKUEUE_CLUSTERS, cluster, build)
    except NotLeader:
        return  # leadership is ending: the connection's task is cancelled next
    except (ApiError, aiohttp.ClientError, TimeoutError) as exc:
        name = (cluster.get("metadata") or {}).get("name")
        log.warning("cannot write MultiKueueCluster status", extra={"cluster": name, "error": describe(exc)})


def attempt_message(error: str, attempts: int, delay: float) -> str:
    at = (datetime.now(UTC) + timedelta(seconds=delay)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{error}; connection attempts: {attempts}, next connection attempt: {at}"


def describe(exc: BaseException) -> str:
    """An error for a condition message anyone who may read MultiKueueClusters sees: credentials that an
    error may carry (a proxy password, a token in a URL) are redacted as in the logs."""
    if isinstance(exc, ApiError):
        text = f"the worker answered {exc.status} {exc.reason}: {exc.message}".strip().rstrip(":")
    elif isinstance(exc, TimeoutError):
        text = "the worker's API server did not answer in time"
    else:
        text = str(exc) or type(exc).__name__
    return redact(text)
