"""`meta.k8s.io/v1` Tables, what `kubectl get` prints from (Accept: `application/json;as=Table;...`).

Custom resources get their columns from the CRD's additionalPrinterColumns, evaluated with a small JSONPath
subset (dotted fields, `[n]`, `[*]` and `[?(@.field=="value")]` filters, which is all CRD columns use) and
typed as the apiserver types them (`date` columns print as an age such as `5m`). Built-in kinds get the
columns of kube's printers for the kinds we serve (Jobs exactly as golden `table-jobs.json`); other built-in
kinds fall back to Name and Age.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from kueue_webhook.kubectl_kueue.table import human_duration
from tests.fakeapi.resources import PrinterColumn, ResourceType

Obj = dict[str, Any]
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this "
    "value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

_TOKEN = re.compile(
    r"""\.([A-Za-z0-9_\-/]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*["']([^"']*)["']\)\]"""
)


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Evaluate a CRD-column JSONPath; returns every match (possibly none)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    path = path.removeprefix("$")
    nodes = [obj]
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {pos}")
        pos = match.end()
        field, index, filter_field, filter_value = match.groups()
        nxt: list[Any] = []
        for node in nodes:
            if field is not None and isinstance(node, dict) and field in node:
                nxt.append(node[field])
            elif index == "*" and isinstance(node, list):
                nxt.extend(node)
            elif index is not None and index != "*" and isinstance(node, list) and int(index) < len(node):
                nxt.append(node[int(index)])
            elif filter_field is not None and isinstance(node, list):
                for item in node:
                    value: Any = item
                    for part in filter_field.split("."):
                        value = value.get(part) if isinstance(value, dict) else None
                    if value is not None and str(value) == filter_value:
                        nxt.append(item)
        nodes = nxt
    return nodes


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def age(value: Any) -> str:
    when = _parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - when).total_seconds())


def _column(name: str, type_: str, description: str, *, priority: int = 0, fmt: str = "") -> Obj:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


def _crd_cell(column: PrinterColumn, obj: Obj) -> Any:
    try:
        found = jsonpath(obj, column.json_path)
    except ValueError:
        return None
    if not found:
        return None
    value = found[0] if len(found) == 1 else " ".join(str(v) for v in found)
    if column.type == "date":
        return age(value)
    if column.type == "integer":
        return value if isinstance(value, int) else None
    if column.type == "number":
        return value if isinstance(value, int | float) else None
    if column.type == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, dict | list):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _has_condition(obj: Obj, type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _job_status(job: Obj) -> str:
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if job["metadata"].get("deletionTimestamp"):
        return "Terminating"
    if _has_condition(job, "Suspended"):
        return "Suspended"
    if _has_condition(job, "FailureTarget"):
        return "FailureTarget"
    if _has_condition(job, "SuccessCriteriaMet"):
        return "SuccessCriteriaMet"
    return "Running"


def _format_selector(selector: Obj | None) -> str:
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{expr['key']} in ({values})")
        elif op == "NotIn":
            parts.append(f"{expr['key']} notin ({values})")
        elif op == "Exists":
            parts.append(expr["key"])
        elif op == "DoesNotExist":
            parts.append(f"!{expr['key']}")
    return ",".join(sorted(parts)) if parts else "<none>"


def _job_cells(job: Obj) -> list[Any]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    succeeded = int(status.get("succeeded", 0))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = _parse_time(status.get("startTime")), _parse_time(status.get("completionTime"))
    if start is None:
        duration = ""
    elif end is None:
        duration = human_duration((datetime.now(UTC) - start).total_seconds())
    else:
        duration = human_duration((end - start).total_seconds())
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        job["metadata"]["name"],
        _job_status(job),
        completions,
        duration,
        age(job["metadata"].get("creationTimestamp")),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        _format_selector(spec.get("selector")),
    ]


JOB_COLUMNS = [
    _column("Name", "string", NAME_DESCRIPTION, fmt="name"),
    _column("Status", "string", "Status of the job."),
    _column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given "
        "spec. "
        "However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    _column("Duration", "string", "Time required to complete the job."),
    _column("Age", "string", CREATION_DESCRIPTION),
    _column("Containers", "string", "Names of each container in the template.", priority=1),
    _column("Images", "string", "Images referenced by each container in the template.", priority=1),
    _column(
        "Selector",
        "string",
        "A label query over pods that should match the pod count. Normally, the system sets this field for "
        "you. "
        "More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority=1,
    ),
]
NAMESPACE_COLUMNS = [
    _column("Name", "string", NAME_DESCRIPTION, fmt="name"),
    _column("Status", "string", "The status of the namespace"),
    _column("Age", "string", CREATION_DESCRIPTION),
]
CONFIGMAP_COLUMNS = [
    _column("Name", "string", NAME_DESCRIPTION, fmt="name"),
    _column("Data", "string", "Data contains the configuration data."),
    _column("Age", "string", CREATION_DESCRIPTION),
]
LEASE_COLUMNS = [
    _column("Name", "string", NAME_DESCRIPTION, fmt="name"),
    _column("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    _column("Age", "string", CREATION_DESCRIPTION),
]
DEFAULT_COLUMNS = [
    _column("Name", "string", NAME_DESCRIPTION, fmt="name"),
    _column("Age", "string", CREATION_DESCRIPTION),
]
EVENT_COLUMNS = [
    _column(
        "Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."
    ),
    _column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    _column(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason "
        "for the transition into the object's current status.",
    ),
    _column("Object", "string", "The object that this event is about."),
    _column("Subobject", "string", "The path to the part of the object the event is about.", priority=1),
    _column("Source", "string", "The component reporting this event.", priority=1),
    _column("Message", "string", "A human-readable description of the status of this operation."),
    _column("First Seen", "string", "The time at which the event was first recorded.", priority=1),
    _column("Count", "string", "The number of times this event has occurred.", priority=1),
    _column("Name", "string", NAME_DESCRIPTION, priority=1, fmt="name"),
]


def _event_source(event: Obj) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {host}" if host else component


def _event_cells(event: Obj) -> list[Any]:
    """core/v1 Event row as kube's printer fills it (`kubectl get events`)."""
    involved = event.get("involvedObject") or {}
    creation = event["metadata"].get("creationTimestamp")
    last = event.get("lastTimestamp") or event.get("eventTime") or creation
    first = event.get("firstTimestamp") or event.get("eventTime") or creation
    return [
        age(last if isinstance(last, str) else None),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        _event_source(event),
        str(event.get("message", "")).strip(),
        age(first if isinstance(first, str) else None),
        str(event.get("count", 1)),
        event["metadata"]["name"],
    ]


_BUILTIN: dict[tuple[str, str], tuple[list[Obj], Callable[[Obj], list[Any]]]] = {
    ("", "Event"): (EVENT_COLUMNS, _event_cells),
    ("batch", "Job"): (JOB_COLUMNS, _job_cells),
    ("", "Namespace"): (
        NAMESPACE_COLUMNS,
        lambda o: [
            o["metadata"]["name"],
            (o.get("status") or {}).get("phase", ""),
            age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    ("", "ConfigMap"): (
        CONFIGMAP_COLUMNS,
        lambda o: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    ("coordination.k8s.io", "Lease"): (
        LEASE_COLUMNS,
        lambda o: [
            o["metadata"]["name"],
            (o.get("spec") or {}).get("holderIdentity", ""),
            age(o["metadata"].get("creationTimestamp")),
        ],
    ),
}


def columns_for(rtype: ResourceType) -> list[Obj]:
    if rtype.schema is not None or not rtype.builtin:
        cols = [_column("Name", "string", NAME_DESCRIPTION, fmt="name")]
        if not rtype.printer_columns:
            cols.append(_column("Created At", "date", CREATION_DESCRIPTION))
        for c in rtype.printer_columns:
            cols.append(_column(c.name, c.type, c.description, priority=c.priority, fmt=c.format))
        return cols
    entry = _BUILTIN.get((rtype.group, rtype.kind))
    return entry[0] if entry is not None else DEFAULT_COLUMNS


def cells_for(rtype: ResourceType, obj: Obj) -> list[Any]:
    if rtype.schema is not None or not rtype.builtin:
        cells: list[Any] = [obj["metadata"]["name"]]
        if not rtype.printer_columns:
            cells.append(obj["metadata"].get("creationTimestamp"))
        cells.extend(_crd_cell(c, obj) for c in rtype.printer_columns)
        return cells
    entry = _BUILTIN.get((rtype.group, rtype.kind))
    if entry is None:
        return [obj["metadata"]["name"], age(obj["metadata"].get("creationTimestamp"))]
    return entry[1](obj)


def partial_metadata(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(rtype: ResourceType, objects: list[Obj], *, resource_version: str, include_object: str) -> Obj:
    rows = []
    for obj in objects:
        row: Obj = {"cells": cells_for(rtype, obj)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns_for(rtype),
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    return "as=Table" in accept
