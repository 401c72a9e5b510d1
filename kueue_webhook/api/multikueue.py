"""MultiKueue's names on the wire and the webhook's ``spec.managedBy`` default, as pure data and functions.

A manager cluster queues a Job, reserves quota for it, and runs it in a worker cluster. The manager's own
copy must never run: its ``spec.managedBy`` names MultiKueue, so the manager's Job controller (and JobSet
controller) leave it alone. Kueue's webhook sets that field on CREATE for a Job (or JobSet) whose
LocalQueue's ClusterQueue lists an AdmissionCheck served by MultiKueue, when the field is unset or names the
kind's own controller (Kueue's jobframework ``ApplyDefaultForManagedBy`` with each kind's
``CanDefaultManagedBy``). The same names label the copies in the workers (``ORIGIN_LABEL``,
``PREBUILT_WORKLOAD_LABEL``), so a Kueue worker and ours read each other's copies alike.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

#: ``spec.controllerName`` of an AdmissionCheck served by MultiKueue, and the ``spec.managedBy`` it sets
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
#: the label on every copy in a worker: which manager (``multiKueue.origin``) made it
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
#: Kueue's default ``multiKueue.origin``
DEFAULT_ORIGIN = "multikueue"
#: the label on a worker's job copy naming the Workload copy made for it before it (Kueue's prebuilt
#: Workload)
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
#: the label a worker puts on the pods of a job it starts for a Workload copy (one with ``ORIGIN_LABEL``):
#: Kueue's ``MultiKueueWorkerWorkloadPodLabel``, so the worker's pods can be told apart
WORKER_POD_LABEL = "kueue.x-k8s.io/multikueue-worker-workload-pod"


def worker_pod_labels(workload: Mapping[str, Any]) -> dict[str, str]:
    """The labels a job started for ``workload`` puts on its pods as a MultiKueue worker's (none when the
    Workload is not a manager's copy)."""
    labels = (workload.get("metadata") or {}).get("labels") or {}
    return {WORKER_POD_LABEL: "true"} if ORIGIN_LABEL in labels else {}


_SPEC = ("spec", "managedBy")
_RUN_POLICY = ("spec", "runPolicy", "managedBy")
_KUBEFLOW = (_RUN_POLICY, "kubeflow.org/training-operator")
_KUBERAY = (_SPEC, "ray.io/kuberay-operator")

#: kinds whose objects MultiKueue dispatches (Kueue has a MultiKueue adapter for each), with where their
#: ``managedBy`` is and the value of their own controller (Kueue's ``CanDefaultManagedBy``: unset or this
#: value is replaced by ``MULTIKUEUE_CONTROLLER``)
MANAGED_BY: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("batch", "Job"): (_SPEC, "kubernetes.io/job-controller"),
    ("jobset.x-k8s.io", "JobSet"): (_SPEC, "jobset.sigs.k8s.io/jobset-controller"),
    ("kubeflow.org", "PyTorchJob"): _KUBEFLOW,
    ("kubeflow.org", "TFJob"): _KUBEFLOW,
    ("kubeflow.org", "XGBoostJob"): _KUBEFLOW,
    ("kubeflow.org", "PaddleJob"): _KUBEFLOW,
    ("kubeflow.org", "JAXJob"): _KUBEFLOW,
    ("kubeflow.org", "MPIJob"): (_RUN_POLICY, "kubeflow.org/mpi-operator"),
    ("ray.io", "RayJob"): _KUBERAY,
    ("ray.io", "RayCluster"): _KUBERAY,
    ("ray.io", "RayService"): _KUBERAY,
    ("workload.codeflare.dev", "AppWrapper"): (_SPEC, "workload.codeflare.dev/appwrapper-controller"),
    ("trainer.kubeflow.org", "TrainJob"): (_SPEC, "trainer.kubeflow.org/trainjob-controller"),
}


#: what the manager copies into a worker for a gated kind: each of the Workload's pods, whose status is
#: read back (Kueue's pod adapter); the object alone, whose controller in the worker makes the pods and
#: whose status is not read back (Kueue's StatefulSet adapter); or the object of several Workloads, one per
#: group of its pods, all sent to the worker its lowest group went to (Kueue's LeaderWorkerSet adapter, a
#: ``MultiKueueMultiWorkloadAdapter``)
COPY_PODS = "pods"
COPY_OBJECT = "object"
COPY_GROUPS = "groups"

#: kinds MultiKueue dispatches that have no ``managedBy``: the manager keeps its objects from running by
#: never lifting their pods' scheduling gate while the Workload has a MultiKueue check (Kueue's
#: ``ShouldSkipLocalExecution`` for its pod-based integrations), with what it copies for each
GATED: dict[tuple[str, str], str] = {
    ("", "Pod"): COPY_PODS,
    ("apps", "StatefulSet"): COPY_OBJECT,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): COPY_GROUPS,
}

#: the annotation on a worker's copy of a StatefulSet naming the manager's object's uid, from which the
#: worker derives the Workload's name as the manager did (Kueue's ``MultiKueueOriginUIDAnnotation``)
ORIGIN_UID_ANNOTATION = "kueue.x-k8s.io/multikueue-origin-uid"


def dispatchable(group: str, kind: str) -> bool:
    """Whether objects of this kind can run in a worker (Kueue has a MultiKueue adapter for it)."""
    return (group, kind) in MANAGED_BY or (group, kind) in GATED


def gated(group: str, kind: str) -> bool:
    """Whether this kind is dispatched by keeping its manager pods gated rather than through ``managedBy``."""
    return (group, kind) in GATED


def copies_pods(group: str, kind: str) -> bool:
    """Whether the workers get copies of this gated kind's pods rather than of its objects."""
    return GATED.get((group, kind)) == COPY_PODS


def copies_groups(group: str, kind: str) -> bool:
    """Whether one object of this kind has several Workloads, which must all run in one worker."""
    return GATED.get((group, kind)) == COPY_GROUPS


def origin_uid(obj: Mapping[str, Any]) -> str:
    """The uid an object's Workload name is derived from: the manager's object's on a worker's copy (its
    origin label and ``ORIGIN_UID_ANNOTATION``), else its own (Kueue's statefulset ``GetOwnerUID``, and
    the uid its leaderworkerset adapter names a copy's Workloads from)."""
    meta = obj.get("metadata") or {}
    if ORIGIN_LABEL in (meta.get("labels") or {}):
        value = (meta.get("annotations") or {}).get(ORIGIN_UID_ANNOTATION)
        if isinstance(value, str) and value:
            return value
    return str(meta.get("uid") or "")


def runs_in_worker(workload: Mapping[str, Any] | None, multikueue_checks: Collection[str]) -> bool:
    """Whether the Workload's status lists one of ``multikueue_checks`` (the names of AdmissionChecks served
    by MultiKueue): its pods run in a worker and never on this cluster (Kueue's
    ``ShouldSkipLocalExecution``)."""
    states = ((workload or {}).get("status") or {}).get("admissionChecks") or []
    return any(isinstance(s, Mapping) and s.get("name") in multikueue_checks for s in states)


def prebuilt_workload_name(obj: Mapping[str, Any]) -> str:
    """The Workload made beforehand for ``obj``: Kueue writes its name as an annotation (its
    ``WorkloadIdentifierAnnotations`` gate, on by default) or a label, and reads the annotation first
    (``PrebuiltWorkloadNameFor``); "" when none is named."""
    meta = obj.get("metadata") or {}
    for field in ("annotations", "labels"):
        value = (meta.get(field) or {}).get(PREBUILT_WORKLOAD_LABEL)
        if isinstance(value, str) and value:
            return value
    return ""


def managed_by_path(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """Where the object's kind keeps ``managedBy`` (``spec.managedBy`` for a kind not listed)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return MANAGED_BY.get((group, str(obj.get("kind", ""))), (_SPEC, ""))[0]


def managed_by(obj: Mapping[str, Any]) -> str:
    """The object's ``managedBy`` ("" when unset)."""
    value: Any = obj
    for key in managed_by_path(obj):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) else ""


def managed_by_default_ops(group: str, kind: str, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch that makes MultiKueue manage an object queued to a ClusterQueue with a MultiKueue
    check; empty when the kind has no MultiKueue adapter or its ``managedBy`` names another controller."""
    known = MANAGED_BY.get((group, kind))
    if known is None or not isinstance(obj.get("spec"), Mapping):
        return []
    path, own = known
    if managed_by({**obj, "apiVersion": f"{group}/v", "kind": kind}) not in ("", own):
        return []
    parent: Mapping[str, Any] = obj
    for depth, key in enumerate(path[:-1]):
        child = parent.get(key)
        if not isinstance(child, Mapping):
            pointer = "/" + "/".join(path[: depth + 1])
            value: Any = MULTIKUEUE_CONTROLLER
            for inner in reversed(path[depth + 1 :]):
                value = {inner: value}
            return [{"op": "add", "path": pointer, "value": value}]
        parent = child
    op = "replace" if path[-1] in parent else "add"
    return [{"op": op, "path": "/" + "/".join(path), "value": MULTIKUEUE_CONTROLLER}]


def with_default_ops(obj: Mapping[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The object as ``managed_by_default_ops``' patch leaves it, for the webhook's ops computed after it
    (a Kubeflow job's suspend goes into the same ``spec.runPolicy`` the patch may have added)."""
    out = copy.deepcopy(dict(obj))
    for op in ops:
        *parents, last = str(op["path"]).split("/")[1:]
        holder = out
        for key in parents:
            holder = holder[key]
        holder[last] = copy.deepcopy(op["value"])
    return out


def cluster_queue_checks(cluster_queue: Mapping[str, Any]) -> list[str]:
    """The AdmissionCheck names a ClusterQueue lists (``admissionChecks`` or ``admissionChecksStrategy``)."""
    spec = cluster_queue.get("spec") or {}
    names = [str(n) for n in spec.get("admissionChecks") or [] if isinstance(n, str)]
    strategy = spec.get("admissionChecksStrategy") or {}
    for rule in strategy.get("admissionChecks") or []:
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
            names.append(rule["name"])
    return names
