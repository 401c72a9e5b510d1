"""Checks of every topology assignment the controller writes in the ``tas`` config.

Each admitted Workload's ``status.admission.podSetAssignments[].topologyAssignment`` is decoded and held to
what its class asked for: ``required`` - every pod in one rack; ``balanced`` (slices of ``n`` pods, each in
one rack) - the pods of every rack a multiple of ``n``; ``preferred`` - counted, one rack or not. Also the
pod count matches the pod set's. The assignment names hosts only (hostname is the lowest level), so the
rack of a host comes from the Nodes the benchmark created; with the runner's labels, where the same
hostname is in every rack, that is ambiguous and only the counts are checked.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.baseline import scenario
from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode

JSON = dict[str, Any]


@dataclass
class TopologyCheck:
    topology: scenario.TopologySpec
    checked: int = 0
    required_in_one_rack: int = 0
    preferred_in_one_rack: int = 0
    preferred: int = 0
    balanced_slices_whole: int = 0
    violations: list[str] = field(default_factory=list)
    missing: int = 0
    _seen: set[tuple[str, str]] = field(default_factory=set)
    _rack_of: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._rack_of = scenario.rack_of_host(self.topology) if self.topology.unique_hostnames else {}

    def observe(self, key: str, obj: JSON, template: scenario.WorkloadTemplate | None) -> None:
        """Check an admission once (by Workload and admission's resourceVersion-free identity)."""
        admission = (obj.get("status") or {}).get("admission")
        if not admission or template is None or not template.tas:
            return
        for assignment in admission.get("podSetAssignments") or ():
            ident = (key, repr(assignment.get("topologyAssignment")))
            if ident in self._seen:
                continue
            self._seen.add(ident)
            self._check(key, assignment, template)

    def _check(self, key: str, assignment: JSON, template: scenario.WorkloadTemplate) -> None:
        self.checked += 1
        raw = assignment.get("topologyAssignment")
        if raw is None:
            self.missing += 1
            self.violations.append(f"{key}: no topologyAssignment")
            return
        try:
            domains = decode(raw)
        except TopologyAssignmentError as exc:
            self.violations.append(f"{key}: {exc}")
            return
        levels = list(raw.get("levels") or ())
        pods = sum(d.count for d in domains)
        if pods != template.pods:
            self.violations.append(f"{key}: {pods} pods assigned, pod set has {template.pods}")
        if not self._rack_of and scenario.RACK not in levels:
            return
        per_rack: Counter[str] = Counter()
        for domain in domains:
            values = dict(zip(levels, domain.values, strict=True))
            rack = values.get(scenario.RACK) or self._rack_of.get(values.get(scenario.HOSTNAME, ""), "?")
            per_rack[rack] += domain.count
        if template.tas == "required":
            if len(per_rack) == 1 and "?" not in per_rack:
                self.required_in_one_rack += 1
            else:
                self.violations.append(f"{key}: required rack, assigned {dict(per_rack)}")
        elif template.tas == "preferred":
            self.preferred += 1
            self.preferred_in_one_rack += len(per_rack) == 1
        elif template.tas == "balanced":
            if all(count % max(1, template.slice_size) == 0 for count in per_rack.values()):
                self.balanced_slices_whole += 1
            else:
                self.violations.append(f"{key}: slices of {template.slice_size}, assigned {dict(per_rack)}")

    def summary(self) -> JSON:
        return {
            "hostnames_unique": self.topology.unique_hostnames,
            "assignments_checked": self.checked,
            "required_in_one_rack": self.required_in_one_rack,
            "preferred_in_one_rack": f"{self.preferred_in_one_rack} of {self.preferred}",
            "balanced_with_whole_slices_per_rack": self.balanced_slices_whole,
            "violations": len(self.violations),
            "first_violations": self.violations[:10],
        }
