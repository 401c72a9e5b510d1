"""The admission loop driven by hand: a store, the loop on it (no writer: only its decisions are looked at),
and changes fed to both as the informers would."""

from __future__ import annotations

import copy
from typing import Any

from webhook.control.kinds import Kind
from webhook.control.loop import AdmissionLoop
from webhook.control.metrics import Metrics
from webhook.control.store import Change, Store, key_of
from webhook.core.scheduler import Admit

JSON = dict[str, Any]


class NoEvents:
    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        pass


def new_loop() -> tuple[AdmissionLoop, Store]:
    store = Store()
    loop = AdmissionLoop(
        store=store,
        writer=None,
        events=NoEvents(),
        metrics=Metrics(),
        is_leader=lambda: True,  # type: ignore[arg-type]
    )
    return loop, store


def feed(loop: AdmissionLoop, store: Store, kind: Kind, obj: JSON) -> None:
    old = store.get(kind, key_of(obj)[1], key_of(obj)[0])
    store.upsert(kind, obj)
    loop.on_change(Change(kind, key_of(obj), old, copy.deepcopy(obj)))


def admitted(loop: AdmissionLoop) -> list[str]:
    """Run cycles until nothing is left to decide; the workloads admitted, in order."""
    decisions: list[Any] = []
    while loop.state.has_work():
        decisions.extend(loop.state.cycle())
    return [d.workload for d in decisions if isinstance(d, Admit)]
