"""Topology-aware admission through the scheduler: a TAS flavor's Workloads get a ``topologyAssignment``
in Kueue's v1beta2 encoding, wait with Kueue's message while no rack holds them although quota does, and
get in once capacity frees up; the usage of admitted TAS Workloads and of bound pods is counted."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import ResourceFlavor, Topology, parse_resource_flavor, parse_topology
from kueue_webhook.api.quantity import NANO
from kueue_webhook.api.topology_assignment import Domain, decode
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

from .builders import admitted, cluster_queue, last_wait, local_queue, run_until_quiet, workload

HOST = "kubernetes.io/hostname"


def tas_flavor(name: str = "tas-flavor") -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {"metadata": {"name": name}, "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}}
    )
    assert isinstance(parsed, ResourceFlavor), parsed
    return parsed


def topology() -> Topology:
    parsed = parse_topology(
        {"metadata": {"name": "default"}, "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": HOST}]}}
    )
    assert isinstance(parsed, Topology), parsed
    return parsed


def node(name: str, rack: str, cpus: int) -> NodeView:
    return NodeView(name, {"pool": "tas", "rack": rack, HOST: name}, {"cpu": cpus * NANO, "pods": 110 * NANO})


def tas_state(*nodes: NodeView, quota: int = 100) -> SchedulerState:
    state = SchedulerState()
    state.upsert_namespace("ns", {})
    state.upsert_topology(topology())
    state.upsert_resource_flavor(tas_flavor())
    state.upsert_cluster_queue(cluster_queue("cq", {"tas-flavor": {"cpu": quota}}))
    state.upsert_local_queue(local_queue("lq", "cq"))
    for each in nodes:
        state.upsert_node(each)
    return state


def rack_job(name: str, count: int = 4, *, created: int = 0, **request: str) -> Any:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    pod_set = {
        "name": "main",
        "count": count,
        "template": template,
        "topologyRequest": request or {"required": "rack"},
    }
    return workload(name, pod_sets=[pod_set], created=created)


def assignment_of(decision: Admit) -> list[Domain]:
    topology_assignment = decision.admission.pod_set_assignments[0].topology_assignment
    assert topology_assignment is not None
    return decode(dict(topology_assignment))


def test_required_rack_is_admitted_into_the_rack_with_room_naming_its_hosts() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 1), node("b1", "b", 2), node("b2", "b", 2))
    state.upsert_workload(rack_job("one"))
    decisions = run_until_quiet(state)
    (admit,) = [d for d in decisions if isinstance(d, Admit)]
    assert admit.admission.to_dict()["podSetAssignments"][0]["topologyAssignment"]["levels"] == [HOST]
    assert assignment_of(admit) == [Domain(("b1",), 2), Domain(("b2",), 2)]


def test_fragmented_racks_keep_the_second_job_pending_with_kueues_message_though_quota_suffices() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2), node("b2", "b", 2))
    state.upsert_workload(rack_job("one", count=3, created=0))
    state.upsert_workload(rack_job("two", count=3, created=1))
    state.upsert_workload(rack_job("three", count=2, created=2))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["ns/one", "ns/two"]
    # one free cpu left in each rack: 2 in all, never 2 in one rack
    wait = last_wait(decisions, "ns/three")
    assert wait.reason == "WaitingForQuota"
    assert wait.message == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 1 out of 2 pod(s). '
        'Total nodes: 4; excluded: resource "cpu": 2'
    )
    state.finish_workload("ns/one")  # its rack is free again: the third gets in
    assert admitted(run_until_quiet(state)) == ["ns/three"]


def test_a_job_that_can_never_fit_fails_placement_and_names_it() -> None:
    state = tas_state(node("a1", "a", 2), node("b1", "b", 2))
    state.upsert_workload(rack_job("big", count=3))
    wait = last_wait(run_until_quiet(state), "ns/big")
    assert wait.reason == "TopologyPlacementFailed"
    assert wait.message.endswith('topology "default" allows to fit only 2 out of 3 pod(s)')


def test_pods_bound_to_the_nodes_take_room_and_their_end_wakes_the_waiting_job() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2))
    state.upsert_pod("other/p", PodOnNode("a1", {"cpu": 2 * NANO}))
    state.upsert_workload(rack_job("one"))
    assert admitted(run_until_quiet(state)) == []
    state.upsert_pod("other/p", None)
    assert admitted(run_until_quiet(state)) == ["ns/one"]


def test_a_node_joining_the_rack_wakes_the_waiting_job() -> None:
    state = tas_state(node("a1", "a", 2))
    state.upsert_workload(rack_job("one"))
    assert admitted(run_until_quiet(state)) == []
    state.upsert_node(node("a2", "a", 2))
    assert admitted(run_until_quiet(state)) == ["ns/one"]


def test_an_explicit_request_on_a_flavor_without_topology_is_refused_as_kueue_words_it() -> None:
    state = tas_state()
    plain = parse_resource_flavor({"metadata": {"name": "plain"}, "spec": {}})
    assert isinstance(plain, ResourceFlavor)
    state.upsert_resource_flavor(plain)
    state.upsert_cluster_queue(cluster_queue("cq", {"plain": {"cpu": 100}}))
    state.upsert_workload(rack_job("one"))
    wait = last_wait(run_until_quiet(state), "ns/one")
    assert wait.message == (
        'couldn\'t assign flavors to pod set main: Flavor "plain" does not support TopologyAwareScheduling'
    )


def test_without_a_request_a_tas_only_queue_places_pods_anywhere_on_its_nodes() -> None:
    state = tas_state(node("a1", "a", 1), node("b1", "b", 2))
    state.upsert_workload(workload("free", count=3))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert assignment_of(admit) == [Domain(("a1",), 1), Domain(("b1",), 2)]


def test_a_restart_counts_the_admitted_assignments_before_placing_anyone() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2))
    state.upsert_workload(rack_job("one", count=2, required="rack"))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    status = {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
        "admission": admit.admission.to_dict(),
    }
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    pod_sets = [{"name": "main", "count": 2, "template": template, "topologyRequest": {"required": "rack"}}]
    restarted = tas_state(node("a1", "a", 2), node("a2", "a", 2))
    restarted.upsert_workload(workload("one", pod_sets=pod_sets, status=status))
    restarted.upsert_workload(rack_job("two", count=3, required="rack"))
    assert admitted(run_until_quiet(restarted)) == []


def test_a_higher_priority_rack_job_preempts_the_fewest_lower_ones_that_free_one_rack() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2), node("b2", "b", 2))
    preempting = cluster_queue(
        "cq", {"tas-flavor": {"cpu": 100}}, preemption={"withinClusterQueue": "LowerPriority"}
    )
    state.upsert_cluster_queue(preempting)
    state.upsert_workload(rack_job("low1", count=3, created=0))
    state.upsert_workload(rack_job("low2", count=3, created=1))
    assert admitted(run_until_quiet(state)) == ["ns/low1", "ns/low2"]
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    urgent = {"name": "main", "count": 4, "template": template, "topologyRequest": {"required": "rack"}}
    state.upsert_workload(workload("urgent", pod_sets=[urgent], priority=10, created=2))
    decisions = run_until_quiet(state)
    # one free cpu in each rack: evicting one of the two (the most recently admitted) frees a whole rack
    assert [(d.workload, d.reason) for d in decisions if isinstance(d, Evict)] == [("ns/low2", "Preempted")]
    assert last_wait(decisions, "ns/urgent").message.endswith("Pending the preemption of 1 workload(s)")
    state.finish_workload("ns/low2")
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert admit.workload == "ns/urgent"
    assert {d.values[0] for d in assignment_of(admit)} == {"b1", "b2"}


def test_without_preemption_in_its_queue_the_rack_job_just_waits() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2), node("b2", "b", 2))
    state.upsert_workload(rack_job("low1", count=3, created=0))
    state.upsert_workload(rack_job("low2", count=3, created=1))
    assert admitted(run_until_quiet(state)) == ["ns/low1", "ns/low2"]
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    urgent = {"name": "main", "count": 4, "template": template, "topologyRequest": {"required": "rack"}}
    state.upsert_workload(workload("urgent", pod_sets=[urgent], priority=10, created=2))
    decisions = run_until_quiet(state)
    assert not [d for d in decisions if isinstance(d, Evict)]
    assert last_wait(decisions, "ns/urgent").reason == "WaitingForQuota"


def test_a_tas_flavor_whose_topology_is_missing_admits_nobody() -> None:
    state = tas_state(node("a1", "a", 4))
    state.delete_topology("default")
    state.upsert_workload(rack_job("one", count=1))
    wait = last_wait(run_until_quiet(state), "ns/one")
    assert wait.message == (
        'couldn\'t assign flavors to pod set main: Flavor "tas-flavor" information missing in TAS cache'
    )
    state.upsert_topology(topology())  # the Topology arrives: the Workload is placed
    assert admitted(run_until_quiet(state)) == ["ns/one"]


def test_two_queues_nominating_the_same_rack_in_one_cycle_admit_only_one_there() -> None:
    # two ClusterQueues without a cohort share the flavor's nodes: both heads are placed on rack b (3 free,
    # the best fit) when the cycle starts, the first admission takes it, and the second is placed again
    # (Kueue's TASRecomputeAssignmentWithinSchedulingCycle) on rack a instead of on top of the first
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2), node("b2", "b", 1))
    state.upsert_cluster_queue(cluster_queue("cq2", {"tas-flavor": {"cpu": 100}}))
    state.upsert_local_queue(local_queue("lq2", "cq2"))
    state.upsert_workload(rack_job("one", count=3))
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    pod_set = {"name": "main", "count": 3, "template": template, "topologyRequest": {"required": "rack"}}
    state.upsert_workload(workload("two", pod_sets=[pod_set], queue="lq2", created=1))
    decisions = run_until_quiet(state)
    hosts = {
        d.workload: {domain.values[0][0] for domain in assignment_of(d)}
        for d in decisions
        if isinstance(d, Admit)
    }
    assert hosts == {"ns/one": {"b"}, "ns/two": {"a"}}
