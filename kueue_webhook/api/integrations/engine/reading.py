"""What every part of the engine reads off an object's metadata: its LocalQueue, whether its kind skips it,
its Workload's name (Kueue's ``GetWorkloadNameForOwnerWithGVK``), and annotations parsed as Go parses them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.integrations.model import Integration

__all__ = [
    "JOB_UID_LABEL",
    "MAX_EXEC_TIME_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "annotation",
    "as_int",
    "maximum_execution_time",
    "metadata_of",
    "parse_go_bool",
    "parse_go_int",
    "queue_name",
    "skipped",
    "workload_name",
]

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
#: how long the object may run once admitted; its Workload's ``spec.maximumExecutionTimeSeconds``
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"

_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_HASH_LENGTH = 5
#: Kueue's default (long) limit: 253 minus "-" and the hash
_MAX_PREFIX = 253 - 1 - _HASH_LENGTH

JSON = dict[str, Any]


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def annotation(obj: Mapping[str, Any], key: str) -> str | None:
    annotations = metadata_of(obj).get("annotations")
    value = annotations.get(key) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_go_int(text: str) -> int | None:
    """Go's ``strconv.Atoi`` (decimal, optional sign, nothing else; 64-bit), None when it would fail."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def parse_go_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``, None when it would fail."""
    return True if text in _GO_TRUE else False if text in _GO_FALSE else None


# -- identity and routing ---------------------------------------------------------------------------


def queue_name(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue an object asks for (label first, then Kueue's legacy annotation), or None."""
    meta = metadata_of(obj)
    for source in (meta.get("labels"), meta.get("annotations")):
        if isinstance(source, Mapping):
            value = source.get(QUEUE_NAME_LABEL)
            if isinstance(value, str) and value:
                return value
    return None


def maximum_execution_time(obj: Mapping[str, Any]) -> int | None:
    """The Workload's ``spec.maximumExecutionTimeSeconds`` from the object's label, as Kueue's jobframework
    ``MaximumExecutionTimeSecondsForObject`` reads it for every integration: a decimal int32 above 0, else
    none (the webhooks refuse any other value on create, so only an object that predates them has one)."""
    labels = metadata_of(obj).get("labels")
    raw = labels.get(MAX_EXEC_TIME_LABEL) if isinstance(labels, Mapping) else None
    value = parse_go_int(raw) if isinstance(raw, str) else None
    return value if value is not None and 0 < value < 2**31 else None


def skipped(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Objects Kueue leaves alone (Kueue's ``JobWithSkip``: a RayJob on an existing cluster)."""
    return any(path.get(obj) not in (None, "", {}, []) for path in integration.skip_when_set)


def workload_name(name: str, uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """Kueue's Workload name for an owner: ``<kind>-<name>`` cut to 247 characters, ``-``, 5 hex of SHA-1."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode(), usedforsecurity=False)
    prefix = f"{kind.lower()}-{name}"[:_MAX_PREFIX]
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"
