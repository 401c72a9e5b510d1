"""The scheduler scenarios of tests/scenarios, played on a real API server running kueue-webhook.

The same YAML files that ``simulate`` replays in the unit suite (manifests plus an ``expect`` document) are
applied here with kubectl: the objects first, then the Jobs group by group in the order of their
``simulate.kueue-webhook/arrival`` annotation, each group once the cluster has settled after the one before.
What a user would then see must be what the scenario expects: which Jobs hold quota (and with how many pods),
which wait and with which reason and message, who preempted whom, and each ClusterQueue's usage. The Pods of
admitted Jobs are left as they are (no kubelet finishes them), so the state stays put once reached.

Only scenarios that need no simulated clock run here (no runtimes, no ``finished`` expectation; an ``at``
after the last arrival is the settled state, which is what is compared here), and whose Jobs of one arrival
group do not depend on their creation order within a second.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.install import Running

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
ON_A_REAL_CLUSTER = [
    "cohort-borrowing",
    "hierarchical-borrowing-order",
    "partial-admission",
    "pending-after-borrowing",
    "preempt-in-two-queues-one-cycle",
    "preempt-within-cluster-queue",
]
ARRIVAL = "simulate.kueue-webhook/arrival"
UID = re.compile(r"UID: [^,)]+")


def seconds(text: str) -> float:
    return float(text.rstrip("s") or 0)


def load(name: str) -> tuple[list[JSON], list[list[JSON]], JSON]:
    """(objects, Jobs grouped by arrival, expectation) of one scenario file."""
    objects: list[JSON] = []
    jobs: dict[float, list[JSON]] = {}
    expect: JSON = {}
    for doc in yaml.safe_load_all((SCENARIOS / f"{name}.yaml").read_text()):
        if not isinstance(doc, dict):
            continue
        if "expect" in doc:
            expect = doc["expect"]
        elif doc.get("kind") == "Job":
            # simulate needs no restart policy; the API server does (Never, as batch pods usually have)
            doc["spec"]["template"]["spec"].setdefault("restartPolicy", "Never")
            arrival = seconds(str((doc["metadata"].get("annotations") or {}).get(ARRIVAL, "0s")))
            jobs.setdefault(arrival, []).append(doc)
        else:
            objects.append(doc)
    return objects, [jobs[at] for at in sorted(jobs)], expect


def job_of(workload: JSON) -> str:
    return next(
        (r["name"] for r in workload["metadata"].get("ownerReferences") or [] if r["kind"] == "Job"), ""
    )


class View:
    """The scenario's Workloads and ClusterQueues as the API server has them now."""

    def __init__(self, cluster: Cluster, namespaces: list[str], queues: list[str]) -> None:
        self.workloads = [w for ns in namespaces for w in cluster.items("workloads", "-n", ns)]
        self.by_job = {job_of(w): w for w in self.workloads}
        self.queues = {q: cluster.get("clusterqueue", q) for q in queues}

    def state(self) -> list[tuple[str, str, str, bool]]:
        """What changes while the scheduler is still at work: each Workload's reservation and eviction."""
        rows = []
        for job, w in sorted(self.by_job.items()):
            reserved = condition(w, "QuotaReserved")
            evicting = condition(w, "Evicted").get("status") == "True" and reserved.get("status") == "True"
            rows.append((job, str(reserved.get("status")), str(reserved.get("message")), evicting))
        return rows

    def mismatches(self, expect: JSON) -> list[str]:
        out = []
        admitted = sorted(
            j for j, w in self.by_job.items() if condition(w, "QuotaReserved").get("status") == "True"
        )
        if admitted != sorted(expect.get("admitted", [])):
            out.append(f"admitted {admitted}, expected {sorted(expect.get('admitted', []))}")
        for job, counts in expect.get("counts", {}).items():
            assignments = ((self.by_job.get(job, {}).get("status") or {}).get("admission") or {}).get(
                "podSetAssignments"
            ) or []
            got = {a["name"]: a.get("count") for a in assignments}
            if got != counts:
                out.append(f"{job} admitted with {got}, expected {counts}")
        for job, want in expect.get("pending", {}).items():
            reserved = condition(self.by_job.get(job, {}), "QuotaReserved")
            got = {"reason": reserved.get("reason"), "message": reserved.get("message")}
            if reserved.get("status") != "False" or any(got[k] != v for k, v in want.items() if k in got):
                out.append(f"{job} pending as {reserved}, expected {want}")
        uids = {w["metadata"]["uid"]: job_of(w) for w in self.workloads}
        for job, want in expect.get("preempted", {}).items():
            preempted = condition(self.by_job.get(job, {}), "Preempted")
            message = str(preempted.get("message", ""))
            by = next((uids.get(u.removeprefix("UID: "), "") for u in UID.findall(message)), "")
            got = {"by": by, "reason": preempted.get("reason"), "message": UID.sub("UID: *", message)}
            wanted = {**want, "message": UID.sub("UID: *", str(want.get("message", "")))}
            if any(got[k] != v for k, v in wanted.items() if k in got):
                out.append(f"{job} preempted as {got}, expected {wanted}")
        for queue, usage in expect.get("usage", {}).items():
            got = {
                f"{f['name']}/{r['name']}": str(r["total"])
                for f in (self.queues[queue].get("status") or {}).get("flavorsUsage") or []
                for r in f.get("resources") or []
            }
            if {k: got.get(k, "0") for k in usage} != {k: str(v) for k, v in usage.items()}:
                out.append(f"usage of {queue} {got}, expected {usage}")
        return out


def settle(cluster: Cluster, namespaces: list[str], queues: list[str], jobs: list[JSON]) -> None:
    """Every Job so far has its Workload decided, and nothing changed for two looks a second apart."""
    names = {j["metadata"]["name"] for j in jobs}
    last: list[Any] = []
    calm = 0
    deadline = time.monotonic() + 90
    while calm < 2:
        assert time.monotonic() < deadline, f"the scheduler did not settle: {last}"
        view = View(cluster, namespaces, queues)
        decided = all(condition(view.by_job.get(n, {}), "QuotaReserved") for n in names)
        state = view.state()
        calm = calm + 1 if decided and state == last and not any(row[3] for row in state) else 0
        last = state
        time.sleep(1.0)  # another process decides: polling is the only way to see it settle


@pytest.mark.parametrize("name", ON_A_REAL_CLUSTER)
def test_scenario_on_a_real_api_server(controller: tuple[Cluster, Running], name: str) -> None:
    cluster, running = controller
    objects, groups, expect = load(name)
    namespaces = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    queues = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    manifest = yaml.safe_dump_all(objects)
    try:
        cluster.apply(manifest)
        until(
            lambda: all(
                condition(cluster.get("clusterqueue", q), "Active").get("status") == "True" for q in queues
            ),
            "the ClusterQueues to be active",
        )
        created: list[JSON] = []
        for group in groups:
            cluster.kubectl("create", "-f", "-", input=yaml.safe_dump_all(group))
            created += group
            settle(cluster, namespaces, queues, created)
        view = View(cluster, namespaces, queues)
        assert not view.mismatches(expect), (view.mismatches(expect), running.tail())
    finally:
        for namespace in namespaces:
            cluster.kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=120s", check=False)
        cluster.kubectl(
            "delete", "-f", "-", "--ignore-not-found", "--wait=false", input=manifest, check=False
        )
