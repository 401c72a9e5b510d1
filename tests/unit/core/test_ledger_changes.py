"""The ledger answers after any sequence of changes what a ledger built afresh answers.

``available`` is kept per ClusterQueue and flavor/resource until its cohort tree changes (``Ledger.stamp``),
so a long-lived ledger goes through random charges, releases, quota changes, moves between cohorts and
sub-cohorts, and simulated removals put back with ``Ledger.rewind``, with every answer asked after each
step; each must equal the answer of a new ledger given the same specs and the same usage.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.core.ledger import Ledger

from .builders import cluster_queue, cohort

G = 10**9
CPU = ("default", "cpu")
QUEUES = ("a", "b", "c", "d")
COHORTS = ("", "top", "left", "right")

quota = st.fixed_dictionaries(
    {"nominalQuota": st.integers(0, 6)},
    optional={"borrowingLimit": st.integers(0, 4), "lendingLimit": st.integers(0, 4)},
)
step = st.one_of(
    st.tuples(st.just("charge"), st.sampled_from(QUEUES), st.integers(1, 5)),
    st.tuples(st.just("release"), st.sampled_from(QUEUES), st.integers(1, 5)),
    st.tuples(st.just("spec"), st.sampled_from(QUEUES), st.tuples(st.sampled_from(COHORTS), quota)),
    st.tuples(st.just("simulate"), st.sampled_from(QUEUES), st.integers(1, 5)),
)


def _queue_spec(name: str, cohort_name: str, queue_quota: dict[str, int]) -> Any:
    if not cohort_name:  # Kueue's API: limits only for a ClusterQueue in a cohort
        queue_quota = {"nominalQuota": queue_quota["nominalQuota"]}
    if queue_quota.get("lendingLimit", 0) > queue_quota["nominalQuota"]:  # at most the nominal quota
        queue_quota = queue_quota | {"lendingLimit": queue_quota["nominalQuota"]}
    return cluster_queue(
        name, {"default": {"cpu": queue_quota}}, **({"cohortName": cohort_name} if cohort_name else {})
    )


def _fresh(specs: dict[str, Any], usage: dict[str, int]) -> Ledger:
    ledger = Ledger()
    _cohorts(ledger)
    for name, spec in specs.items():
        ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
    for name, amount in usage.items():
        if amount:
            ledger.charge(name, {CPU: amount * G})
    return ledger


def _cohorts(ledger: Ledger) -> None:
    """``left`` and ``right`` are sub-cohorts of ``top``; ``left`` has quota of its own."""
    for item in (
        cohort("top"),
        cohort("left", {"default": {"cpu": 2}}, parent="top"),
        cohort("right", parent="top"),
    ):
        ledger.set_cohort(item.name, parent=item.parent_name, groups=item.resource_groups)


def _answers(ledger: Ledger) -> dict[str, tuple[int, int, int]]:
    return {
        name: (
            ledger.available(name, CPU),
            ledger.potential_available(name, CPU),
            ledger.borrowing_height(name, CPU, G),
        )
        for name in QUEUES
    }


@given(
    st.lists(st.tuples(st.sampled_from(COHORTS), quota), min_size=4, max_size=4), st.lists(step, max_size=30)
)
@settings(max_examples=300, deadline=None)
def test_answers_after_any_changes_are_those_of_a_ledger_built_afresh(
    initial: list[tuple[str, dict[str, int]]], steps: list[tuple[Any, ...]]
) -> None:
    ledger = Ledger()
    _cohorts(ledger)
    specs = {name: _queue_spec(name, c, q) for name, (c, q) in zip(QUEUES, initial, strict=True)}
    for name, spec in specs.items():
        ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
    usage = dict.fromkeys(QUEUES, 0)
    for kind, name, arg in steps:
        if kind == "charge":
            ledger.charge(name, {CPU: arg * G})
            usage[name] += arg
        elif kind == "release":
            amount = min(arg, usage[name])
            ledger.release(name, {CPU: amount * G})
            usage[name] -= amount
        elif kind == "spec":
            specs[name] = spec = _queue_spec(name, *arg)
            ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
        else:  # a preemption search: taken off, asked, put back, and the tree's stamp given back
            amount = min(arg, usage[name])
            node = ledger.queues[name]
            stamp = ledger.stamp(node)
            ledger.release(name, {CPU: amount * G})
            _answers(ledger)
            ledger.charge(name, {CPU: amount * G})
            ledger.rewind(node, stamp)
        assert _answers(ledger) == _answers(_fresh(specs, usage)), (kind, name, arg)


def test_a_change_in_another_tree_leaves_a_trees_stamp_alone() -> None:
    ledger = Ledger()
    for name, cohort_name in (("a", "one"), ("b", "one"), ("c", "two")):
        spec = _queue_spec(name, cohort_name, {"nominalQuota": 4})
        ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
    a, b = ledger.queues["a"], ledger.queues["b"]
    before = ledger.stamp(a)
    ledger.charge("c", {CPU: G})
    assert ledger.stamp(a) == before
    ledger.charge("b", {CPU: G})
    assert ledger.stamp(a) != before
    assert ledger.stamp(a) == ledger.stamp(b)
