"""The latency model runs the real scheduling core to completion on Kueue's scenario shapes."""

from __future__ import annotations

from bench import latency_model
from bench.baseline import scenario


def test_every_workload_finishes_and_slower_writes_never_finish_sooner() -> None:
    fast = latency_model.run(scenario.SMOKE, write=0.0, watch=0.0, batch=0.0)
    slow = latency_model.run(scenario.SMOKE, write=0.05, watch=0.05, batch=0.0)
    assert fast.unfinished == 0 and slow.unfinished == 0
    assert set(fast.mean_wait) == {"large", "medium", "small"}
    assert fast.wall <= slow.wall
    # the work over the quota bounds the wall time from below
    plan = scenario.plan(scenario.SMOKE)
    assert fast.wall >= plan.cpu_seconds() / plan.nominal_cpu()
