"""kueuectl's ``list`` columns, cell by cell, from the objects as the API server sends them (plain dicts).

The columns, their order and their cells are kueuectl's (cmd/kueuectl/app/list/*_printer.go), so scripts that
cut columns out of ``kubectl kueue list`` keep working: a Workload's STATUS is Kueue's ``workload.Status``
(FINISHED, then ADMITTED, then QUOTARESERVED, else PENDING), POSITION IN QUEUE its rank in its LocalQueue as
the visibility API reports it (pending Workloads only), EXEC TIME the time since admission (until it
finished), JOB TYPE the owner's ``singular.group`` as discovery names it (cut at 20 characters). Where Go
prints a set in no particular order (several owners), the cells are sorted here so output is stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kueue_webhook.kubectl_kueue.table import age, human_duration, parse_time

__all__ = [
    "CLUSTER_QUEUE_COLUMNS",
    "LOCAL_QUEUE_COLUMNS",
    "RESOURCE_FLAVOR_COLUMNS",
    "WORKLOAD_COLUMNS",
    "ResourceNames",
    "cluster_queue_row",
    "condition",
    "is_true",
    "job_type",
    "local_queue_row",
    "resource_flavor_row",
    "workload_cluster_queue",
    "workload_row",
    "workload_status",
]

JSON = Mapping[str, Any]
#: apiVersion -> kind -> (singular name, group), from discovery (None when discovery did not answer)
ResourceNames = Mapping[str, Mapping[str, tuple[str, str]] | None]

WORKLOAD_COLUMNS = (
    "Name",
    "Job Type",
    "Job Name",
    "LocalQueue",
    "ClusterQueue",
    "Status",
    "Position in Queue",
    "Exec Time",
    "Age",
)
LOCAL_QUEUE_COLUMNS = ("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age")
CLUSTER_QUEUE_COLUMNS = ("Name", "Cohort", "Pending Workloads", "Admitted Workloads", "Active", "Age")
RESOURCE_FLAVOR_COLUMNS = ("Name", "Node Labels", "Age")
#: kueuectl's crdTypeMaxLength
_JOB_TYPE_MAX = 20


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: JSON) -> JSON:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def condition(obj: JSON, kind: str) -> JSON | None:
    for cond in _status(obj).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def is_true(obj: JSON, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def workload_status(workload: JSON) -> str:
    """Kueue's ``workload.Status``: finished, admitted, quotaReserved or pending (lower case, as Kueue)."""
    if is_true(workload, "Finished"):
        return "finished"
    if is_true(workload, "Admitted"):
        return "admitted"
    if is_true(workload, "QuotaReserved"):
        return "quotaReserved"
    return "pending"


def workload_cluster_queue(workload: JSON, local_queues: Mapping[tuple[str, str], JSON | None]) -> str:
    """The ClusterQueue of its admission, else the one its LocalQueue points at ('' when unknown)."""
    admission = _status(workload).get("admission")
    if isinstance(admission, Mapping) and admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    key = (str(_meta(workload).get("namespace", "")), str(_spec(workload).get("queueName", "")))
    queue = local_queues.get(key)
    return str(_spec(queue).get("clusterQueue", "")) if queue else ""


def job_type(api_version: str, kind: str, names: ResourceNames) -> str | None:
    """``singular.group`` of an owner's kind, as kueuectl shows it; None when discovery does not know it."""
    known = names.get(api_version)
    if not known or kind not in known:
        return None
    singular, group = known[kind]
    text = ".".join(part for part in (singular, group) if part)
    return text[:_JOB_TYPE_MAX] + "..." if len(text) > _JOB_TYPE_MAX else text


def _exec_time(workload: JSON, now: datetime) -> str:
    admitted = condition(workload, "Admitted")
    if admitted is None or admitted.get("status") != "True":
        return ""
    since = parse_time(admitted.get("lastTransitionTime"))
    if since is None:
        return ""
    until = now
    finished = condition(workload, "Finished")
    if finished is not None and finished.get("status") == "True":
        until = parse_time(finished.get("lastTransitionTime")) or now
    return human_duration((until - since).total_seconds())


def workload_row(
    workload: JSON,
    *,
    now: datetime,
    local_queues: Mapping[tuple[str, str], JSON | None],
    positions: Mapping[tuple[str, str], int],
    names: ResourceNames,
) -> list[str]:
    """One row of WORKLOAD_COLUMNS; ``positions``: (namespace, name) -> positionInLocalQueue."""
    meta = _meta(workload)
    owners = [ref for ref in meta.get("ownerReferences") or [] if isinstance(ref, Mapping)]
    types = {
        t
        for ref in owners
        if (t := job_type(str(ref.get("apiVersion", "")), str(ref.get("kind", "")), names)) is not None
    }
    key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
    position = positions.get(key)
    return [
        str(meta.get("name", "")),
        ", ".join(sorted(types)),
        ", ".join(sorted({str(ref.get("name", "")) for ref in owners})),
        str(_spec(workload).get("queueName", "")),
        workload_cluster_queue(workload, local_queues),
        workload_status(workload).upper(),
        "" if position is None else str(position),
        _exec_time(workload, now),
        age(meta.get("creationTimestamp"), now),
    ]


def local_queue_row(queue: JSON, *, now: datetime) -> list[str]:
    status = _status(queue)
    return [
        str(_meta(queue).get("name", "")),
        str(_spec(queue).get("clusterQueue", "")),
        str(int(status.get("pendingWorkloads") or 0)),
        str(int(status.get("admittedWorkloads") or 0)),
        age(_meta(queue).get("creationTimestamp"), now),
    ]


def cluster_queue_row(queue: JSON, *, now: datetime) -> list[str]:
    status = _status(queue)
    return [
        str(_meta(queue).get("name", "")),
        str(_spec(queue).get("cohortName", "")),
        str(int(status.get("pendingWorkloads") or 0)),
        str(int(status.get("admittedWorkloads") or 0)),
        "true" if is_true(queue, "Active") else "false",
        age(_meta(queue).get("creationTimestamp"), now),
    ]


def resource_flavor_row(flavor: JSON, *, now: datetime) -> list[str]:
    labels = _spec(flavor).get("nodeLabels") or {}
    pairs: Sequence[str] = (
        sorted(f"{k}={v}" for k, v in labels.items()) if isinstance(labels, Mapping) else []
    )
    return [
        str(_meta(flavor).get("name", "")),
        ", ".join(pairs),
        age(_meta(flavor).get("creationTimestamp"), now),
    ]
