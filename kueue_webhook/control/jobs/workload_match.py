"""Whether a queued object still is what its Workload asks quota for: Kueue's jobframework
``EquivalentToWorkload``, reduced to what the quota reads.

A user with ``edit`` on a queued kind can change a running object (a Job's ``parallelism``, a JobSet's
``replicas``, a declared kind's count or requests) after its Workload was admitted; the kind's controller
then runs the new shape at once, outside the quota reserved for the old one.
``kueue_webhook.control.jobs.job_plan``
asks this module whether the pair still agrees and, when it does not, stops the object and replaces its
Workload, as Kueue does (``ensureOneWorkload``: stop with ``NoMatchingWorkload``, delete the Workload, queue
a new one).

The comparison follows Kueue's, pod set by pod set in order (``ComparePodSetSlices``): the count, the
``minCount``, what each pod requests, and the tolerations while the Workload is not admitted (admission
adds the flavor's tolerations to the running template, so an admitted Workload ignores them, as Kueue's
``WithIgnoreTolerations``). Against a Workload holding a reservation the object is first compared with
what it runs once started (Kueue's ``expectedRunningPodSets``): a pod set that can be partially admitted
runs the admitted count (``podSetAssignments[].count``), which is not a mismatch; a suspended object may
also still match the Workload's own pod sets (it has not started yet, or its stop restored them).

The time limit (the ``max-exec-time-seconds`` label against ``spec.maximumExecutionTimeSeconds``) is
compared first, as Kueue compares it, except for a running object: the label cannot change while it runs
(the webhook's rule) and the Workload's field is immutable while it holds quota, so a difference there can
only be a Workload written before the label was copied, and stopping a running object for it would cost its
work for nothing.

Two deliberate differences from Kueue, both about what cannot change the quota: containers are compared
by the per-pod requests the quota is computed from (the same ``pod_requests`` both Workloads are built
with), not field by field, so an image change of a running object is not a reason to stop it; and the
nodeSelector is not compared (Kueue does not either; admission writes the flavor's labels into it). An
object whose pod sets cannot be read any more matches nothing: its quota cannot be known, so it is
stopped rather than left running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.objects import PodSet, parse_workload
from kueue_webhook.control.output.conditions import is_true

JSON = dict[str, Any]

__all__ = ["matches_workload"]


@dataclass(frozen=True, slots=True)
class _ObjectPodSet:
    """One pod set of the object as its Workload would hold it, and its minCount as written."""

    pod_set: PodSet
    written_min_count: int | None
    tolerations: list[Any]


def _tolerations(template: Mapping[str, Any] | None) -> list[Any]:
    spec = (template or {}).get("spec")
    found = spec.get("tolerations") if isinstance(spec, Mapping) else None
    return list(found) if isinstance(found, list) else []


def _object_pod_sets(integration: Integration, obj: Mapping[str, Any]) -> list[_ObjectPodSet] | None:
    pod_sets = engine.pod_sets(integration, obj)
    if isinstance(pod_sets, list):
        return None  # its templates no longer read: what it would ask is unknown
    found = engine.elements(integration, obj)
    return [
        _ObjectPodSet(pod_set, engine.written_min_count(element), _tolerations(pod_set.template))
        for element, pod_set in zip(found, pod_sets, strict=True)
    ]


def _requests(pod_set: PodSet) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(pod_set.requests.items()))


def _same(
    ours: Sequence[_ObjectPodSet],
    theirs: Sequence[PodSet],
    *,
    running_counts: Mapping[str, int] | None,
    tolerations: bool,
) -> bool:
    """Kueue's ComparePodSetSlices. With ``running_counts`` (the admitted count of each pod set that runs
    partially admitted), such a pod set is expected at that count, its minCount as written."""
    if len(ours) != len(theirs):
        return False
    for mine, wanted in zip(ours, theirs, strict=True):
        got = mine.pod_set
        running = (running_counts or {}).get(wanted.name)
        if running is not None:
            if (got.count, mine.written_min_count) != (running, wanted.min_count):
                return False
        elif (got.count, got.min_count) != (wanted.count, wanted.min_count):
            return False
        if got.name != wanted.name or _requests(got) != _requests(wanted):
            return False
        if tolerations and mine.tolerations != _tolerations(wanted.template):
            return False
    return True


def _running_counts(workload: JSON, pod_sets: Sequence[PodSet]) -> dict[str, int] | None:
    """Kueue's expectedRunningPodSets, for the counts: the admitted count of every pod set that runs
    partially admitted (the Workload can be, and the pod set has a minCount); None when the admission does
    not name every pod set (then only the Workload's own pod sets can match)."""
    admission = (workload.get("status") or {}).get("admission") or {}
    assigned: dict[str, int | None] = {}
    for assignment in admission.get("podSetAssignments") or []:
        if not isinstance(assignment, Mapping):
            continue
        count = assignment.get("count")
        valid = isinstance(count, int) and not isinstance(count, bool)
        assigned[str(assignment.get("name") or "main")] = count if valid else None
    if any(p.name not in assigned for p in pod_sets):
        return None
    partially = any(p.min_count is not None and p.min_count < p.count for p in pod_sets)
    # an assignment without a count runs the pod set's own (Kueue's podset.FromAssignment), as the start does
    return {
        p.name: p.count if (count := assigned[p.name]) is None else count
        for p in pod_sets
        if partially and p.min_count is not None
    }


def matches_workload(
    obj: Mapping[str, Any], workload: JSON, integration: Integration, *, reserved: bool
) -> bool:
    """Whether ``workload`` still speaks for ``obj`` (Kueue's EquivalentToWorkload); ``reserved``: the
    Workload holds a quota reservation."""
    suspended = engine.is_suspended(integration, obj)
    # Kueue's EquivalentToWorkload looks at the time limit first: the label's value and the Workload's
    limit = (workload.get("spec") or {}).get("maximumExecutionTimeSeconds")
    if (suspended or not reserved) and limit != engine.maximum_execution_time(obj):
        return False
    ours = _object_pod_sets(integration, obj)
    # only its pod sets are read: whatever else the Workload holds (a condition another controller wrote)
    # must not make it unreadable here and stop a running object
    pod_sets_only = {
        "metadata": workload.get("metadata") or {},
        "spec": {"podSets": (workload.get("spec") or {}).get("podSets")},
    }
    parsed = parse_workload(pod_sets_only)
    if ours is None or isinstance(parsed, list):
        return False
    # a running object's template carries the flavor's tolerations, so they are compared only for a
    # suspended object whose Workload is not admitted yet
    tolerations = suspended and not is_true(workload, "Admitted")
    if reserved:
        counts = _running_counts(workload, parsed.pod_sets)
        if counts is not None:
            if _same(ours, parsed.pod_sets, running_counts=counts, tolerations=tolerations):
                return True
            return suspended and _same(ours, parsed.pod_sets, running_counts=None, tolerations=tolerations)
    return _same(ours, parsed.pod_sets, running_counts=None, tolerations=tolerations)
