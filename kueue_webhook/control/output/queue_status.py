"""Turn the core's computed queue status into a write: keep what is unchanged, write only a visible change.

What a ClusterQueue or LocalQueue status *says* is computed by ``kueue_webhook.core.status`` from the
scheduler
state (so ``simulate`` and a live cluster report the same numbers, with Kueue's fields and messages). This
module adds the two things a writer needs: merging that computed status into the object's current one
with ``meta.SetStatusCondition`` semantics (``lastTransitionTime`` kept unless the condition's status
flips, ``observedGeneration`` filled in), and deciding whether the result differs from what users see now —
a recomputation that changes only timestamps must never produce a write.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.output.conditions import ConditionsEdit, find

JSON = dict[str, Any]


def merge_status(current: JSON | None, computed: JSON, *, generation: int | None, now: str) -> JSON:
    """``current`` with every field of ``computed``; conditions merged one by one."""
    status = dict(current or {})
    edit = ConditionsEdit([dict(c) for c in status.get("conditions") or []], generation, now)
    for condition in computed.get("conditions") or []:
        edit.set(
            str(condition["type"]),
            str(condition["status"]),
            str(condition.get("reason", "")),
            str(condition.get("message", "")),
        )
    status.update({key: value for key, value in computed.items() if key != "conditions"})
    status["conditions"] = edit.conditions
    return status


def status_differs(old: JSON | None, new: JSON) -> bool:
    """True when a write would change what users see (transition times alone never trigger a write)."""
    old = old or {}
    for key, value in new.items():
        if key == "conditions":
            for condition in value:
                before = find(old.get("conditions"), str(condition.get("type")))
                if before is None or any(
                    before.get(f) != condition.get(f)
                    for f in ("status", "reason", "message", "observedGeneration")
                ):
                    return True
        elif old.get(key) != value:
            return True
    return False
