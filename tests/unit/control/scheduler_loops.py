"""The scheduler loop driven by hand: a store, the loop on it (no writer: only its decisions are looked at),
and changes fed to both as the informers would."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.core.scheduler import Admit
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]


def new_loop() -> tuple[SchedulerLoop, Store]:
    store = Store()
    return SchedulerLoop(control_context(store)), store


def feed(loop: SchedulerLoop, store: Store, kind: Kind, obj: JSON) -> None:
    old = store.get(kind, key_of(obj)[1], key_of(obj)[0])
    store.upsert(kind, obj)
    loop.on_change(Change(kind, key_of(obj), old, copy.deepcopy(obj)))


def admitted(loop: SchedulerLoop) -> list[str]:
    """Run cycles until nothing is left to decide; the workloads admitted, in order."""
    decisions: list[Any] = []
    while loop.state.has_work():
        decisions.extend(loop.state.cycle())
    return [d.workload for d in decisions if isinstance(d, Admit)]
