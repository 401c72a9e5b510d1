"""Reclaim takes back only from ClusterQueues that borrow, judged by what they have admitted.

Kueue's rule (``pkg/scheduler/preemption``: a candidate of another ClusterQueue is considered only while
that ClusterQueue borrows; site ``concepts/preemption.md``, reclaimWithinCohort): the workloads of a
ClusterQueue within its nominal quota are never reclaimed. Here a preemptor waiting for its targets keeps
the room it will take charged to its ClusterQueue (``claims.Claim``); that room is not admitted, and Kueue
has no such thing, so it must not make the ClusterQueue look like a borrower. Before, a ClusterQueue
holding one priority-200 Workload at its nominal quota plus a waiting 1-cpu preemptor's claim lost that
Workload to reclaim, again and again, in Kueue's baseline benchmark.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_webhook.core.scheduler import Admit, Evict

from .builders import cluster_queue
from .test_preemption import Cluster, cluster

G = 10**9
NOMINAL = 4
QUEUES = ("q0", "q1", "q2")
POLICY = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}

arrival = st.tuples(st.just("add"), st.integers(0, 2), st.integers(1, 4), st.sampled_from([50, 100, 200]))
cycle = st.tuples(st.just("cycle"))
acknowledge = st.tuples(st.just("acknowledge"), st.integers(0, 50))
finish = st.tuples(st.just("finish"), st.integers(0, 50))


def held(c: Cluster, queue: str) -> int:
    """What the workloads holding quota in ``queue`` use (those told to go included: they still hold it)."""
    return sum(sum(h.info.usage.values()) for h in c.state.tracker.holders(queue))


def one_cycle(c: Cluster, told_to_go: list[str]) -> None:
    """One cycle; every reclaim in it must take from a ClusterQueue that borrows by what it holds."""
    before = {queue: held(c, queue) for queue in QUEUES}
    decisions = c.state.cycle()
    for decision in decisions:
        if isinstance(decision, Admit):
            c.admitted.add(decision.workload)
            c.state.confirm(decision.workload)
    after = {queue: held(c, queue) for queue in QUEUES}  # with this cycle's admissions
    for decision in decisions:
        if not isinstance(decision, Evict):
            continue
        told_to_go.append(decision.workload)
        if decision.preemption_reason == "InCohortReclamation":
            queue = decision.cluster_queue
            assert max(before[queue], after[queue]) > NOMINAL * G, (
                f"{decision.workload} reclaimed from {queue}, which borrows nothing "
                f"({before[queue] // G} cpu held of {NOMINAL}) for {decision.preemptor}"
            )


@given(st.lists(st.one_of(arrival, cycle, cycle, acknowledge, finish), min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
@example(
    # q2 borrows and q0's 1-cpu Workload reclaims from it: it waits for its target with a claim in q0; q0's
    # priority-200 Workload goes before it in q0's queue and is admitted at q0's nominal quota once room
    # is free; another one heads q0's queue (so the claim stays while q1's head looks for room) when q1's
    # priority-200 Workload lacks room: nothing but the target still leaving borrows, so nothing is taken
    steps=[
        ("add", 2, 4, 50),
        ("add", 2, 4, 50),
        ("add", 1, 4, 50),
        ("cycle",),
        ("cycle",),
        ("cycle",),
        ("add", 0, 1, 100),
        ("cycle",),
        ("add", 0, 4, 200),
        ("finish", 0),
        ("finish", 1),
        ("cycle",),
        ("add", 0, 4, 200),
        ("add", 1, 4, 200),
        ("cycle",),
        ("cycle",),
    ]
)
def test_reclaim_never_takes_from_a_cluster_queue_within_its_nominal_quota(
    steps: list[tuple[Any, ...]],
) -> None:
    queues = [
        cluster_queue(name, {"default": {"cpu": NOMINAL}}, cohortName="org", preemption=POLICY)
        for name in QUEUES
    ]
    c = cluster(*queues, local_queues={f"lq{i}": name for i, name in enumerate(QUEUES)})
    told_to_go: list[str] = []
    for number, step in enumerate(steps):
        if step[0] == "add":
            _, queue_index, cpu, priority = step
            c.add(f"w{number}", cpu, queue=f"lq{queue_index}", priority=priority, created=number)
        elif step[0] == "cycle":
            one_cycle(c, told_to_go)
        elif step[0] == "acknowledge" and told_to_go:
            # the owner clears the reservation of one it was told to evict: its quota is released
            key = told_to_go.pop(step[1] % len(told_to_go))
            if key in c.admitted:
                c.admitted.discard(key)
                c.state.upsert_workload(c.workloads[key])
        elif step[0] == "finish" and c.admitted:
            key = sorted(c.admitted)[step[1] % len(c.admitted)]
            if key not in told_to_go:
                c.finish(key)
