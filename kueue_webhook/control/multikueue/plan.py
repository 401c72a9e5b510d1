"""What to do next for one manager Workload and its copies in the workers: ``plan_dispatch``, the decision
half of Kueue's MultiKueue workload reconciler (``reconcileGroup``), pure.

The input is the group as it is now: the manager's Workload, its MultiKueue check's state, the copy in
each reachable worker of the check's config (None: no copy there) and how long each unreachable one has
been so. The output is one ``Plan``: copies to delete and to create, the worker whose job to create or
read back, and what to write on the manager's Workload. The rules, in Kueue's order:

1. a manager Workload deleted, finished or without a reservation has no copies left anywhere;
2. a copy ``Finished`` finishes the manager's Workload (its job's status read back first), unless it was
   finished as ``OutOfSync`` with its job, which sends the check to ``Retry`` instead;
3. a copy ``Evicted`` in its worker: if the manager evicted its Workload too, the job's status is read
   back (until the pods are gone); otherwise a ``Ready`` check goes to ``Retry`` ("Workload evicted on
   worker cluster ...") and the Workload is admitted again elsewhere;
4. a copy whose pod sets no longer match the manager's is deleted; a copy whose priority no longer
   matches a changed WorkloadPriorityClass priority of the manager's is given it (Kueue's
   ``PriorityChanged``: ``spec.priorityClassRef`` and ``spec.priority``);
5. the copy admitted first (``Admitted=True``, earliest transition) wins: every other copy is deleted,
   its job is created or read back, and the check turns ``Ready`` ("The workload was admitted on "w"")
   with ``status.clusterName`` set. Once ``clusterName`` is set only that worker's copy can win (a stale
   copy left in a worker that was unreachable while the Workload moved is deleted when it is seen again:
   never active in two workers). A manager eviction while admitted deactivates the winning copy
   (``spec.active=false``), so the worker stops the job and its status (no pods left) flows back;
6. no copy admitted while the check is ``Ready``: the winner's worker unreachable for less than the
   worker-lost timeout is waited for; after it, or when its copy is gone, the check goes to ``Retry``
   ("Admitting remote lost" / "Admitting remote no longer exists"), which re-queues the Workload;
7. a ``Pending`` check with no cluster chosen nominates the workers (AllAtOnce: every reachable one, in
   name order, into ``status.nominatedClusterNames``) once every other check is ``Ready``, creates the
   copy in each nominated worker that has none and deletes copies elsewhere. A Workload of an object with
   several (a LeaderWorkerSet's group) waits until all of them exist and the lowest group's has its worker,
   then goes only there (Kueue's component Workloads).

A Workload whose check goes to ``Retry`` is evicted by the scheduler; its manager job is suspended and its
reservation released once the job shows no active pods. Only the worker's job had pods: when the worker
can no longer say so (lost, or its copy gone), ``reset_job_activity`` asks to zero the counts read back
before, so the reservation is released (the manager's job never ran anything).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.integrations.leaderworkersets import workload_index
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.control.output.conditions import find, is_true

JSON = dict[str, Any]

ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


@dataclass(frozen=True, slots=True)
class Group:
    """One manager Workload and what the workers of its check's config hold for it."""

    local: Mapping[str, Any]
    check: str
    #: reachable worker -> its copy of the Workload (None: none there)
    remotes: Mapping[str, Mapping[str, Any] | None]
    #: unreachable worker -> seconds it has been so
    unreachable: Mapping[str, float] = field(default_factory=dict)
    #: the manager's Workload is gone or being deleted
    deleted: bool = False
    #: the one worker it may be sent to: where the other Workloads of its object went (a LeaderWorkerSet's
    #: groups run in one worker); None: any
    bound_to: str | None = None
    #: not to be sent anywhere yet: not all of its object's Workloads exist, or the lowest of them has not
    #: found its worker (Kueue's primary component Workload nominates first)
    hold: bool = False


@dataclass(slots=True)
class Plan:
    delete: list[str] = field(default_factory=list)
    create: list[str] = field(default_factory=list)
    #: worker whose copy gets ``spec.active=false`` (the manager evicted the Workload)
    deactivate: str | None = None
    #: workers whose copy gets the manager's ``spec.priorityClassRef`` and ``spec.priority``
    update_priority: list[str] = field(default_factory=list)
    #: worker whose job is created (if missing) and read back
    sync_job: str | None = None
    #: new ``status.nominatedClusterNames`` of the manager's Workload
    nominate: list[str] | None = None
    #: (state, message) of the check, and the ``status.clusterName`` that goes with a Ready one
    check: tuple[str, str] | None = None
    cluster_name: str | None = None
    #: (reason, message) to finish the manager's Workload with
    finish: tuple[str, str] | None = None
    reset_job_activity: bool = False
    #: seconds after which to look again (a worker-lost timeout running)
    requeue_after: float | None = None


def check_state(workload: Mapping[str, Any], check: str) -> JSON | None:
    for state in (workload.get("status") or {}).get("admissionChecks") or []:
        if isinstance(state, dict) and state.get("name") == check:
            return state
    return None


def cluster_name(workload: Mapping[str, Any]) -> str:
    return str((workload.get("status") or {}).get("clusterName") or "")


def _first_with(remotes: Mapping[str, Mapping[str, Any] | None], kind: str) -> tuple[str, JSON] | None:
    """The worker whose copy has ``kind``=True since the earliest (Kueue's ``bestMatchByCondition``)."""
    best: tuple[str, str, JSON] | None = None
    for worker in sorted(remotes):
        remote = remotes[worker]
        condition = find(((remote or {}).get("status") or {}).get("conditions"), kind)
        if condition is None or condition.get("status") != "True":
            continue
        since = str(condition.get("lastTransitionTime") or "")
        if best is None or since < best[1]:
            best = (worker, since, dict(condition))
    return None if best is None else (best[0], best[2])


def _out_of_sync(local: Mapping[str, Any], remote: Mapping[str, Any]) -> bool:
    """The copy asks for other pods than the manager's Workload (Kueue's ``isRemoteSpecOutOfSync``)."""
    return (local.get("spec") or {}).get("podSets") != (remote.get("spec") or {}).get("podSets")


#: Kueue's WorkloadPriorityClass and PriorityClass references (group, kind)
_WORKLOAD_PRIORITY_CLASS = ("kueue.x-k8s.io", "WorkloadPriorityClass")
_POD_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")


def _priority_ref(workload: Mapping[str, Any]) -> tuple[str, str, str]:
    ref = (workload.get("spec") or {}).get("priorityClassRef") or {}
    return (str(ref.get("group") or ""), str(ref.get("kind") or ""), str(ref.get("name") or ""))


def priority_changed(local: Mapping[str, Any], remote: Mapping[str, Any]) -> bool:
    """The manager's Workload has a priority its copy lacks (Kueue's ``PriorityChanged(local, remote)``):
    only between WorkloadPriorityClass priorities (a pod PriorityClass's cannot change), when the class
    was replaced or the priority differs."""
    group, kind, name = _priority_ref(local)
    if (group, kind) == _POD_PRIORITY_CLASS or _priority_ref(remote)[:2] != _WORKLOAD_PRIORITY_CLASS:
        return False
    remote_name = _priority_ref(remote)[2]
    if remote_name and name != remote_name:
        return True
    return (local.get("spec") or {}).get("priority") != (remote.get("spec") or {}).get("priority")


def plan_dispatch(group: Group, *, worker_lost_timeout: float, dispatcher: str = ALL_AT_ONCE) -> Plan:
    plan = Plan()
    local = group.local
    remotes = dict(group.remotes)
    present = [worker for worker in sorted(remotes) if remotes[worker] is not None]
    state = check_state(local, group.check)
    if state is None or state.get("state") == "Rejected":
        if group.deleted:
            plan.delete = present
        return plan
    if group.deleted or is_true(local, "Finished") or not has_quota_reservation(local):
        plan.delete = present
        if group.unreachable and not group.deleted:
            plan.requeue_after = worker_lost_timeout  # what they hold is deleted once they are back
        return plan
    chosen = cluster_name(local)
    if chosen:
        # only the chosen worker's copy speaks for the Workload; any other is stale
        plan.delete = [worker for worker in present if worker != chosen]
        remotes = {worker: remote for worker, remote in remotes.items() if worker == chosen}
    finished = _first_with(remotes, "Finished")
    if finished is not None:
        worker, condition = finished
        if condition.get("reason") == "OutOfSync":
            if is_true(
                local, "Evicted"
            ):  # sent to Retry: its job's stopped status is read back until released
                return _evicted_on_manager(plan, group, remotes, worker_lost_timeout)
            if state.get("state") == "Ready":
                plan.check = (
                    "Retry",
                    f'Remote workload on worker cluster "{worker}" is out of sync with its user job, '
                    "resetting for re-dispatch",
                )
            return plan
        plan.sync_job = worker
        plan.finish = (str(condition.get("reason") or "Succeeded"), str(condition.get("message") or ""))
        return plan
    if is_true(local, "Evicted"):
        return _evicted_on_manager(plan, group, remotes, worker_lost_timeout)
    evicted = _first_with(remotes, "Evicted")
    if evicted is not None:
        worker, _ = evicted
        if state.get("state") == "Ready":
            plan.check = (
                "Retry",
                f'Workload evicted on worker cluster: "{chosen or worker}", resetting for re-admission',
            )
            return plan
    for worker in sorted(remotes):
        remote = remotes[worker]
        if remote is not None and _out_of_sync(local, remote):
            plan.delete.append(worker)
            remotes[worker] = None
        elif remote is not None and priority_changed(local, remote):
            plan.update_priority.append(worker)
    admitted = _first_with(remotes, "Admitted")
    if admitted is None and state.get("state") == "Ready":
        if chosen and chosen in group.unreachable:
            remaining = worker_lost_timeout - group.unreachable[chosen]
            if remaining > 0:
                plan.requeue_after = remaining
                return plan
            plan.check = ("Retry", "Admitting remote lost")
        elif not chosen:
            plan.check = ("Retry", "Admission check is Ready but no admitting cluster is recorded")
        else:
            plan.check = ("Retry", "Admitting remote no longer exists")
        return plan
    if admitted is not None:
        worker, _ = admitted
        plan.delete.extend(w for w in sorted(remotes) if w != worker and remotes[w] is not None)
        plan.sync_job = worker
        if state.get("state") not in ("Retry", "Rejected") and (
            state.get("state") != "Ready" or chosen != worker
        ):
            plan.check = ("Ready", f'The workload was admitted on "{worker}"')
            plan.cluster_name = worker
        plan.requeue_after = worker_lost_timeout
        return plan
    if state.get("state") != "Pending" or chosen:
        return plan
    others = [
        s
        for s in (local.get("status") or {}).get("admissionChecks") or []
        if s.get("name") != group.check and s.get("state") != "Ready"
    ]
    if others or group.hold:
        return plan
    nominated = _nominate(local, sorted(group.remotes), dispatcher)
    if group.bound_to is not None:
        nominated = [group.bound_to] if group.bound_to in group.remotes else []
    current = list((local.get("status") or {}).get("nominatedClusterNames") or [])
    if set(nominated) != set(current):
        plan.nominate = nominated
    for worker in sorted(remotes):
        if worker in nominated and remotes[worker] is None:
            plan.create.append(worker)
        elif worker not in nominated and remotes[worker] is not None and worker not in plan.delete:
            plan.delete.append(worker)
    return plan


def _evicted_on_manager(
    plan: Plan, group: Group, remotes: dict[str, Mapping[str, Any] | None], worker_lost_timeout: float
) -> Plan:
    """The manager evicted its Workload (preempted, a check in Retry...) and waits for its job to show no
    active pods. The copy that ran it is deactivated and its job's status read back until the worker has
    stopped it; with no such copy in sight, the counts read back before are zeroed, once no worker that
    may still run it has been unreachable for less than the worker-lost timeout (until then it waits)."""
    speaking = _first_with(remotes, "Evicted") or _first_with(remotes, "Admitted")
    if speaking is not None:
        worker, _ = speaking
        remote = remotes[worker] or {}
        if not is_true(remote, "Evicted") and (remote.get("spec") or {}).get("active", True) is not False:
            plan.deactivate = worker
        plan.sync_job = worker
        return plan
    waiting = [
        worker_lost_timeout - lost for lost in group.unreachable.values() if lost < worker_lost_timeout
    ]
    if waiting:
        plan.requeue_after = min(waiting)
        return plan
    plan.delete = sorted(set(plan.delete) | set(group.remotes))
    plan.reset_job_activity = True
    return plan


def component_binding(
    local: Mapping[str, Any], siblings: Sequence[Mapping[str, Any]], *, expected: int
) -> tuple[str | None, bool]:
    """``(bound_to, hold)`` for one of several Workloads of an object (a LeaderWorkerSet's groups, Kueue's
    component Workloads): the worker any of the others went to, and whether to wait, while fewer than
    ``expected`` of them exist or, with none gone anywhere, one of a lower group index (the primary, which
    nominates first) exists."""
    bound = next((cluster_name(s) for s in siblings if cluster_name(s)), None)
    index = workload_index(local)
    indices = [found for s in siblings if (found := workload_index(s)) is not None]
    primary = index is not None and all(other >= index for other in indices)
    hold = len(siblings) + 1 < expected or (bound is None and not primary)
    return bound, hold


def next_nomination(nominated: Sequence[str], clusters: Sequence[str], step: int) -> list[str]:
    """Kueue's Incremental dispatcher's next round: the config's workers not nominated yet, in name order,
    ``step`` of them (``incrementalDispatcherConfig.stepSize``, 3 by default), added to those nominated
    before; empty when every worker has been nominated."""
    remaining = sorted(set(clusters) - set(nominated))
    return [*nominated, *remaining[: max(step, 1)]] if remaining else []


def wants_nomination(workload: Mapping[str, Any], check: str) -> bool:
    """Whether a dispatcher may nominate workers now (Kueue's ``ShouldSkipClusterNomination`` negated,
    and a reservation held by a Workload not finished)."""
    state = check_state(workload, check) or {}
    return (
        state.get("state") == "Pending"
        and not cluster_name(workload)
        and has_quota_reservation(workload)
        and not is_true(workload, "Finished")
    )


def _nominate(local: Mapping[str, Any], reachable: list[str], dispatcher: str) -> list[str]:
    """The workers that get a copy: every reachable one (AllAtOnce); for another dispatcher, the ones it
    wrote into ``status.nominatedClusterNames``."""
    if dispatcher == ALL_AT_ONCE:
        return reachable
    return [str(w) for w in (local.get("status") or {}).get("nominatedClusterNames") or []]
