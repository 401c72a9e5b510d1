"""The pod group's side of admission: ``plan_group`` is ``plan_job`` for pods queued together.

A group has no object of its own, so the plan reads all its pods at once and returns the one step that
brings them and the group's Workload closer to agreement, in the order of Kueue's jobframework reconciler as
its pod integration follows it (``pkg/controller/jobs/pod``): pods that are gone or finished let go of their
finalizer once nothing needs to see them; pods beyond what the group asked for are deleted (Kueue's excess
pods: beyond the total count before the Workload exists, beyond each role's pod set count after); a group
that has finished finishes its Workload; the Workload is created once the group is complete; an admitted
Workload ungates the pods still gated (each with the flavors of its role's pod set), then says with PodsReady
whether they all are ready (Kueue's group ``PodsReady``); an evicted or unreserved Workload deletes the pods
that run (gated and finished pods are left), each first marked ``TerminationTarget`` with Kueue's stop
reason, and its reservation is released once none is Running.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.admitted_pods import admitted_pod_marks
from kueue_webhook.api.finalizers import has_finalizer, is_deleting
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.engine import NO_CLASSES, FlavorConflict, PriorityClasses, missing_class
from kueue_webhook.api.integrations.managed import is_managed
from kueue_webhook.api.integrations.pod_groups import (
    IS_GROUP_WORKLOAD_ANNOTATION,
    excess_pods,
    group_finished,
    group_gates,
    group_name,
    group_pods_ready,
    group_workload,
    is_serving,
    role_hash,
    terminated,
)
from kueue_webhook.api.multikueue import runs_in_worker
from kueue_webhook.api.objects import ResourceFlavor, has_quota_reservation
from kueue_webhook.api.pods_ready import PODS_READY, desired_pods_ready
from kueue_webhook.api.topology_pods import topology_starts
from kueue_webhook.control.jobs.job_plan import (
    MISSING_WORKLOAD,
    NOT_ADMITTED,
    WORKLOAD_DELETED,
    AwaitPriorityClass,
    CreateWorkload,
    DeleteObjects,
    FinishWorkload,
    ReleaseObjects,
    ReleaseReservation,
    RemoveExcessPods,
    RemoveFinalizer,
    StartPods,
    Step,
    SyncPodsReady,
    UpdateAdmissionGates,
    assigned_flavors,
    evicted_message,
    evicted_stop_reason,
    holds_finalizer,
)
from kueue_webhook.control.jobs.queueing import GROUP_KEY, Host, may_queue_in, namespace_labels
from kueue_webhook.control.kube.kinds import WORKLOADS, kind_of
from kueue_webhook.control.output.conditions import find, is_true

__all__ = ["group_of_workload", "plan_group", "reconcile_group"]

JSON = dict[str, Any]


def _running(pods: Sequence[JSON]) -> list[JSON]:
    """Pods started and not finished: what a stop deletes (Kueue skips gated and terminated pods)."""
    return [p for p in pods if not engine.is_suspended(POD, p) and not terminated(p) and not is_deleting(p)]


def _excess(pods: Sequence[JSON], workload: JSON | None) -> list[JSON]:
    """The excess pods with something left to do (a finalizer to drop, a deletion to send). A serving
    group's Workload keeps its first size while its StatefulSet may have grown, so only its pods beyond the
    total count are judged, before the Workload exists."""
    if workload is not None and pods and is_serving(pods[0]):
        return []
    pod_sets = None if workload is None else ((workload.get("spec") or {}).get("podSets") or [])
    return [
        dict(p)
        for p in excess_pods(pods, pod_sets)
        if holds_finalizer(dict(p), POD) or not is_deleting(dict(p))
    ]


def plan_group(
    name: str,
    pods: Sequence[JSON],
    workload: JSON | None,
    *,
    flavors: Callable[[str], ResourceFlavor | None],
    classes: PriorityClasses = NO_CLASSES,
    pods_ready: bool = False,
    dispatched: bool = False,
    label_keys: tuple[str, ...] = (),
) -> Step | None:
    """The next step for the group ``name`` (its pods, deleted ones included) and its Workload.
    ``pods_ready``: waitForPodsReady is on, so an admitted group's Workload carries PodsReady.
    ``dispatched``: the Workload runs in a MultiKueue worker, so its pods are never ungated here (Kueue's
    ``ShouldSkipLocalExecution``); their status is the copies' read back. ``label_keys``: the pods'
    labels a new Workload gets (``labelKeysToCopy``)."""
    live = [p for p in pods if not is_deleting(p)]
    finished, _, message = group_finished(live)
    done = workload is not None and is_true(workload, "Finished")
    releasable = [
        p
        for p in pods
        if holds_finalizer(p, POD)
        and (is_deleting(p) or (terminated(p) and (done or finished or workload is None)))
    ]
    if releasable and (done or workload is None or any(is_deleting(p) for p in releasable)):
        return ReleaseObjects(tuple(releasable))
    if excess := _excess(pods, workload):
        return RemoveExcessPods(tuple(excess))
    if workload is not None and done:
        return RemoveFinalizer(workload, "finished") if has_finalizer(workload) else None
    if workload is not None and is_deleting(workload):
        if running := _running(live):
            return DeleteObjects(tuple(running), WORKLOAD_DELETED, "WorkloadDeleted")
        return RemoveFinalizer(workload, "deleted, its pods stopped") if has_finalizer(workload) else None
    if finished:
        return FinishWorkload(workload, "Succeeded", message) if workload is not None else None
    if workload is None:
        if running := _running(live):
            return DeleteObjects(tuple(running), MISSING_WORKLOAD, "NoMatchingWorkload")
        built = group_workload(name, live, classes, label_keys=label_keys)
        if not isinstance(built, dict):
            return None
        missing = missing_class(built, classes)
        return AwaitPriorityClass(*missing) if missing is not None else CreateWorkload(built)
    gates = group_gates(live)
    if gates is not None and gates != gates_of(workload.get("metadata")):
        return UpdateAdmissionGates(workload, gates)  # Kueue's UpdateAdmissionGatedBy
    evicted = is_true(workload, "Evicted")
    if evicted or not has_quota_reservation(workload):
        if running := _running(live):
            if evicted:
                return DeleteObjects(tuple(running), evicted_message(workload), evicted_stop_reason(workload))
            return DeleteObjects(tuple(running), NOT_ADMITTED, "NotAdmitted")
        if evicted and has_quota_reservation(workload):
            if any((p.get("status") or {}).get("phase") == "Running" for p in pods):
                return None  # pods still terminating hold the quota; their end re-triggers us
            return ReleaseReservation(workload, evicted_message(workload))
        return None
    if not is_true(workload, "Admitted"):
        return None
    if dispatched:
        return None
    if (step := _start(live, workload, flavors)) is not None or not pods_ready:
        return step
    condition = desired_pods_ready(workload, pods_ready=group_pods_ready(live))
    current = find(((workload.get("status") or {}).get("conditions")), PODS_READY) or {}
    if (current.get("status"), current.get("reason")) != condition[:2]:
        return SyncPodsReady(workload, condition)
    return None


def _age(pod: JSON) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


def _room(workload: JSON, admission: Mapping[str, Any], assigned: Mapping[str, Any]) -> dict[str, int]:
    """How many pods each pod set may run: its admitted count (``podSetAssignments[].count``, else the
    Workload's pod set count); unbounded when neither says."""
    counts: dict[str, Any] = {
        str(p.get("name") or ""): p.get("count")
        for p in (workload.get("spec") or {}).get("podSets") or []
        if isinstance(p, dict)
    }
    for assignment in admission.get("podSetAssignments") or []:
        if isinstance(assignment, dict) and isinstance(assignment.get("count"), int):
            counts[str(assignment.get("name") or "")] = assignment["count"]
    unbounded = 1 << 31
    return {name: counts[name] if isinstance(counts.get(name), int) else unbounded for name in assigned}


def _start(
    pods: Sequence[JSON], workload: JSON, flavors: Callable[[str], ResourceFlavor | None]
) -> Step | None:
    admission = (workload.get("status") or {}).get("admission") or {}
    assigned = assigned_flavors(admission, flavors, unnamed="")
    if assigned is None:
        return None  # a flavor is not in the store yet; its arrival re-triggers us

    def pod_set_of(pod: JSON) -> str | None:
        role = role_hash(pod).lower()
        if role in assigned:
            return role
        # fast-admission groups have one pod set, whatever role later pods compute
        return next(iter(assigned)) if len(assigned) == 1 else None

    room = _room(workload, admission, assigned)
    starts = topology_starts(workload)
    for pod in pods:
        name = pod_set_of(pod)
        if name is not None and not engine.is_suspended(POD, pod) and not terminated(pod):
            room[name] -= 1
    patches = []
    for pod in sorted(pods, key=_age):
        name = pod_set_of(pod)
        if not engine.is_suspended(POD, pod) or name is None:
            continue  # a pod whose role is not in the Workload waits (Kueue refuses to start it)
        if room[name] <= 0:
            continue  # never more running pods than admitted (a StatefulSet scaled past its Workload)
        room[name] -= 1
        mine = assigned[name]
        try:
            start = starts.get(name)
            patch = engine.start_patch(
                POD,
                pod,
                {"main": mine},
                topology={"main": start} if start else None,
                marks=admitted_pod_marks(workload, {"main": name}),
            )
        except FlavorConflict as exc:
            return FinishWorkload(workload, "FailedToStart", str(exc))
        patches.append((pod, patch))
    if not patches:
        return None
    return StartPods(tuple(patches), str(admission.get("clusterQueue", "")), workload)


def group_of_workload(workload: JSON | None) -> str | None:
    """The work-queue key's name of a pod group's Workload (``GROUP_KEY`` + its name), None for any other
    Workload."""
    annotations = ((workload or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(IS_GROUP_WORKLOAD_ANNOTATION) != "true":
        return None
    return GROUP_KEY + str((workload or {}).get("metadata", {}).get("name", ""))


async def reconcile_group(host: Host, integration: Integration, namespace: str, group: str) -> None:
    """``plan_group`` for the pods of ``group`` and the Workload named after it."""
    context = host.context
    configuration = context.configuration()
    labels = namespace_labels(host, namespace)
    workload = context.store.get(WORKLOADS, group, namespace)
    if workload is not None and group_of_workload(workload) is None:
        workload = None  # a Workload of that name that is not a group's: not ours to drive
    queues_here = may_queue_in(host, namespace, has_workload=workload is not None)
    pods = []
    for pod in context.store.items(kind_of(integration), namespace=namespace):
        if group_name(pod) != group:
            continue
        if holds_finalizer(pod, integration) or (
            queues_here
            and is_managed(
                pod,
                integration,
                ancestry=await host.ancestry(pod, integration),
                config=configuration,
                namespace_labels=labels,
            )
        ):
            pods.append(pod)
    inputs = host.inputs()
    step = plan_group(
        group,
        pods,
        workload,
        flavors=inputs.flavors,
        classes=inputs.priority_classes,
        pods_ready=inputs.pods_ready,
        dispatched=runs_in_worker(workload, inputs.multikueue_checks),
        label_keys=inputs.label_keys,
    )
    # a StatefulSet's Workload outlives its pods (stopped, scaled to zero): it then speaks for the group
    subject = pods[0] if pods else workload
    if step is not None and subject is not None:
        await host.execute(subject, step, integration)
