"""Fair sharing, seen from outside: Cohort ``status.fairSharing`` and Kueue's weighted-share gauges.

The core owns the numbers (``SchedulerState.share_of``, the dominant resource share divided by the
weight) and ``kueue_webhook.core.status`` words them; ClusterQueue status already carries its share through
the
queue status reporter. What is left is the same for Cohorts, written through their status subresource,
and the two gauges dashboards built for Kueue read, ``kueue_cluster_queue_weighted_share{cluster_queue,
cohort}`` and ``kueue_cohort_weighted_share{cohort}``. A share moves with every admission in a cohort, so
like queue status this is recomputed on a change-driven tick at a bounded rate and written only when the
visible value changed; with fair sharing off nothing is computed or written.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, COHORTS, WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.paced import PacedReporter
from kueue_webhook.core.status import cohort_status

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.fair_sharing")


class FairSharingReporter(PacedReporter):
    """Recomputes shares after changes (``kueue_webhook.control.output.paced``: at a bounded rate, while
    leading)."""

    def on_change(self, change: Change) -> None:
        if change.kind in (WORKLOADS, CLUSTER_QUEUES, COHORTS):
            self.kick()

    async def flush(self) -> None:
        state = self.state()
        if not state.fair_sharing:
            return
        metrics = self.context.metrics
        role = metrics.role
        for name in state.cluster_queue_names():
            share = state.fair_share(name)
            spec = state.cluster_queue(name)
            if share is None or spec is None:
                continue
            metrics.cluster_queue_weighted_share.labels(name, spec.cohort_name or "", role).set(
                _gauge(share.weighted)
            )
        for name in sorted(state.ledger.cohorts):
            node = state.ledger.cohorts[name]
            metrics.cohort_weighted_share.labels(name, role).set(_gauge(state.share_of(node).weighted))
            cohort = self.context.store.get(COHORTS, name)
            if cohort is None:
                continue  # an implicit cohort (named by ClusterQueues only) has no object to write to
            computed = cohort_status(state, name)
            current = cohort.get("status") or {}
            if computed and current.get("fairSharing") != computed.get("fairSharing"):
                try:
                    await self.context.writer.patch_status(COHORTS, cohort, _constant(computed))
                except NotLeader:
                    return  # said once by the elector; the next term reports every cohort again
                except Exception as exc:  # the next change tries again
                    log.warning("cohort status write failed", extra={"cohort": name, "error": repr(exc)})


def _gauge(weighted: float) -> float:
    """Kueue reports NaN for a node of weight 0 that borrows (its share is unbounded)."""
    return weighted if math.isfinite(weighted) else math.nan


def _constant(status: JSON) -> Callable[[JSON], JSON | None]:
    def build(_current: JSON) -> JSON | None:
        return status

    return build
