"""When Kueue's ``objectRetentionPolicies.workloads`` deletes something (pure: the rule, not the deleting).

* ``afterFinished``: a Workload whose Finished condition turned True that long ago is deleted (Kueue's
  workload controller: its resource-in-use finalizer removed first, then a ``Deleted`` Event
  "Deleted finished workload due to elapsed retention").
* ``afterDeactivatedByKueue``: the object of a Workload that was deactivated and evicted for it (Evicted=True
  with a reason starting ``Deactivated``: a user's deactivation or Kueue's own, such as the requeuing limit
  or the maximum execution time) that long ago is deleted with background propagation, its Workload going
  with it (Kueue's job reconciler, ``Deleted`` Event "Deleted job: deactivation retention period expired").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.conditions import condition_of
from kueue_webhook.api.objects.common import parse_timestamp

__all__ = ["DEACTIVATED_DELETED", "FINISHED_DELETED", "deactivated_expiry", "finished_expiry"]

FINISHED_DELETED = "Deleted finished workload due to elapsed retention"
DEACTIVATED_DELETED = "Deleted job: deactivation retention period expired"


def finished_expiry(workload: Mapping[str, Any], after: float | None) -> float | None:
    """When a finished Workload is due for deletion (seconds since the epoch); None when it is not finished
    or no retention is set."""
    if after is None:
        return None
    finished = condition_of(workload, "Finished")
    if finished is None or finished.get("status") != "True":
        return None
    return parse_timestamp(finished.get("lastTransitionTime")) + after


def deactivated_expiry(workload: Mapping[str, Any], after: float | None) -> float | None:
    """When the object of a deactivated Workload is due for deletion; None when it is not deactivated and
    evicted for it, or no retention is set."""
    if after is None or (workload.get("spec") or {}).get("active", True) is not False:
        return None
    evicted = condition_of(workload, "Evicted")
    if evicted is None or evicted.get("status") != "True":
        return None
    if not str(evicted.get("reason", "")).startswith("Deactivated"):
        return None
    return parse_timestamp(evicted.get("lastTransitionTime")) + after
