"""Builders of the objects tests create: Jobs, Workloads, queues, flavors, namespaces, as plain dicts.

Each takes keyword arguments for what a test varies and leaves out every field it is not given, so the dict
is exactly the manifest a user would write for it (``manifests(...)`` turns a few of them into the YAML that
``FakeApiServer.apply_manifests`` and ``kubectl apply`` read). Quotas are written as in
tests/unit/core/builders.py: ``{"flavor": {"cpu": 4, "memory": "8Gi"}}`` is one resource group, a quota a
nominal value or ``{"nominalQuota": ..., "borrowingLimit": ..., "lendingLimit": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

JSON = dict[str, Any]
Quota = Any

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def manifests(*objects: JSON) -> str:
    """The objects as one multi-document YAML text, in order."""
    return yaml.safe_dump_all(objects, sort_keys=False)


def meta(name: str, namespace: str | None = None, **fields: Any) -> JSON:
    """``metadata``: ``name``, ``namespace`` when given, then the ``fields`` that are not None."""
    out: JSON = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out.update({key: value for key, value in fields.items() if value is not None})
    return out


def namespace(name: str, *, labels: Mapping[str, str] | None = None, **fields: Any) -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, labels=labels, **fields)}


def _resource(name: str, quota: Quota) -> JSON:
    if isinstance(quota, dict):
        return {"name": name, **quota}
    return {"name": name, "nominalQuota": quota}


def groups(*specs: Mapping[str, Mapping[str, Quota]]) -> list[JSON]:
    """``groups({"f1": {"cpu": 4, "memory": "8Gi"}, "f2": {...}})``: one resource group per argument, the
    covered resources those of its first flavor."""
    out = []
    for spec in specs:
        covered = list(next(iter(spec.values())))
        flavors = [
            {"name": flavor, "resources": [_resource(r, quotas[r]) for r in covered]}
            for flavor, quotas in spec.items()
        ]
        out.append({"coveredResources": covered, "flavors": flavors})
    return out


def resource_flavor(
    name: str,
    *,
    node_labels: Mapping[str, str] | None = None,
    tolerations: Sequence[JSON] | None = None,
    taints: Sequence[JSON] | None = None,
    **fields: Any,
) -> JSON:
    """A ResourceFlavor; ``spec`` only when a node label, toleration or taint is given."""
    spec: JSON = {}
    if node_labels is not None:
        spec["nodeLabels"] = dict(node_labels)
    if tolerations is not None:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if taints is not None:
        spec["nodeTaints"] = [dict(t) for t in taints]
    out: JSON = {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": meta(name, **fields)}
    if spec:
        out["spec"] = spec
    return out


def cluster_queue(
    name: str,
    *resource_groups: Mapping[str, Mapping[str, Quota]],
    namespace_selector: JSON | None = None,
    metadata: JSON | None = None,
    status: JSON | None = None,
    **spec: Any,
) -> JSON:
    """A ClusterQueue of ``resource_groups`` for the namespaces ``namespace_selector`` picks (all by default);
    ``spec`` adds the fields not None as Kueue spells them (``cohortName``, ``preemption``, ``stopPolicy``),
    after ``namespaceSelector`` and before ``resourceGroups``."""
    out: JSON = {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": meta(name, **(metadata or {})),
        "spec": {
            "namespaceSelector": namespace_selector or {},
            **spec,
            "resourceGroups": groups(*resource_groups),
        },
    }
    if status is not None:
        out["status"] = status
    return out


def cohort(
    name: str, *resource_groups: Mapping[str, Mapping[str, Quota]], parent: str = "", **spec: Any
) -> JSON:
    """A Cohort under ``parent`` (none by default); ``spec`` only when it has a parent, quota or a field."""
    body: JSON = {**({"parentName": parent} if parent else {}), **spec}
    if resource_groups:
        body["resourceGroups"] = groups(*resource_groups)
    out: JSON = {"apiVersion": KUEUE, "kind": "Cohort", "metadata": meta(name)}
    if body:
        out["spec"] = body
    return out


def local_queue(
    name: str, namespace: str, cluster_queue: str, *, metadata: JSON | None = None, **spec: Any
) -> JSON:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": meta(name, namespace, **(metadata or {})),
        "spec": {"clusterQueue": cluster_queue, **spec},
    }


def team_queue(
    team: str, *resource_groups: Mapping[str, Mapping[str, Quota]], queue: str = "gpus", **spec: Any
) -> list[JSON]:
    """A team's own queue: namespace ``team`` labelled ``team: <team>``, a ClusterQueue ``team`` of
    ``resource_groups`` (and ``spec``) selecting only that label, and LocalQueue ``queue`` of it there."""
    return [
        namespace(team, labels={"team": team}),
        cluster_queue(team, *resource_groups, namespace_selector={"matchLabels": {"team": team}}, **spec),
        local_queue(queue, team, team),
    ]


def own_queue(
    namespace: str,
    name: str,
    quota: Mapping[str, Quota],
    *,
    queue: str = "lq",
    namespace_selector: JSON | None = None,
    **spec: Any,
) -> list[JSON]:
    """Flavor ``name``, ClusterQueue ``name`` holding ``quota`` of that flavor (``{"cpu": 1}``) for the
    namespaces ``namespace_selector`` picks (all by default), and LocalQueue ``queue`` in ``namespace``."""
    return [
        resource_flavor(name),
        cluster_queue(name, {name: quota}, namespace_selector=namespace_selector, **spec),
        local_queue(queue, namespace, name),
    ]


def only(namespace: str) -> JSON:
    """The namespace selector that picks ``namespace`` alone."""
    return {"matchLabels": {"kubernetes.io/metadata.name": namespace}}


def workload_priority_class(name: str, value: int) -> JSON:
    return {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": meta(name), "value": value}


def priority_class(name: str, value: int, **fields: Any) -> JSON:
    """A pod PriorityClass (scheduling.k8s.io/v1); ``fields`` such as ``description`` follow ``value``."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": meta(name),
        "value": value,
        **fields,
    }


def container(
    *, resources: JSON | None = None, name: str = "c", image: str = "busybox", **fields: Any
) -> JSON:
    out: JSON = {"name": name, "image": image, **fields}
    if resources is not None:
        out["resources"] = resources
    return out


def _labels(queue: str | None, labels: Mapping[str, str] | None) -> JSON | None:
    """The queue-name label first, then ``labels``; None (no ``labels`` key) when neither is given."""
    if queue is None and labels is None:
        return None
    return {**({QUEUE_LABEL: queue} if queue is not None else {}), **(labels or {})}


def _queued(
    api_version: str,
    kind: str,
    name: str,
    namespace: str,
    queue: str | None,
    labels: Mapping[str, str] | None,
    metadata: JSON | None,
    spec: JSON,
    status: JSON | None,
) -> JSON:
    out: JSON = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": meta(name, namespace, **(metadata or {}), labels=_labels(queue, labels)),
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


def job(
    name: str,
    namespace: str,
    *,
    pod_spec: JSON,
    queue: str | None = None,
    labels: Mapping[str, str] | None = None,
    metadata: JSON | None = None,
    suspend: bool | None = True,
    status: JSON | None = None,
    **spec: Any,
) -> JSON:
    """A batch/v1 Job of pods ``pod_spec``, queued to LocalQueue ``queue`` (its label first, then ``labels``)
    when given; ``metadata`` adds fields (``uid``, ``annotations``...); ``spec`` fields
    (``parallelism``, ``completions``...) follow ``suspend``."""
    body = {**({"suspend": suspend} if suspend is not None else {}), **spec, "template": {"spec": pod_spec}}
    return _queued("batch/v1", "Job", name, namespace, queue, labels, metadata, body, status)


def queued_job(
    namespace: str,
    name: str,
    *,
    queue: str,
    resources: JSON,
    labels: dict[str, str] | None = None,
    pod: JSON | None = None,
    suspend: bool | None = True,
    **spec: Any,
) -> JSON:
    """A one-container busybox Job for LocalQueue ``queue``; ``labels`` join the queue-name label, ``pod``
    adds fields to the pod spec (between ``restartPolicy`` and ``containers``), ``spec`` to the Job's
    (``parallelism``...); ``suspend=None`` leaves ``suspend`` out, as a user's manifest does."""
    pod_spec = {"restartPolicy": "Never", **(pod or {}), "containers": [container(resources=resources)]}
    return job(name, namespace, queue=queue, labels=labels, suspend=suspend, pod_spec=pod_spec, **spec)


def pod(
    name: str,
    namespace: str,
    *,
    pod_spec: JSON,
    queue: str | None = None,
    labels: Mapping[str, str] | None = None,
    metadata: JSON | None = None,
    status: JSON | None = None,
) -> JSON:
    """A Pod, queued to LocalQueue ``queue`` (its label first, then ``labels``) when given; ``metadata``
    adds fields (``uid``, ``annotations``...)."""
    return _queued("v1", "Pod", name, namespace, queue, labels, metadata, pod_spec, status)


def owner_reference(
    owner: JSON, *, controller: bool = True, block_owner_deletion: bool | None = None
) -> JSON:
    """An ownerReference to ``owner`` (as created: with its ``uid``), its controller by default."""
    out: JSON = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
    }
    if block_owner_deletion is not None:
        out["blockOwnerDeletion"] = block_owner_deletion
    return out


def gpu_limits(gpus: int) -> JSON:
    return {"limits": {"nvidia.com/gpu": str(gpus)}}


def cpu_requests(cpu: str) -> JSON:
    return {"requests": {"cpu": cpu}}


def workload(
    name: str,
    namespace: str = "team",
    *,
    queue: str = "lq",
    pod_sets: Sequence[JSON] = (),
    api_version: bool = True,
    spec: JSON | None = None,
    status: JSON | None = None,
    **metadata: Any,
) -> JSON:
    """A Workload for LocalQueue ``queue`` with ``pod_sets`` (and the ``spec`` fields given: ``priority``,
    ``maximumExecutionTimeSeconds``...); ``metadata`` fields (``uid``, ``resourceVersion``...) follow its
    name and namespace."""
    out: JSON = {"apiVersion": KUEUE} if api_version else {}
    out.update(
        kind="Workload",
        metadata=meta(name, namespace, **metadata),
        spec={"queueName": queue, **(spec or {}), "podSets": list(pod_sets)},
    )
    if status is not None:
        out["status"] = status
    return out


def pod_set(
    *,
    count: int = 1,
    name: str = "main",
    requests: JSON | None = None,
    resources: JSON | None = None,
    image: str | None = None,
    **pod_spec: Any,
) -> JSON:
    """A pod set of ``count`` pods of one container ``c`` (of ``image``) with ``resources``, by default
    requesting ``requests`` (one cpu by default); ``pod_spec`` fields go before ``containers``."""
    one: JSON = {"name": "c", **({"image": image} if image is not None else {})}
    one["resources"] = resources or {"requests": requests if requests is not None else {"cpu": "1"}}
    return {"name": name, "count": count, "template": {"spec": {**pod_spec, "containers": [one]}}}


def resource_claim_template(name: str, namespace: str, *, devices: int, device_class: str) -> JSON:
    """A DRA ResourceClaimTemplate: each claim made from it asks for ``devices`` of ``device_class``."""
    request = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": devices}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "devices", "exactly": request}]}}},
    }
