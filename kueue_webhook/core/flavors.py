"""Flavor assignment: which ResourceFlavor each requested resource of each pod set is charged to.

This follows Kueue's flavor assigner. Pod sets are served in order; for each resource group the pod
set needs, the group's flavors are tried in the ClusterQueue's order and *all* of the group's resources
must fit on the same flavor. A flavor is skipped when the pod template cannot land on its nodes
(untolerated ``NoSchedule``/``NoExecute`` taint, nodeSelector or required node affinity contradicting
its ``nodeLabels``). Each resource is checked against the ledger with what earlier pod sets of the same
workload already took from that flavor:

* more than the flavor could ever provide (``potential available``)  -> ExceedsMaxQuota,
* more than is free now                                            -> WaitingForQuota,
* otherwise it fits, possibly by borrowing from the cohort.

``flavorFungibility`` decides when to stop: ``whenCanBorrow: MayStopSearch`` takes the first flavor
that fits even if it borrows, ``TryNextFlavor`` keeps looking for one that fits without borrowing;
``whenCanPreempt`` does the same for a flavor that fits only by preempting. When several flavors were
tried, ``preference`` ranks them as Kueue's ``isPreferred`` does (``BorrowingOverPreemption``: fewer
preemptions first; ``PreemptionOverBorrowing``: less borrowing first). Whether preemption could free the
quota is asked of a ``PreemptionOracle`` (``preemption.ClassicalPreemption`` in the scheduler;
``NoPreemption`` answers "no candidates" everywhere). Reasons are collected per flavor, sorted and
joined, and the QuotaReserved reason is resolved by Kueue's severity rules, so the message a user sees
is the one Kueue would write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from kueue_webhook.api.objects import FlavorFungibility, ResourceFlavor
from kueue_webhook.core.assignment import Assignment, CompiledQueue, Mode, Nomination, PodSetResult
from kueue_webhook.core.decisions import REASON_WAITING
from kueue_webhook.core.ledger import Ledger, available, borrowing_height
from kueue_webhook.core.model import FlavorResource, PodSetInfo, WorkloadInfo, format_amount
from kueue_webhook.core.node_affinity import requirement_holds
from kueue_webhook.core.scan_progress import Scan, next_flavor, tried_index
from kueue_webhook.core.tas.assign import place_topologies, tas_problem
from kueue_webhook.core.tas.capacity import TopologyCapacity

__all__ = [
    "FlavorAssigner",
    "NoPreemption",
    "PreemptionOracle",
    "assign_one_group",
    "search_flavors",
]

REASON_EXCEEDS = "ExceedsMaxQuota"
REASON_NO_FLAVOR = "NoMatchingFlavor"
_SEVERITY = {"": 0, REASON_WAITING: 2, REASON_EXCEEDS: 3, REASON_NO_FLAVOR: 4}


#: amounts as a user reads them in reasons: the same few amounts are worded for head after head
_amount_text = lru_cache(maxsize=4096)(format_amount)


def _most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


class PreemptionOracle(Protocol):
    """Could preempting admitted workloads free ``amount`` of ``fr`` for ``workload`` in ``queue``?

    Returns the mode (``NO_CANDIDATES``, ``PREEMPT`` or ``RECLAIM``) and how far up the cohort tree
    the workload would borrow once the candidates are gone.
    """

    def simulate(
        self, *, queue: str, workload: WorkloadInfo, fr: FlavorResource, amount: int
    ) -> tuple[Mode, int]: ...


class NoPreemption:
    """The oracle for a system without preemption: nothing is ever a candidate."""

    def simulate(
        self, *, queue: str, workload: WorkloadInfo, fr: FlavorResource, amount: int
    ) -> tuple[Mode, int]:
        return Mode.NO_CANDIDATES, 0


# -- node compatibility ------------------------------------------------------------------------------


def _tolerates(toleration: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    tol_effect = toleration.get("effect") or ""
    if tol_effect and tol_effect != effect:
        return False
    tol_key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if tol_key and tol_key != key:
        return False
    if operator == "Exists":
        return True
    return bool(tol_key) and (toleration.get("value") or "") == value


def flavor_incompatibility(pod_set: PodSetInfo, flavor: ResourceFlavor) -> str:
    """Why pods of ``pod_set`` could not run on ``flavor``'s nodes ("" when they can)."""
    if not flavor.node_taints and not pod_set.node_selector and not pod_set.affinity_terms:
        return ""  # the common case: nothing on either side to disagree about
    tolerations = (*pod_set.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations):
            return f"untolerated taint {taint} in flavor {flavor.name}"
    labels = flavor.node_labels
    for key, value in pod_set.node_selector.items():
        if key in labels and labels[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    terms: list[tuple[tuple[str, str, tuple[str, ...]], ...]] = []
    for term in pod_set.affinity_terms:
        kept = tuple(expr for expr in term if expr[0] in labels)
        if not kept:  # a term with no relevant key matches any flavor: affinity is moot
            terms = []
            break
        terms.append(kept)
    if terms and not any(all(requirement_holds(labels, *expr) for expr in term) for term in terms):
        return f"flavor {flavor.name} doesn't match node affinity"
    return ""


# -- assignment --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Choice:
    flavor: str
    mode: Mode
    borrow: int
    #: the flavor/resources lacking unused quota on this flavor
    short: tuple[FlavorResource, ...] = ()


def _better(a: _Choice, b: _Choice | None, fungibility: FlavorFungibility) -> bool:
    """Kueue's ``isPreferred``: any fit beats none and having candidates beats having none; then
    ``BorrowingOverPreemption`` (the default) ranks by mode, then less borrowing, and
    ``PreemptionOverBorrowing`` by less borrowing, then mode."""
    if a.mode is Mode.NO_FIT:
        return False
    if b is None or b.mode is Mode.NO_FIT:
        return True
    a_none, b_none = a.mode is Mode.NO_CANDIDATES, b.mode is Mode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def _try_next(choice: _Choice, fungibility: FlavorFungibility) -> bool:
    if choice.mode in (Mode.NO_FIT, Mode.NO_CANDIDATES):
        return True
    if choice.mode in (Mode.PREEMPT, Mode.RECLAIM) and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return choice.borrow > 0 and fungibility.when_can_borrow == "TryNextFlavor"


@dataclass(frozen=True, slots=True)
class FlavorAssigner:
    """What flavor assignment reads besides the workload and its ClusterQueue, which stays the same
    from one call to the next: the ResourceFlavors, the ledger, and who answers for preemption."""

    flavors: Mapping[str, ResourceFlavor]
    ledger: Ledger
    oracle: PreemptionOracle
    #: nodes and topologies of the TAS flavors (None, or no TAS flavor: quota alone decides)
    tas: TopologyCapacity | None = None

    def assign(
        self,
        workload: WorkloadInfo,
        queue: CompiledQueue,
        *,
        nominated: Nomination | None = None,
        resume: Scan | None = None,
    ) -> Assignment:
        """Pick a flavor for every requested resource of every pod set, or say why it cannot be done.
        ``nominated``: only the flavors an earlier assignment in the same cycle gave (Kueue's flavor
        stickiness when it recomputes an assignment within a cycle); ``resume``: where an earlier
        search stopped, each group's search starting at the flavor after it (``scan_progress``)."""
        tas = self.tas
        if nominated is None and (tas is None or not tas.flavors):
            common = assign_one_group(workload, queue, self.flavors, self.ledger, self.oracle, resume=resume)
            if common is not None:
                return common
        assignment = search_flavors(
            workload=workload,
            queue=queue,
            flavors=self.flavors,
            ledger=self.ledger,
            oracle=self.oracle,
            nominated=nominated,
            resume=resume,
        )
        if tas is None or not tas.flavors:
            return assignment
        return place_topologies(assignment, workload, self.flavors, tas)


def search_flavors(
    *,
    workload: WorkloadInfo,
    queue: CompiledQueue,
    flavors: Mapping[str, ResourceFlavor],
    ledger: Ledger,
    oracle: PreemptionOracle,
    nominated: Nomination | None = None,
    resume: Scan | None = None,
) -> Assignment:
    """The full search of ``FlavorAssigner.assign`` (every rule, every reason)."""
    assigned: dict[FlavorResource, int] = {}
    results: list[PodSetResult] = []
    overall = Mode.FIT
    borrowing = 0
    no_fit_reason = ""
    shortfalls: list[tuple[tuple[tuple[FlavorResource, int], ...], ...]] = []
    needs: set[FlavorResource] = set()
    # the pod sets of a TAS group (``podSetGroupName``) get the same flavors: the first is given them for
    # the requests of the whole group, the others take its choice (Kueue's grouped flavor assignment)
    groups = _tas_groups(workload)
    first_of: dict[str, PodSetResult] = {}
    #: per pod set, per resource given a flavor: where its group's search stopped (``scan_progress``)
    scan: list[dict[str, int]] = []
    tried_of: dict[str, dict[str, int]] = {}
    for index, pod_set in enumerate(workload.pod_sets):
        result = PodSetResult(pod_set.name, pod_set.count)
        tried: dict[str, int] = {}
        scan.append(tried)
        result.requests = {resource: amount * pod_set.count for resource, amount in pod_set.requests}
        results.append(result)
        group_name = (pod_set.topology.group or "") if groups and pod_set.topology else ""
        grouped = groups.get(group_name) if group_name else None
        first = first_of.get(group_name) if grouped else None
        if grouped and first is None:
            first_of[group_name] = result
            tried_of[group_name] = tried
        group_min_reason: dict[int, str] = {}
        for resource in sorted(result.requests):
            if resource in result.flavors:
                continue
            group_index = queue.group_of.get(resource)
            if group_index is None and queue.ignore_undeclared:
                continue  # Kueue's IgnoreUndeclaredResources: not part of the quota check
            if group_index is None:
                result.reasons = [f"resource {resource} unavailable in ClusterQueue"]
                result.mode = Mode.NO_FIT
                shortfalls.append(())
                group_min_reason[-1] = REASON_NO_FLAVOR
                break
            covered, flavor_names = queue.groups[group_index]
            group_requests = {r: a for r, a in result.requests.items() if r in covered}
            start = next_flavor(resume, index, resource, len(flavor_names))
            if first is not None:
                chosen = next((first.flavors[r] for r in sorted(covered) if r in first.flavors), None)
                flavor_names = (chosen,) if chosen is not None else flavor_names
                start = 0
            elif grouped:
                for other in grouped:
                    if other is not pod_set:
                        for r, a in other.requests:
                            if r in covered:
                                group_requests[r] = group_requests.get(r, 0) + a * other.count
            best: _Choice | None = None
            reasons: list[str] = []
            alternatives: list[tuple[tuple[FlavorResource, int], ...]] = []
            last_tried = start
            for last_tried in range(start, len(flavor_names)):
                flavor_name = flavor_names[last_tried]
                if nominated is not None and nominated.get(pod_set.name, {}).get(resource) != flavor_name:
                    reasons.append(
                        f"skipping flavor {flavor_name} as it is not found in the nomination mapping "
                        f"for resource {resource}"
                    )
                    continue
                flavor = flavors.get(flavor_name)
                problem = (
                    f"flavor {flavor_name} not found"
                    if flavor is None
                    else flavor_incompatibility(pod_set, flavor)
                    or tas_problem(pod_set, flavor, queue, flavors)
                )
                if problem:
                    reasons.append(problem)
                    _note(group_min_reason, group_index, REASON_NO_FLAVOR)
                    continue
                choice, flavor_reasons, flavor_no_fit, short = _check_flavor(
                    workload, queue, ledger, oracle, flavor_name, group_requests, assigned
                )
                reasons.extend(flavor_reasons)
                if short is not None:
                    alternatives.append(short)
                if choice.mode is Mode.NO_FIT:
                    _note(group_min_reason, group_index, flavor_no_fit)
                if not _try_next(choice, queue.fungibility):
                    best = choice
                    break
                if _better(choice, best, queue.fungibility):
                    best = choice
            if best is None or best.mode is not Mode.FIT:
                shortfalls.append(tuple(alternatives))
            if best is None or best.mode is Mode.NO_FIT:
                result.mode = Mode.NO_FIT
                result.reasons = reasons
                break
            stopped = (
                tried_of[group_name].get(resource, -1)
                if first is not None
                else tried_index(last_tried, len(flavor_names))
            )
            for r in group_requests:
                result.flavors[r] = best.flavor
                tried[r] = stopped
            if best.mode is not Mode.FIT:
                needs.update(best.short)
                result.mode = min(result.mode, best.mode)
                result.reasons.extend(reasons)
            borrowing = max(borrowing, best.borrow)
        if result.mode is Mode.NO_FIT:
            pod_set_reason = ""
            for reason in group_min_reason.values():
                pod_set_reason = _most_severe(pod_set_reason, reason)
            no_fit_reason = _most_severe(no_fit_reason, pod_set_reason or REASON_NO_FLAVOR)
        overall = min(overall, result.mode)
        if result.mode is Mode.NO_FIT:
            break
        for resource, flavor_name in result.flavors.items():
            fr = (flavor_name, resource)
            assigned[fr] = assigned.get(fr, 0) + result.requests[resource]
    known = len(workload.pod_sets) == 1
    return Assignment(
        results,
        assigned,
        overall,
        borrowing,
        no_fit_reason,
        frozenset(needs),
        tuple(shortfalls) if known else None,
        scan=tuple(scan),
    )


def _tas_groups(workload: WorkloadInfo) -> dict[str, list[PodSetInfo]]:
    """The pod sets of each TAS group of two or more (empty when there is none, the common case)."""
    if len(workload.pod_sets) < 2:
        return {}
    members: dict[str, list[PodSetInfo]] = {}
    for pod_set in workload.pod_sets:
        if pod_set.topology is not None and pod_set.topology.group:
            members.setdefault(pod_set.topology.group, []).append(pod_set)
    return {name: found for name, found in members.items() if len(found) > 1}


def assign_one_group(
    workload: WorkloadInfo,
    queue: CompiledQueue,
    flavors: Mapping[str, ResourceFlavor],
    ledger: Ledger,
    oracle: PreemptionOracle,
    *,
    resume: Scan | None = None,
) -> Assignment | None:
    """What ``search_flavors`` answers in its most common case, without its bookkeeping: one pod set
    whose resources all belong to one resource group, outside topology-aware scheduling. The group's
    flavors are tried in the same order with the same rules, so the answer is the search's, reasons,
    shortfalls and preemption verdicts included. ``None``: the full search decides."""
    if len(workload.pod_sets) != 1:
        return None
    pod_set = workload.pod_sets[0]
    if not pod_set.requests or pod_set.topology is not None:
        return None
    group_of = queue.group_of
    group = group_of.get(pod_set.requests[0][0])
    if group is None:
        return None
    for resource, _ in pod_set.requests:
        if group_of.get(resource) != group:
            return None
    count = pod_set.count
    requests = {resource: amount * count for resource, amount in pod_set.requests}
    node = ledger.queues[queue.name]
    usage, subtree, nominal = node.usage, node.subtree, queue.nominal
    fungibility = queue.fungibility
    best: _Choice | None = None
    reasons: list[str] = []
    alternatives: list[tuple[tuple[FlavorResource, int], ...]] = []
    least_severe = ""  # the no-fit reason of the flavor that came closest (``_note``)
    flavor_names = queue.groups[group][1]
    start = next_flavor(resume, 0, pod_set.requests[0][0], len(flavor_names))
    last_tried = start
    for last_tried in range(start, len(flavor_names)):
        flavor_name = flavor_names[last_tried]
        flavor = flavors.get(flavor_name)
        problem = (
            f"flavor {flavor_name} not found"
            if flavor is None
            else flavor_incompatibility(pod_set, flavor) or tas_problem(pod_set, flavor, queue, flavors)
        )
        if problem:
            reasons.append(problem)
            least_severe = _less_severe(least_severe, REASON_NO_FLAVOR)
            continue
        borrows = 0
        for resource, wanted in requests.items():
            fr = (flavor_name, resource)
            if fr not in nominal or wanted > available(node, fr):
                choice, flavor_reasons, flavor_no_fit, short = _check_flavor(
                    workload, queue, ledger, oracle, flavor_name, requests, _NOTHING_ASSIGNED
                )
                reasons.extend(flavor_reasons)
                if short is not None:
                    alternatives.append(short)
                if choice.mode is Mode.NO_FIT:
                    least_severe = _less_severe(least_severe, flavor_no_fit)
                break
            if usage.get(fr, 0) + wanted > subtree.get(fr, 0):
                borrows = max(borrows, borrowing_height(node, fr, wanted))
        else:
            choice = _Choice(flavor_name, Mode.FIT, borrows)
            alternatives.append(())  # as the search records a flavor that fits: nothing short
        if not _try_next(choice, fungibility):
            best = choice
            break
        if _better(choice, best, fungibility):
            best = choice
    if best is None or best.mode is Mode.NO_FIT:
        failed = PodSetResult(pod_set.name, count, {}, requests, reasons, Mode.NO_FIT)
        return Assignment(
            [failed],
            {},
            Mode.NO_FIT,
            0,
            _most_severe("", least_severe or REASON_NO_FLAVOR),
            frozenset(),
            (tuple(alternatives),),
            scan=_NOTHING_TRIED,
        )
    chosen = best.flavor
    result = PodSetResult(pod_set.name, count, dict.fromkeys(requests, chosen), requests)
    used = {(chosen, resource): amount for resource, amount in requests.items()}
    scan = (dict.fromkeys(requests, tried_index(last_tried, len(flavor_names))),)
    if best.mode is Mode.FIT:
        return Assignment([result], used, Mode.FIT, best.borrow, shortfalls=(), scan=scan)
    result.mode = best.mode
    result.reasons = reasons
    return Assignment(
        [result],
        used,
        best.mode,
        best.borrow,
        "",
        frozenset(best.short),
        (tuple(alternatives),),
        scan=scan,
    )


#: what earlier pod sets took, for a workload of one pod set
_NOTHING_ASSIGNED: Mapping[FlavorResource, int] = {}
#: the scan of a one-pod-set search that found no flavor: the next one starts over
_NOTHING_TRIED: Scan = ({},)


def _less_severe(existing: str, reason: str) -> str:
    """The least severe failure among one group's flavors ("": none yet)."""
    if not existing or _SEVERITY.get(reason, 0) < _SEVERITY.get(existing, 0):
        return reason
    return existing


def _note(group_min_reason: dict[int, str], group: int, reason: str) -> None:
    """Alternative flavors of one group: the least severe failure is the one that matters."""
    group_min_reason[group] = _less_severe(group_min_reason.get(group, ""), reason)


def _check_flavor(
    workload: WorkloadInfo,
    queue: CompiledQueue,
    ledger: Ledger,
    oracle: PreemptionOracle,
    flavor: str,
    requests: Mapping[str, int],
    assigned: Mapping[FlavorResource, int],
) -> tuple[_Choice, list[str], str, tuple[tuple[FlavorResource, int], ...] | None]:
    """The flavor's mode, its reasons, its no-fit reason, and the amounts that would have to be
    available for it to fit (``None`` when waiting can never help: it exceeds the maximum capacity)."""
    mode = Mode.FIT
    borrow = 0
    reasons: list[str] = []
    no_fit_reason = ""
    short: list[tuple[FlavorResource, int]] = []
    hopeless = False
    node = ledger.queues[queue.name]
    nominal = queue.nominal
    usage, subtree = node.usage, node.subtree
    for resource, amount in requests.items():
        fr = (flavor, resource)
        before = assigned.get(fr, 0)
        wanted = before + amount
        if fr in nominal:
            free = available(node, fr)
            if wanted <= free:  # fits now, so it fits the maximum capacity too
                if usage.get(fr, 0) + wanted > subtree.get(fr, 0):  # not within its own quota
                    borrow = max(borrow, borrowing_height(node, fr, wanted))
                continue
            capacity = ledger.potential_available(queue.name, fr)
        else:  # a flavor that does not quote a resource of its group can never provide any of it
            free = capacity = 0
        if wanted > capacity:
            previous, current = _amount_text(resource, before), _amount_text(resource, amount)
            reasons.append(
                f"insufficient quota for {resource} in flavor {flavor}, "
                f"previously considered podsets requests ({previous}) + current podset request ({current}) "
                "> maximum capacity "
                f"({_amount_text(resource, capacity)})"
            )
            mode = Mode.NO_FIT
            no_fit_reason = _most_severe(no_fit_reason, REASON_EXCEEDS)
            hopeless = True
            continue
        reasons.append(
            f"insufficient unused quota for {resource} in flavor {flavor}, "
            f"{_amount_text(resource, wanted - free)} more needed"
        )
        short.append((fr, wanted))
        if (
            queue.nominal.get(fr, 0) >= wanted
            or queue.preempt_while_borrowing
            or ledger.may_reclaim_in_hierarchy(queue.name, fr, wanted)
        ):
            found, borrow_after = oracle.simulate(queue=queue.name, workload=workload, fr=fr, amount=wanted)
            mode = min(mode, found)
            borrow = max(borrow, borrow_after)
        else:
            mode = Mode.NO_FIT
            no_fit_reason = _most_severe(no_fit_reason, REASON_WAITING)
    choice = _Choice(flavor, mode, borrow, tuple(fr for fr, _ in short))
    return choice, reasons, no_fit_reason, None if hopeless else tuple(short)
