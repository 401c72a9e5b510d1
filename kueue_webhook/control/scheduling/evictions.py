"""An eviction written: how its Evicted condition is worded, Kueue's events and metrics, and the
deactivation a Rejected admission check asks for.

The scheduling loop writes the Evicted condition (``SchedulerLoop._evict``); what follows from a written
eviction is here, so that the loop keeps to feeding the core and writing its decisions.
"""

from __future__ import annotations

import logging
from typing import Any

from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.milestones import count_eviction
from kueue_webhook.core.decisions import DEACTIVATED, Evict
from kueue_webhook.core.scheduler import SchedulerState

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.scheduler")


def evicted_condition(decision: Evict) -> tuple[str, str]:
    """(reason, message) of the Evicted condition. A deactivating eviction (a Rejected check) is worded as
    Kueue's deactivation: ``DeactivatedDueTo<cause>``, "The workload is deactivated due to <why>"."""
    if decision.deactivate:
        return (
            f"{DEACTIVATED}DueTo{decision.reason}",
            f"The workload is deactivated due to {decision.message}",
        )
    return decision.reason, decision.message


def counted_as(decision: Evict) -> tuple[str, str]:
    """The (reason, underlying cause) Kueue counts the eviction under: ``Deactivated`` and the check's
    reason for a rejected admission check, else the eviction's reason."""
    return ("Deactivated", decision.reason) if decision.deactivate else (decision.reason, "")


def record_eviction(context: ControlContext, state: SchedulerState, workload: JSON, decision: Evict) -> None:
    """Kueue's events and metrics of an eviction (pkg/workload/evict and the preemptor's
    IssuePreemptions): ``EvictedDueTo<reason>`` on the Workload, and for a preemption ``Preempted`` on
    it and ``PreemptedWorkload`` on the preemptor, each naming both effective priorities."""
    role = context.metrics.role
    count_eviction(context, workload, *counted_as(decision))
    context.events.record(
        workload, type="Normal", reason=f"EvictedDueTo{decision.reason}", message=decision.message
    )
    if decision.deactivate:
        context.events.record(
            workload,
            type="Warning",
            reason="AdmissionCheckRejected",
            message=f"Deactivated due to {decision.message}",
        )
    if not decision.preemption_reason:
        return
    context.metrics.preempted_workloads.labels(
        decision.preempting_cluster_queue, decision.preemption_reason, role
    ).inc()
    target = state.workload(str(decision.workload))
    target_priority = target.priority if target is not None else 0
    preemptor_priority = 0
    preemptor: JSON | None = None
    if decision.preemptor is not None:
        info = state.workload(str(decision.preemptor))
        preemptor_priority = info.priority if info is not None else 0
        namespace, _, name = str(decision.preemptor).partition("/")
        preemptor = context.store.get(WORKLOADS, name, namespace)
    priorities = (
        f"preemptor effective priority: {preemptor_priority} (base: {preemptor_priority}, boost: 0); "
        f"preemptee effective priority: {target_priority} (base: {target_priority}, boost: 0)"
    )
    context.events.record(
        workload, type="Normal", reason="Preempted", message=f"{decision.message}; {priorities}"
    )
    if preemptor is not None:
        uid = (workload.get("metadata") or {}).get("uid", "")
        context.events.record(
            preemptor,
            type="Normal",
            reason="PreemptedWorkload",
            message=(
                f"Preempted workload {decision.workload} (UID: {uid}) in ClusterQueue "
                f"{decision.cluster_queue}; {priorities}"
            ),
        )


async def deactivate(context: ControlContext, workload: JSON, key: str) -> None:
    """A Rejected admission check: ``spec.active=false`` so the workload does not queue again (Kueue's
    deactivation target); a user sets it back to true to retry."""
    if not context.is_leader():
        return
    try:
        await context.writer.patch(WORKLOADS, workload, {"spec": {"active": False}}, patch_type="merge")
    except NotLeader:
        return  # not sent: said once, by the elector
    except Exception as exc:
        log.warning("deactivation write failed", extra={"workload": key, "error": repr(exc)})
