"""What one pod of a template asks for: the number the quota is charged per pod.

Kubernetes charges a pod ``max(sum of app containers + sidecars, the largest init step) + overhead``
(``resourcehelper.PodRequests``); a resource with only a limit is requested at its limit, which is how
GPUs are usually written. Kueue then stores requests as integers in the unit it compares quotas in:
milli-units for ``cpu``, whole units (rounded up) for everything else. We round the same way so that a
quota check here and in Kueue agree to the unit, and keep the result as plain ``int`` nano-units so the
scheduler's hot path never builds a Quantity.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.quantity import NANO, QuantityError, parse_quantity

__all__ = ["Requests", "add_requests", "kueue_rounded", "pod_requests", "scale_requests"]

#: resource name -> amount in nano-units
Requests = dict[str, int]

_MILLI = NANO // 1000


def kueue_rounded(resource: str, nanos: int) -> int:
    """Round up the way Kueue converts a quantity to its int64 unit (milli for cpu, else whole units)."""
    step = _MILLI if resource == "cpu" else NANO
    return -((-nanos) // step) * step


def add_requests(into: Requests, other: Mapping[str, int], factor: int = 1) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount * factor


def scale_requests(requests: Mapping[str, int], count: int) -> Requests:
    return {name: amount * count for name, amount in requests.items()}


@lru_cache(maxsize=4096)
def _nanos(text: str) -> int:
    """Manifests repeat the same few quantities ("1", "500m", "2Gi") endlessly: parse each once."""
    return parse_quantity(text).nanos


def _resource_list(raw: Any, path: str, errors: list[FieldError]) -> Requests:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.append(FieldError.invalid(path, str(raw), "must be a map of resource names to quantities"))
        return {}
    out: Requests = {}
    for name, value in raw.items():
        try:
            nanos = _nanos(value) if isinstance(value, str) else parse_quantity(value).nanos
        except QuantityError as exc:
            errors.append(FieldError.invalid(f"{path}[{name}]", value, str(exc)))
            continue
        if nanos < 0:
            errors.append(FieldError.invalid(f"{path}[{name}]", value, "must be greater than or equal to 0"))
            continue
        out[str(name)] = nanos
    return out


def _container_requests(container: Any, path: str, errors: list[FieldError]) -> Requests:
    if not isinstance(container, Mapping):
        errors.append(FieldError.invalid(path, None, "must be a container object"))
        return {}
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        errors.append(FieldError.invalid(f"{path}.resources", None, "must be an object"))
        return {}
    requests = _resource_list(resources.get("requests"), f"{path}.resources.requests", errors)
    limits = _resource_list(resources.get("limits"), f"{path}.resources.limits", errors)
    for name, amount in limits.items():
        requests.setdefault(name, amount)  # a resource with only a limit is requested at the limit
    return requests


def pod_requests(pod_spec: Any, path: str = "spec") -> tuple[Requests, list[FieldError]]:
    """Per-pod requests of a PodSpec, rounded as Kueue does; with the errors of malformed fields.

    A malformed quantity is reported and left out, so the caller can refuse the object with every
    problem listed at once.
    """
    errors: list[FieldError] = []
    if not isinstance(pod_spec, Mapping):
        return {}, [FieldError.required(path)]
    containers = pod_spec.get("containers") or []
    init_containers = pod_spec.get("initContainers") or []
    if not isinstance(containers, list):
        errors.append(FieldError.invalid(f"{path}.containers", None, "must be a list"))
        containers = []
    if not isinstance(init_containers, list):
        errors.append(FieldError.invalid(f"{path}.initContainers", None, "must be a list"))
        init_containers = []
    total: Requests = {}
    for index, container in enumerate(containers):
        add_requests(total, _container_requests(container, f"{path}.containers[{index}]", errors))
    sidecars: Requests = {}
    init_peak: Requests = {}
    for index, container in enumerate(init_containers):
        requests = _container_requests(container, f"{path}.initContainers[{index}]", errors)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            add_requests(sidecars, requests)  # a sidecar keeps running next to everything after it
            step = dict(sidecars)
        else:
            step = dict(sidecars)
            add_requests(step, requests)
        for name, amount in step.items():
            init_peak[name] = max(init_peak.get(name, 0), amount)
    add_requests(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0), amount)
    pod_level = pod_spec.get("resources")
    if isinstance(pod_level, Mapping):
        # pod-level resources (PodLevelResources): a request set for the whole pod is the pod's request of
        # that resource, whatever its containers ask (Kubernetes' PodRequests, which Kueue counts with)
        level = _resource_list(pod_level.get("requests"), f"{path}.resources.requests", errors)
        for name, amount in level.items():
            if name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
                total[name] = amount
    elif pod_level is not None:
        errors.append(FieldError.invalid(f"{path}.resources", None, "must be an object"))
    add_requests(total, _resource_list(pod_spec.get("overhead"), f"{path}.overhead", errors))
    rounded = {name: kueue_rounded(name, amount) for name, amount in total.items()}
    return rounded, errors


#: the resources a pod may request as a whole (``spec.resources``), besides huge pages
_POD_LEVEL_RESOURCES = frozenset(("cpu", "memory"))
