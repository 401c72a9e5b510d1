"""Workload changes the scheduling core need not parse again: parsing one costs more than all the core does
with most changes, and two kinds of change tell it nothing it does not know.

* A pending reason's write changes a condition's message, which the core never reads.
* The answer of the controller's own admission write (or its watch echo) shows the admission the core
  assumed when it decided; the core only needs to hear that it landed, when, and whether Admitted is True.

Each test is strict: anything else that differs (spec, metadata, other status fields or conditions) makes
the change an ordinary one, parsed in full.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.conditions import condition_of

JSON = dict[str, Any]

#: metadata that changes with every write and that no decision reads
_WRITE_BOOKKEEPING = frozenset(("resourceVersion", "managedFields"))


def _without(mapping: JSON, keys: frozenset[str]) -> JSON:
    return {k: v for k, v in mapping.items() if k not in keys}


_MESSAGE = frozenset(("message",))
_CONDITIONS = frozenset(("conditions",))
_METADATA_SPEC_STATUS = frozenset(("metadata", "spec", "status"))


def _same_apart_from_status(old: JSON, new: JSON) -> bool:
    """Whether ``old`` and ``new`` agree on everything but ``status`` and the write's bookkeeping."""
    if _without(old, _METADATA_SPEC_STATUS) != _without(new, _METADATA_SPEC_STATUS):
        return False
    if old.get("spec") != new.get("spec"):
        return False
    return _without(old.get("metadata") or {}, _WRITE_BOOKKEEPING) == _without(
        new.get("metadata") or {}, _WRITE_BOOKKEEPING
    )


def only_messages_changed(old: JSON | None, new: JSON | None) -> bool:
    """Whether ``new`` differs from ``old`` in nothing but conditions' messages and the write's bookkeeping
    (resourceVersion, managedFields): what a pending reason's write changes (QuotaReserved=False keeps its
    status, reason and lastTransitionTime while its message follows the queue, as Kueue's
    SetConditionAndUpdate does). The core reads a condition's type, status, reason and time, never its
    message, so such a change cannot alter a decision."""
    if old is None or new is None:
        return False
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    old_conditions, new_conditions = old_status.get("conditions"), new_status.get("conditions")
    # most changes fail here, at no cost: a condition added (admitted, finished) or an admission written
    if not isinstance(old_conditions, list) or not isinstance(new_conditions, list):
        return False
    if len(old_conditions) != len(new_conditions) or old_status.get("admission") != new_status.get(
        "admission"
    ):
        return False
    if _without(old_status, _CONDITIONS) != _without(new_status, _CONDITIONS):
        return False
    if not _same_apart_from_status(old, new):
        return False
    return all(
        isinstance(before, dict)
        and isinstance(after, dict)
        and _without(before, _MESSAGE) == _without(after, _MESSAGE)
        for before, after in zip(old_conditions, new_conditions, strict=True)
    )


#: what an admission write sets in ``status`` (``admitted_status``); nothing else of it may differ
_ADMISSION_STATUS = frozenset(("admission", "conditions"))
#: the conditions an admission write may set or reset
_ADMISSION_CONDITIONS = frozenset(("QuotaReserved", "Admitted", "Evicted", "Preempted", "PodsReady"))


def _other_conditions(status: JSON) -> list[Any]:
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if not isinstance(c, dict) or c.get("type") not in _ADMISSION_CONDITIONS]


def answers_own_admission(old: JSON | None, new: JSON | None, written: JSON) -> bool:
    """Whether ``new`` is ``old`` with the admission ``written`` by this controller recorded, and nothing
    else new: ``status.admission`` is ``written`` where there was none, only the conditions an admission
    write sets changed (QuotaReserved and Admitted, Evicted and Preempted reset, PodsReady), the rest of
    the object is as it was but for the write's bookkeeping, and it is neither evicted nor finished."""
    if old is None or new is None:
        return False
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    if old_status.get("admission") is not None or new_status.get("admission") != written:
        return False
    reserved = condition_of(new, "QuotaReserved")
    if reserved is None or reserved.get("status") != "True":
        return False
    evicted = condition_of(new, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        return False
    if _without(old_status, _ADMISSION_STATUS) != _without(new_status, _ADMISSION_STATUS):
        return False
    if _other_conditions(old_status) != _other_conditions(new_status):
        return False
    return _same_apart_from_status(old, new)
