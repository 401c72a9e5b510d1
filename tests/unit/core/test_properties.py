"""Properties of the core under random cohorts, quotas and admit/finish sequences (deterministic hypothesis).

For every reachable state: no ClusterQueue holds more than nominal + borrowingLimit, the cohort's lent
pool is never over-drawn (each queue's private part, nominal - lendingLimit, stays out of the pool), the
ledger agrees with the workloads it admitted, releasing everything returns every node to zero, and the
same inputs give the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_webhook.core.scheduler import Admit, Decision, SchedulerState

from .builders import cluster_queue, run_until_quiet, state_with, workload

G = 10**9
CPU = ("default", "cpu")


@dataclass(frozen=True)
class QueueSpec:
    nominal: int
    borrowing: int | None
    lending: int | None

    def quota(self) -> dict[str, Any]:
        quota: dict[str, Any] = {"nominalQuota": self.nominal}
        if self.borrowing is not None:
            quota["borrowingLimit"] = self.borrowing
        if self.lending is not None:
            quota["lendingLimit"] = self.lending
        return quota


queue_specs = st.integers(0, 6).flatmap(
    lambda nominal: st.builds(
        QueueSpec,
        st.just(nominal),
        st.one_of(st.none(), st.integers(0, 4)),
        st.one_of(st.none(), st.integers(0, nominal)),
    )
)
# an operation: ("add", queue index, cpu, priority) or ("finish", pick)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3), st.integers(1, 5), st.integers(0, 2)),
        st.tuples(st.just("finish"), st.integers(0, 1000)),
    ),
    min_size=1,
    max_size=30,
)


def build(specs: list[QueueSpec]) -> SchedulerState:
    queues = [
        cluster_queue(f"q{i}", {"default": {"cpu": s.quota()}}, cohortName="org") for i, s in enumerate(specs)
    ]
    return state_with(*queues, local_queues={f"lq{i}": f"q{i}" for i in range(len(specs))})


def play(specs: list[QueueSpec], ops: list[tuple[Any, ...]], *, check: bool) -> list[Decision]:
    state = build(specs)
    admitted: list[tuple[str, str, int]] = []
    log: list[Decision] = []
    for step, op in enumerate(ops):
        if op[0] == "add":
            _, index, cpu, priority = op
            index %= len(specs)
            state.upsert_workload(
                workload(f"w{step}", {"cpu": str(cpu)}, queue=f"lq{index}", priority=priority, created=step)
            )
        elif admitted:
            key, _, _ = admitted.pop(op[1] % len(admitted))
            state.finish_workload(key)
        decisions = run_until_quiet(state)
        log.extend(decisions)
        for decision in decisions:
            if isinstance(decision, Admit):
                amount = decision.admission.pod_set_assignments[0].resource_usage["cpu"].nanos
                admitted.append((decision.workload, decision.cluster_queue, amount))
        if check:
            check_limits(state, specs, admitted)
    if check:
        for key, _, _ in admitted:
            state.finish_workload(key)
        nodes = (*state.ledger.queues.values(), *state.ledger.cohorts.values())
        assert all(amount == 0 for node in nodes for amount in node.usage.values())
    return log


def check_limits(state: SchedulerState, specs: list[QueueSpec], admitted: list[tuple[str, str, int]]) -> None:
    used = {f"q{i}": 0 for i in range(len(specs))}
    for _, queue, amount in admitted:
        used[queue] += amount
    lent_pool = 0
    drawn = 0
    for index, spec in enumerate(specs):
        name = f"q{index}"
        assert state.ledger.usage(name).get(CPU, 0) == used[name]  # the ledger agrees with the admissions
        if spec.borrowing is not None:
            assert used[name] <= (spec.nominal + spec.borrowing) * G
        private = (spec.nominal - spec.lending) * G if spec.lending is not None else 0
        lent_pool += spec.nominal * G - private
        drawn += max(0, used[name] - private)
    assert drawn <= lent_pool


@given(st.lists(queue_specs, min_size=1, max_size=4), operations)
@example([QueueSpec(4, None, 1)], [("add", 0, 3, 0), ("add", 0, 4, 0)])  # private part used, then the pool
@example([QueueSpec(2, 1, None), QueueSpec(4, None, None)], [("add", 0, 2, 0), ("add", 0, 2, 0)])
@settings(max_examples=200)
def test_limits_hold_and_everything_releases_to_zero(
    specs: list[QueueSpec], ops: list[tuple[Any, ...]]
) -> None:
    play(specs, ops, check=True)


@given(st.lists(queue_specs, min_size=1, max_size=3), operations)
def test_same_inputs_same_decisions(specs: list[QueueSpec], ops: list[tuple[Any, ...]]) -> None:
    assert play(specs, ops, check=False) == play(specs, ops, check=False)
