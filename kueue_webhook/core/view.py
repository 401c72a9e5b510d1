"""The scheduler as status code sees it: read-only, and only what it reads.

Queue status (``status.py``), the status reporters and position writers in ``kueue_webhook/control/``, and the
admission checks controller all read the scheduler's state; none may change it, since the scheduler loop
alone feeds it events and runs its cycles. They depend on ``SchedulerView`` rather than on
``SchedulerState``: a Protocol naming exactly the reads they make, which ``SchedulerState`` satisfies
without knowing of it. A status reader cannot call ``upsert_workload`` or ``cycle`` by mistake, a test can
hand it any object with these reads, and what a change to the scheduler's internals could break outside
it is this list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from kueue_webhook.api.objects import ClusterQueue, LocalQueue
from kueue_webhook.core.check_references import CheckReferences
from kueue_webhook.core.fair_sharing import Share
from kueue_webhook.core.ledger import Node
from kueue_webhook.core.model import WorkloadInfo

__all__ = ["LedgerView", "SchedulerView"]


class LedgerView(Protocol):
    """The quota tree's cohorts and ClusterQueues, for their fair-sharing status and cohort metrics."""

    @property
    def cohorts(self) -> Mapping[str, Node]: ...

    @property
    def queues(self) -> Mapping[str, Node]: ...


class SchedulerView(Protocol):
    """What status and reports read from the scheduler's state."""

    @property
    def fair_sharing(self) -> bool: ...

    @property
    def ledger(self) -> LedgerView: ...

    @property
    def local_queues(self) -> Mapping[str, LocalQueue]: ...

    def cluster_queue(self, name: str) -> ClusterQueue | None: ...

    def cluster_queue_names(self) -> list[str]: ...

    def missing_flavors(self, name: str) -> tuple[str, ...]: ...

    def check_references(self, name: str) -> CheckReferences: ...

    def pending_in(self, name: str) -> list[WorkloadInfo]: ...

    def pending_workload(self, name: str, key: str) -> WorkloadInfo | None: ...

    def pending_unordered(self, name: str) -> Iterator[WorkloadInfo]: ...

    def pending_count(self, name: str) -> int: ...

    def inadmissible_count(self, name: str) -> int: ...

    def pending_by_local_queue(self, name: str) -> dict[tuple[str, str], list[int]]: ...

    def reserving_in(self, name: str) -> list[tuple[WorkloadInfo, bool]]: ...

    def admission_consumed(self, local_queue: str) -> tuple[dict[str, int], float] | None: ...

    def admission_usage(self, local_queue: str) -> float | None: ...

    def last_wait(self, key: str) -> tuple[str, str] | None: ...

    def fair_share(self, cluster_queue: str) -> Share | None: ...

    def share_of(self, node: Node) -> Share: ...
