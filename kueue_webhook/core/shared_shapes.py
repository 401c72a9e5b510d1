"""One copy of the per-shape data that thousands of look-alike Workloads would otherwise each hold.

A cluster runs many Workloads of one shape: the same pod sets, requests and node constraints, admitted on
the same flavors. Each Workload's ``WorkloadInfo`` used to carry its own copies of them (pod set records,
an empty node-selector dict, the shape key, the parsed admission with a ``Quantity`` per resource, the
usage mapping), about 1 KB a Workload that says nothing the first one of its shape did not. Here equal
values are looked up and the first one kept is handed out again, so 10,000 Workloads of one shape share
one set of these objects.

Sharing is only safe for values nobody changes: the pod set records and admissions are frozen, and the
usage is handed out read-only (``MappingProxyType``), so a caller that tried to change a shared usage in
place would fail loudly instead of charging every Workload of its shape.

Each table is bounded: a namespace full of distinct shapes (a hostile user can make one) empties it and
starts again, which costs the sharing for a while, never memory or correctness.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

from kueue_webhook.api.objects import Admission

__all__ = ["NO_USAGE", "SharedValues", "shared_admission", "shared_usage"]

V = TypeVar("V")

#: distinct values a table keeps before it starts again; a few hundred shapes is a busy cluster
TABLE_LIMIT = 4096


class SharedValues(Generic[V]):
    """Equal keys get the value made for the first of them, while the table holds it."""

    __slots__ = ("_limit", "_values")

    def __init__(self, limit: int = TABLE_LIMIT) -> None:
        self._limit = limit
        self._values: dict[Hashable, V] = {}

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self._limit:
                self._values.clear()
            value = self._values[key] = make()
        return value

    def __len__(self) -> int:
        return len(self._values)


#: the usage of every Workload that holds no quota
NO_USAGE: Mapping[tuple[str, str], int] = MappingProxyType({})

_USAGES: SharedValues[Mapping[tuple[str, str], int]] = SharedValues()
_ADMISSIONS: SharedValues[Admission] = SharedValues()


def shared_usage(usage: Mapping[tuple[str, str], int]) -> Mapping[tuple[str, str], int]:
    """A read-only ``(flavor, resource) -> nanos`` equal to ``usage``, shared with every equal one."""
    items = tuple(usage.items())
    return _USAGES.get(items, lambda: MappingProxyType(dict(items)))


def shared_admission(admission: Admission) -> Admission:
    """An admission equal to ``admission`` (same queue, pod sets, flavors, usage and their formats), shared
    with every equal one; one with a topology assignment (per-Workload node names) is kept as it is."""
    key: list[Hashable] = [admission.cluster_queue]
    for assignment in admission.pod_set_assignments:
        if assignment.topology_assignment is not None:
            return admission
        key.append(
            (
                assignment.name,
                assignment.count,
                tuple(assignment.flavors.items()),
                tuple((r, q.nanos, q.format) for r, q in assignment.resource_usage.items()),
            )
        )
    return _ADMISSIONS.get(tuple(key), lambda: admission)
