"""Partial admission: when a workload does not fit whole, admit it with fewer pods, down to ``minCount``.

Kueue's PartialAdmission (on by default) applies to a workload with a pod set whose ``minCount`` is below
its ``count`` (workload.CanBePartiallyAdmitted). Only when the full assignment neither fits nor can make
room by preemption (scheduler.go ``getInitialAssignments``) does it look for smaller counts, and it looks
the way its ``PodSetReducer`` does: every reducible pod set gives up the same share of its slack
(``count - minCount``), in ``slack_total + 1`` steps from the full counts (step 0) to every pod set at its
``minCount`` (the last step), and a binary search finds the first step, i.e. the largest counts, at which
the workload fits or can preempt for the room. The steps are assumed to get easier as counts shrink, as
in Kueue, so the search is logarithmic in the slack.

The admission then records the reduced ``count`` and the ``resourceUsage`` of that count for each pod set,
which is what the ledger charges. When no step works, the full assignment's verdict stands (its message
is the one the user reads), but the workload is parked until *any* release: what it lacks at its minimum
is less than the full shortfall the message names.

This lives apart from ``flavors.py`` because it is a loop around flavor assignment, not part of it; the
cycle calls ``assign`` in place of ``FlavorAssigner.assign``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TypeVar

from kueue_webhook.core.assignment import Assignment, CompiledQueue, Mode, Nomination
from kueue_webhook.core.flavors import FlavorAssigner
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.scan_progress import Scan

__all__ = [
    "assign",
    "at_counts",
    "at_min_counts",
    "can_be_partially_admitted",
    "reduced_counts",
    "search_counts",
]

_R = TypeVar("_R")


def can_be_partially_admitted(workload: WorkloadInfo) -> bool:
    """Some pod set may shrink: its ``minCount`` is set and below its ``count``."""
    return any(ps.min_count is not None and ps.min_count < ps.count for ps in workload.pod_sets)


def reduced_counts(full: Sequence[int], slack: Sequence[int], step: int, total: int) -> tuple[int, ...]:
    """The counts at ``step`` of ``total``: each pod set gives up ``slack * step // total`` pods (Kueue's
    fillPodSetSizesForSearchIndex), so step 0 is the full counts and step ``total`` the minimums."""
    return tuple(count - (delta * step) // total for count, delta in zip(full, slack, strict=True))


def search_counts(
    full: Sequence[int], minimum: Sequence[int | None], fits: Callable[[tuple[int, ...]], _R | None]
) -> _R | None:
    """The answer of ``fits`` for the largest counts it accepts, searched as Kueue's PodSetReducer does
    (binary search over the steps between ``full`` and ``minimum``); None when no step is accepted or
    nothing can shrink. ``minimum`` None for a pod set: it keeps its full count."""
    slack = [count - (count if low is None else low) for count, low in zip(full, minimum, strict=True)]
    total = sum(slack)
    if total <= 0:
        return None
    found: _R | None = None
    found_step = -1
    low, high = 0, total + 1  # the first step in [0, total] that fits; total + 1 when none does
    while low < high:
        middle = (low + high) // 2
        answer = fits(reduced_counts(full, slack, middle, total))
        if answer is None:
            low = middle + 1
        else:
            high = middle
            found, found_step = answer, middle
    return found if found_step == low else None


def at_counts(workload: WorkloadInfo, counts: Sequence[int]) -> WorkloadInfo:
    """The same workload asking for ``counts`` pods per pod set (key, priority and age unchanged)."""
    pod_sets = tuple(
        dataclasses.replace(ps, count=count) for ps, count in zip(workload.pod_sets, counts, strict=True)
    )
    return dataclasses.replace(workload, pod_sets=pod_sets)


def at_min_counts(workload: WorkloadInfo) -> WorkloadInfo:
    """The smallest workload partial admission would accept (the workload itself when it cannot shrink)."""
    if not can_be_partially_admitted(workload):
        return workload
    return at_counts(
        workload, [ps.count if ps.min_count is None else ps.min_count for ps in workload.pod_sets]
    )


def assign(
    assigner: FlavorAssigner,
    workload: WorkloadInfo,
    queue: CompiledQueue,
    *,
    can_preempt: Callable[[WorkloadInfo, Assignment], bool],
    nominated: Nomination | None = None,
    resume: Scan | None = None,
) -> Assignment:
    """The flavor assignment of ``workload``, reduced toward ``minCount`` when the full one cannot be
    admitted (scheduler.go ``getInitialAssignments``). ``can_preempt``: whether preemption finds targets
    that make room for an assignment that needs it; ``nominated``: the flavors it may use, ``resume``:
    where each search starts (``FlavorAssigner.assign``), the same for every count tried."""
    full = assigner.assign(workload, queue, nominated=nominated, resume=resume)
    if full.mode is Mode.FIT or not can_be_partially_admitted(workload):
        return full
    if _admissible(workload, full, can_preempt):
        return full

    def fits(counts: tuple[int, ...]) -> Assignment | None:
        smaller = at_counts(workload, counts)
        assignment = assigner.assign(smaller, queue, nominated=nominated, resume=resume)
        return assignment if _admissible(smaller, assignment, can_preempt) else None

    found = search_counts(
        [ps.count for ps in workload.pod_sets], [ps.min_count for ps in workload.pod_sets], fits
    )
    if found is not None:
        return found
    # the full verdict is what the user reads; any release may let the minimum in
    return dataclasses.replace(full, shortfalls=None)


def _admissible(
    workload: WorkloadInfo, assignment: Assignment, can_preempt: Callable[[WorkloadInfo, Assignment], bool]
) -> bool:
    """Fits now, or needs preemption and preemption finds whom to evict (Kueue's ``Fit`` or ``Preempt``
    with targets)."""
    if assignment.mode is Mode.FIT:
        return True
    if not assignment.mode.needs_preemption or assignment.mode is Mode.NO_CANDIDATES:
        return False
    return can_preempt(workload, assignment)
