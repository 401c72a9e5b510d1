"""The flavor assigner's common case (``assign_one_group``) always answers what the full search answers.

Random ClusterQueues (flavor order, quotas, borrowing limits, fungibility and preference) in a cohort
with random usage already charged, a flavor the pod template cannot land on, a flavor that does not
exist, random single-pod-set workloads, and a preemption oracle whose verdict per flavor is drawn too:
the shortcut's assignment equals the search's, field by field (flavors, usage, mode, borrowing, reasons
and the message a user reads, the no-fit reason, what preemption must free, when it could fit again, where
the search stopped), also when the search resumes where an earlier one stopped.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.core.assignment import Assignment, Mode
from kueue_webhook.core.flavors import assign_one_group, search_flavors
from kueue_webhook.core.model import FlavorResource, WorkloadInfo

from .builders import cluster_queue, flavor, state_with, workload

FLAVORS = ("f1", "f2", "f3", "tainted", "missing")

quota = st.one_of(
    st.integers(0, 6),
    st.builds(lambda n, b: {"nominalQuota": n, "borrowingLimit": b}, st.integers(0, 6), st.integers(0, 3)),
)
flavor_quotas = st.fixed_dictionaries({"cpu": quota, "memory": st.integers(0, 6).map(lambda n: f"{n}Gi")})
verdicts = st.tuples(st.sampled_from([Mode.NO_CANDIDATES, Mode.PREEMPT, Mode.RECLAIM]), st.integers(0, 2))
specs = st.fixed_dictionaries(
    {
        "order": st.permutations(FLAVORS).map(lambda order: order[: len(order) - 1]),
        "quotas": st.lists(flavor_quotas, min_size=4, max_size=4),
        "borrow": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
        "preempt": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
        "preference": st.sampled_from(["BorrowingOverPreemption", "PreemptionOverBorrowing"]),
        "usage": st.lists(
            st.tuples(st.integers(0, 2), st.sampled_from(["f1", "f2", "f3"]), st.integers(0, 8)), max_size=5
        ),
        "cpu": st.integers(1, 6),
        "memory": st.integers(0, 3),
        "count": st.integers(1, 2),
        "verdicts": st.fixed_dictionaries({name: verdicts for name in FLAVORS}),
        # where an earlier search stopped (scan_progress): None, or the index of the flavor it stopped at
        "resume": st.one_of(st.none(), st.integers(-1, 3)),
    }
)


class DrawnOracle:
    """Preemption's verdict per flavor, as drawn: the same question always gets the same answer."""

    def __init__(self, verdicts: dict[str, tuple[Mode, int]]) -> None:
        self.verdicts = verdicts

    def simulate(
        self, *, queue: str, workload: WorkloadInfo, fr: FlavorResource, amount: int
    ) -> tuple[Mode, int]:
        return self.verdicts[fr[0]]


def _seen(assignment: Assignment) -> tuple[Any, ...]:
    return (
        [(ps.name, ps.count, ps.flavors, ps.requests, ps.reasons, ps.mode) for ps in assignment.pod_sets],
        assignment.usage,
        assignment.mode,
        assignment.borrowing,
        assignment.no_fit_reason,
        assignment.needs,
        assignment.shortfalls,
        assignment.message(),
        assignment.reason(),
        assignment.scan,
    )


@given(specs)
@settings(max_examples=600, deadline=None)
def test_common_case_answers_as_the_full_search(spec: dict[str, Any]) -> None:
    resources = dict(zip(spec["order"], spec["quotas"], strict=False))
    fungibility = {"whenCanBorrow": spec["borrow"], "whenCanPreempt": spec["preempt"]}
    if (spec["borrow"], spec["preempt"]) == ("TryNextFlavor", "TryNextFlavor"):
        fungibility["preference"] = spec["preference"]  # Kueue's API accepts it only then
    mine = cluster_queue("mine", resources, cohortName="org", flavorFungibility=fungibility)
    other = cluster_queue("other", {"f1": {"cpu": 4, "memory": "4Gi"}}, cohortName="org")
    state = state_with(mine, other, flavors=("f1", "f2", "f3"), local_queues={"lq": "mine"})
    state.upsert_resource_flavor(flavor("tainted", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
    for index, flavor_name, cpu in spec["usage"]:
        state.ledger.charge(["mine", "other", "other"][index], {(flavor_name, "cpu"): cpu * 10**9})
    requests = {"cpu": str(spec["cpu"])} | ({"memory": f"{spec['memory']}Gi"} if spec["memory"] else {})
    info = WorkloadInfo.from_workload(workload("w", requests, count=spec["count"]))
    queue = state.compiled_queue("mine")
    assert queue is not None
    oracle = DrawnOracle(spec["verdicts"])
    resume = None if spec["resume"] is None else ({"cpu": spec["resume"], "memory": spec["resume"]},)
    shortcut = assign_one_group(info, queue, state.flavors, state.ledger, oracle, resume=resume)
    full = search_flavors(
        workload=info, queue=queue, flavors=state.flavors, ledger=state.ledger, oracle=oracle, resume=resume
    )
    assert shortcut is not None  # one pod set, one resource group: always the common case
    assert _seen(shortcut) == _seen(full)


def test_a_resource_outside_the_queue_is_left_to_the_full_search() -> None:
    mine = cluster_queue("mine", {"f1": {"cpu": 4}})
    state = state_with(mine, flavors=("f1",))
    info = WorkloadInfo.from_workload(workload("w", {"cpu": "1", "memory": "1Gi"}))
    queue = state.compiled_queue("mine")
    assert queue is not None
    oracle = DrawnOracle({})
    assert assign_one_group(info, queue, state.flavors, state.ledger, oracle) is None
    full = search_flavors(
        workload=info, queue=queue, flavors=state.flavors, ledger=state.ledger, oracle=oracle
    )
    assert (
        full.message()
        == "couldn't assign flavors to pod set main: resource memory unavailable in ClusterQueue"
    )
