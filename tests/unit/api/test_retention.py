"""When ``objectRetentionPolicies.workloads`` deletes (Kueue's rules): a finished Workload ``afterFinished``
past its Finished transition; the object of a Workload deactivated and evicted for it (a reason starting
``Deactivated``) ``afterDeactivatedByKueue`` past its eviction; nothing without a policy."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.objects.common import parse_timestamp
from kueue_webhook.api.retention import deactivated_expiry, finished_expiry

AT = "2026-11-28T08:00:00Z"


def workload(*conditions: tuple[str, str, str], active: bool = True) -> dict[str, Any]:
    return {
        "spec": {"active": active},
        "status": {
            "conditions": [
                {"type": kind, "status": status, "reason": reason, "lastTransitionTime": AT}
                for kind, status, reason in conditions
            ]
        },
    }


def test_a_finished_workload_expires_after_finished() -> None:
    done = workload(("Finished", "True", "Succeeded"))
    assert finished_expiry(done, 600.0) == parse_timestamp(AT) + 600
    assert finished_expiry(done, None) is None
    assert finished_expiry(workload(("Finished", "False", "")), 600.0) is None


def test_only_a_workload_deactivated_and_evicted_for_it_expires_after_deactivation() -> None:
    limited = workload(("Evicted", "True", "DeactivatedDueToMaximumExecutionTimeExceeded"), active=False)
    assert deactivated_expiry(limited, 0.0) == parse_timestamp(AT)
    assert (
        deactivated_expiry(workload(("Evicted", "True", "Deactivated"), active=False), 5.0)
        == parse_timestamp(AT) + 5
    )
    assert deactivated_expiry(workload(("Evicted", "True", "Preempted"), active=False), 0.0) is None
    assert deactivated_expiry(workload(("Evicted", "True", "Deactivated")), 0.0) is None  # active again
    assert deactivated_expiry(limited, None) is None


def test_the_policy_is_read_as_go_durations() -> None:
    config = parse_configuration("objectRetentionPolicies: {workloads: {afterFinished: 1h30m}}")
    assert isinstance(config, Configuration)
    assert (
        config.workload_retention.after_finished,
        config.workload_retention.after_deactivated_by_kueue,
    ) == (
        5400.0,
        None,
    )
