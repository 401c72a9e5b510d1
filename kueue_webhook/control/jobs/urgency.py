"""Which store changes the job reconciler serves first: those a user is waiting on.

One Job finishing, in a ClusterQueue with room for one, is followed by three writes in a row before the next
Job runs: its Workload's Finished (which releases the quota), the next Workload's admission, and that Job's
start. Each waits for the reconciler at one end, and the reconciler's queue also carries routine keys (every
status update a Job controller makes, every pending reason written, and after a restart or a burst of
creations, hundreds of Workloads to create). So the changes that release quota or start an admitted object
are queued as urgent (``WorkQueue.add(urgent=True)``) and served ahead of the rest, by a worker kept for
them. What is decided for a key does not change: only when it is decided.

Urgent: an object that has just finished or been deleted (its Workload's quota is released by the step
planned next), and a Workload that has just been given a quota reservation, been admitted, or been
evicted (its object is started or stopped next). Pure functions of the change.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.control.cache.store import Change

__all__ = ["object_change_is_urgent", "workload_change_is_urgent"]

JSON = dict[str, Any]


def object_change_is_urgent(integration: Integration, change: Change) -> bool:
    """The queued object was deleted, or has just finished (Kueue's Finished: a Job's Complete or Failed)."""
    if change.new is None:
        return change.old is not None
    if not engine.finished(integration, change.new)[0]:
        return False
    return change.old is None or not engine.finished(integration, change.old)[0]


def workload_change_is_urgent(change: Change) -> bool:
    """The Workload has just been given a quota reservation, been admitted, or been evicted."""
    new, old = change.new, change.old or {}
    if new is None:
        return False
    return (
        (has_quota_reservation(new) and not has_quota_reservation(old))
        or became(new, old, "Admitted")
        or became(new, old, "Evicted")
    )


def became(new: JSON, old: JSON, condition: str) -> bool:
    """``condition`` is True in ``new`` and was not in ``old``."""
    return is_true(new, condition) and not is_true(old, condition)
