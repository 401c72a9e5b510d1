"""A preemptor's claim: the room it will take, kept charged while its targets leave.

When a cycle decides to preempt, the evictions take time (the targets' owners must stop them and clear
their reservations). Meanwhile the preemptor *claims* the room it needs: it is charged to its ClusterQueue
in the ledger, so nothing admitted in between can take what the evictions free, and when the preemptor is
tried again it goes before every other head. The tracker (``workload_tracker.py``) keeps one ``Claim`` per
waiting preemptor and releases it when the preemptor is tried again, admitted or gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueue_webhook.core.ledger import Ledger
from kueue_webhook.core.model import FlavorResource, WorkloadKey

__all__ = ["Claim", "uncovered"]


@dataclass(slots=True)
class Claim:
    """A preemptor waiting for its targets: the room it will take stays charged in its ClusterQueue, so
    that nobody else takes what the evictions free. The part of that room its targets in the same
    ClusterQueue still hold is charged to them already and is not charged again (``usage`` is ``need``
    less that part): a preemption within one ClusterQueue then weighs on its cohort exactly as it will
    once done, and another ClusterQueue of the cohort can preempt its own workloads in the same cycle
    (Kueue's scheduler_test "multiple preemptions without borrowing"). Room freed elsewhere in the cohort
    (reclaimed from other ClusterQueues) is charged in full on top of the victims' own usage. Released
    when the preemptor is tried again, admitted, or gone."""

    sequence: int
    cluster_queue: str
    #: the preemptor's whole usage, empty once the claim is released
    need: dict[FlavorResource, int] = field(default_factory=dict)
    #: what is charged for it in the ledger now
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    targets: set[WorkloadKey] = field(default_factory=set)

    def stake(
        self,
        ledger: Ledger,
        name: str,
        need: Mapping[FlavorResource, int],
        covered: Mapping[FlavorResource, int],
    ) -> None:
        """Charge ``need`` in ``name`` for the preemptor, less what ``covered`` says its targets there
        still hold."""
        self.release(ledger)
        self.cluster_queue, self.need = name, dict(need)
        self.recharge(ledger, covered)

    def recharge(self, ledger: Ledger, covered: Mapping[FlavorResource, int]) -> None:
        """Charge ``need`` less ``covered`` (what its targets in its ClusterQueue still hold)."""
        if self.cluster_queue not in ledger.queues:
            return
        ledger.release_claim(self.cluster_queue, self.usage)
        self.usage = uncovered(self.need, covered)
        ledger.charge_claim(self.cluster_queue, self.usage)

    def release(self, ledger: Ledger) -> None:
        """Give back what is charged for the claim (it stays, empty, until dropped)."""
        if self.usage and self.cluster_queue in ledger.queues:
            ledger.release_claim(self.cluster_queue, self.usage)
        self.usage, self.need = {}, {}


def uncovered(
    need: Mapping[FlavorResource, int], covered: Mapping[FlavorResource, int]
) -> dict[FlavorResource, int]:
    """What of ``need`` is not ``covered``."""
    return {fr: amount - covered.get(fr, 0) for fr, amount in need.items() if amount > covered.get(fr, 0)}
