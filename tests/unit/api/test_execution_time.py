"""A Workload's time limit, Kueue's reconcileMaxExecutionTime and SyncAdmittedCondition's accumulation."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.execution_time import accumulated_after_admission, deadline, exceeded_event_message
from kueue_webhook.api.objects.common import parse_timestamp
from kueue_webhook.control.output.conditions import released_status

JSON = dict[str, Any]
ADMITTED_AT = "2026-11-26T10:00:00Z"
T0 = parse_timestamp(ADMITTED_AT)


def admitted(limit: int | None = 600, *, accumulated: int | None = None, **conditions: str) -> JSON:
    spec: JSON = {"queueName": "q"}
    if limit is not None:
        spec["maximumExecutionTimeSeconds"] = limit
    status: JSON = {
        "admission": {"clusterQueue": "cq"},
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "lastTransitionTime": ADMITTED_AT,
            },
            {"type": "Admitted", "status": "True", "reason": "Admitted", "lastTransitionTime": ADMITTED_AT},
            *({"type": kind, "status": value, "reason": kind} for kind, value in conditions.items()),
        ],
    }
    if accumulated is not None:
        status["accumulatedPastExecutionTimeSeconds"] = accumulated
    return {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": status}


def test_time_is_up_the_limit_after_admission_less_what_earlier_admissions_ran() -> None:
    assert deadline(admitted(600)) == T0 + 600
    assert deadline(admitted(600, accumulated=200)) == T0 + 400
    assert exceeded_event_message(admitted(600)) == "The maximum execution time (600s) exceeded"


def test_nothing_is_due_without_a_limit_an_admission_or_once_evicted_finished_or_inactive() -> None:
    assert deadline(admitted(None)) is None
    assert deadline(admitted(600, Evicted="True")) is None
    assert deadline(admitted(600, Finished="True")) is None
    inactive = admitted(600)
    inactive["spec"]["active"] = False
    assert deadline(inactive) is None
    pending = admitted(600)
    pending["status"]["conditions"][1]["status"] = "False"
    assert deadline(pending) is None


def test_an_admission_that_ends_adds_its_whole_seconds_to_the_accumulated_time() -> None:
    assert accumulated_after_admission(admitted(600), T0 + 90.7) == 90
    assert accumulated_after_admission(admitted(600, accumulated=30), T0 + 90) == 120
    released = released_status(
        admitted(600, accumulated=30), reason="Pending", message="", now="2026-11-26T10:01:30Z"
    )
    assert released["accumulatedPastExecutionTimeSeconds"] == 120
    assert released["admission"] is None


def test_releasing_a_workload_that_was_never_admitted_adds_no_time() -> None:
    reserved_only = admitted(600)
    reserved_only["status"]["conditions"][1]["status"] = "False"
    assert accumulated_after_admission(reserved_only, T0 + 90) is None
    assert "accumulatedPastExecutionTimeSeconds" not in released_status(
        reserved_only, reason="Pending", message="", now="2026-11-26T10:01:30Z"
    )
