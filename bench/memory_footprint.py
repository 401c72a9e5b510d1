"""Where the controller's memory goes with 10,000 admitted Jobs: ``python -m bench.memory_footprint``.

The end-to-end benchmark (``bench.e2e``) gives one number, the controller's RSS; this splits it. It
measures in this process, no API server involved: what importing ``serve``'s modules
costs (the floor every replica pays before it holds anything), what the store keeps per Job and per
admitted Workload, and what the scheduler keeps per admitted Workload (its ``WorkloadInfo``: pod sets,
admission, usage). The objects are shaped as on the real API server after the end-to-end run's burst
(managedFields included: the store drops them).
"""

from __future__ import annotations

import argparse
import copy
import gc
import subprocess
import sys
import tracemalloc
from typing import Any

import orjson

from bench.e2e_common import job
from kueue_webhook import runtime
from kueue_webhook.api.config import Configuration
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.api_health import ApiHealth
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.scheduling.pods_ready_timers import PodsReadyTimers

JSON = dict[str, Any]
UID = "f4b010df-781d-4f31-bb58-5ba0725ca65c"


def admitted_workload(job_name: str, job_uid: str) -> JSON:
    """A Workload as the controller leaves it after admitting ``bench.e2e``'s Job."""
    when = "2026-11-27T03:30:40Z"
    conditions = [
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue e2e-bench-bulk"),
        ("Admitted", "True", "Admitted", "The workload is admitted"),
        ("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded"),
    ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "creationTimestamp": when,
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "generation": 2,
            "labels": {"kueue.x-k8s.io/job-uid": job_uid},
            "name": f"job-{job_name}-3b299",
            "namespace": "e2e-bench",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "Job",
                    "name": job_name,
                    "uid": job_uid,
                }
            ],
            "managedFields": [{"manager": "kueue-webhook", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
            "resourceVersion": "82942",
            "uid": job_uid[::-1],
        },
        "spec": {
            "active": True,
            "podSets": [
                {
                    "count": 1,
                    "name": "main",
                    "template": {
                        "metadata": {
                            "labels": {"batch.kubernetes.io/job-name": job_name, "job-name": job_name}
                        },
                        "spec": {
                            "containers": [
                                {
                                    "image": "busybox",
                                    "name": "c",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                }
                            ],
                            "restartPolicy": "Never",
                        },
                    },
                }
            ],
            "priority": 0,
            "queueName": "bulk",
        },
        "status": {
            "admission": {
                "clusterQueue": "e2e-bench-bulk",
                "podSetAssignments": [
                    {
                        "count": 1,
                        "flavors": {"nvidia.com/gpu": "e2e-bench-gpu"},
                        "name": "main",
                        "resourceUsage": {"nvidia.com/gpu": "1"},
                    }
                ],
            },
            "conditions": [
                {
                    "lastTransitionTime": when,
                    "message": message,
                    "observedGeneration": 1,
                    "reason": reason,
                    "status": status,
                    "type": kind,
                }
                for kind, status, reason, message in conditions
            ],
        },
    }


def traced_mib() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 2**20


def import_rss_mib() -> float:
    """VmRSS of a new interpreter once it has imported what ``serve`` imports: the floor of every replica."""
    probe = (
        "import kueue_webhook.control.replica.main, re;"
        "print(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.memory_footprint", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--top", type=int, default=12, help="allocation lines shown for the scheduler's part")
    args = parser.parse_args()
    print(f"serve's modules imported, a fresh interpreter: {import_rss_mib():.1f} MiB RSS")
    from kueue_webhook.api.objects.workloads import parse_workload
    from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS
    from kueue_webhook.core.model import WorkloadInfo

    tracemalloc.start()

    def pair(index: int) -> tuple[JSON, JSON]:
        name = f"bulk-{index:05d}"
        uid = f"{index:08d}{UID[8:]}"
        the_job = copy.deepcopy(job(name, "bulk", "e2e-bench"))
        the_job["metadata"].update(uid=uid, resourceVersion=str(10_000 + index))
        workload = admitted_workload(name, uid)
        workload["metadata"]["resourceVersion"] = str(20_000 + index)
        return the_job, workload

    start = traced_mib()
    store = Store()
    for index in range(args.jobs):
        the_job, workload = pair(index)
        # as the watches deliver them (through JSON): the Workload created, then admitted
        created = orjson.loads(orjson.dumps(workload))
        del created["status"]
        created["metadata"]["resourceVersion"] = str(int(workload["metadata"]["resourceVersion"]) - 1)
        store.upsert(JOBS, orjson.loads(orjson.dumps(the_job)))
        store.upsert(WORKLOADS, created)
        store.upsert(WORKLOADS, orjson.loads(orjson.dumps(workload)))
    stored = traced_mib() - start
    print(
        f"store, {args.jobs:,} Jobs + admitted Workloads: {stored:.1f} MiB "
        f"({stored * 2**20 / args.jobs:,.0f} B a pair)"
    )

    first = tracemalloc.take_snapshot()
    start = traced_mib()
    # through JSON, as the controller reads them from the store: every string is then its own object
    infos = [
        WorkloadInfo.from_workload(parse_workload(orjson.loads(orjson.dumps(pair(i)[1]))))
        for i in range(args.jobs)
    ]
    held = traced_mib() - start
    print(
        f"scheduler, {len(infos):,} admitted WorkloadInfo: {held:.1f} MiB "
        f"({held * 2**20 / len(infos):,.0f} B each)"
    )
    for stat in tracemalloc.take_snapshot().compare_to(first, "lineno")[: args.top]:
        print(f"  {stat}")
    armed = runtime.run(armed_deadlines(store))
    print(
        f"pods-ready deadlines, {args.jobs:,} admitted Workloads not ready yet: {armed:.1f} MiB "
        f"({armed * 2**20 / args.jobs:,.0f} B each)"
    )


async def armed_deadlines(store: Store) -> float:
    """What the pods-ready timers hold while every admitted Workload waits for its pods (waitForPodsReady
    is on by default; on the benchmark's cluster no Pod ever runs)."""
    context = ControlContext(
        store=store,
        writer=None,  # type: ignore[arg-type]  # arming writes nothing
        events=None,  # type: ignore[arg-type]
        metrics=None,  # type: ignore[arg-type]
        is_leader=lambda: True,
        configuration=Configuration,
        budget=ApiHealth(),
    )
    timers = PodsReadyTimers(context)
    start = traced_mib()
    timers.resync()
    return traced_mib() - start


if __name__ == "__main__":
    main()
