"""The pure parts of the end-to-end benchmark on a real API server: whose writes count, and its setup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.e2e_real import (
    NAMESPACE,
    RELEASE_STEPS,
    TRACE_HOOKS,
    TRACE_PARTS,
    Cluster,
    controller_writes,
    latency_figures,
    release_steps,
    release_trace,
    setup_manifests,
)
from bench.real_cluster import succeeded_status


def test_controller_writes_leave_out_the_benchmarks_own_and_the_job_controllers() -> None:
    seen = {
        "POST jobs": 100,  # the benchmark's creations
        "PATCH jobs": 100,  # the controller's unsuspends
        "PUT jobs/status": 250,  # the Job controller's
        "POST pods": 100,  # the Job controller's
        "PATCH pods/status": 3,  # the played kubelet's
        "PATCH workloads/status": 100,
        "POST workloads": 100,
        "PATCH clusterqueues/status": 4,
    }
    own = Counter({"POST jobs": 100, "PATCH pods/status": 3})

    assert controller_writes(seen, own) == {
        "PATCH jobs": 100,
        "PATCH workloads/status": 100,
        "POST workloads": 100,
        "PATCH clusterqueues/status": 4,
    }


def test_setup_gives_each_queue_its_quota_and_admits_only_the_benchmarks_namespace() -> None:
    objects = list(yaml.safe_load_all(setup_manifests(bulk_quota=500)))

    queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    quotas = {
        name: q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
        for name, q in queues.items()
    }
    assert quotas == {"e2e-bench-bulk": 500, "e2e-bench-serial": 1}
    selectors = {str(q["spec"]["namespaceSelector"]) for q in queues.values()}
    assert selectors == {str({"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}})}
    local = {o["metadata"]["name"]: o["spec"]["clusterQueue"] for o in objects if o["kind"] == "LocalQueue"}
    assert local == {"bulk": "e2e-bench-bulk", "serial": "e2e-bench-serial"}


def test_the_played_kubelet_reports_every_container_exited_zero() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]}}

    status = succeeded_status(pod)["status"]

    assert status["phase"] == "Succeeded"
    assert [s["state"]["terminated"]["exitCode"] for s in status["containerStatuses"]] == [0, 0]


def test_latency_figures_are_milliseconds_with_the_nearest_rank_p99() -> None:
    figures = latency_figures([i / 1000 for i in range(1, 101)])

    assert figures == {"samples": 100, "p50": 51.0, "p99": 99.0, "max": 100.0}


def workload(job: str, *conditions: str) -> dict[str, object]:
    return {
        "metadata": {"name": f"job-{job}-abcde", "ownerReferences": [{"kind": "Job", "name": job}]},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


def test_a_release_splits_into_the_finished_write_the_next_reservation_and_the_next_start() -> None:
    cluster = Cluster(api=None, run_seconds=1.0)
    cluster.complete["serial-0"] = 10.0
    cluster.on_workload("MODIFIED", workload("serial-0", "QuotaReserved", "Admitted", "Finished"))
    cluster.on_workload("MODIFIED", workload("serial-1", "QuotaReserved"))
    cluster.started["serial-1"] = cluster.reserved["serial-1"] + 0.004
    # the first sighting counts: a later event of the same condition does not move it
    first = dict(cluster.finished)
    cluster.on_workload("MODIFIED", workload("serial-0", "Finished"))
    assert cluster.finished == first

    steps = release_steps(cluster, "serial-0", "serial-1")

    assert list(steps) == list(RELEASE_STEPS)
    assert steps[RELEASE_STEPS[0]] == cluster.finished["serial-0"] - 10.0
    assert steps[RELEASE_STEPS[2]] == pytest.approx(0.004)
    assert sum(steps.values()) == pytest.approx(cluster.started["serial-1"] - 10.0)


def test_a_step_no_watch_saw_is_left_out_of_the_release() -> None:
    cluster = Cluster(api=None, run_seconds=1.0)
    cluster.complete["serial-0"] = 10.0
    cluster.started["serial-1"] = 10.05

    assert release_steps(cluster, "serial-0", "serial-1") == {}


def write(path: str, sent: float, answered: float, *, admits: bool = False) -> dict[str, object]:
    return {
        "event": "write",
        "method": "PATCH",
        "path": path,
        "admits": admits,
        "sent": sent,
        "answered": answered,
    }


def test_the_controllers_trace_splits_a_release_into_its_own_time_and_each_writes_round_trip() -> None:
    workloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/e2e-bench/workloads"
    records = [
        {"event": "job", "name": "serial-1", "true": [], "at": 0.5},
        {"event": "job", "name": "serial-1", "true": ["Complete"], "at": 1.000},
        write(f"{workloads}/job-serial-1-abcde/status", 1.001, 1.011),  # Finished
        write(f"{workloads}/job-serial-2-fghij/status", 1.012, 1.015),  # a pending reason: not the admission
        write(f"{workloads}/job-serial-2-fghij/status", 1.013, 1.028, admits=True),
        write("/apis/batch/v1/namespaces/e2e-bench/jobs/serial-2", 1.030, 1.042),
        {"event": "job", "name": "serial-1", "true": ["Complete"], "at": 1.5},  # seen again: the first counts
    ]

    parts = release_trace(records, [("serial-1", "serial-2"), ("serial-2", "serial-3")])

    assert [round(v[0] * 1000, 3) for v in parts.values()] == [1.0, 10.0, 2.0, 15.0, 2.0, 12.0]
    assert list(parts) == list(TRACE_PARTS)


def test_the_trace_hooks_record_a_serial_jobs_change_only_in_a_controller_started_with_them(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    script = (
        "import sys; from kueue_webhook.control.cache.store import Store;"
        "from kueue_webhook.control.kube.kinds import JOBS; store = Store();"
        "job = lambda name: {'metadata': {'name': name, 'namespace': 'e2e-bench', 'resourceVersion': '1'},"
        "'status': {'conditions': [{'type': 'Complete', 'status': 'True'}]}};"
        "store.upsert(JOBS, job('serial-00001')); store.upsert(JOBS, job('bulk-00001'))"
    )
    env = {**os.environ, "PYTHONPATH": str(TRACE_HOOKS), "KUEUE_BENCH_TRACE": str(trace)}
    root = Path(__file__).resolve().parents[2]

    for argv in (["serve"], ["simulate"]):  # only ``serve`` is traced
        subprocess.run([sys.executable, "-c", script, *argv], env=env, cwd=root, check=True)

    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r["event"], r["name"], r["true"]) for r in records] == [("job", "serial-00001", ["Complete"])]
