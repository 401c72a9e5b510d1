"""Leader failover under fire on a real API server: two replicas, the leader SIGKILLed again and again.

Two ``kueue-webhook serve`` replicas (separate processes, leader election on, the ServiceAccount's own
credentials and RBAC) run against the API server of ``--kubeconfig`` while this process plays the users and
the kubelet: it creates ``--jobs`` queue-labelled Jobs of 1 cpu each in front of a ClusterQueue of
``--quota`` cpu, and reports every Pod of a started Job as Succeeded ``--run-seconds`` after it appears (the
control plane of ``../shared/kube`` has no kubelet). ``--kills`` times, spread over the run by Jobs
finished, the current leader (the Lease's holder) gets SIGKILL, as a node failure or an OOM kill would
deliver it, and a replacement replica starts at once under a new identity, as a rescheduled Pod would.

Figures, written to ``bench/results/chaos.json`` and ``.md``:

* **over-admission**: replayed from one Workload watch in the API server's commit order (bench/baseline
  timeline), the quota the ClusterQueue held at any instant never exceeds its nominal quota; and, from one
  Job watch, no more Jobs ran at once than the quota allows;
* **stuck**: every Job completes and every Workload is Finished by the end;
* **failover**: from each kill to the Lease taken by another replica, and to the first admission after it;
* **ledger**: after the run, ``--quota`` + half as many held Jobs (their Pods are not finished) fill the
  queue, the leader is killed once more, and the ClusterQueue status its successor writes must equal what
  the Workloads in the cluster say (usage, admitted and pending counts).

No admission webhook is registered for the run (Jobs are created suspended, as the webhook leaves them):
the object is the controller's failover, and a killed replica's webhook endpoint would otherwise refuse
Job creates for the API server's timeout. Typical use, with the control plane of ../shared/kube::

    .venv/bin/python -m bench.chaos --kubeconfig /tmp/kube-local/kubeconfig
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baseline.processes import ROOT, free_port
from bench.baseline.timeline import Change, QuotaLimits, Timeline, check_over_admission, condition_true
from bench.real_cluster import (
    PODS,
    install,
    kubectl,
    lease_holder,
    server_version,
    service_account_kubeconfig,
    succeeded_status,
    watch,
)
from kueue_webhook import runtime
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    JOBS,
    WORKLOADS,
)
from kueue_webhook.control.kube.leader import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD

RESULTS = ROOT / "bench" / "results"
HOLD_LABEL = "bench.kueue-webhook/hold"  # Jobs whose Pods the played kubelet leaves running
JSON = dict[str, Any]


@dataclass
class Replica:
    identity: str
    process: subprocess.Popen[bytes]
    started_at: float


@dataclass
class Replicas:
    """``kueue-webhook serve`` processes with leader election; a killed one is replaced under a new name."""

    kubeconfig: Path
    workdir: Path
    lease: tuple[float, float, float]
    running: dict[str, Replica] = field(default_factory=dict)
    started: int = 0

    def start(self) -> Replica:
        self.started += 1
        identity = f"chaos-{self.started}"
        duration, deadline, retry = self.lease
        command = [sys.executable, "-m", "kueue_webhook", "serve", "--kubeconfig", str(self.kubeconfig)]
        command += ["--identity", identity, "--tls-dir", str(self.workdir / "certs")]
        command += ["--host", "127.0.0.1", "--port", str(free_port()), "--log-level", "warning"]
        command += ["--lease-duration", str(duration), "--renew-deadline", str(deadline)]
        command += ["--retry-period", str(retry)]
        with (self.workdir / f"{identity}.log").open("wb") as log:
            process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
        replica = Replica(identity, process, time.monotonic())
        self.running[identity] = replica
        return replica

    def kill(self, identity: str) -> None:
        replica = self.running.pop(identity)
        replica.process.send_signal(signal.SIGKILL)
        replica.process.wait()

    def check_alive(self) -> None:
        for replica in self.running.values():
            if replica.process.poll() is not None:
                raise RuntimeError(f"replica {replica.identity} exited with {replica.process.returncode}")

    def stop_all(self) -> None:
        for replica in self.running.values():
            replica.process.send_signal(signal.SIGTERM)
        for replica in self.running.values():
            try:
                replica.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                replica.process.kill()
        self.running.clear()


def job_body(name: str, namespace: str, queue: str, *, hold: bool = False) -> JSON:
    held = {HOLD_LABEL: "true"} if hold else {}  # on the Pods too: the played kubelet reads it there
    labels = {"kueue.x-k8s.io/queue-name": queue, **held}
    container: JSON = {"name": "work", "image": "busybox:1.36", "command": ["true"]}
    container["resources"] = {"requests": {"cpu": "1"}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "suspend": True,  # what the mutating webhook does; none is registered for this run
            "template": {
                "metadata": {"labels": held},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        },
    }


def job_finished(job: JSON) -> bool:
    return condition_true(job, "Complete") or condition_true(job, "Failed")


class Run:
    def __init__(self, args: argparse.Namespace, api: KubeClient, replicas: Replicas, names: JSON) -> None:
        self.args = args
        self.api = api
        self.replicas = replicas
        self.ns: str = names["ns"]
        self.cq: str = names["cq"]
        self.t0 = time.monotonic()
        self.timeline = Timeline(class_label=HOLD_LABEL)
        self.jobs_running: set[str] = set()
        self.jobs_done: set[str] = set()
        self.max_jobs_running = 0
        self.pods_seen: set[str] = set()
        self.pods_active: set[str] = set()
        self.max_pods_active = 0
        self.changed = asyncio.Event()
        self.kills: list[JSON] = []
        self.workloads: dict[str, JSON] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.main_done_at = 0.0
        self.unfinished_at_main_end = -1

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _woke(self) -> None:
        self.changed.set()

    async def until(self, check: Any, timeout: float) -> bool:
        """Wait for ``check()`` to hold, re-checking on every watched change (and each second)."""
        deadline = time.monotonic() + timeout
        while not check():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(1.0, remaining))
            self.replicas.check_alive()
        return True

    # -- watches ----------------------------------------------------------------------------------------

    def on_workload(self, event: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if event == "DELETED":
            self.workloads.pop(name, None)
        else:
            self.workloads[name] = obj
        self.timeline.observe(obj, at=self.now(), deleted=event == "DELETED")
        self._woke()

    def on_job(self, event: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if job_finished(obj) or event == "DELETED":
            self.jobs_running.discard(name)
            if event != "DELETED":
                self.jobs_done.add(name)
        elif not obj["spec"].get("suspend"):
            self.jobs_running.add(name)
            self.max_jobs_running = max(self.max_jobs_running, len(self.jobs_running))
        self._woke()

    def on_pod(self, event: str, obj: JSON) -> None:
        meta = obj["metadata"]
        if event == "DELETED" or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.pods_active.discard(meta["name"])
        else:
            self.pods_active.add(meta["name"])
            self.max_pods_active = max(self.max_pods_active, len(self.pods_active))
        if event == "DELETED" or meta["name"] in self.pods_seen or HOLD_LABEL in (meta.get("labels") or {}):
            return
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        self.pods_seen.add(meta["name"])
        self.tasks.append(asyncio.create_task(self.kubelet(meta["name"], obj)))

    async def kubelet(self, name: str, pod: JSON) -> None:
        await asyncio.sleep(self.args.run_seconds)  # the container's run time
        for attempt in range(5):
            try:
                await self.api.patch(
                    PODS, name=name, namespace=self.ns, patch=succeeded_status(pod), subresource="status"
                )
                return
            except ApiError as exc:
                if exc.status == 404 or attempt == 4:
                    return
                await asyncio.sleep(0.5)

    # -- chaos --------------------------------------------------------------------------------------------

    async def leader(self) -> str:
        return await lease_holder(self.api)

    async def kill_leader(self) -> JSON:
        """SIGKILL the leader, start its replacement, and time the takeover and the next admission."""
        holder = ""
        while holder not in self.replicas.running:  # a fresh lease may still name a killed replica
            holder = await self.leader()
            await asyncio.sleep(0.05)
        killed_at = self.now()
        self.replicas.kill(holder)
        self.replicas.start()
        taken = None
        while taken is None:
            current = await self.leader()
            if current and current != holder:
                taken = self.now()
            else:
                await asyncio.sleep(0.05)  # the Lease lives in another process's hands: poll it

        def admissions_since_takeover() -> list[float]:  # the new leader's, not writes the killed one left
            assert taken is not None
            return [t.at for t in self.timeline.transitions if t.change is Change.RESERVED and t.at >= taken]

        admitted = None
        if await self.until(lambda: bool(admissions_since_takeover()), timeout=120):
            admitted = min(admissions_since_takeover())
        record = {
            "killed": holder,
            "at_s": round(killed_at, 2),
            "lease_taken_after_s": round(taken - killed_at, 2),
            "next_admission_after_s": None if admitted is None else round(admitted - killed_at, 2),
        }
        print(f"kill {len(self.kills) + 1}: {record}", flush=True)
        self.kills.append(record)
        return record

    # -- the run ------------------------------------------------------------------------------------------

    async def main_run(self) -> None:
        for kind, handle in ((WORKLOADS, self.on_workload), (JOBS, self.on_job), (PODS, self.on_pod)):
            self.tasks.append(asyncio.create_task(watch(self.api, kind, self.ns, handle)))
        jobs = self.args.jobs
        semaphore = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with semaphore:
                await self.api.create(JOBS, job_body(f"job-{i:05d}", self.ns, "chaos"), namespace=self.ns)

        creating = asyncio.gather(*(create(i) for i in range(jobs)))
        for k in range(1, self.args.kills + 1):
            target = k * jobs // (self.args.kills + 1)
            if not await self.until(lambda target=target: len(self.jobs_done) >= target, self.args.timeout):
                break
            await self.kill_leader()
        await creating
        await self.until(lambda: len(self.jobs_done) >= jobs and self.all_finished(), self.args.timeout)
        self.main_done_at = self.now()
        self.unfinished_at_main_end = sum(not condition_true(w, "Finished") for w in self.workloads.values())

    def all_finished(self) -> bool:
        return all(condition_true(w, "Finished") for w in self.workloads.values())

    async def ledger_check(self) -> JSON:
        """Fill the queue with held Jobs, kill the leader, compare its successor's status with the cluster."""
        held = self.args.quota + self.args.quota // 2
        for i in range(held):
            body = job_body(f"held-{i:03d}", self.ns, "chaos", hold=True)
            await self.api.create(JOBS, body, namespace=self.ns)
        full = {"admittedWorkloads": self.args.quota, "pendingWorkloads": held - self.args.quota}
        if not await self.until(lambda: self.expected_status() | full == self.expected_status(), 120):
            raise RuntimeError(f"the held Jobs did not fill the queue: {self.expected_status()}")
        await self.kill_leader()
        deadline = time.monotonic() + 60
        reported: JSON = {}
        while time.monotonic() < deadline:
            cq = await self.api.get(CLUSTER_QUEUES, name=self.cq)
            reported = reported_status(cq)
            if reported == self.expected_status():
                break
            await asyncio.sleep(0.5)  # status is written by another process: poll it
        return {
            "expected": self.expected_status(),
            "reported": reported,
            "equal": reported == self.expected_status(),
        }

    def expected_status(self) -> JSON:
        live = [w for w in self.workloads.values() if not condition_true(w, "Finished")]
        reserved = [w for w in live if condition_true(w, "QuotaReserved")]
        return {
            "admittedWorkloads": sum(1 for w in reserved if condition_true(w, "Admitted")),
            "pendingWorkloads": len(live) - len(reserved),
            "cpuInUse": f"{len(reserved)}",  # one cpu each
        }


def reported_status(cq: JSON) -> JSON:
    status = cq.get("status") or {}
    cpu = "0"
    for flavor in status.get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            if resource.get("name") == "cpu":
                cpu = str(resource.get("total"))
    return {
        "admittedWorkloads": status.get("admittedWorkloads", 0),
        "pendingWorkloads": status.get("pendingWorkloads", 0),
        "cpuInUse": cpu,
    }


def setup_manifests(names: JSON, quota: int) -> str:
    ns, cq, flavor = names["ns"], names["cq"], names["flavor"]
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {flavor}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {cq}}}
spec:
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {ns}}}}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {flavor}
      resources: [{{name: cpu, nominalQuota: "{quota}"}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: chaos, namespace: {ns}}}
spec: {{clusterQueue: {cq}}}
"""


def machine() -> JSON:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def commit() -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return result.stdout.strip() or "unknown"


async def bench(args: argparse.Namespace) -> JSON:
    admin = Path(args.kubeconfig)
    install(admin)
    hooks = kubectl(admin, "get", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "-o", "name")
    if "kueue-webhook" in hooks:
        raise SystemExit(
            f"kueue-webhook's webhook configurations are registered; remove them first:\n{hooks}"
        )
    version = server_version(admin)
    suffix = uuid.uuid4().hex[:6]
    names = {"ns": f"chaos-{suffix}", "cq": f"chaos-{suffix}", "flavor": f"chaos-{suffix}"}
    kubectl(admin, "apply", "-f", "-", input=setup_manifests(names, args.quota))
    workdir = Path(args.workdir or f"/tmp/kueue-chaos-{suffix}")
    workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kueue_webhook",
            "certs",
            "--dir",
            str(workdir / "certs"),
            "--ip",
            "127.0.0.1",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    replicas = Replicas(
        service_account_kubeconfig(admin, workdir / "kubeconfig"),
        workdir,
        (args.lease_duration, args.renew_deadline, args.retry_period),
    )
    api = await KubeClient.connect(kubeconfig=str(admin), connections=8)
    run = Run(args, api, replicas, names)
    main = asyncio.current_task()
    assert main is not None
    for signum in (signal.SIGINT, signal.SIGTERM):  # stopped by hand: still stop the replicas and clean up
        asyncio.get_running_loop().add_signal_handler(signum, main.cancel)
    try:
        replicas.start()
        replicas.start()
        await run.main_run()
        ledger = await run.ledger_check()
    finally:
        replicas.stop_all()
        for task in run.tasks:
            task.cancel()
        await api.close()
        for kind, name in (("namespace", names["ns"]), ("clusterqueue", names["cq"])):
            with contextlib.suppress(RuntimeError):
                kubectl(admin, "delete", kind, name, "--wait=false")
        with contextlib.suppress(RuntimeError):
            kubectl(admin, "delete", "resourceflavor", names["flavor"], "--wait=false")
    limits = QuotaLimits(cluster_queue={names["cq"]: args.quota * 1000}, cohort_of={}, cohort={})
    report = check_over_admission(run.timeline.transitions, limits)
    jobs = [n for n in run.jobs_done if n.startswith("job-")]
    takeovers = [k["lease_taken_after_s"] for k in run.kills]
    resumed = [k["next_admission_after_s"] for k in run.kills if k["next_admission_after_s"] is not None]
    return {
        "benchmark": "chaos",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "server": f"kube-apiserver {version} (real, {admin})",
        "machine": machine(),
        "settings": {
            "jobs": args.jobs,
            "kills": args.kills,
            "quota_cpu": args.quota,
            "run_seconds": args.run_seconds,
            "lease_duration_s": args.lease_duration,
            "renew_deadline_s": args.renew_deadline,
            "retry_period_s": args.retry_period,
            "replicas": 2,
        },
        "wall_s": round(run.main_done_at, 1),
        "kills_done": len(run.kills),
        "over_admission": {
            "violations": len(report.violations),
            "max_cluster_queue_cpu": max(report.max_cluster_queue.values(), default=0) / 1000,
            "max_jobs_running_at_once": run.max_jobs_running,
            "max_pods_active_at_once": run.max_pods_active,
            "limit_cpu": args.quota,
        },
        "jobs_completed": len(jobs),
        "jobs_stuck": args.jobs - len(jobs),
        "workloads_not_finished": run.unfinished_at_main_end,
        "failover": {
            "lease_taken_max_s": max(takeovers, default=None),
            "lease_taken_mean_s": round(sum(takeovers) / len(takeovers), 2) if takeovers else None,
            "next_admission_max_s": max(resumed, default=None),
            "next_admission_mean_s": round(sum(resumed) / len(resumed), 2) if resumed else None,
            "kills": run.kills,
        },
        "ledger_after_failover": ledger,
    }


def markdown(result: JSON) -> str:
    s, o, f, m = result["settings"], result["over_admission"], result["failover"], result["machine"]
    rows = [
        ("leaders killed (SIGKILL)", result["kills_done"]),
        ("wall", f"{result['wall_s']} s"),
        (
            "over-admissions (Workload timeline)",
            f"{o['violations']} (peak {o['max_cluster_queue_cpu']:g} of {o['limit_cpu']} cpu)",
        ),
        ("most Jobs running at once", f"{o['max_jobs_running_at_once']} (limit {o['limit_cpu']})"),
        ("most Pods active at once", f"{o['max_pods_active_at_once']} (limit {o['limit_cpu']})"),
        ("Jobs completed / stuck", f"{result['jobs_completed']} / {result['jobs_stuck']}"),
        ("Lease taken after a kill, mean / max", f"{f['lease_taken_mean_s']} / {f['lease_taken_max_s']} s"),
        (
            "first admission after a kill, mean / max",
            f"{f['next_admission_mean_s']} / {f['next_admission_max_s']} s",
        ),
        ("ledger equals the cluster after a failover", result["ledger_after_failover"]["equal"]),
    ]
    return "\n".join(
        [
            f"# Leader failover under SIGKILL ({result['date']}, commit {result['commit']})",
            "",
            f"Server: {result['server']}. Machine: {m['cpu']}, {m['cores']} cores.",
            f"{s['jobs']} Jobs of 1 cpu, ClusterQueue of {s['quota_cpu']} cpu, 2 replicas, lease "
            f"{s['lease_duration_s']} / {s['renew_deadline_s']} / {s['retry_period_s']} s, "
            f"Pods run {s['run_seconds']} s.",
            "",
            "| figure | value |",
            "|---|---|",
            *(f"| {name} | {value} |" for name, value in rows),
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, help="admin kubeconfig of a real API server")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--quota", type=int, default=20, help="the ClusterQueue's cpu (each Job asks 1)")
    parser.add_argument("--run-seconds", type=float, default=1.0, help="how long each Pod runs")
    parser.add_argument("--lease-duration", type=float, default=LEASE_DURATION, help="as serve's (default)")
    parser.add_argument("--renew-deadline", type=float, default=RENEW_DEADLINE, help="as serve's (default)")
    parser.add_argument("--retry-period", type=float, default=RETRY_PERIOD, help="as serve's (default)")
    parser.add_argument("--timeout", type=float, default=600.0, help="longest wait for any one stage")
    parser.add_argument("--workdir", help="logs and certificates (default: a new /tmp directory)")
    parser.add_argument("--out", default="chaos", help="result file name under bench/results/")
    args = parser.parse_args()
    result = runtime.run(bench(args))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(result))
    print(markdown(result))
    ok = (
        result["over_admission"]["violations"] == 0
        and result["over_admission"]["max_jobs_running_at_once"] <= args.quota
        and result["over_admission"]["max_pods_active_at_once"] <= args.quota
        and result["jobs_stuck"] == 0
        and result["ledger_after_failover"]["equal"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
