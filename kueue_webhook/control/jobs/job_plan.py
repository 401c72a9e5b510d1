"""What to do next for a queued object and its Workload: ``plan_job``, the decision half of Kueue's
jobframework reconciler, with the steps it can return.

``plan_job`` is pure: given the pair (object, Workload) as the store currently sees it, it returns the one
step that brings them closer to agreement, so each rule is a readable branch and testable without a
server. ``kueue_webhook.control.jobs.executor`` writes the steps (the pod group's and the StatefulSet's plans
return some of them too).

The rules, in Kueue's order (pkg/controller/jobframework/reconciler.go):
1. a Job that is Complete or Failed marks its Workload ``Finished`` (reason Succeeded/Failed, the Job
   condition's message) — which is what releases its quota;
2. a managed Job without a Workload gets one (owned by the Job, so deleting the Job deletes it);
3. an admitted Workload whose Job is still suspended starts the Job (suspend=false plus the flavors'
   nodeSelector/tolerations) — also the crash-recovery path when we died between the two writes. A start
   the API server refuses (a webhook's or RBAC's 403, a 400) must not look admitted silently: the Workload
   gets ``StartFailed=True`` with the server's answer and a Warning Event ``FailedToStart`` (so does the
   Job), and the start is retried with backoff; ``StartFailed`` turns False once the Job starts. A 422
   naming fields can never succeed and finishes the Workload as ``FailedToStart``, as Kueue does;
4. a running Job whose Workload holds no reservation (a user unsuspended it, or it was evicted) is
   suspended again and its pod template restored, with a ``Stopped`` Event;
5. an evicted Workload whose Job has stopped and has no active pods left (``status.active`` is 0, Kueue's
   ``IsActive``) gets its reservation cleared, with Requeued (True after a preemption) first, releasing
   the quota;
6. a suspended Job edited while waiting (parallelism, requests) gets its Workload's pod sets updated, so it
   queues for what it now asks (Kueue's "Updated not matching Workload for suspended job"), and its
   Workload follows it to another LocalQueue when its queue label changes (Kueue's QueueNameChange);
   a Job edited once its Workload holds quota (``kueue_webhook.control.jobs.workload_match``: a running Job
   whose
   ``parallelism`` was raised, an admitted one not started yet) no longer matches it: a running one is
   stopped first (Kueue's stop reason ``NoMatchingWorkload``, its templates restored from the Workload),
   then the Workload is deleted (``DeletedWorkload``), and the Job queues again with a new one for its new
   shape once its pods are gone (Kueue's ``ensureOneWorkload``). The deleted Workload keeps its quota until
   then (the finalizer rule below), so the Job never runs more than was admitted for longer than the
   stop takes;
7. with waitForPodsReady, a running Job's Workload carries PodsReady as Kueue's generatePodsReadyCondition
   derives it from the Job (``kueue_webhook.api.pods_ready``); PodsReady=False WaitForStart is written with
   the
   first pending reason or the admission and again when the reservation is released, so only the
   transitions to and from ready cost a write.

Kueue's resource-in-use finalizer (``kueue_webhook.api.finalizers``) is let go, checked before all of the
above:
- from a ``Finished`` Workload (its quota is already free);
- from a Workload being deleted, once its Job is stopped: a running Job is suspended first (``Stopped``,
  "Workload is deleted"), and — stricter than Kueue, which lets go as soon as the suspend is written —
  the finalizer stays until the Job has no active pods, as for an eviction (rule 5), so the quota is not
  handed on while those pods still run. The Workload is then gone, and the Job, still queued, gets a new
  one once it has no active pods (Kueue's ``handleJobWithNoWorkload`` waits for them too);
- from a deleted Workload whose Job is gone or being deleted, or that no Job owns (Kueue's
  ``finalizeWorkloads`` and orphaned-Workload rule): at once (the reconciler's ``release_orphan``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.admitted_pods import admitted_pod_marks
from kueue_webhook.api.finalizers import has_finalizer, is_deleting
from kueue_webhook.api.integrations import JOB, Integration, engine
from kueue_webhook.api.integrations.engine import FlavorConflict
from kueue_webhook.api.integrations.reclaimable import bounded_to_pod_sets, recorded_reclaimable
from kueue_webhook.api.objects import ResourceFlavor, has_quota_reservation
from kueue_webhook.api.pods_ready import PODS_READY, desired_pods_ready
from kueue_webhook.api.topology_pods import topology_starts
from kueue_webhook.control.jobs.workload_match import matches_workload
from kueue_webhook.control.output.conditions import find, is_true

JSON = dict[str, Any]


# -- the steps ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    body: JSON


@dataclass(frozen=True, slots=True)
class AwaitPriorityClass:
    """No Workload yet: the object names a priority class that does not exist (Kueue's reconciler fails to
    build the Workload and retries); the class's arrival reconciles the object again."""

    group: str
    name: str


@dataclass(frozen=True, slots=True)
class FinishWorkload:
    workload: JSON
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StartJob:
    patch: list[JSON]
    cluster_queue: str
    workload: JSON


@dataclass(frozen=True, slots=True)
class StopJob:
    patch: list[JSON]
    message: str
    #: sent before ``patch`` (the suspension, when a running Job's restore is a second write)
    first: tuple[JSON, ...] = ()
    #: ``patch`` restores a Job's template: clear its ``status.startTime`` first if still set (StagedStop)
    clear_start_time: bool = False


@dataclass(frozen=True, slots=True)
class ReleaseReservation:
    workload: JSON
    message: str


@dataclass(frozen=True, slots=True)
class RemoveFinalizer:
    """Nothing uses the Workload's quota any more: let the object go (if deleted) or drop the finalizer."""

    workload: JSON
    why: str


@dataclass(frozen=True, slots=True)
class SyncPodsReady:
    """waitForPodsReady: the running Job's pods became ready (or fell back): PodsReady says so."""

    workload: JSON
    condition: tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class UpdatePodSets:
    """A suspended, unadmitted Job was edited (parallelism, requests, its time limit label): its Workload
    asks for the new shape (Kueue's updateWorkloadToMatchJob replaces the whole spec)."""

    workload: JSON
    pod_sets: list[JSON]
    #: the Job's time limit now (None: none, the Workload's is removed)
    maximum_execution_time_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateReclaimablePods:
    """Some of the object's pods will never run again: its Workload's ``status.reclaimablePods`` says how
    many per pod set (Kueue's jobframework step "update reclaimable counts"), so the scheduler charges it
    for the rest only. ``counts``: what the object reports, bounded to the pod set sizes."""

    workload: JSON
    counts: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class UpdateQueueName:
    """A suspended Job moved to another LocalQueue (its queue label changed) while its Workload holds no
    quota: the Workload follows it (Kueue's QueueNameChange)."""

    workload: JSON
    queue_name: str


@dataclass(frozen=True, slots=True)
class UpdateAdmissionGates:
    """The object's admission gates changed (a controller removed its name): its Workload follows (Kueue's
    UpdateAdmissionGatedBy); "" removes the annotation."""

    workload: JSON
    gates: str


@dataclass(frozen=True, slots=True)
class DeleteWorkload:
    """The Workload no longer speaks for its stopped (or not yet started) Job: delete it, so the Job queues
    again for what it now asks (Kueue's "Deleted not matching Workload"), or, for a Job no longer queued,
    so nothing holds quota for it. Its finalizer stays until the Job has no active pods (the
    deleted-Workload rule), so its quota is handed on only then. ``message``: the ``DeletedWorkload`` Event's
    on the Job."""

    workload: JSON
    message: str


@dataclass(frozen=True, slots=True)
class DeleteObjects:
    """Stop objects that cannot be suspended again (started pods) by deleting them (Kueue's ``Pod.Stop``).
    With a ``reason`` (Kueue's stop reason: ``WorkloadDeleted``, ``WorkloadEvictedDueTo<why>``,
    ``NotAdmitted``, ``NoMatchingWorkload``) each pod is first marked with the ``TerminationTarget``
    condition saying why, as Kueue does, so whoever watches the pod sees why it goes."""

    objects: tuple[JSON, ...]
    message: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ReleaseObjects:
    """Drop the integration's own finalizer (Kueue's ``kueue.x-k8s.io/managed`` on pods) from objects whose
    end has been seen: deleted, or finished with their Workload finished."""

    objects: tuple[JSON, ...]


@dataclass(frozen=True, slots=True)
class RemoveExcessPods:
    """A group has more pods than it asked for: drop the finalizer of the excess ones and delete them, with an
    ``ExcessPodDeleted`` Event each (Kueue's ``removeExcessPods``)."""

    objects: tuple[JSON, ...]


@dataclass(frozen=True, slots=True)
class StartPods:
    """Ungate the gated pods of an admitted group, one JSON Patch each."""

    patches: tuple[tuple[JSON, list[JSON]], ...]
    cluster_queue: str
    workload: JSON


Step = (
    CreateWorkload
    | AwaitPriorityClass
    | StartPods
    | DeleteObjects
    | RemoveExcessPods
    | ReleaseObjects
    | FinishWorkload
    | StartJob
    | StopJob
    | ReleaseReservation
    | UpdatePodSets
    | UpdateQueueName
    | UpdateAdmissionGates
    | UpdateReclaimablePods
    | DeleteWorkload
    | RemoveFinalizer
    | SyncPodsReady
)

#: the Finished message of a prebuilt Workload its object no longer matches (Kueue's)
PREBUILT_OUT_OF_SYNC = "The prebuilt workload is out of sync with its user job"
#: the Stopped event's message when a Job's Workload is deleted (Kueue's StopReasonWorkloadDeleted)
WORKLOAD_DELETED = "Workload is deleted"
#: the Stopped event's message when a running pod has no Workload (Kueue's StopReasonNoMatchingWorkload)
MISSING_WORKLOAD = "Missing Workload; unable to restore pod templates"
#: the Stopped event's message when a running object no longer matches its Workload (an edit after its
#: admission: Kueue's StopReasonNoMatchingWorkload with an existing Workload)
NO_MATCHING_WORKLOAD = "No matching Workload; restoring pod templates according to existent Workload"
#: the Stopped event's message when a running object's Workload holds no quota (StopReasonNotAdmitted)
NOT_ADMITTED = "Not admitted by cluster queue"


def job_finished(job: JSON, integration: Integration = JOB) -> tuple[bool, bool, str]:
    """(finished, succeeded, message), Kueue's Finished (a Job's Complete/Failed conditions)."""
    return engine.finished(integration, job)


#: a batch/v1 Job's conditions set once its success or failure is decided, before its pods are gone and
#: ``Complete`` or ``Failed`` follows
OUTCOME_DECIDED = ("SuccessCriteriaMet", "FailureTarget")


def outcome_decided(job: JSON, integration: Integration = JOB) -> bool:
    """A Job whose outcome the Job controller has decided (``SuccessCriteriaMet`` or ``FailureTarget``),
    waiting only for its pods to be gone before it is ``Complete`` or ``Failed``.

    Its PodsReady condition is not written any more: the next step is its Workload's Finished write, and a
    PodsReady write still in flight when ``Complete`` arrives would hold that step (and the quota release)
    back by a round trip. Kueue's reconciler writes PodsReady only when it sees the Job running and not
    finished, so when it sees both updates at once it writes Finished alone too (the finished-job step
    comes before the WaitForPodsReady step in its ``ReconcileGenericJob``)."""
    if (integration.group, integration.kind) != ("batch", "Job"):
        return False
    return any(is_true(job, condition) for condition in OUTCOME_DECIDED)


def is_suspended(job: JSON, integration: Integration = JOB) -> bool:
    """Suspended, and not half-way through a stop whose restore is still to be written (Kueue's
    IsSuspended, with a Job's stopping annotation)."""
    return engine.is_suspended(integration, job)


def has_active_pods(job: JSON, integration: Integration = JOB) -> bool:
    """Pods still running or terminating: the quota they use is not free yet (Kueue's IsActive)."""
    return engine.has_active_pods(integration, job)


def holds_finalizer(obj: JSON, integration: Integration) -> bool:
    """Whether the object carries the integration's own finalizer (a queued pod's)."""
    finalizer = engine.own_finalizer(integration)
    return bool(finalizer) and finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def _stop(
    job: JSON, workload: JSON, message: str, integration: Integration, reason: str = ""
) -> StopJob | DeleteObjects:
    """Suspend the object and put back what admission changed, from the Workload's pod sets (their
    templates, and the count a partial admission reduced: Kueue's GetPodSetsInfoFromWorkload); an object
    that cannot be suspended again is deleted, marked first with Kueue's stop ``reason``."""
    if engine.stops_by_deletion(integration):
        return DeleteObjects((job,), message, reason)
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    templates = [dict(pod_set.get("template") or {}) for pod_set in pod_sets]
    patches = engine.stop_patches(integration, job, templates, _counts(pod_sets))
    restores = patches[-1] != engine.suspend_ops(integration, job)
    return StopJob(
        patches[-1],
        message,
        tuple(op for patch in patches[:-1] for op in patch),
        clear_start_time=integration.staged_stop is not None and restores,
    )


def assigned_flavors(
    admission: Mapping[str, Any], flavors: Callable[[str], ResourceFlavor | None], *, unnamed: str
) -> dict[str, list[ResourceFlavor]] | None:
    """Each pod set's flavors (by pod set name, ``unnamed`` for an assignment without one, each flavor
    once, in the order assigned) from a Workload's ``status.admission``; None while one of them is not in
    the store yet."""
    assigned: dict[str, list[ResourceFlavor]] = {}
    for assignment in admission.get("podSetAssignments") or []:
        chosen = assigned.setdefault(str(assignment.get("name") or unnamed), [])
        for flavor_name in (assignment.get("flavors") or {}).values():
            flavor = flavors(str(flavor_name))
            if flavor is None:
                return None
            if flavor not in chosen:
                chosen.append(flavor)
    return assigned


def _counts(pod_sets: list[Any]) -> dict[str, int]:
    """Pod set name → count, from a Workload's ``spec.podSets`` or ``status.admission.podSetAssignments``
    (Kueue's GetPodSetsInfoFromWorkload reads the count of each)."""
    return {
        str(p.get("name") or "main"): p["count"]
        for p in pod_sets
        if isinstance(p, dict) and isinstance(p.get("count"), int) and not isinstance(p["count"], bool)
    }


def plan_job(
    job: JSON,
    workload: JSON | None,
    *,
    flavors: Callable[[str], ResourceFlavor | None],
    classes: engine.PriorityClasses = engine.NO_CLASSES,
    pods_ready: bool = False,
    integration: Integration = JOB,
    prebuilt: bool = False,
    dispatched: bool = False,
    label_keys: tuple[str, ...] = (),
) -> Step | None:
    """The next step for a managed object of ``integration`` and its Workload (None: they agree).
    ``pods_ready``: waitForPodsReady is on, so a running object's Workload carries PodsReady (Kueue's step
    "handle WaitForPodsReady"). ``prebuilt``: the Workload was made for the object beforehand (a MultiKueue
    worker's copy), so one it no longer matches is finished as ``OutOfSync`` rather than replaced (Kueue's
    ``ensurePrebuiltWorkloadInSync``). ``dispatched``: a gated kind's Workload runs in a MultiKueue
    worker, so its admission never starts the object here (Kueue's ``ShouldSkipLocalExecution``).
    ``label_keys``: the object's labels a new Workload gets (``labelKeysToCopy``)."""
    it = integration
    finished, succeeded, message = job_finished(job, it)
    if finished and holds_finalizer(job, it) and (workload is None or is_true(workload, "Finished")):
        return ReleaseObjects((job,))
    if workload is not None and is_true(workload, "Finished"):
        return RemoveFinalizer(workload, "finished") if has_finalizer(workload) else None
    if workload is not None and is_deleting(workload):
        if not finished and not is_suspended(job, it):
            return _stop(job, workload, WORKLOAD_DELETED, it, "WorkloadDeleted")
        if has_active_pods(job, it):
            return None  # the Job's status change when its pods are gone re-triggers us
        return RemoveFinalizer(workload, "deleted, its Job stopped") if has_finalizer(workload) else None
    if finished:
        if workload is not None:
            return FinishWorkload(workload, "Succeeded" if succeeded else "Failed", message)
        return None
    if workload is None:
        if not is_suspended(job, it) and engine.stops_by_deletion(it):
            return DeleteObjects((job,), MISSING_WORKLOAD, "NoMatchingWorkload")
        if not is_suspended(job, it):
            suspend = engine.suspend_ops(it, job)
            if engine.is_stopping(it, job) and it.staged_stop is not None:
                # a half-done stop: nothing is left to restore from
                key = it.staged_stop.annotation.replace("/", "~1")
                suspend.append({"op": "remove", "path": f"/metadata/annotations/{key}"})
            return StopJob(suspend, NOT_ADMITTED)
        if has_active_pods(job, it):
            return None  # stopped, but its pods still hold what a new Workload would queue for
        body = engine.workload_for(it, job, classes, label_keys=label_keys)
        missing = engine.missing_class(body, classes)
        return AwaitPriorityClass(*missing) if missing is not None else CreateWorkload(body)
    reclaim = _reclaimable_step(job, workload, it)
    if reclaim is not None:
        return reclaim
    gates = gates_of(job.get("metadata"))
    if gates != gates_of(workload.get("metadata")):
        return UpdateAdmissionGates(workload, gates)
    admission = (workload.get("status") or {}).get("admission") or {}
    evicted = is_true(workload, "Evicted")
    if is_suspended(job, it):
        if evicted and has_quota_reservation(workload):
            if has_active_pods(job, it):
                return None  # the Job's status change when its pods are gone re-triggers us
            return ReleaseReservation(workload, evicted_message(workload))
        if has_quota_reservation(workload) and not matches_workload(job, workload, it, reserved=True):
            if prebuilt:
                # a MultiKueue manager made this Workload: finished, so the manager dispatches it again
                return FinishWorkload(workload, "OutOfSync", PREBUILT_OUT_OF_SYNC)
            # edited after its admission: it queues again as it is now
            return DeleteWorkload(workload, f"Deleted not matching Workload: {_key(workload)}")
        if is_true(workload, "Admitted") and has_quota_reservation(workload) and not evicted:
            if dispatched:
                return None  # its copy runs in the worker; this one keeps its scheduling gate
            assigned = assigned_flavors(admission, flavors, unnamed="main")
            if assigned is None:
                return None  # a flavor is not in the store yet; its arrival re-triggers us
            try:
                # a partial admission runs the admitted counts (podSetAssignments[].count)
                counts = _counts(admission.get("podSetAssignments") or [])
                patch = engine.start_patch(
                    it,
                    job,
                    assigned,
                    counts=counts,
                    topology=topology_starts(workload),
                    marks=admitted_pod_marks(workload),
                )
            except FlavorConflict as exc:
                return FinishWorkload(workload, "FailedToStart", str(exc))
            return StartJob(patch, str(admission.get("clusterQueue", "")), workload)
        if not has_quota_reservation(workload) and not matches_workload(job, workload, it, reserved=False):
            desired = engine.workload_for(it, job, classes)["spec"]
            return UpdatePodSets(workload, desired["podSets"], desired.get("maximumExecutionTimeSeconds"))
        queue = engine.queue_name(job) or ""
        if not has_quota_reservation(workload) and (workload.get("spec") or {}).get("queueName", "") != queue:
            return UpdateQueueName(workload, queue)
        return None
    if evicted:
        return _stop(job, workload, evicted_message(workload), it, evicted_stop_reason(workload))
    if not has_quota_reservation(workload):
        return _stop(job, workload, NOT_ADMITTED, it, "NotAdmitted")
    if engine.is_stopping(it, job):
        # suspended, its restore not written before the Workload was admitted again: finish the stop,
        # then it starts at the new admitted count
        return _stop(job, workload, "Restoring the Job before it starts again", it)
    if not matches_workload(job, workload, it, reserved=True):
        # edited while running (more pods, bigger requests): stopped now, its Workload replaced next
        return _stop(job, workload, NO_MATCHING_WORKLOAD, it, "NoMatchingWorkload")
    if pods_ready and it.pods_ready is not None and not outcome_decided(job, it):
        condition = desired_pods_ready(workload, pods_ready=engine.pods_ready(it, job))
        current = find(((workload.get("status") or {}).get("conditions")), PODS_READY) or {}
        if (current.get("status"), current.get("reason")) != condition[:2]:
            return SyncPodsReady(workload, condition)
    return None


def reclaimable_to_record(counts: Mapping[str, int], workload: JSON) -> dict[str, int]:
    """What ``status.reclaimablePods`` should say given what the object reports (already bounded to the pod
    set sizes): that, except that while the Workload holds quota no count goes down or away, as Kueue's
    Workload webhook requires (the quota it gave back may be someone else's by now)."""
    wanted = dict(counts)
    if has_quota_reservation(workload):
        for name, count in recorded_reclaimable(workload).items():
            wanted[name] = max(wanted.get(name, 0), count)
    return wanted


def _reclaimable_step(job: JSON, workload: JSON, it: Integration) -> UpdateReclaimablePods | None:
    """Kueue's step 4: the kind's reclaimable pods, bounded to the pod set sizes (Kueue's
    ``LimitReclaimablePodsToPodSetSizes``), written only when they differ from the Workload's."""
    if it.reclaimable is None or is_true(workload, "Finished"):
        return None
    counts = bounded_to_pod_sets(it.reclaimable(job), workload)
    if reclaimable_to_record(counts, workload) == recorded_reclaimable(workload):
        return None
    return UpdateReclaimablePods(workload, tuple(sorted(counts.items())))


def plan_unmanaged(job: JSON, workload: JSON | None, *, integration: Integration = JOB) -> Step | None:
    """The next step for an object that is no longer queued (its queue label was removed while suspended,
    or the configuration no longer manages it) but still owns a Workload.

    Kueue ignores such an object and leaves its Workload behind, pending or admitted, holding quota for
    nothing. Here the Workload goes, with a ``DeletedWorkload`` Event on the object, as soon as that frees
    no quota still in use: at once while the object is suspended or finished (its finalizer then waits for
    the pods still active, as for any deleted Workload), and at once too when it holds no reservation. The
    Workload of a running object keeps its reservation while the object runs (it is stopped by no one, its
    pods use that quota) and goes once it finishes or is suspended."""
    it = integration
    if workload is None:
        return None
    if is_true(workload, "Finished"):
        return RemoveFinalizer(workload, "finished") if has_finalizer(workload) else None
    finished = job_finished(job, it)[0]
    if is_deleting(workload):
        if has_active_pods(job, it) or (
            not finished and not is_suspended(job, it) and has_quota_reservation(workload)
        ):
            return None  # the object's change when its pods are gone re-triggers us
        return (
            RemoveFinalizer(workload, "deleted, its object no longer queued")
            if has_finalizer(workload)
            else None
        )
    if has_quota_reservation(workload) and not finished and not is_suspended(job, it):
        return None
    why = (
        f"the {it.kind} no longer names a LocalQueue"
        if engine.queue_name(job) is None
        else f"the {it.kind} is no longer queued"
    )
    return DeleteWorkload(workload, f"Deleted Workload: {_key(workload)}, {why}")


def _key(workload: JSON) -> str:
    meta = workload.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def deleted_and_held(workload: JSON) -> bool:
    """Deleted, and our finalizer is among those that keep it."""
    return is_deleting(workload) and has_finalizer(workload)


def evicted_message(workload: JSON) -> str:
    """The Evicted condition's message (what a stop for an eviction says)."""
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Evicted":
            return str(condition.get("message") or "Evicted")
    return "Evicted"


def evicted_stop_reason(workload: JSON) -> str:
    """Kueue's stop reason for the pods of an evicted Workload: ``WorkloadEvictedDueTo`` + the Evicted
    condition's reason (``WorkloadEvictedDueToPreempted``), as its jobframework passes it to ``Pod.Stop``."""
    evicted = find((workload.get("status") or {}).get("conditions"), "Evicted") or {}
    why = str(evicted.get("reason") or "") if evicted.get("status") == "True" else ""
    return f"WorkloadEvicted{'DueTo' + why if why else ''}"
