"""Benchmark of topology-aware scheduling in the core: ``python -m bench.tas``.

A TAS flavor of 1,000 nodes (10 blocks x 10 racks x 10 hosts, 8 cpu each) behind one ClusterQueue whose
quota never binds, so every decision is the topology's: pending Workloads of 1 to 32 pods asking for one
rack (required), one block (preferred) or anywhere (unconstrained), in a mix, admitted until the nodes are
full (the last decisions are waits with Kueue's message, the costliest kind). Reported: microseconds per
decision (the cycles' CPU time, ``time.process_time``, divided by the decisions they return: the machine
this runs on is shared, and its wall clock says more about the neighbours than about this code), and the
cost of the events that keep the capacity tree current: a pod bound to a TAS node, and a pod on a node no
TAS flavor uses; and the cost of a reclaim for topology: the same nodes shared by two ClusterQueues of a
cohort, every rack filled by the borrower's 8-pod rack Workloads, and the lender's 32-pod rack Workloads
each evicting the fewest of them that free one rack (the search places the lender's pods again after
every candidate), measured per preempting decision.

Results go to ``bench/results/tas.json`` and ``bench/results/tas.md``. Nothing here asserts.
"""

from __future__ import annotations

import json
import os
import platform
import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import ClusterQueue, ResourceFlavor, Topology, Workload, parse_object
from kueue_webhook.api.quantity import NANO
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

RESULTS = Path(__file__).parent / "results"
HOST = "kubernetes.io/hostname"
BLOCKS, RACKS, HOSTS, CPUS = 10, 10, 10, 8
REQUESTS = ({"required": "rack"}, {"preferred": "block"}, {"unconstrained": True})


def _parsed(doc: dict[str, Any]) -> Any:
    parsed = parse_object(doc)
    assert not isinstance(parsed, list), parsed
    return parsed


def _state(queues: tuple[tuple[str, str, dict[str, Any]], ...] = (("cq", "100000", {}),)) -> SchedulerState:
    """The nodes and their TAS flavor, and ClusterQueues ``(name, cpu quota, extra spec)`` each with a
    LocalQueue ``lq-<name>`` (``lq`` for ``cq``)."""
    state = SchedulerState()
    state.upsert_namespace("bench", {})
    topology = _parsed(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "dc"},
            "spec": {"levels": [{"nodeLabel": "block"}, {"nodeLabel": "rack"}, {"nodeLabel": HOST}]},
        }
    )
    assert isinstance(topology, Topology)
    state.upsert_topology(topology)
    flavor = _parsed(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas"},
            "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "dc"},
        }
    )
    assert isinstance(flavor, ResourceFlavor)
    state.upsert_resource_flavor(flavor)
    for name, quota, extra in queues:
        queue = _parsed(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {},
                    **extra,
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": quota}]}
                            ],
                        }
                    ],
                },
            }
        )
        assert isinstance(queue, ClusterQueue)
        state.upsert_cluster_queue(queue)
        state.apply(
            _parsed(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": "lq" if name == "cq" else f"lq-{name}", "namespace": "bench"},
                    "spec": {"clusterQueue": name},
                }
            )
        )
    for block in range(BLOCKS):
        for rack in range(RACKS):
            for host in range(HOSTS):
                name = f"h-{block}-{rack}-{host}"
                labels = {"pool": "tas", "block": f"b{block}", "rack": f"r{block}-{rack}", HOST: name}
                state.upsert_node(NodeView(name, labels, {"cpu": CPUS * NANO, "pods": 110 * NANO}))
    return state


def _workload(
    index: int,
    rng: random.Random,
    *,
    pods: int = 0,
    queue: str = "lq",
    request: dict[str, Any] | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> Workload:
    pods = pods or rng.choice((1, 2, 4, 8, 16, 32))
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    parsed = _parsed(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": f"w{index:06d}",
                "namespace": "bench",
                "uid": f"u{index}",
                "creationTimestamp": created,
            },
            "spec": {
                "queueName": queue,
                "podSets": [
                    {
                        "name": "main",
                        "count": pods,
                        "template": template,
                        "topologyRequest": request or REQUESTS[index % len(REQUESTS)],
                    }
                ],
            },
        }
    )
    assert isinstance(parsed, Workload)
    return parsed


def bench_decisions(pending: int = 1000) -> dict[str, Any]:
    rng = random.Random(7)
    state = _state()
    for index in range(pending):
        state.upsert_workload(_workload(index, rng))
    decisions = admits = 0
    elapsed = 0.0
    while state.has_work():
        t0 = time.process_time()
        result = state.cycle()
        elapsed += time.process_time() - t0
        decisions += len(result)
        admits += sum(1 for d in result if isinstance(d, Admit))
    return {
        "nodes": BLOCKS * RACKS * HOSTS,
        "pending": pending,
        "decisions": decisions,
        "admissions": admits,
        "us_per_decision": round(elapsed / max(decisions, 1) * 1e6, 1),
    }


def bench_events(count: int = 20_000) -> dict[str, Any]:
    state = _state()
    pods = [PodOnNode(f"h-{i % BLOCKS}-{i % RACKS}-{i % HOSTS}", {"cpu": NANO // 10}) for i in range(count)]
    t0 = time.process_time()
    for index, pod in enumerate(pods):
        state.upsert_pod(f"ns/p{index}", pod)
    for index in range(count):
        state.upsert_pod(f"ns/p{index}", None)
    on_tas = (time.process_time() - t0) / (2 * count)
    elsewhere = [PodOnNode(f"other-{i % 500}", {"cpu": NANO // 10}) for i in range(count)]
    t0 = time.process_time()
    for index, pod in enumerate(elsewhere):
        state.upsert_pod(f"ns/q{index}", pod)
    for index in range(count):
        state.upsert_pod(f"ns/q{index}", None)
    off_tas = (time.process_time() - t0) / (2 * count)
    return {
        "us_per_pod_event_on_tas_node": round(on_tas * 1e6, 2),
        "us_per_pod_event_elsewhere": round(off_tas * 1e6, 2),
    }


def bench_reclaim(preemptors: int = 100) -> dict[str, Any]:
    """CPU per preempting decision of a lender's rack Workload reclaiming one rack from the borrower."""
    rng = random.Random(11)
    half = str(BLOCKS * RACKS * HOSTS * CPUS // 2)
    cohort = {"cohortName": "all"}
    state = _state(
        (
            ("borrower", half, cohort),
            ("lender", half, {**cohort, "preemption": {"reclaimWithinCohort": "Any"}}),
        )
    )
    rack = {"required": "rack"}
    for index in range(BLOCKS * RACKS * HOSTS * CPUS // 8):
        state.upsert_workload(_workload(index, rng, pods=8, queue="lq-borrower", request=rack))
    while state.has_work():
        state.cycle()
    decisions = victims = 0
    elapsed = 0.0
    for index in range(preemptors):
        state.upsert_workload(
            _workload(
                1_000_000 + index,
                rng,
                pods=32,
                queue="lq-lender",
                request=rack,
                created="2026-01-02T00:00:00Z",
            )
        )
        t0 = time.process_time()
        result = state.cycle()
        elapsed += time.process_time() - t0
        evicted = [d.workload for d in result if isinstance(d, Evict)]
        if evicted:
            decisions += 1
            victims += len(evicted)
        for key in evicted:
            state.finish_workload(key)
        while state.has_work():
            state.cycle()
    return {
        "preempting_decisions": decisions,
        "victims": victims,
        "us_per_preempting_decision": round(elapsed / max(decisions, 1) * 1e6, 1),
    }


def main() -> int:
    decisions = bench_decisions()
    events = bench_events()
    reclaim = bench_reclaim()
    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    report = {"machine": machine, "decisions": decisions, "events": events, "reclaim": reclaim}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tas.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# TAS core benchmark ({machine['date']}, {machine['cpus']} CPUs, Python {machine['python']})",
        "",
        f"{decisions['nodes']:,} nodes (10 blocks x 10 racks x 10 hosts), {decisions['pending']:,} pending "
        "Workloads of 1-32 pods (required rack / preferred block / unconstrained): "
        f"**{decisions['us_per_decision']} us of CPU per decision** over {decisions['decisions']:,} "
        f"decisions ({decisions['admissions']:,} admissions, the rest waits once the nodes are full).",
        "",
        f"Capacity-tree events: {events['us_per_pod_event_on_tas_node']} us per pod bound to or leaving a "
        f"TAS node, {events['us_per_pod_event_elsewhere']} us per pod on a node no TAS flavor uses.",
        "",
        "Reclaim for topology (the nodes shared by a borrower filling every rack with 8-pod rack Workloads "
        "and a lender whose 32-pod rack Workloads reclaim): "
        f"**{reclaim['us_per_preempting_decision']} us of CPU per preempting decision** over "
        f"{reclaim['preempting_decisions']} decisions ({reclaim['victims']} victims).",
    ]
    (RESULTS / "tas.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
