"""What the manager writes into a worker: the copy of a Workload and of its job, and what it copies back.

Pure functions over plain objects, Kueue's MultiKueue adapters' rules:

* a Workload copy keeps the name, namespace, labels (but the job-uid label, which names a manager object),
  annotations and the whole spec, and is labelled with the manager's origin (Kueue's ``cloneForCreate``);
* a job copy keeps the name, namespace, labels, annotations and spec, is labelled with the origin and the
  Workload copy's name (``SetMultiKueueMeta``: the worker adopts that Workload instead of making one), and
  loses its ``managedBy`` (Kubeflow's kinds keep it in ``spec.runPolicy``) so the worker's own controller
  runs it; a Job also loses ``spec.selector`` and
  the labels the API server put into its template, which the worker's API server makes anew (the batch/Job
  adapter's ``SyncJob``); a TrainJob loses Kueue's runtime patch, holding the manager's flavors (the
  TrainJob adapter's ``SyncJob``);
* a RayService's ``spec.serveConfigV2`` edited on the manager is written into the running copy, a Ray
  Serve update in place (Kueue's ``RemoteSpecSyncer`` for RayService, its ``MultiKueueRemoteSpecSync``
  gate on by default);
* a pod (Kueue's pod adapter; one pod, or every pod of a group) is copied with its name, namespace, labels,
  annotations and whole spec (its scheduling gate included, which the worker lifts once the copy's
  Workload is admitted there), labelled with the origin and annotated with the Workload copy's name (Kueue's
  ``WorkloadIdentifierAnnotations`` default); its status flows back whole into the manager's pod, but
  while the manager's pod is gated it keeps its own ``PodScheduled`` condition until the copy is
  scheduled;
* a StatefulSet or LeaderWorkerSet (a gated kind copied whole: Kueue's adapters for them) is copied as a
  job is, with the manager's object's uid (``ORIGIN_UID_ANNOTATION``), from which the worker names its
  Workloads as the manager did, and (a StatefulSet) the Workload copy's name as an annotation; its status
  is not read back;
* the job's status flows back whole. For a Job only when the manager's copy is running, both are suspended,
  or the worker's finished (the batch/Job adapter's ``determineStatusUpdate``): a suspended Job given a
  running one's ``startTime`` could no longer be edited.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.engine import JOB_UID_LABEL, is_suspended
from kueue_webhook.api.integrations.trainjob import GROUP as TRAINER
from kueue_webhook.api.integrations.trainjob import without_kueue_patch
from kueue_webhook.api.multikueue import (
    ORIGIN_LABEL,
    ORIGIN_UID_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    managed_by_path,
)

JSON = dict[str, Any]

#: labels kube-apiserver puts into a Job's pod template, bound to the Job's uid on that cluster
_JOB_TEMPLATE_LABELS = (
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
)


def _meta_for_creation(obj: Mapping[str, Any]) -> JSON:
    """Name, namespace, labels and annotations: what a copy in another cluster keeps of ``metadata``."""
    meta = obj.get("metadata") or {}
    out: JSON = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    out["labels"] = dict(meta.get("labels") or {})
    if meta.get("annotations"):
        out["annotations"] = dict(meta["annotations"])
    return out


def workload_copy(local: Mapping[str, Any], *, origin: str) -> JSON:
    """The Workload to create in a worker for the manager's ``local`` Workload."""
    meta = _meta_for_creation(local)
    meta["labels"].pop(JOB_UID_LABEL, None)
    meta["labels"][ORIGIN_LABEL] = origin
    return {
        "apiVersion": local.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
        "kind": "Workload",
        "metadata": meta,
        "spec": copy.deepcopy(local.get("spec") or {}),
    }


def job_copy(local_job: Mapping[str, Any], *, workload_name: str, origin: str) -> JSON:
    """The job object to create in the worker whose Workload copy was admitted."""
    meta = _meta_for_creation(local_job)
    meta["labels"][ORIGIN_LABEL] = origin
    meta["labels"][PREBUILT_WORKLOAD_LABEL] = workload_name
    spec = copy.deepcopy(local_job.get("spec") or {})
    holder: Any = {"spec": spec}
    path = managed_by_path(local_job)
    for key in path[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(holder, dict):
        holder.pop(path[-1], None)
    if local_job.get("kind") == "Job" and str(local_job.get("apiVersion", "")).startswith("batch/"):
        spec.pop("selector", None)
        template_meta = (spec.get("template") or {}).get("metadata") or {}
        labels = template_meta.get("labels")
        if isinstance(labels, dict):
            for key in _JOB_TEMPLATE_LABELS:
                labels.pop(key, None)
    if local_job.get("kind") == "TrainJob" and str(local_job.get("apiVersion", "")).startswith(TRAINER + "/"):
        # the flavors the manager wrote are not the worker's: its own controller writes them there
        without_kueue_patch(spec)
    return {
        "apiVersion": local_job.get("apiVersion"),
        "kind": local_job.get("kind"),
        "metadata": meta,
        "spec": spec,
    }


def pod_copy(local_pod: Mapping[str, Any], *, workload_name: str, origin: str) -> JSON:
    """The pod to create in the worker whose Workload copy was admitted (Kueue's pod adapter's
    ``syncLocalPodWithRemote``)."""
    meta = _meta_for_creation(local_pod)
    meta["labels"][ORIGIN_LABEL] = origin
    meta["annotations"] = {**(meta.get("annotations") or {}), PREBUILT_WORKLOAD_LABEL: workload_name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(local_pod.get("spec") or {}),
    }


def gated_object_copy(
    body: Mapping[str, Any], local: Mapping[str, Any], *, names_workload: bool = True
) -> JSON:
    """``job_copy``'s ``body`` for an object of a gated kind copied whole: the prebuilt Workload's name as
    an annotation rather than a label (Kueue's ``WorkloadIdentifierAnnotations`` default; a StatefulSet's
    Workload name may be longer than a label value can be), none for an object of several Workloads (a
    LeaderWorkerSet's, as Kueue's adapter), and the manager's object's uid."""
    out = copy.deepcopy(dict(body))
    labels = out["metadata"]["labels"]
    annotations = dict(out["metadata"].get("annotations") or {})
    workload_name = labels.pop(PREBUILT_WORKLOAD_LABEL)
    if names_workload:
        annotations[PREBUILT_WORKLOAD_LABEL] = workload_name
    annotations[ORIGIN_UID_ANNOTATION] = str((local.get("metadata") or {}).get("uid") or "")
    out["metadata"]["annotations"] = annotations
    return out


def _pod_condition(status: Mapping[str, Any], kind: str) -> JSON | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return dict(condition)
    return None


def mirrored_pod_status(local_pod: Mapping[str, Any], remote_pod: Mapping[str, Any]) -> JSON | None:
    """The status the manager's pod should show for its copy; None: it shows it already. A gated manager
    pod keeps its own ``PodScheduled`` condition (the scheduler's "gated" one) while the copy is not
    scheduled, as Kueue's pod adapter does."""
    local_status = dict(local_pod.get("status") or {})
    status = copy.deepcopy(dict(remote_pod.get("status") or {}))
    local_scheduled = _pod_condition(local_status, "PodScheduled")
    remote_scheduled = _pod_condition(status, "PodScheduled")
    if (
        is_suspended(POD, local_pod)
        and local_scheduled is not None
        and (remote_scheduled or {}).get("status") != "True"
    ):
        others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*others, local_scheduled]
    return None if status == local_status else status


#: the phases of a pod that is over: its status no longer changes
_TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_without_activity(local_pod: Mapping[str, Any]) -> JSON | None:
    """The manager's pod status once its copy is gone without finishing (its worker stopped it, or was
    lost): ``Pending`` with only its own ``PodScheduled`` condition, so the group no longer counts it as
    running; None when it already shows no activity, or it finished."""
    status = dict(local_pod.get("status") or {})
    phase = status.get("phase")
    if phase in _TERMINAL_PHASES or (phase in (None, "Pending") and not status.get("containerStatuses")):
        return None
    scheduled = _pod_condition(status, "PodScheduled")
    out: JSON = {"phase": "Pending"}
    if scheduled is not None and scheduled.get("status") != "True":
        out["conditions"] = [scheduled]
    return out


#: spec fields kept in step on a running copy, per kind: the only manager edits a worker's copy follows
_SYNCED_SPEC: dict[tuple[str, str], tuple[str, ...]] = {("ray.io", "RayService"): ("serveConfigV2",)}


def remote_spec_ops(local_job: Mapping[str, Any], remote_job: Mapping[str, Any]) -> list[JSON]:
    """The JSON Patch that brings the worker's copy's synced spec fields to the manager's values; empty
    when they match or the kind syncs none."""
    group = str(local_job.get("apiVersion", "")).rpartition("/")[0]
    local_spec = local_job.get("spec") or {}
    remote_spec = remote_job.get("spec") or {}
    ops: list[JSON] = []
    for key in _SYNCED_SPEC.get((group, str(local_job.get("kind", ""))), ()):
        if local_spec.get(key) == remote_spec.get(key):
            continue
        if key in local_spec:
            ops.append({"op": "add", "path": f"/spec/{key}", "value": copy.deepcopy(local_spec[key])})
        else:
            ops.append({"op": "remove", "path": f"/spec/{key}"})
    return ops


def owned_by_origin(remote: Mapping[str, Any] | None, origin: str) -> bool:
    """Whether a worker's object carries this manager's origin label (Kueue's
    ``ValidateRemoteObjectOwnership``): only such objects are read back or deleted."""
    labels = ((remote or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ORIGIN_LABEL) == origin


def _conditions_true(obj: Mapping[str, Any], *types: str) -> bool:
    return any(
        c.get("type") in types and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping)
    )


def mirrored_status(local_job: Mapping[str, Any], remote_job: Mapping[str, Any]) -> JSON | None:
    """The status the manager's job should show for the worker's ``remote_job``; None: leave it as it is."""
    remote_status = copy.deepcopy(remote_job.get("status") or {})
    if local_job.get("kind") == "Job":
        local_suspended = bool((local_job.get("spec") or {}).get("suspend"))
        remote_suspended = bool((remote_job.get("spec") or {}).get("suspend"))
        remote_finished = _conditions_true(remote_job, "Complete", "Failed")
        if local_suspended and not remote_suspended and not remote_finished:
            return None
    if remote_status == (local_job.get("status") or {}):
        return None
    return remote_status


#: the pod counts of a job's status, where each kind keeps them (a JobSet's per replicated Job)
_POD_COUNTS = ("active", "ready", "terminating")


def without_pods(local_job: Mapping[str, Any]) -> JSON | None:
    """The manager's job status with no pods counted (a Job's ``active``/``ready``/``terminating``, a
    JobSet's per replicated Job); None when none are counted."""
    status = copy.deepcopy(dict(local_job.get("status") or {}))
    changed = False
    holders = [
        status,
        *(entry for entry in status.get("replicatedJobsStatus") or [] if isinstance(entry, dict)),
    ]
    for holder in holders:
        for field in _POD_COUNTS:
            if holder.get(field):
                holder[field] = 0
                changed = True
    return status if changed else None


def stale_start_time(local_job: Mapping[str, Any]) -> bool:
    """A suspended manager Job still showing the ``startTime`` read back from a worker that ran it before.

    The manager's Job controller skips the Job (``spec.managedBy``), so nothing else clears it; once the Job
    is unsuspended for its next worker, kube-apiserver would refuse that worker's ``startTime``
    (immutable for an unsuspended Job once set)."""
    if local_job.get("kind") != "Job" or not (local_job.get("spec") or {}).get("suspend"):
        return False
    return bool((local_job.get("status") or {}).get("startTime"))
