"""What keeps a ClusterQueue closed because of the AdmissionChecks it names.

A ClusterQueue reserves quota only while every AdmissionCheck it lists exists and is served by its
controller (``Active=True``), and while its MultiKueue checks keep MultiKueue's rules: at most one per
ClusterQueue, and on every flavor (MultiKueue dispatches the whole Workload to a worker cluster, so a check
on some flavors only cannot be honoured). Kueue's scheduler cache (``clusterQueue.updateWithAdmissionChecks``)
keeps the queue pending otherwise; ``check_references`` finds the same problems, and ``problems`` words them
as Kueue's ``Active`` condition does, in Kueue's order (``clusterQueue.inactiveReason``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER
from kueue_webhook.api.objects import AdmissionCheck, ClusterQueue

__all__ = ["CheckReferences", "check_references"]


@dataclass(frozen=True, slots=True)
class CheckReferences:
    """The problems of a ClusterQueue's AdmissionChecks, each list sorted by name (empty: none)."""

    missing: tuple[str, ...] = ()
    inactive: tuple[str, ...] = ()
    multikueue: tuple[str, ...] = ()
    per_flavor_multikueue: tuple[str, ...] = ()

    @property
    def blocking(self) -> bool:
        """Whether these problems keep the ClusterQueue from admitting."""
        return bool(self.missing or self.inactive or len(self.multikueue) > 1 or self.per_flavor_multikueue)

    def problems(self) -> list[tuple[str, str]]:
        """(reason, message part) of each problem, in the order Kueue's ``Active`` condition lists them."""
        out: list[tuple[str, str]] = []
        if self.missing:
            out.append(
                ("AdmissionCheckNotFound", f"references missing AdmissionCheck(s): {','.join(self.missing)}")
            )
        if self.inactive:
            inactive = ",".join(self.inactive)
            out.append(("AdmissionCheckInactive", f"references inactive AdmissionCheck(s): {inactive}"))
        if len(self.multikueue) > 1:
            out.append(
                (
                    "MultipleMultiKueueAdmissionChecks",
                    "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: "
                    + ",".join(self.multikueue),
                )
            )
        if self.per_flavor_multikueue:
            out.append(
                (
                    "MultiKueueAdmissionCheckAppliedPerFlavor",
                    "Cannot specify MultiKueue AdmissionCheck per flavor, found: "
                    + ",".join(self.per_flavor_multikueue),
                )
            )
        return out


#: a ClusterQueue whose checks are all in order (shared: most queues)
NO_PROBLEMS = CheckReferences()


def check_references(spec: ClusterQueue, checks: Mapping[str, AdmissionCheck]) -> CheckReferences:
    """The problems of ``spec``'s AdmissionChecks given the AdmissionChecks that exist."""
    if not spec.admission_checks:
        return NO_PROBLEMS
    missing: list[str] = []
    inactive: list[str] = []
    multikueue: list[str] = []
    per_flavor: list[str] = []
    for name in spec.admission_checks:
        check = checks.get(name)
        if check is None:
            missing.append(name)
            continue
        if not check.active:
            inactive.append(name)
        if check.controller_name == MULTIKUEUE_CONTROLLER:
            multikueue.append(name)
            if name in spec.per_flavor_checks:
                per_flavor.append(name)
    references = CheckReferences(
        tuple(sorted(missing)),
        tuple(sorted(inactive)),
        tuple(sorted(multikueue)),
        tuple(sorted(per_flavor)),
    )
    return references if references != NO_PROBLEMS else NO_PROBLEMS
