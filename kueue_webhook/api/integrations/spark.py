"""A SparkApplication's pods, as Kueue reads them (``pkg/controller/jobs/sparkapplication``).

A SparkApplication does not hold pod templates the way a Job does: its ``spec.driver`` and ``spec.executor``
describe their pods by fields of their own (``coreRequest``, ``memory``, ``gpu``, ``nodeSelector``,
``tolerations``, ``sidecars`` ...), from which the Spark operator builds the pods. Kueue builds one pod
template per role from those fields the way the operator's pod mutation does, and queues it: pod set
``driver`` of one pod, then ``executor`` of ``spec.executor.instances`` pods (0 when unset). The optional
``template`` of a role gives its pods' metadata only; its containers are the operator's to merge and are not
read, as in Kueue. Admission writes the flavor into the role's own ``nodeSelector`` and ``tolerations``,
which the operator turns into the pods' ones.

The one difference from Kueue: an object-wide ``spec.nodeSelector`` is left where it is (Kueue moves it into
both roles on start and drops it on stop, which loses it). Spark lets a role's node selector override the
object-wide one key by key, so the flavor's labels hold on the pods either way.

Kueue's webhook also refuses a queued SparkApplication that does not run in ``cluster`` mode or that uses
dynamic allocation (its executors would then come and go outside the quota): ``value_errors``. Stricter than
Kueue, the same holds for the two ``sparkConf`` settings that would do the same behind those fields
(``spark.executor.instances``, ``spark.dynamicAllocation.enabled``). As in Kueue, the quota is what the role
fields say: a role without ``coreRequest`` or ``memory`` asks for no cpu or memory, though Spark then runs
its pods with its own defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.errors import FieldError

__all__ = ["DRIVER_CONTAINER", "EXECUTOR_CONTAINER", "driver_template", "executor_template", "value_errors"]

JSON = dict[str, Any]

#: the Spark operator's container names (its ``SparkDriverContainerName``, Spark 3's executor container)
DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"

#: Java memory units and the Kubernetes ones they stand for (the operator's memory conversion)
_MEMORY_UNITS = {
    "k": "Ki",
    "kb": "Ki",
    "m": "Mi",
    "mb": "Mi",
    "g": "Gi",
    "gb": "Gi",
    "t": "Ti",
    "tb": "Ti",
    "p": "Pi",
    "pb": "Pi",
}


def java_memory(text: str) -> str:
    """A JVM memory size (``512m``, ``2g``) as a Kubernetes quantity (``512Mi``, ``2Gi``); anything else as
    written (a quantity already)."""
    lowered = text.lower()
    for unit, kubernetes in _MEMORY_UNITS.items():
        if lowered.endswith(unit) and text.endswith(unit):
            return text.removesuffix(unit) + kubernetes
    return text


def _containers(value: object) -> list[JSON]:
    return [dict(c) for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []


def _same_container(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("name") == b.get("name") and a.get("image") == b.get("image")


def _main_container(role: Mapping[str, Any], name: str) -> JSON:
    requests: JSON = {}
    limits: JSON = {}
    for field, target, key, convert in (
        ("coreRequest", requests, "cpu", False),
        ("coreLimit", limits, "cpu", False),
        ("memory", requests, "memory", True),
        ("memoryLimit", limits, "memory", True),
    ):
        value = role.get(field)
        if isinstance(value, str):
            target[key] = java_memory(value) if convert else value
    gpu = role.get("gpu")
    if isinstance(gpu, Mapping):
        gpu_name, quantity = gpu.get("name"), gpu.get("quantity")
        if isinstance(gpu_name, str) and gpu_name and isinstance(quantity, int) and quantity > 0:
            limits[gpu_name] = str(quantity)
    resources: JSON = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    container: JSON = {"name": name}
    if resources:
        container["resources"] = resources
    return container


def _metadata(role: Mapping[str, Any]) -> JSON:
    """The template's metadata with the role's labels and annotations over it (the operator's merge)."""
    template = role.get("template")
    base = template.get("metadata") if isinstance(template, Mapping) else None
    out: JSON = {}
    for key in ("labels", "annotations"):
        merged = dict(base.get(key) or {}) if isinstance(base, Mapping) else {}
        own = role.get(key)
        if isinstance(own, Mapping):
            merged.update(own)
        if merged:
            out[key] = merged
    return out


def _template(role: Mapping[str, Any], container: str) -> JSON:
    """The pod the Spark operator makes for ``role`` (Kueue's build of it from an empty pod of one
    ``container``): the role's init containers and sidecars, priority class, node selector, affinity,
    tolerations and resources."""
    main = _main_container(role, container)
    containers = [main]
    for sidecar in _containers(role.get("sidecars")):
        if not any(_same_container(sidecar, c) for c in containers):
            containers.append(sidecar)
    init: list[JSON] = []
    for candidate in _containers(role.get("initContainers")):
        if not any(_same_container(candidate, c) for c in init):
            init.append(candidate)
    spec: JSON = {"containers": containers}
    if init:
        spec["initContainers"] = init
    priority_class = role.get("priorityClassName")
    if isinstance(priority_class, str) and priority_class:
        spec["priorityClassName"] = priority_class
    for key in ("nodeSelector", "affinity", "tolerations"):
        value = role.get(key)
        if value:
            spec[key] = value
    template: JSON = {"spec": spec}
    if metadata := _metadata(role):
        template["metadata"] = metadata
    return template


def driver_template(role: Mapping[str, Any]) -> Mapping[str, Any]:
    """The driver pod's template (pod set ``driver``)."""
    return _template(role, DRIVER_CONTAINER)


def executor_template(role: Mapping[str, Any]) -> Mapping[str, Any]:
    """An executor pod's template (pod set ``executor``)."""
    return _template(role, EXECUTOR_CONTAINER)


def value_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's SparkApplication webhook on a queued object: cluster mode only, no dynamic allocation."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    errors = []
    mode = spec.get("mode")
    if mode != "cluster":
        errors.append(
            FieldError.invalid(
                "spec.mode", mode, "only cluster mode is supported for a queued SparkApplication"
            )
        )
    dynamic = spec.get("dynamicAllocation")
    if isinstance(dynamic, Mapping) and dynamic.get("enabled") is True:
        errors.append(
            FieldError.invalid(
                "spec.dynamicAllocation.enabled",
                True,
                "a queued SparkApplication cannot use dynamic allocation: its executors would come and go "
                "outside the quota it was admitted with",
            )
        )
    conf = spec.get("sparkConf")
    for key, why in _CONF_OVERRIDES.items():
        if isinstance(conf, Mapping) and key in conf:
            errors.append(FieldError.forbidden(f"spec.sparkConf[{key}]", why))
    return errors


#: Spark settings that would change how many executors run behind the fields the quota is computed from
#: (stricter than Kueue, whose webhook reads the fields only)
_CONF_OVERRIDES = {
    "spark.executor.instances": "set spec.executor.instances instead: it is what the queue admits",
    "spark.dynamicAllocation.enabled": (
        "a queued SparkApplication cannot use dynamic allocation: its executors would come and go outside "
        "the quota it was admitted with"
    ),
}
