"""Multi-layer slices (``podsetSliceRequiredTopologyConstraints``, Kueue's TASMultiLayerTopology): the
outermost layer's slices each in one domain of its level, and within them slices of each inner layer in
one domain of that layer's finer level; layers that do not nest, and racks that hold the pods but not in
whole inner slices, fail with Kueue's messages."""

from __future__ import annotations

from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.tas.placement import PodSetNeeds, place

from .test_tas_placement import CPU, HOST, capacity, node, tree_of

RACK_4_HOST_2 = (("rack", 4), (HOST, 2))


def layered(count: int, layers: tuple[tuple[str, int], ...], **request: str) -> PodSetNeeds:
    top, size = layers[0]
    return PodSetNeeds(
        count,
        {"cpu": CPU},
        TopologyRequest(slice_level=top, slice_size=size, slice_layers=layers, **request),  # type: ignore[arg-type]
    )


def test_each_host_takes_whole_inner_slices_of_two_pods() -> None:
    tas = capacity(node("h1", "r1", 3), node("h2", "r1", 3))
    placement = place(tree_of(tas), layered(4, RACK_4_HOST_2, required="rack"))
    assert placement.failure == ""
    # without the host layer h1 would take 3 pods and h2 one
    assert placement.domains == ((("h1",), 2), (("h2",), 2))


def test_a_rack_with_room_for_the_pods_but_not_in_whole_inner_slices_is_passed_over() -> None:
    # r1 has 4 free cpus but only one host with room for two pods; r2 has two such hosts
    tas = capacity(node("h1", "r1", 3), node("h2", "r1", 1), node("h3", "r2", 2), node("h4", "r2", 2))
    placement = place(tree_of(tas), layered(4, RACK_4_HOST_2, required="rack"))
    assert placement.domains == ((("h3",), 2), (("h4",), 2))


def test_layers_that_do_not_fit_say_how_many_slices_of_each_layer_fit() -> None:
    tas = capacity(node("h1", "r1", 3), node("h2", "r1", 1))
    placement = place(tree_of(tas), layered(4, RACK_4_HOST_2, required="rack"))
    assert placement.failure == (
        'topology "default" doesn\'t allow to fit; 0/1 slice(s) fit on level rack; '
        f"1/2 slice(s) fit on level {HOST}"
    )


def test_an_inner_layer_above_its_outer_layer_is_refused() -> None:
    tas = capacity(node("h1", "r1", 4))
    placement = place(tree_of(tas), layered(4, (("rack", 4), ("block", 2)), required="block"))
    assert placement.failure == "additional slice layer topology block must be at a lower level than rack"


def test_an_inner_layer_whose_size_does_not_divide_the_outer_one_is_refused() -> None:
    tas = capacity(node("h1", "r1", 4))
    placement = place(tree_of(tas), layered(4, (("rack", 4), (HOST, 3)), required="block"))
    assert placement.failure == "additional slice layer size 3 must evenly divide parent layer size 4"


def test_an_inner_layer_on_a_level_the_topology_lacks_is_refused() -> None:
    tas = capacity(node("h1", "r1", 4))
    placement = place(tree_of(tas), layered(4, (("rack", 4), ("zone", 2)), required="block"))
    assert placement.failure == "no requested topology level for additional slice layer: zone"


def test_three_layers_block_rack_host() -> None:
    # 8 pods, slices of 8 in a block, 4 in a rack, 2 on a host: r1's hosts hold 3 and 1 (one host slice),
    # so the block's two rack slices come from r2 and r3
    tas = capacity(
        node("h1", "r1", 3),
        node("h2", "r1", 1),
        node("h3", "r2", 2),
        node("h4", "r2", 2),
        node("h5", "r3", 4),
    )
    layers = (("block", 8), ("rack", 4), (HOST, 2))
    placement = place(tree_of(tas), layered(8, layers, required="block"))
    assert placement.failure == ""
    assert placement.domains == ((("h3",), 2), (("h4",), 2), (("h5",), 4))
