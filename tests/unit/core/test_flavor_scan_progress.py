"""A Workload's flavor search resumes where its last one stopped (Kueue's LastTriedFlavorIdx, kept from one
cycle to the next by FlavorFungibilityPreserveScanProgress, on by default since v0.20; the cases follow
Kueue's ``pkg/scheduler/scheduler_preserve_flavor_scan_progress_test.go`` and ``TestLastAssignmentOutdated``).
"""

from __future__ import annotations

from kueue_webhook.api.nodes import NodeView
from kueue_webhook.api.objects import ResourceFlavor, Topology, parse_resource_flavor, parse_topology
from kueue_webhook.api.quantity import NANO
from kueue_webhook.core.model import WorkloadKey
from kueue_webhook.core.scan_progress import ScanProgress, next_flavor
from kueue_webhook.core.scheduler import Admit, SchedulerState

from .builders import cluster_queue, flavor, last_wait, local_queue, run_until_quiet, workload
from .test_preemption import Cluster
from .test_preemption_overlap import flavor_of

HOST = "kubernetes.io/hostname"
KEY = WorkloadKey("ns/w")


def test_a_workload_that_lost_its_flavor_in_a_cycle_resumes_at_the_next_flavor() -> None:
    """cq-a borrows flavor f1 from cq-b (``whenCanBorrow: MayStopSearch`` stops its search there) and has
    its own quota in f2. cq-b's head, which does not borrow, goes first and takes f1; a's head is told it
    no longer fits. Its next search starts at f2, the flavor after the one it stopped at, so it lands on
    f2 although f1 had room again by then (b's Workload finished between the cycles)."""
    state = SchedulerState()
    state.upsert_namespace("ns", {})
    for name in ("f1", "f2"):
        state.upsert_resource_flavor(flavor(name))
    state.upsert_cluster_queue(cluster_queue("cq-a", {"f1": {"cpu": 0}, "f2": {"cpu": 4}}, cohortName="org"))
    state.upsert_cluster_queue(cluster_queue("cq-b", {"f1": {"cpu": 6}}, cohortName="org"))
    state.upsert_local_queue(local_queue("lq-a", "cq-a"))
    state.upsert_local_queue(local_queue("lq-b", "cq-b"))
    c = Cluster(state)
    c.add("a", 4, queue="lq-a", created=10)
    c.add("b", 4, queue="lq-b", created=11)
    decisions = state.cycle()
    assert [d.workload for d in decisions if isinstance(d, Admit)] == ["ns/b"]
    assert last_wait(decisions, "ns/a").message == "Workload no longer fits after processing another workload"
    for decision in decisions:
        if isinstance(decision, Admit):
            state.confirm(decision.workload)
            c.admitted.add(decision.workload)
    c.finish("ns/b")
    c.settle()
    assert c.admitted == {"ns/a"}
    assert flavor_of(c, "ns/a") == "f2"


def tas_flavor(name: str, pool: str) -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {"metadata": {"name": name}, "spec": {"nodeLabels": {"tas-flavor": pool}, "topologyName": "hosts"}}
    )
    assert isinstance(parsed, ResourceFlavor), parsed
    return parsed


def one_level_topology() -> Topology:
    parsed = parse_topology({"metadata": {"name": "hosts"}, "spec": {"levels": [{"nodeLabel": HOST}]}})
    assert isinstance(parsed, Topology), parsed
    return parsed


def host_job(name: str, *, created: int, pool: str | None = None) -> object:
    spec: dict[str, object] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    if pool is not None:
        spec["nodeSelector"] = {"tas-flavor": pool}
    pod_set = {
        "name": "one",
        "count": 1,
        "template": {"spec": spec},
        "topologyRequest": {"required": HOST},
    }
    return workload(name, pod_sets=[pod_set], created=created, priority=10, queue="tas-lq")


def test_a_workload_whose_topology_fails_on_the_first_flavor_gets_in_on_the_next() -> None:
    """Kueue's TestScheduleForPreserveFlavorScanProgress: quota fits on tas-flavor-1, so the search stops
    there, but its only node is taken by a Workload of the same priority (nobody to preempt). The Workload
    is tried again in the next cycle from tas-flavor-2, whose node has room, and is admitted there."""
    state = SchedulerState()
    state.upsert_namespace("ns", {})
    state.upsert_topology(one_level_topology())
    state.upsert_resource_flavor(tas_flavor("tas-flavor-1", "f1"))
    state.upsert_resource_flavor(tas_flavor("tas-flavor-2", "f2"))
    state.upsert_cluster_queue(
        cluster_queue(
            "tas-cq",
            {"tas-flavor-1": {"cpu": 4}, "tas-flavor-2": {"cpu": 4}},
            preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
        )
    )
    state.upsert_local_queue(local_queue("tas-lq", "tas-cq"))
    for name, pool in (("node-f1", "f1"), ("node-f2", "f2")):
        state.upsert_node(
            NodeView(name, {"tas-flavor": pool, HOST: name}, {"cpu": 2 * NANO, "pods": 10 * NANO})
        )
    state.upsert_workload(host_job("blocker", created=0, pool="f1"))
    state.upsert_workload(host_job("pending", created=60))
    decisions = run_until_quiet(state)
    flavors = {
        d.workload: d.admission.pod_set_assignments[0].flavors["cpu"]
        for d in decisions
        if isinstance(d, Admit)
    }
    assert flavors == {"ns/blocker": "tas-flavor-1", "ns/pending": "tas-flavor-2"}


def test_progress_is_kept_for_the_next_cycle_and_dropped_once_older_with_the_queue_moved() -> None:
    """Kueue's lastAssignmentOutdated with the gate on: a search from the cycle just before is always
    resumed; an older one only while the ClusterQueue's allocatable resources have not moved since."""
    scans = ScanProgress()
    scans.cycle = 5
    scans.record(KEY, "cq", "shape", ({"cpu": 0},))
    scans.moved("cq")
    scans.cycle = 6
    assert scans.resume(KEY, "cq", "shape") == ({"cpu": 0},)
    scans.cycle = 7
    assert scans.resume(KEY, "cq", "shape") is None  # two cycles old, and the queue released quota since
    assert not scans.pending_flavors(KEY)


def test_old_progress_stands_while_the_queue_has_not_moved_but_not_for_another_shape() -> None:
    scans = ScanProgress()
    scans.record(KEY, "cq", "shape", ({"cpu": 1},))
    scans.cycle = 9
    assert scans.resume(KEY, "cq", "shape") == ({"cpu": 1},)
    assert scans.pending_flavors(KEY)
    assert scans.resume(KEY, "cq", "other shape") is None  # its requests changed: the search starts over
    assert not scans.pending_flavors(KEY)


def test_a_search_that_reached_the_last_flavor_starts_over() -> None:
    """The last flavor tried is recorded as -1 (Kueue: "we have reach the last flavor, try from the first
    flavor next time"); such a record is not kept, and nothing is pending."""
    scans = ScanProgress()
    scans.record(KEY, "cq", "shape", ({"cpu": -1},))
    assert not scans.pending_flavors(KEY)
    assert scans.resume(KEY, "cq", "shape") is None
    assert next_flavor(({"cpu": 0},), 0, "cpu", 3) == 1
    assert next_flavor(({"cpu": 2},), 0, "cpu", 3) == 0  # a group that lost flavors since: from the first
    assert next_flavor(({"cpu": 0},), 1, "cpu", 3) == 0  # no record for that pod set
