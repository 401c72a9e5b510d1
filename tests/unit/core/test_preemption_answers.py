"""Preemption answers a repeated question as a search made afresh would.

``ClassicalPreemption`` keeps the targets it found per ClusterQueue until the cohort tree's usage, its
policy or the holders of a ClusterQueue it looked at change. A cohort of three preempting ClusterQueues
goes through random arrivals, admissions, evictions left in flight, acknowledged evictions and finishes;
after each step, questions by new workloads and by workloads that hold quota themselves (never their own
candidates) are asked twice of the scheduler's long-lived search, and each answer must be the one a new
search over the same state gives (the same victims, in the same order, for the same reasons).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.preemption import ClassicalPreemption, Target

from .builders import admitted_status, cluster_queue, workload
from .test_preemption import Cluster, cluster

G = 10**9
CPU = ("default", "cpu")
QUEUES = ("q0", "q1", "q2")

policy = st.fixed_dictionaries(
    {
        "withinClusterQueue": st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"]),
        "reclaimWithinCohort": st.sampled_from(["Any", "LowerPriority", "Never"]),
    }
)
arrival = st.tuples(st.just("add"), st.integers(0, 2), st.integers(1, 4), st.integers(0, 2), st.booleans())
finish = st.tuples(st.just("finish"), st.integers(0, 50))
evicted = st.tuples(st.just("evicted"), st.integers(0, 50))
question = st.tuples(st.integers(0, 2), st.integers(1, 6), st.integers(0, 3), st.integers(0, 40))


def _seen(targets: list[Target]) -> list[tuple[str, str, str]]:
    return [(t.candidate.info.key, t.candidate.cluster_queue, t.reason) for t in targets]


def _ask(
    search: ClassicalPreemption, queue: str, info: WorkloadInfo, amount: int
) -> list[tuple[str, str, str]]:
    return _seen(search.targets(queue=queue, workload=info, requests={CPU: amount}, needs=frozenset((CPU,))))


def _check(c: Cluster, questions: list[tuple[int, int, int, int]]) -> None:
    state = c.state
    fresh = ClassicalPreemption(holders=state.tracker)
    for index, (queue_index, cpu, priority, created) in enumerate(questions):
        queue = QUEUES[queue_index]
        info = WorkloadInfo.from_workload(
            workload(
                f"ask-{index}",
                {"cpu": str(cpu)},
                queue=f"lq{queue_index}",
                priority=priority,
                created=created,
            )
        )
        expected = _ask(fresh, queue, info, cpu * G)
        assert _ask(state.preemption, queue, info, cpu * G) == expected
        assert _ask(state.preemption, queue, info, cpu * G) == expected
    for index, key in enumerate(
        sorted(c.admitted)[:3]
    ):  # a holder asking for more: it is never its own candidate
        held = state.tracker.workloads[key].info
        twin = WorkloadInfo.from_workload(workload(f"twin-{index}", {"cpu": "3"}))
        twin = replace(twin, priority=held.priority, created=held.created)
        for queue in QUEUES:
            _ask(state.preemption, queue, twin, 3 * G)  # the same question, asked first by another
            expected = _ask(fresh, queue, held, 3 * G)
            assert _ask(state.preemption, queue, held, 3 * G) == expected, (key, queue)


@given(
    st.lists(policy, min_size=3, max_size=3),
    st.lists(st.one_of(arrival, finish, evicted), min_size=1, max_size=25),
    st.lists(question, min_size=1, max_size=4),
)
@settings(max_examples=150, deadline=None)
def test_kept_answers_are_those_of_a_new_search(
    policies: list[dict[str, Any]], steps: list[tuple[Any, ...]], questions: list[tuple[int, int, int, int]]
) -> None:
    queues = [
        cluster_queue(name, {"default": {"cpu": 4}}, cohortName="org", preemption=p)
        for name, p in zip(QUEUES, policies, strict=True)
    ]
    c = cluster(*queues, local_queues={f"lq{i}": name for i, name in enumerate(QUEUES)})
    made: dict[str, tuple[int, int, int, int]] = {}
    for number, step in enumerate(steps):
        if step[0] == "add":
            _, queue_index, cpu, priority, acknowledge = step
            c.add(f"w{number}", cpu, queue=f"lq{queue_index}", priority=priority, created=number)
            made[f"ns/w{number}"] = (queue_index, cpu, priority, number)
            c.settle(acknowledge=acknowledge)  # unacknowledged: the victims stay, evicting
        elif step[0] == "evicted" and c.admitted:
            # told to go by someone else (Evicted=True) while it still holds its quota: the holders
            # change, the usage does not
            key = sorted(c.admitted)[step[1] % len(c.admitted)]
            queue_index, cpu, priority, created = made[key]
            status = admitted_status(QUEUES[queue_index], {"cpu": "default"}, {"cpu": str(cpu)})
            status["conditions"].append({"type": "Evicted", "status": "True", "reason": "Deactivated"})
            name = key.split("/", 1)[1]
            c.state.upsert_workload(
                workload(
                    name,
                    {"cpu": str(cpu)},
                    queue=f"lq{queue_index}",
                    priority=priority,
                    created=created,
                    status=status,
                )
            )
        elif c.admitted:
            c.finish(sorted(c.admitted)[step[1] % len(c.admitted)])
            c.settle()
        _check(c, questions)
