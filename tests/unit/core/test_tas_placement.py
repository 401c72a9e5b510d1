"""Where a pod set lands in a flavor's topology (Kueue's TAS placement, KEP 2724): required, preferred,
unconstrained and sliced requests, on racks with room and on fragmented racks, and the capacity tree kept
current by node, pod and admission events."""

from __future__ import annotations

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import ResourceFlavor, Topology
from kueue_webhook.api.objects.common import Meta
from kueue_webhook.api.objects.flavors import Taint
from kueue_webhook.api.quantity import NANO
from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.tas.capacity import ONE_POD, FlavorTree, TopologyCapacity
from kueue_webhook.core.tas.placement import PodSetNeeds, place

HOST = "kubernetes.io/hostname"
CPU = NANO  # one cpu in nano-units


def node(name: str, rack: str, cpus: int, *, block: str = "b1", taints: tuple[Taint, ...] = ()) -> NodeView:
    labels = {"pool": "tas", "block": block, "rack": rack, HOST: name}
    return NodeView(name, labels, {"cpu": cpus * CPU, "pods": 110 * ONE_POD}, taints)


def capacity(*nodes: NodeView, levels: tuple[str, ...] = ("block", "rack", HOST)) -> TopologyCapacity:
    tas = TopologyCapacity()
    tas.upsert_topology(Topology(Meta("default"), levels))
    tas.upsert_flavor(ResourceFlavor(Meta("tas-flavor"), {"pool": "tas"}, topology_name="default"))
    for each in nodes:
        tas.upsert_node(each)
    return tas


def tree_of(tas: TopologyCapacity) -> FlavorTree:
    tree = tas.tree("tas-flavor")
    assert tree is not None
    return tree


def needs(count: int, **request: object) -> PodSetNeeds:
    return PodSetNeeds(count, {"cpu": CPU}, TopologyRequest(**request))  # type: ignore[arg-type]


def fragmented() -> TopologyCapacity:
    """Two racks, each with room for 3 one-cpu pods: 6 in all, never 4 in one rack."""
    return capacity(node("h1", "r1", 2), node("h2", "r1", 1), node("h3", "r2", 2), node("h4", "r2", 1))


def test_required_rack_lands_on_the_one_rack_with_room_naming_its_hosts() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h3", "r2", 2), node("h4", "r2", 1))
    placement = place(tree_of(tas), needs(4, required="rack"))
    assert placement.failure == ""
    assert placement.levels == (HOST,)
    assert placement.domains == ((("h1",), 2), (("h2",), 2))


def test_required_rack_on_fragmented_racks_fails_with_kueues_message() -> None:
    placement = place(tree_of(fragmented()), needs(4, required="rack"))
    assert placement.failure == 'topology "default" allows to fit only 3 out of 4 pod(s)'
    assert placement.domains == ()


def test_best_fit_picks_the_tightest_rack_that_holds_the_pod_set() -> None:
    tas = capacity(node("h1", "r1", 8), node("h2", "r2", 3), node("h3", "r3", 2))
    assert place(tree_of(tas), needs(2, required="rack")).domains == ((("h3",), 2),)


def test_preferred_rack_falls_back_to_the_block_and_as_few_hosts_as_possible() -> None:
    placement = place(tree_of(fragmented()), needs(4, preferred="rack"))
    assert placement.failure == ""
    # no rack holds 4, the block holds 6; below the block the largest hosts fill first (Kueue's greedy
    # descent above the slice level), so two hosts of two racks rather than three hosts
    assert placement.domains == ((("h1",), 2), (("h3",), 2))


def test_unconstrained_fills_the_largest_hosts_first() -> None:
    placement = place(tree_of(fragmented()), needs(5, unconstrained=True))
    assert placement.domains == ((("h1",), 2), (("h2",), 1), (("h3",), 2))


def test_nothing_fits_anywhere_says_so_and_names_the_limiting_resource() -> None:
    full = capacity(node("h1", "r1", 0), node("h2", "r1", 0))
    assert place(tree_of(full), needs(1, required="rack")).failure == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 2; excluded: resource "cpu": 2'
    )


def test_untolerated_taints_leave_a_node_out() -> None:
    tainted = Taint("gpu", "true", "NoSchedule")
    tas = capacity(node("h1", "r1", 4, taints=(tainted,)), node("h2", "r1", 2))
    assert place(tree_of(tas), needs(3, required="rack")).failure == (
        'topology "default" allows to fit only 2 out of 3 pod(s). Total nodes: 2; excluded: '
        'taint "gpu=true:NoSchedule": 1'
    )
    tolerant = PodSetNeeds(
        3, {"cpu": CPU}, TopologyRequest(required="rack"), tolerations=({"key": "gpu", "operator": "Exists"},)
    )
    assert place(tree_of(tas), tolerant).domains == ((("h1",), 3),)


def test_slices_of_two_pods_each_stay_within_one_host() -> None:
    # hosts of 3 take one slice of 2 each: 4 pods need two hosts, never 3+1
    tas = capacity(node("h1", "r1", 3), node("h2", "r1", 3))
    placement = place(tree_of(tas), needs(4, required="rack", slice_level=HOST, slice_size=2))
    assert placement.domains == ((("h1",), 2), (("h2",), 2))
    assert place(tree_of(tas), needs(6, required="rack", slice_level=HOST, slice_size=2)).failure == (
        'topology "default" allows to fit only 2 out of 3 slice(s)'
    )


def test_slice_only_request_places_slices_in_racks_anywhere() -> None:
    placement = place(tree_of(fragmented()), needs(4, slice_level="rack", slice_size=2))
    assert placement.failure == ""
    racks = {("h1",): "r1", ("h2",): "r1", ("h3",): "r2", ("h4",): "r2"}
    per_rack: dict[str, int] = {}
    for values, count in placement.domains:
        per_rack[racks[values]] = per_rack.get(racks[values], 0) + count
    assert sorted(per_rack.values()) == [2, 2]


def test_an_unknown_level_is_reported_as_kueue_does() -> None:
    assert (
        place(tree_of(fragmented()), needs(1, required="zone")).failure == "no requested topology level: zone"
    )


def test_a_topology_without_hosts_names_every_level() -> None:
    tas = capacity(node("h1", "r1", 2), node("h2", "r1", 2), node("h3", "r2", 1), levels=("block", "rack"))
    placement = place(tree_of(tas), needs(3, required="rack"))
    assert placement.levels == ("block", "rack")
    assert placement.domains == ((("b1", "r1"), 3),)


def test_pods_bound_to_nodes_and_admitted_workloads_use_capacity_until_they_go() -> None:
    tas = capacity(node("h1", "r1", 4), node("h2", "r2", 4))
    tree = tree_of(tas)
    tas.upsert_pod("ns/other", PodOnNode("h1", {"cpu": 3 * CPU}))
    tas.charge_workload("ns/wl", [("tas-flavor", ("h2",), {"cpu": 2 * CPU, "pods": 2 * ONE_POD})])
    assert tree.root.free["cpu"] == 3 * CPU
    assert (
        place(tree, needs(3, required="rack")).failure
        == 'topology "default" allows to fit only 2 out of 3 pod(s)'
    )
    tas.upsert_pod("ns/other", None)  # finished
    assert place(tree, needs(3, required="rack")).domains == ((("h1",), 3),)
    tas.release_workload("ns/wl")
    assert tree.root.free["cpu"] == 8 * CPU


def test_an_event_changes_only_the_domains_on_its_path() -> None:
    tas = capacity(node("h1", "r1", 4), node("h2", "r2", 4, block="b2"))
    tree = tree_of(tas)
    b2 = tree.root.children["b2"]
    before = dict(b2.free)
    tas.upsert_pod("ns/p", PodOnNode("h1", {"cpu": CPU}))
    assert b2.free == before
    assert tree.root.children["b1"].free["cpu"] == 3 * CPU


def test_a_node_that_is_not_ready_or_loses_its_labels_leaves_the_tree() -> None:
    tas = capacity(node("h1", "r1", 4), node("h2", "r2", 4))
    tree = tree_of(tas)
    tas.upsert_node(
        NodeView("h2", {"pool": "tas", "block": "b1", "rack": "r2", HOST: "h2"}, {"cpu": 4 * CPU}, (), False)
    )
    assert set(tree.root.children["b1"].children) == {"r1"}
    assert tree.root.free["cpu"] == 4 * CPU
    tas.upsert_node(
        NodeView("h1", {"pool": "other", "block": "b1", "rack": "r1", HOST: "h1"}, {"cpu": 4 * CPU})
    )
    assert tree.root.children == {} and tree.root.free.get("cpu", 0) == 0


def test_pods_on_nodes_outside_every_tas_flavor_cost_no_tree_work() -> None:
    tas = capacity(node("h1", "r1", 4))
    tas.upsert_pod("ns/p", PodOnNode("elsewhere", {"cpu": CPU}))
    assert tree_of(tas).root.free["cpu"] == 4 * CPU


def test_a_full_block_is_passed_over_whole_and_still_counted_in_the_message() -> None:
    tas = capacity(
        node("h1", "r1", 0),
        node("h2", "r1", 0),
        node("h3", "r2", 2, block="b2"),
        node("h4", "r2", 1, block="b2"),
    )
    assert place(tree_of(tas), needs(3, required="rack")).domains == ((("h3",), 2), (("h4",), 1))
    assert place(tree_of(tas), needs(4, required="rack")).failure == (
        'topology "default" allows to fit only 3 out of 4 pod(s). Total nodes: 4; excluded: resource "cpu": 2'
    )
