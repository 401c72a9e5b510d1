"""Pod-set groups (``podSetGroupName``): a one-pod leader placed with its workers in one domain of the
required level, as Kueue's TAS places a LeaderWorkerSet's leader and workers or a JobSet's driver and
workers; through the scheduler, both pod sets of the group get their topology assignment in that domain."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.nodes import NodeView
from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor
from kueue_webhook.api.quantity import NANO
from kueue_webhook.api.topology_assignment import decode
from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.scheduler import Admit
from kueue_webhook.core.tas.group_placement import place_group
from kueue_webhook.core.tas.placement import PodSetNeeds

from .builders import cluster_queue, last_wait, run_until_quiet, workload
from .test_tas_placement import CPU, capacity, node, tree_of
from .test_tas_scheduling import HOST, tas_state
from .test_tas_scheduling import node as scheduler_node


def workers(count: int, **request: Any) -> PodSetNeeds:
    return PodSetNeeds(count, {"cpu": CPU}, TopologyRequest(group="g", **request))


def leader(cpus: int = 1) -> PodSetNeeds:
    return PodSetNeeds(1, {"cpu": cpus * CPU}, TopologyRequest(required="rack", group="g"))


def test_the_leader_and_its_workers_share_the_one_rack_that_holds_them_all() -> None:
    # r2 holds the 3 workers exactly but not the leader beside them: only r1 holds all four
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h3", "r2", 2), node("h4", "r2", 1))
    placed_workers, placed_leader = place_group(tree_of(tas), workers(3, required="rack"), leader())
    assert placed_workers.failure == ""
    assert placed_workers.domains == ((("h1",), 1), (("h2",), 2))
    assert placed_leader.domains == ((("h1",), 1),)


def test_a_rack_that_holds_the_workers_but_not_the_leader_beside_them_does_not_fit() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 1))
    placed_workers, placed_leader = place_group(tree_of(tas), workers(3, required="rack"), leader())
    # Kueue's message counts the workers the rack holds alone
    assert placed_workers.failure == 'topology "default" allows to fit only 3 out of 3 pod(s)'
    assert placed_leader.failure == placed_workers.failure


def test_a_big_leader_goes_to_the_host_with_room_for_it() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 4))
    placed_workers, placed_leader = place_group(tree_of(tas), workers(2, required="rack"), leader(cpus=3))
    assert placed_leader.domains == ((("h2",), 1),)
    # beside the leader h2 keeps one cpu; h1 takes the other worker
    assert sorted(placed_workers.domains) == [(("h1",), 1), (("h2",), 1)]


def test_preferred_climbs_to_the_block_and_keeps_the_leader_with_some_workers() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r2", 2), node("h3", "r3", 1))
    placed_workers, placed_leader = place_group(tree_of(tas), workers(4, preferred="rack"), leader())
    # no rack holds 5 pods, the block holds them: the leader on h1 beside one worker, the rest on the
    # largest hosts
    assert placed_leader.domains == ((("h1",), 1),)
    assert placed_workers.domains == ((("h1",), 1), (("h2",), 2), (("h3",), 1))


def group_workload(name: str, *, group: bool, leader_first: bool = False) -> Any:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    request: dict[str, Any] = {"required": "rack"}
    if group:
        request["podSetGroupName"] = "lws"
    lead = {"name": "leader", "count": 1, "template": template, "topologyRequest": request}
    work = {"name": "workers", "count": 3, "template": template, "topologyRequest": request}
    return workload(name, pod_sets=[lead, work] if leader_first else [work, lead])


def racks_of(decision: Admit) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for assignment in decision.admission.pod_set_assignments:
        assert assignment.topology_assignment is not None
        out[assignment.name] = {d.values[0][:1] for d in decode(dict(assignment.topology_assignment))}
    return out


def nodes() -> tuple[Any, ...]:
    return (
        scheduler_node("a1", "a", 2),
        scheduler_node("a2", "a", 2),
        scheduler_node("b1", "b", 2),
        scheduler_node("b2", "b", 1),
    )


def test_a_grouped_leader_and_workers_are_admitted_into_one_rack() -> None:
    state = tas_state(*nodes())
    state.upsert_workload(group_workload("lws", group=True, leader_first=True))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert racks_of(admit) == {"leader": {"a"}, "workers": {"a"}}


def test_without_the_group_the_leader_and_workers_land_in_different_racks() -> None:
    state = tas_state(*nodes())
    state.upsert_workload(group_workload("apart", group=False))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    # each pod set on its own: the 3 workers fill rack b exactly, the leader goes to rack a
    assert racks_of(admit) == {"workers": {"b"}, "leader": {"a"}}


def test_a_group_no_rack_holds_waits_with_kueues_message() -> None:
    state = tas_state(
        scheduler_node("a1", "a", 2), scheduler_node("a2", "a", 1), scheduler_node("b1", "b", 3)
    )
    state.upsert_workload(group_workload("lws", group=True))
    wait = last_wait(run_until_quiet(state), "ns/lws")
    assert wait.reason == "TopologyPlacementFailed"
    assert 'topology "default" allows to fit only 3 out of 3 pod(s)' in wait.message


def test_the_pod_sets_of_a_group_get_the_same_flavor_chosen_for_the_whole_group() -> None:
    # "small" has quota for 2 cpus, "big" for 10: the leader alone would take "small" and the workers
    # "big"; as a group both take "big", the first flavor whose quota holds all four pods
    state = tas_state(*nodes())
    for name, pool in (("small", "tas"), ("big", "tas-big")):
        flavor = parse_resource_flavor(
            {"metadata": {"name": name}, "spec": {"nodeLabels": {"pool": pool}, "topologyName": "default"}}
        )
        assert isinstance(flavor, ResourceFlavor)
        state.upsert_resource_flavor(flavor)
    state.upsert_cluster_queue(cluster_queue("cq", {"small": {"cpu": 2}, "big": {"cpu": 10}}))
    for host in ("c1", "c2"):
        labels = {"pool": "tas-big", "rack": "c", HOST: host}
        state.upsert_node(NodeView(host, labels, {"cpu": 4 * NANO, "pods": 110 * NANO}))
    state.upsert_workload(group_workload("lws", group=True, leader_first=True))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert {a.name: a.flavors["cpu"] for a in admit.admission.pod_set_assignments} == {
        "leader": "big",
        "workers": "big",
    }
    assert racks_of(admit) == {"leader": {"c"}, "workers": {"c"}}

    state.upsert_workload(group_workload("apart", group=False, leader_first=True))
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert {a.name: a.flavors["cpu"] for a in admit.admission.pod_set_assignments} == {
        "leader": "small",
        "workers": "big",
    }
