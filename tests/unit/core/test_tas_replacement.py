"""A failed node's pods get a new place (Kueue's findReplacementAssignment): the rest of the Workload stays
where it runs, a required pod set stays in its domain of the required level, the tree's room is what the
Workload's own pods leave, and an assignment naming another missing node cannot be repaired."""

from __future__ import annotations

from kueue_webhook.api.objects import Admission, PodSetAssignment, ResourceFlavor
from kueue_webhook.api.objects.common import Meta
from kueue_webhook.api.topology_assignment import Domain, decode, encode
from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.model import PodSetInfo, WorkloadInfo, WorkloadKey
from kueue_webhook.core.tas.charges import topology_charges
from kueue_webhook.core.tas.replacement import NoReplacement, find_replacement
from tests.unit.core.test_tas_placement import CPU, HOST, capacity, node

FLAVORS = {"tas-flavor": ResourceFlavor(Meta("tas-flavor"), {"pool": "tas"}, topology_name="default")}


def admitted(hosts: dict[str, int], **request: object) -> WorkloadInfo:
    """A one-cpu-per-pod Workload admitted onto ``hosts`` (host -> pods)."""
    count = sum(hosts.values())
    topology = encode([HOST], [Domain((host,), pods) for host, pods in hosts.items()])
    pod_set = PodSetInfo(
        "main",
        count,
        (("cpu", CPU),),
        topology=TopologyRequest(**request) if request else None,  # type: ignore[arg-type]
    )
    assignment = PodSetAssignment("main", {"cpu": "tas-flavor"}, {}, count, topology)
    return WorkloadInfo(
        WorkloadKey("ml/w"),
        "w",
        "ml",
        "lq",
        0,
        0.0,
        (pod_set,),
        admission=Admission("cq", (assignment,)),
    )


def replaced(result: object) -> list[Domain]:
    assert isinstance(result, dict), result
    return decode(result["main"])


def test_a_required_rack_keeps_its_pods_in_the_rack_on_a_node_with_room() -> None:
    # r1: h1 (2 cpus, full with the Workload's own two pods), h2 (failed), h5 (2 free); r2: h3 (8 free)
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h5", "r1", 2), node("h3", "r2", 8))
    info = admitted({"h1": 2, "h2": 2}, required="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")

    assert replaced(find_replacement(info, "h2", tas, FLAVORS)) == [Domain(("h1",), 2), Domain(("h5",), 2)]


def test_a_required_rack_without_room_in_the_rack_has_no_replacement_though_another_rack_has() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h5", "r1", 1), node("h3", "r2", 8))
    info = admitted({"h1": 2, "h2": 2}, required="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")

    found = find_replacement(info, "h2", tas, FLAVORS)
    assert isinstance(found, NoReplacement)
    # the rack's two nodes are all that is searched
    assert found.reason == (
        'topology "default" allows to fit only 1 out of 2 pod(s). Total nodes: 2; excluded: resource "cpu": 1'
    )


def test_a_preferred_rack_moves_the_pods_to_another_rack_when_its_own_is_full() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h3", "r2", 8))
    info = admitted({"h1": 2, "h2": 2}, preferred="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")

    assert replaced(find_replacement(info, "h2", tas, FLAVORS)) == [Domain(("h1",), 2), Domain(("h3",), 2)]


def test_a_node_turned_not_ready_is_not_its_own_replacement() -> None:
    tas = capacity(node("h1", "r1", 4), node("h2", "r1", 4))
    info = admitted({"h1": 2, "h2": 2}, required="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    failed = node("h2", "r1", 4)
    tas.upsert_node(type(failed)(failed.name, failed.labels, failed.allocatable, schedulable=False))

    # h1 has room for two more of its own
    assert replaced(find_replacement(info, "h2", tas, FLAVORS)) == [Domain(("h1",), 4)]


def test_an_assignment_naming_another_missing_node_cannot_be_repaired() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h5", "r1", 8))
    info = admitted({"h1": 2, "h2": 2}, required="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")
    tas.delete_node("h1")

    found = find_replacement(info, "h2", tas, FLAVORS)
    assert isinstance(found, NoReplacement)
    assert "stale domain h1" in found.reason


def test_the_search_leaves_the_tree_as_it_found_it() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h5", "r1", 2))
    info = admitted({"h1": 2, "h2": 2}, required="rack")
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")
    tree = tas.tree("tas-flavor")
    assert tree is not None
    before = dict(tree.root.free)

    find_replacement(info, "h2", tas, FLAVORS)

    assert tree.root.free == before


def test_a_flavor_without_a_known_topology_gets_no_answer_rather_than_an_eviction() -> None:
    tas = capacity(node("h1", "r1", 2))
    info = admitted({"h1": 1, "h2": 1}, required="rack")
    flavors = {"tas-flavor": ResourceFlavor(Meta("tas-flavor"), {"pool": "tas"}, topology_name="other")}
    tas.upsert_flavor(flavors["tas-flavor"])

    assert find_replacement(info, "h2", tas, flavors) is None


def test_multi_layer_slices_move_in_whole_inner_slices_when_the_outer_ones_break() -> None:
    # slices of 4 in a rack, 2 on a host: h2 held one host slice, which moves whole (2 pods on one host)
    # within the rack: onto h6, the one spare host there with room for a pair
    tas = capacity(
        node("h1", "r1", 2),
        node("h2", "r1", 2),
        node("h5", "r1", 1),
        node("h6", "r1", 2),
        node("h3", "r2", 8),
    )
    layers = (("rack", 4), (HOST, 2))
    info = admitted(
        {"h1": 2, "h2": 2}, required="rack", slice_level="rack", slice_size=4, slice_layers=layers
    )
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")

    assert replaced(find_replacement(info, "h2", tas, FLAVORS)) == [Domain(("h1",), 2), Domain(("h6",), 2)]


def test_a_host_slice_that_no_spare_host_holds_whole_has_no_replacement() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h5", "r1", 1), node("h6", "r1", 1))
    layers = (("rack", 4), (HOST, 2))
    info = admitted(
        {"h1": 2, "h2": 2}, required="rack", slice_level="rack", slice_size=4, slice_layers=layers
    )
    tas.charge_workload(info.key, topology_charges(info, tas))
    tas.delete_node("h2")

    # two pods fit the rack (h5, h6) but not as a pair on one host
    assert isinstance(find_replacement(info, "h2", tas, FLAVORS), NoReplacement)
