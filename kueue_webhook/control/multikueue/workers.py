"""The worker clusters as the dispatcher sees them: which clusters a MultiKueue admission check may use, and a
connected client for each one that is ``Active`` now.

Two parts of the controller meet here. The cluster side (the ``MultiKueueCluster`` connections, their
``Active`` condition, the ``MultiKueueConfig`` lists and the check's own ``Active`` condition) implements
``WorkerClusters``; the dispatch side (copies of Workloads and jobs on the workers, status mirrored back,
garbage collection, the worker-lost timeout) only reads it. Keeping the seam this narrow lets either side be
tested with a stand-in for the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kueue_webhook.control.kube.client import KubeClient


class WorkerClusters(Protocol):
    """What the dispatcher may ask about worker clusters; answers reflect the cluster side's latest view."""

    def clusters_for(self, admission_check: str) -> tuple[str, ...] | None:
        """The ``MultiKueueCluster`` names of the ``MultiKueueConfig`` that the AdmissionCheck named
        ``admission_check`` points at, in the config's order; None when that check is not a MultiKueue check
        or its config does not exist."""
        ...

    def client(self, cluster: str) -> KubeClient | None:
        """A connected client for ``cluster`` while its ``MultiKueueCluster`` is ``Active``, else None."""
        ...

    def inactive_since(self, cluster: str) -> float | None:
        """The ``time.monotonic()`` at which ``cluster`` stopped being ``Active`` (or was first seen
        inactive); None while it is ``Active``. The dispatcher's worker-lost timeout counts from here."""
        ...

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(cluster)`` whenever a cluster's ``Active`` state, client or config membership
        changes (on the event loop, never re-entrantly)."""
        ...
