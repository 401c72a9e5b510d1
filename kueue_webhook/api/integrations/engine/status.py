"""Whether an object is done, still has pods, or is ready (Kueue's ``Finished``, ``IsActive``,
``PodsReady``), from the kind's rules."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kueue_webhook.api.integrations.engine.pod_sets import pod_count
from kueue_webhook.api.integrations.engine.reading import as_int
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.integrations.paths import FieldPath

__all__ = ["finished", "has_active_pods", "pods_ready"]


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def finished(integration: Integration, obj: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message): Kueue's ``Finished`` from the kind's conditions or phase field."""
    rule = integration.finished
    for condition in _conditions(obj):
        kind = condition.get("type")
        if condition.get("status") == "True" and (kind in rule.succeeded or kind in rule.failed):
            succeeded = kind in rule.succeeded
            if rule.success is not None:
                succeeded = rule.success.holds(obj)
            message = rule.message.get(obj) if rule.message is not None else condition.get("message")
            return True, succeeded, str(message or "")
    if rule.phase is not None:
        phase = rule.phase.get(obj)
        if phase in rule.failed_phases and any(
            c.get("type") in rule.failed_held_by and c.get("status") == "True" for c in _conditions(obj)
        ):
            return False, False, ""
        if phase in rule.succeeded_phases or phase in rule.failed_phases:
            succeeded = (
                rule.success.holds(obj) if rule.success is not None else phase in rule.succeeded_phases
            )
            message = (
                rule.message.get(obj) if rule.message is not None else dict(rule.phase_messages).get(phase)
            )
            return True, succeeded, str(message or "")
    return False, True, ""


def _sum(obj: Mapping[str, Any], paths: Collection[FieldPath], states: frozenset[str] = frozenset()) -> int:
    total = 0
    for path in paths:
        for value in path.values(obj):
            if isinstance(value, list):
                total += len(value)
            elif isinstance(value, Mapping) and states:
                total += sum(1 for state in value.values() if state in states)
            elif (number := as_int(value)) is not None:
                total += number
    return total


def has_active_pods(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Pods may still run or terminate: the quota they use is not free yet (Kueue's ``IsActive``)."""
    rule = integration.active
    if rule.when is not None and rule.when.holds(obj):
        return True
    if rule.conditions and any(
        c.get("type") in rule.conditions and c.get("status") == "True" for c in _conditions(obj)
    ):
        return True
    return _sum(obj, rule.counts) > 0


def pods_ready(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Kueue's ``PodsReady`` for the kind (False for a kind that declares no rule)."""
    rule = integration.pods_ready
    if rule is None:
        return False
    if rule.conditions:
        return any(c.get("type") in rule.conditions and c.get("status") == "True" for c in _conditions(obj))
    if rule.when is not None and (not rule.when.holds(obj) or not rule.ready):
        return rule.when.holds(obj)
    wanted = _sum(obj, rule.total) if rule.total else pod_count(integration, obj)
    return _sum(obj, rule.ready, rule.ready_states) >= wanted
