"""The flavor assigner's shortcut (``first_plain_fit``) never answers differently from the full search.

Random ClusterQueues (flavor order, quotas, borrowing limits, fungibility) in a cohort with random
usage already charged, and random single-pod-set workloads: whenever the shortcut answers, the full
search picks the same flavors with the same usage and the same borrowing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.core.flavors import NoPreemption, first_plain_fit, search_flavors
from kueue_webhook.core.model import WorkloadInfo

from .builders import cluster_queue, state_with, workload

FLAVORS = ("f1", "f2", "f3")

quota = st.one_of(
    st.integers(0, 6),
    st.builds(lambda n, b: {"nominalQuota": n, "borrowingLimit": b}, st.integers(0, 6), st.integers(0, 3)),
)
flavor_quotas = st.fixed_dictionaries({"cpu": quota, "memory": st.integers(0, 6).map(lambda n: f"{n}Gi")})
specs = st.fixed_dictionaries(
    {
        "order": st.permutations(FLAVORS),
        "quotas": st.lists(flavor_quotas, min_size=3, max_size=3),
        "borrow": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
        "preempt": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
        "other_usage": st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), max_size=4),
        "cpu": st.integers(1, 4),
        "memory": st.integers(0, 3),
        "count": st.integers(1, 2),
    }
)


@given(specs)
@settings(max_examples=500)
def test_shortcut_agrees_with_the_full_search(spec: dict[str, Any]) -> None:
    resources = {f: q for f, q in zip(spec["order"], spec["quotas"], strict=True)}
    fungibility = {"whenCanBorrow": spec["borrow"], "whenCanPreempt": spec["preempt"]}
    mine = cluster_queue("mine", resources, cohortName="org", flavorFungibility=fungibility)
    other = cluster_queue("other", {"f1": {"cpu": 4, "memory": "4Gi"}}, cohortName="org")
    state = state_with(mine, other, flavors=FLAVORS, local_queues={"lq": "mine"})
    for index, cpu in spec["other_usage"]:
        state.ledger.charge(["mine", "other", "other"][index], {("f1", "cpu"): cpu * 10**9})
    requests = {"cpu": str(spec["cpu"])} | ({"memory": f"{spec['memory']}Gi"} if spec["memory"] else {})
    info = WorkloadInfo.from_workload(workload("w", requests, count=spec["count"]))
    queue = state.compiled_queue("mine")
    assert queue is not None
    shortcut = first_plain_fit(info, queue, state.flavors, state.ledger)
    full = search_flavors(
        workload=info, queue=queue, flavors=state.flavors, ledger=state.ledger, oracle=NoPreemption()
    )
    if shortcut is None:
        return
    assert (full.mode, full.borrowing, full.usage) == (shortcut.mode, shortcut.borrowing, shortcut.usage)
    assert [ps.flavors for ps in full.pod_sets] == [ps.flavors for ps in shortcut.pod_sets]
