"""The node-failure controller's replacement search, answered by the scheduler's core.

The core keeps the free capacity of every node and domain (:mod:`kueue_webhook.core.tas.capacity`) and
computes the new topology assignments (:func:`kueue_webhook.core.tas.replacement.find_replacement`); this
adapter reads the Workload's recorded ``podSetAssignments``, swaps in the new ``topologyAssignment`` of the
pod sets that moved and hands the list to :class:`~kueue_webhook.control.topology.node_failures.NodeFailures`,
which writes it. No answer (None) while the core does not know the Workload as holding quota yet.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kueue_webhook.api.node_failures import NO_REPLACEMENT, NoReplacementMarker
from kueue_webhook.core.scheduler import SchedulerState
from kueue_webhook.core.tas.replacement import NoReplacement

__all__ = ["CoreReplacement"]

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.topology")


class CoreReplacement:
    """A ``ReplacementSearch`` over the scheduler's current core (``state`` returns it)."""

    def __init__(self, state: Callable[[], SchedulerState]) -> None:
        self.state = state

    def __call__(self, workload: Mapping[str, Any], node: str) -> list[JSON] | NoReplacementMarker | None:
        meta = workload.get("metadata") or {}
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        found = self.state().find_replacement(key, node)
        if found is None:
            return None
        if isinstance(found, NoReplacement):
            log.info(
                "no replacement for a failed node",
                extra={"workload": key, "node": node, "reason": found.reason},
            )
            return NO_REPLACEMENT
        admission = (workload.get("status") or {}).get("admission") or {}
        assignments = copy.deepcopy(list(admission.get("podSetAssignments") or []))
        for assignment in assignments:
            if isinstance(assignment, dict) and assignment.get("name") in found:
                assignment["topologyAssignment"] = found[assignment["name"]]
        return assignments
