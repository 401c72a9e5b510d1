"""Kueue's PodsReady rules as pure functions: is a Job running, what the Workload's PodsReady condition says,
when an admitted Workload that is not ready times out, and how long it then waits before queueing again.

Kueue spreads these over its job reconciler (``generatePodsReadyCondition`` in jobframework), the batch
Job integration (``Job.PodsReady``), the workload controller (``admittedNotReadyWorkload``,
``triggerDeactivation``, ``UpdateRequeueState``) and the scheduler cache
(``podsReadyForAllAdmittedWorkloads``). They are gathered here, free of clocks and I/O: every function is
given what it needs (``now`` in seconds since the epoch) so the timers that act on them
(``kueue_webhook.control.scheduling.pods_ready_timers``) stay thin and the rules are testable without waiting.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kueue_webhook.api.conditions import condition_of, is_true
from kueue_webhook.api.config import WaitForPodsReady
from kueue_webhook.api.integrations.pod_groups import IS_GROUP_WORKLOAD_ANNOTATION
from kueue_webhook.api.objects.common import parse_timestamp
from kueue_webhook.api.objects.workloads import has_quota_reservation

__all__ = [
    "BLOCKED_MESSAGE",
    "NOT_READY_MESSAGE",
    "PODS_READY",
    "PODS_READY_TIMEOUT",
    "READY_MESSAGE",
    "RECOVERY_MESSAGE",
    "WAITING_FOR_PODS_READY",
    "WAIT_FOR_START",
    "Timeout",
    "admission_blocked",
    "backoff_ends",
    "backoff_seconds",
    "desired_pods_ready",
    "exceeds_requeuing_limit",
    "job_pods_ready",
    "not_ready_timeout",
    "requeue_state_after_timeout",
    "rfc3339",
    "timeout_message",
    "tracks_pods_ready",
    "waiting_for_backoff",
]

JSON = Mapping[str, Any]
PODS_READY = "PodsReady"
#: the Evicted reason (kueue.WorkloadEvictedByPodsReadyTimeout)
PODS_READY_TIMEOUT = "PodsReadyTimeout"
WAIT_FOR_START = "WaitForStart"
WAIT_FOR_RECOVERY = "WaitForRecovery"
STARTED = "Started"
RECOVERED = "Recovered"
# The condition messages of Kueue's generatePodsReadyCondition, which users and tools match on.
NOT_READY_MESSAGE = "Not all pods are ready or succeeded"
RECOVERY_MESSAGE = "At least one pod has failed, waiting for recovery"
READY_MESSAGE = "All pods reached readiness and the workload is running"
#: QuotaReserved=False message while blockAdmission keeps a workload waiting (Kueue's
#: waitForPodsReadyIfNeeded)
BLOCKED_MESSAGE = "waiting for all admitted workloads to be in PodsReady condition"
#: QuotaReserved=False reason while blockAdmission keeps a workload waiting
WAITING_FOR_PODS_READY = "WaitingForPodsReady"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def job_pods_ready(job: JSON) -> bool:
    """Kueue's batch ``Job.PodsReady``: ready + succeeded (counted or not yet) reach the pods the Job runs at
    once, ``min(parallelism, completions)`` (parallelism defaults to 1)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = spec.get("parallelism")
    wanted = parallelism if isinstance(parallelism, int) else 1
    completions = spec.get("completions")
    if isinstance(completions, int) and completions < wanted:
        wanted = completions
    uncounted = (status.get("uncountedTerminatedPods") or {}).get("succeeded") or []
    done = _int(status.get("ready")) + _int(status.get("succeeded")) + len(uncounted)
    return done >= wanted


def tracks_pods_ready(workload: JSON, config: WaitForPodsReady, kinds: Collection[str] = ("Job",)) -> bool:
    """Whether the Workload carries PodsReady: waitForPodsReady is on and an object of a queued kind owns it
    (``kinds``: the enabled integrations that say when their pods are ready; Kueue's job reconciler is what
    sets the condition, so a Workload created on its own gets none from Kueue)."""
    if not config.enable:
        return False
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    if annotations.get(IS_GROUP_WORKLOAD_ANNOTATION) == "true":
        return "Pod" in kinds  # a pod group's Workload is owned by its pods, none of them its controller
    for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref.get("kind") in kinds
    return False


def desired_pods_ready(workload: JSON, *, pods_ready: bool) -> tuple[str, str, str]:
    """(status, reason, message) of PodsReady as Kueue's ``generatePodsReadyCondition`` derives it: False
    WaitForStart until admitted and running; True Started once the pods are ready (Recovered after a
    recovery); a ready workload whose pods fall back below the count waits False WaitForRecovery."""
    if not is_true(workload, "Admitted"):
        return "False", WAIT_FOR_START, NOT_READY_MESSAGE
    current = condition_of(workload, PODS_READY)
    if pods_ready:
        recovering = current is not None and current.get("reason") in (WAIT_FOR_RECOVERY, RECOVERED)
        return "True", RECOVERED if recovering else STARTED, READY_MESSAGE
    if current is not None and (
        current.get("status") == "True" or current.get("reason") == WAIT_FOR_RECOVERY
    ):
        return "False", WAIT_FOR_RECOVERY, RECOVERY_MESSAGE
    return "False", WAIT_FOR_START, NOT_READY_MESSAGE


@dataclass(frozen=True, slots=True)
class Timeout:
    """An admitted, not-ready Workload's deadline: ``at`` (epoch seconds) and the underlying cause Kueue
    records with the eviction (WaitForStart, or WaitForRecovery after it had been ready)."""

    at: float
    cause: str


def not_ready_timeout(workload: JSON, config: WaitForPodsReady) -> Timeout | None:
    """When an admitted Workload that is not ready must be evicted (Kueue's ``admittedNotReadyWorkload``):
    ``timeout`` after Admitted turned True while it waits to start, ``recoveryTimeout`` after PodsReady
    turned False while it waits to recover (a recovery timeout of 0 disables that). None: no deadline
    (not enabled, not admitted, ready, deactivated, already evicted, finished)."""
    if not config.enable or not is_true(workload, "Admitted"):
        return None
    if is_true(workload, "Evicted") or is_true(workload, "Finished"):
        return None
    if (workload.get("spec") or {}).get("active") is False:
        return None
    current = condition_of(workload, PODS_READY)
    if current is not None and current.get("status") == "True":
        return None
    if current is None or current.get("reason") in (WAIT_FOR_START, "PodsReady"):
        admitted = condition_of(workload, "Admitted") or {}
        return Timeout(
            parse_timestamp(admitted.get("lastTransitionTime")) + config.timeout_seconds, WAIT_FOR_START
        )
    recovery = config.recovery_timeout_seconds
    if recovery is None:  # Kueue's defaulting: recoveryTimeout defaults to timeout
        recovery = config.timeout_seconds
    if current.get("reason") == WAIT_FOR_RECOVERY and recovery:
        return Timeout(parse_timestamp(current.get("lastTransitionTime")) + recovery, WAIT_FOR_RECOVERY)
    return None


def timeout_message(namespace: str, name: str) -> str:
    """The Evicted message of a PodsReady timeout (Kueue names the workload's namespace/name)."""
    return f"Exceeded the PodsReady timeout {namespace}/{name}"


def requeue_count(workload: JSON) -> int:
    return _int(((workload.get("status") or {}).get("requeueState") or {}).get("count"))


def exceeds_requeuing_limit(workload: JSON, config: WaitForPodsReady) -> bool:
    """Kueue's ``triggerDeactivation``: one more requeue would pass ``backoffLimitCount`` (None: no limit),
    so the Workload is deactivated instead of evicted and requeued again."""
    limit = config.requeuing_strategy.backoff_limit_count
    return limit is not None and requeue_count(workload) + 1 > limit


def backoff_seconds(count: int, *, base: int, maximum: int) -> float:
    """The n-th requeue's delay, ``base * 2**(n-1)`` capped at ``maximum`` (Kueue's ``UpdateRequeueState``
    with a wait.Backoff of factor 2, where a cap of 0 means none; its 0.01% random jitter is left out so
    the schedule is exact)."""
    if count <= 0:
        return 0.0
    delay = base * 2 ** min(count - 1, 62)
    return float(min(delay, maximum) if maximum > 0 else delay)


def rfc3339(moment: float) -> str:
    """``metav1.Time`` text of an epoch moment (whole seconds, as the API server keeps it)."""
    return datetime.fromtimestamp(int(moment), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def requeue_state_after_timeout(workload: JSON, config: WaitForPodsReady, *, now: float) -> dict[str, Any]:
    """``status.requeueState`` after one more PodsReady timeout: the count goes up by one and ``requeueAt``
    moves to now + the backoff for that count, never earlier than a requeueAt already set (Kueue's
    ``SetRequeueState`` keeps the later one)."""
    count = requeue_count(workload) + 1
    strategy = config.requeuing_strategy
    at = now + backoff_seconds(
        count, base=strategy.backoff_base_seconds, maximum=strategy.backoff_max_seconds
    )
    existing = ((workload.get("status") or {}).get("requeueState") or {}).get("requeueAt")
    if parse_timestamp(existing) > at:
        return {"count": count, "requeueAt": existing}
    return {"count": count, "requeueAt": rfc3339(at)}


def waiting_for_backoff(workload: JSON) -> bool:
    """Evicted by a PodsReady timeout and not requeued yet (Requeued=False, reason PodsReadyTimeout): the
    Workload sits out its backoff and is not admitted meanwhile."""
    requeued = condition_of(workload, "Requeued")
    return (
        requeued is not None
        and requeued.get("status") == "False"
        and requeued.get("reason") == PODS_READY_TIMEOUT
    )


def backoff_ends(workload: JSON) -> float | None:
    """When a Workload waiting out its backoff queues again (``status.requeueState.requeueAt``; an absent one
    means now: Kueue requeues at once); None when it is not waiting."""
    if not waiting_for_backoff(workload):
        return None
    return parse_timestamp(((workload.get("status") or {}).get("requeueState") or {}).get("requeueAt"))


def admission_blocked(workloads: Iterable[JSON], config: WaitForPodsReady) -> bool:
    """blockAdmission (Kueue's ``podsReadyForAllAdmittedWorkloads``): while any Workload holding a quota
    reservation is not PodsReady=True, no other Workload is admitted. Finished Workloads hold no quota."""
    if not (config.enable and config.block_admission):
        return False
    for workload in workloads:
        if not has_quota_reservation(workload):
            continue
        if is_true(workload, "Finished"):
            continue
        if not is_true(workload, PODS_READY):
            return True
    return False
