"""Every step a plan can return (a Job's, a pod group's, a StatefulSet's) is written by the one executor, so
no decision of a plan is ever dropped."""

from __future__ import annotations

from typing import get_args

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.executor import AnyStep, StepExecutor
from tests.unit.control.fakes import control_context


def test_every_step_type_a_plan_returns_has_a_writer() -> None:
    executor = StepExecutor(control_context(Store()))
    assert [t.__name__ for t in get_args(AnyStep) if not executor.executes(t)] == []
