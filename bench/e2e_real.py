"""The end-to-end controller benchmark on a real kube-apiserver: ``python -m bench.e2e --kubeconfig PATH``.

``kueue-webhook serve`` runs as a separate process with default flags and its ServiceAccount's credentials
and RBAC (``bench.real_cluster``), as installed; this process plays the users and the kubelet. No admission
webhook is registered: the Jobs are created suspended and queue-labelled, as the webhook leaves them. In the
namespace ``e2e-bench``, two phases, each figure as a user sees it:

* **release latency** first, while the Job controller of kube-controller-manager is idle: a ClusterQueue
  with room for one Job and ``--latency-samples`` + 1 Jobs behind it. The played kubelet reports each Pod
  Succeeded ``--run-seconds`` after it appears, the Job controller completes the Job, and the clock runs
  from the Job's ``Complete`` condition (what ``kubectl get job`` shows as finished) to the next Job
  unsuspended, both seen on one Job watch. A Workload watch splits it into its three writes (the Workload
  Finished, the next one's reservation, the next Job's start), and with ``--trace-release`` the controller
  itself says when it sent each write and had its answer (``bench/release_trace``), which parts the
  controller's own time from the API server's round trips. The time from the Pod reported Succeeded, which
  adds the Job controller's reaction, is given beside it; so are the controller's writes per Job over a
  whole life;
* **throughput** then: the controller is stopped (it releases its Lease), ``--jobs`` Jobs are created in
  front of a ClusterQueue with room for all of them, and a fresh controller process starts, as in the fake
  API server mode; from the moment it holds the Lease, how many Jobs per second end up running. Their Pods
  are never finished (the Job controller, at its client's 20 requests/s, would take far longer than the
  run to get through them), so the window counts admissions only. Then, once its writes have settled, the
  controller's resident memory (VmRSS, and VmHWM for the peak) and its CPU time.

Writes come from the API server's ``apiserver_request_total``: the resources only the controller writes
(Workloads and their status, Job patches, queue status) minus what this process sent itself; Events and
Lease renewals, which the Job controller and the API server also write, from the controller's own
``kueue_webhook_api_writes_total``. The run deletes its namespace and queues at the end, and first waits
for a previous run's namespace to be gone. Results: ``bench/results/e2e-real.json`` and ``.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

from bench import real_cluster
from bench.baseline import processes
from bench.baseline.timeline import condition_true
from bench.e2e_common import job, p99
from bench.kueue_baseline import machine, parse_writes
from bench.real_cluster import PODS
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import EVENTS, JOBS, WORKLOADS
from kueue_webhook.control.output.events import COMPONENT as EVENTS_COMPONENT

JSON = dict[str, Any]
NAMESPACE = "e2e-bench"
NAMES = {"bulk": "e2e-bench-bulk", "serial": "e2e-bench-serial", "flavor": "e2e-bench-gpu"}
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
#: the folder put on the controller's PYTHONPATH by ``--trace-release``
TRACE_HOOKS = Path(__file__).parent / "release_trace"
#: the resources only the controller writes here (the Job controller writes jobs/status, Pods and Events)
CONTROLLER_RESOURCES = frozenset(
    {"workloads", "workloads/status", "jobs", "clusterqueues/status", "localqueues/status"}
)


def setup_manifests(bulk_quota: int) -> str:
    queues = "\n".join(
        f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {NAMES[name]}}}
spec:
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {NAMESPACE}}}}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: {NAMES["flavor"]}
      resources: [{{name: nvidia.com/gpu, nominalQuota: {quota}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {name}, namespace: {NAMESPACE}}}
spec: {{clusterQueue: {NAMES[name]}}}"""
        for name, quota in (("bulk", bulk_quota), ("serial", 1))
    )
    return f"""apiVersion: v1
kind: Namespace
metadata: {{name: {NAMESPACE}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {NAMES["flavor"]}}}
{queues}
"""


class Cluster:
    """This process's view of the namespace (a Job, a Pod and a Workload watch) and the kubelet it plays."""

    def __init__(self, api: KubeClient, run_seconds: float) -> None:
        self.api = api
        self.run_seconds = run_seconds
        self.started: dict[str, float] = {}  # Job -> first seen unsuspended
        self.order: list[str] = []
        self.complete: dict[str, float] = {}  # Job -> its Complete condition first seen
        self.pod_succeeded: dict[str, float] = {}  # Job -> its Pod reported Succeeded (request sent)
        self.finished: dict[str, float] = {}  # Job -> its Workload's Finished condition first seen
        self.reserved: dict[str, float] = {}  # Job -> its Workload's QuotaReserved condition first seen
        self.pods_seen: set[str] = set()
        self.own_writes: Counter[str] = Counter()  # what this process sent, as apiserver_request_total keys
        self.changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for kind, handle in ((JOBS, self.on_job), (PODS, self.on_pod), (WORKLOADS, self.on_workload)):
            self.tasks.append(
                asyncio.create_task(real_cluster.watch(self.api, kind, handle, namespace=NAMESPACE))
            )

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()

    def on_job(self, event: str, obj: JSON) -> None:
        now = time.perf_counter()
        name = obj["metadata"]["name"]
        if event != "DELETED" and obj["spec"].get("suspend") is False and name not in self.started:
            self.started[name] = now
            self.order.append(name)
        if condition_true(obj, "Complete") and name not in self.complete:
            self.complete[name] = now
        self.changed.set()

    def on_workload(self, event: str, obj: JSON) -> None:
        """When each Job's Workload was first seen reserved and finished: the release's steps between the
        Job's Complete and the next Job's start."""
        now = time.perf_counter()
        owners = obj["metadata"].get("ownerReferences") or [{}]
        job_name = str(owners[0].get("name", ""))
        if event == "DELETED" or not job_name:
            return
        for condition, seen in (("QuotaReserved", self.reserved), ("Finished", self.finished)):
            if condition_true(obj, condition) and job_name not in seen:
                seen[job_name] = now

    def on_pod(self, event: str, obj: JSON) -> None:
        meta = obj["metadata"]
        job_name = (meta.get("labels") or {}).get(JOB_NAME_LABEL, "")
        phase = (obj.get("status") or {}).get("phase")
        if event == "DELETED" or meta["name"] in self.pods_seen or phase in ("Succeeded", "Failed"):
            return
        if job_name.startswith("serial-"):  # the bulk Jobs' Pods run until the end
            self.pods_seen.add(meta["name"])
            self.tasks.append(asyncio.create_task(self.kubelet(job_name, obj)))

    async def kubelet(self, job_name: str, pod: JSON) -> None:
        await asyncio.sleep(self.run_seconds)  # the container's run time
        self.pod_succeeded[job_name] = time.perf_counter()
        self.own_writes["PATCH pods/status"] += 1
        patch = real_cluster.succeeded_status(pod)
        with contextlib.suppress(ApiError):  # deleted meanwhile
            await self.api.patch(
                PODS, name=pod["metadata"]["name"], namespace=NAMESPACE, patch=patch, subresource="status"
            )

    async def until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            self.changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what}: not after {timeout:.0f}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    async def create_jobs(self, prefix: str, queue: str, count: int, *, concurrency: int = 16) -> None:
        slots = asyncio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with slots:
                self.own_writes["POST jobs"] += 1
                await self.api.create(
                    JOBS, job(f"{prefix}{index:05d}", queue, NAMESPACE), namespace=NAMESPACE
                )

        await asyncio.gather(*(one(i) for i in range(count)))

    def started_with(self, prefix: str) -> list[float]:
        return [at for name, at in self.started.items() if name.startswith(prefix)]

    def order_of(self, prefix: str) -> list[str]:
        return [name for name in self.order if name.startswith(prefix)]


class Serve:
    """``kueue-webhook serve`` as installed: default flags, the ServiceAccount's kubeconfig."""

    def __init__(self, kubeconfig: Path, workdir: Path, *, trace: Path | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.process: processes.Controller | None = None
        self.spawned_at = 0.0
        #: where the controller writes its release trace (``bench/release_trace``), if asked
        self.trace = trace

    def start(self) -> processes.Controller:
        self.spawned_at = time.perf_counter()
        env = None
        if self.trace is not None:
            path = os.pathsep.join(p for p in (str(TRACE_HOOKS), os.environ.get("PYTHONPATH", "")) if p)
            env = {**os.environ, "PYTHONPATH": path, "KUEUE_BENCH_TRACE": str(self.trace)}
        self.process = processes.start_controller(
            kubeconfig=self.kubeconfig, workdir=self.workdir, profile=None, flags=[], env=env
        )
        return self.process

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    async def writes(self) -> dict[str, int]:
        assert self.process is not None
        return parse_writes(await self.process.metrics())

    async def events_dropped(self) -> int:
        assert self.process is not None
        text = await self.process.metrics()
        return sum(
            int(float(line.rsplit(" ", 1)[1]))
            for line in text.splitlines()
            if line.startswith("kueue_webhook_events_dropped_total")
        )

    async def settle(self, *, quiet: float = 3.0, timeout: float = 120.0) -> None:
        """Until the controller's write count stands still for ``quiet`` seconds: the burst's trailing queue
        status and Events written, so memory shows what is kept, not what is in flight."""
        deadline = time.monotonic() + timeout
        last: dict[str, int] | None = None
        while time.monotonic() < deadline:
            now = await self.writes()
            if now == last:
                return
            last = now
            await asyncio.sleep(quiet)  # another process's background work: sample it

    def memory_mb(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) of the controller process in MiB."""
        assert self.process is not None
        fields = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines()
            if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def wait_for_leader(api: KubeClient, *, not_holder: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = await real_cluster.lease_holder(api)
        if holder and holder != not_holder:
            return holder
        await asyncio.sleep(0.05)  # the Lease is another process's: poll it
    raise TimeoutError(f"no controller took the Lease within {timeout:.0f}s")


def controller_writes(seen: dict[str, int], own: Counter[str]) -> dict[str, int]:
    """The controller's writes by "VERB resource": the API server's count of the resources only it writes,
    less this process's own."""
    return {
        key: count - own.get(key, 0)
        for key, count in seen.items()
        if key.split(" ", 1)[1] in CONTROLLER_RESOURCES and count > own.get(key, 0)
    }


async def events_written(api: KubeClient) -> int:
    """Event writes of the controller so far in the namespace: one create per Event object, one patch per
    repeat folded into it (the Job controller's Events are there too, under another component)."""
    events, _ = await api.list_all(EVENTS, namespace=NAMESPACE)
    ours = [e for e in events if e.get("reportingComponent") == EVENTS_COMPONENT]
    return sum(int(e.get("count") or 1) for e in ours)


#: the release's steps, each from what the benchmark's watches saw: the finished Job's Workload written
#: Finished (the reconciler's write), the next Workload given its reservation (the scheduler's write), the
#: next Job unsuspended (the reconciler's write)
RELEASE_STEPS = (
    "Job Complete -> its Workload Finished",
    "-> next Workload QuotaReserved",
    "-> next Job unsuspended",
)


def release_steps(cluster: Cluster, running: str, following: str) -> dict[str, float]:
    """How long each of ``RELEASE_STEPS`` took when ``running`` completed and ``following`` started (a step
    whose start or end no watch saw is left out)."""
    marks = (
        cluster.complete.get(running),
        cluster.finished.get(running),
        cluster.reserved.get(following),
        cluster.started.get(following),
    )
    return {
        name: end - begin
        for name, begin, end in zip(RELEASE_STEPS, marks, marks[1:], strict=False)
        if begin is not None and end is not None
    }


#: one release as the controller itself saw it (``--trace-release``): its own time between the change it
#: reacts to and the write it sends, and each write's round trip to the API server
TRACE_PARTS = (
    "controller: Job Complete seen -> Finished write sent",
    "API server: the Finished write",
    "controller: Finished answered -> admission write sent",
    "API server: the admission write",
    "controller: admission answered -> Job start write sent",
    "API server: the Job start write",
)


def release_trace(records: list[JSON], pairs: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Each of ``TRACE_PARTS`` (seconds) for every (finished Job, next Job) of ``pairs`` whose writes all
    show in the controller's trace (``bench/release_trace``)."""
    complete: dict[str, float] = {}
    for record in records:
        if record["event"] == "job" and "Complete" in record["true"]:
            complete.setdefault(record["name"], record["at"])
    writes = sorted((r for r in records if r["event"] == "write"), key=lambda r: r["sent"])

    def first(after: float, wanted: Callable[[JSON], bool]) -> JSON | None:
        return next((w for w in writes if w["sent"] >= after and wanted(w)), None)

    parts: dict[str, list[float]] = {name: [] for name in TRACE_PARTS}
    for running, following in pairs:
        seen = complete.get(running)
        if seen is None:
            continue
        finish = first(seen, lambda w, r=running: f"/workloads/job-{r}-" in w["path"])
        admit = finish and first(
            finish["answered"], lambda w, f=following: f"/workloads/job-{f}-" in w["path"] and w["admits"]
        )
        start = admit and first(admit["answered"], lambda w, f=following: w["path"].endswith(f"/jobs/{f}"))
        if not (finish and admit and start):
            continue
        marks = [seen]
        for write in (finish, admit, start):
            marks += [write["sent"], write["answered"]]
        for name, begin, end in zip(TRACE_PARTS, marks, marks[1:], strict=False):
            parts[name].append(end - begin)
    return parts


def latency_figures(values: list[float]) -> JSON:
    ordered = sorted(v * 1000 for v in values)
    return {
        "samples": len(ordered),
        "p50": round(ordered[len(ordered) // 2], 1),
        "p99": round(p99(ordered), 1),
        "max": round(ordered[-1], 1),
    }


async def serial_phase(cluster: Cluster, serve: Serve, admin: Path, samples: int, timeout: float) -> JSON:
    requests_before = real_cluster.request_counts(admin)
    own_before = Counter(cluster.own_writes)
    await cluster.create_jobs("serial-", "serial", samples + 1, concurrency=4)
    from_complete: list[float] = []
    from_pod: list[float] = []
    steps: dict[str, list[float]] = {name: [] for name in RELEASE_STEPS}
    pairs: list[tuple[str, str]] = []
    for index in range(samples + 1):
        await cluster.until(
            lambda i=index: len(cluster.started_with("serial-")) > i, timeout, f"serial Job {index}"
        )
        running = cluster.order_of("serial-")[index]  # queue order follows Workload creation, not names
        await cluster.until(lambda r=running: r in cluster.complete, timeout, f"{running} Complete")
        if index == samples:
            break
        await cluster.until(lambda i=index: len(cluster.started_with("serial-")) > i + 1, timeout, "next Job")
        following = cluster.order_of("serial-")[index + 1]
        from_complete.append(cluster.started[following] - cluster.complete[running])
        from_pod.append(cluster.started[following] - cluster.pod_succeeded[running])
        pairs.append((running, following))
        for name, seconds in release_steps(cluster, running, following).items():
            steps[name].append(seconds)
    await serve.settle()
    own = Counter(cluster.own_writes)
    own.subtract(own_before)
    writes = controller_writes(
        real_cluster.writes_between(requests_before, real_cluster.request_counts(admin)), own
    )
    return {
        "events_written": await events_written(cluster.api),
        "from_complete_ms": latency_figures(from_complete),
        "from_pod_succeeded_ms": latency_figures(from_pod),
        "steps_ms": {name: latency_figures(values) for name, values in steps.items() if values},
        "pairs": pairs,
        "controller_writes": writes,
        "controller_writes_per_job": round(sum(writes.values()) / (samples + 1), 2),
    }


async def bulk_phase(cluster: Cluster, serve: Serve, admin: Path, jobs: int, timeout: float) -> JSON:
    previous = await real_cluster.lease_holder(cluster.api)
    events_before = await events_written(cluster.api)
    serve.stop()  # it releases its Lease
    begin = time.perf_counter()
    await cluster.create_jobs("bulk-", "bulk", jobs)
    creation_s = time.perf_counter() - begin
    requests_before = real_cluster.request_counts(admin)
    own_before = Counter(cluster.own_writes)
    plane_before = real_cluster.ControlPlaneCpu.sample()
    controller = serve.start()
    await wait_for_leader(cluster.api, not_holder=previous, timeout=60)
    leading = time.perf_counter()
    print(
        f"{jobs} Jobs created in {creation_s:.1f}s; the new controller leads "
        f"after {leading - serve.spawned_at:.1f}s",
        flush=True,
    )
    await cluster.until(
        lambda: len(cluster.started_with("bulk-")) >= jobs, timeout, f"{jobs} bulk Jobs running"
    )
    done = max(cluster.started_with("bulk-"))
    cpu_s = processes.cpu_seconds(controller.pid) or 0.0
    plane = real_cluster.ControlPlaneCpu.sample().since(plane_before)
    await serve.settle()
    rss, hwm = serve.memory_mb()
    own = Counter(cluster.own_writes)
    own.subtract(own_before)
    writes = controller_writes(
        real_cluster.writes_between(requests_before, real_cluster.request_counts(admin)), own
    )
    admission_path = writes.get("PATCH workloads/status", 0) + writes.get("PATCH jobs", 0)
    wall = done - serve.spawned_at
    return {
        "job_creation_seconds": round(creation_s, 1),
        "seconds_from_start_to_lease": round(leading - serve.spawned_at, 2),
        "seconds_from_lease_to_all_running": round(done - leading, 2),
        "admitted_jobs_per_second": round(jobs / (done - leading), 1),
        "admission_path_writes_per_admission": round(admission_path / jobs, 3),
        "all_writes_per_job": round(sum(writes.values()) / jobs, 3),
        "controller_writes": writes,
        "events_written": await events_written(cluster.api) - events_before,
        "events_dropped": await serve.events_dropped(),
        "rss_mb_with_all_jobs": round(rss, 1),
        "peak_rss_mb": round(hwm, 1),
        "controller_cpu_s": round(cpu_s, 1),
        "controller_cores": round(cpu_s / wall, 2),
        "control_plane_cpu_s": plane,
        "control_plane_cores": {name: round(seconds / wall, 2) for name, seconds in plane.items()},
        "seconds_from_start_to_all_running": round(wall, 2),
    }


async def release_pods(api: KubeClient) -> None:
    pods, _ = await api.list_all(PODS, namespace=NAMESPACE)
    slots = asyncio.Semaphore(16)

    async def release(name: str) -> None:
        async with slots:
            with contextlib.suppress(ApiError):
                patch = {"metadata": {"finalizers": None}}
                await api.patch(PODS, name=name, namespace=NAMESPACE, patch=patch)

    await asyncio.gather(*(release(p["metadata"]["name"]) for p in pods if p["metadata"].get("finalizers")))


async def clean_up(api: KubeClient, admin: Path, *, timeout: float) -> None:
    """Delete the namespace and the queues while the controller still runs (it lets go of the Workloads'
    finalizers); the Pods' job-tracking finalizers are removed here as the Job controller would, at its
    client's 20 requests/s, only much later."""
    real_cluster.kubectl(admin, "delete", "namespace", NAMESPACE, "--wait=false", "--ignore-not-found")
    deadline = time.monotonic() + timeout
    while real_cluster.kubectl(
        admin, "get", "namespace", NAMESPACE, "--ignore-not-found", "-o", "name"
    ).strip():
        if time.monotonic() > deadline:
            print(f"namespace {NAMESPACE} still terminating; the next run waits for it", flush=True)
            break
        with contextlib.suppress(ApiError):
            await release_pods(api)
        await asyncio.sleep(2)  # the namespace controller is another process: poll it
    real_cluster.kubectl(
        admin,
        "delete",
        f"clusterqueue/{NAMES['bulk']}",
        f"clusterqueue/{NAMES['serial']}",
        f"resourceflavor/{NAMES['flavor']}",
        "--ignore-not-found",
        "--timeout=120s",
    )


async def run(
    admin: Path, *, jobs: int, samples: int, run_seconds: float, timeout: float, trace: bool = False
) -> JSON:
    load_at_start = os.getloadavg()
    await real_cluster.wait_namespace_gone(admin, NAMESPACE, timeout=900)
    real_cluster.install(admin)
    hooks = real_cluster.kubectl(
        admin, "get", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "-o", "name"
    )
    if "kueue-webhook" in hooks:
        raise SystemExit(
            f"kueue-webhook's webhook configurations are registered; remove them first:\n{hooks}"
        )
    version = real_cluster.server_version(admin)
    real_cluster.kubectl(admin, "apply", "-f", "-", input=setup_manifests(jobs))
    workdir = Path(mkdtemp(prefix="kueue-e2e-real-"))
    serve = Serve(
        real_cluster.service_account_kubeconfig(admin, workdir / "kubeconfig"),
        workdir,
        trace=workdir / "release-trace.jsonl" if trace else None,
    )
    api = await KubeClient.connect(kubeconfig=str(admin), connections=24)
    cluster = Cluster(api, run_seconds)
    try:
        cluster.start()
        controller = serve.start()
        await controller.wait_ready(timeout=60)
        await wait_for_leader(api, not_holder="", timeout=60)
        serial = await serial_phase(cluster, serve, admin, samples, timeout)
        print(f"release latency: {serial['from_complete_ms']}", flush=True)
        if serve.trace is not None:
            records = [json.loads(line) for line in serve.trace.read_text().splitlines() if line]
            parts = release_trace(records, serial["pairs"])
            serial["trace_ms"] = {name: latency_figures(v) for name, v in parts.items() if v}
        bulk = await bulk_phase(cluster, serve, admin, jobs, timeout)
    finally:
        cluster.stop()
        try:
            if serve.process is None:
                serve.start()  # to let go of the Workloads' finalizers
            await clean_up(api, admin, timeout=600)
        finally:
            serve.stop()
            await api.close()
            print(f"controller logs: {workdir}", flush=True)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server": f"kube-apiserver {version} (real, {admin}, on the same machine)",
        "commit": processes.head_commit(),
        "machine": {**machine(), "load_average_1m_at_start": round(load_at_start[0], 2)},
        "jobs": jobs,
        "run_seconds": run_seconds,
        **bulk,
        "release_latency_ms": serial["from_complete_ms"],
        "release_latency_from_pod_succeeded_ms": serial["from_pod_succeeded_ms"],
        "release_steps_ms": serial["steps_ms"],
        "release_trace_ms": serial.get("trace_ms"),
        "serial_phase": {
            "jobs": samples + 1,
            "controller_writes": serial["controller_writes"],
            "controller_writes_per_job_whole_life": serial["controller_writes_per_job"],
            "events_written": serial["events_written"],
        },
        "targets": {"release_latency_p99_ms": 50, "writes_per_admission": 2, "rss_mb_at_10000_jobs": 100},
    }


def markdown(result: JSON) -> str:
    latency = result["release_latency_ms"]
    pod = result["release_latency_from_pod_succeeded_ms"]
    m = result["machine"]
    plane = ", ".join(f"{name} {cores}" for name, cores in result["control_plane_cores"].items())
    writes = ", ".join(f"{k} {v:,}" for k, v in result["controller_writes"].items())
    serial = result["serial_phase"]
    return "\n".join(
        [
            f"# Controller end-to-end benchmark on a real API server ({result['date']}, "
            f"commit {result['commit']})",
            "",
            f"Server: {result['server']}. Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; "
            f"load average {m['load_average_1m_at_start']} at the start, {m['load_average_1m_at_end']} at "
            "the end (the machine is shared). `kueue-webhook serve` with default flags as its "
            "ServiceAccount, in its own process; no admission webhook registered (Jobs created suspended).",
            "",
            "| figure | value | target |",
            "|---|---|---|",
            f"| Jobs admitted and started per second ({result['jobs']:,} Jobs waiting when the controller "
            f"starts; from its Lease to the last Job unsuspended) | {result['admitted_jobs_per_second']} "
            f"({result['seconds_from_lease_to_all_running']} s; process start to Lease "
            f"{result['seconds_from_start_to_lease']} s) | |",
            f"| API writes per admission (Workload status + Job patch, apiserver_request_total) | "
            f"{result['admission_path_writes_per_admission']} | <= 2 |",
            f"| all controller writes per Job in that burst (Events apart) | {result['all_writes_per_job']} "
            f"({writes}) | |",
            f"| Events the controller wrote in that burst (dropped under its write budget) | "
            f"{result['events_written']:,} ({result['events_dropped']:,}) | |",
            f"| all controller writes per Job over a whole life (create, admit, start, finish; "
            f"{serial['jobs']} Jobs one at a time; Events apart: {serial['events_written']}) | "
            f"{serial['controller_writes_per_job_whole_life']} | |",
            f"| Job Complete -> next Job unsuspended, p50 / p99 / max (ms, {latency['samples']} samples) | "
            f"{latency['p50']} / {latency['p99']} / {latency['max']} | p99 <= 50 |",
            *(
                f"| &nbsp; step: {name}, p50 / p99 / max (ms, as this process's watches saw them) | "
                f"{step['p50']} / {step['p99']} / {step['max']} | |"
                for name, step in (result.get("release_steps_ms") or {}).items()
            ),
            *(
                f"| &nbsp; part: {name}, p50 / p99 / max (ms, the controller's trace) | "
                f"{part['p50']} / {part['p99']} / {part['max']} | |"
                for name, part in (result.get("release_trace_ms") or {}).items()
            ),
            "| Pod reported Succeeded -> next Job unsuspended (adds the Job controller, which batches Pod "
            f"updates for 1 s), p50 / p99 / max (ms) | "
            f"{pod['p50']} / {pod['p99']} / {pod['max']} | |",
            f"| controller RSS with {result['jobs']:,} Jobs + Workloads, steady (VmRSS) and peak (VmHWM), "
            "MB | "
            f"{result['rss_mb_with_all_jobs']} ({result['peak_rss_mb']}) | <= 100 at 10,000 |",
            f"| CPU from the controller's start to the last Job running (cores: CPU s / wall) | controller "
            f"{result['controller_cores']}, {plane} | |",
            "",
        ]
    )
