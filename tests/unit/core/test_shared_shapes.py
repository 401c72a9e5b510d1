"""Workloads of one shape share one copy of their pod sets, shape, admission and usage
(kueue_webhook.core.shared_shapes), and sharing changes nothing the scheduler decides or charges."""

from __future__ import annotations

import pytest

from kueue_webhook.api.objects import Admission, PodSetAssignment
from kueue_webhook.api.quantity import Quantity
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.shared_shapes import SharedValues, shared_admission, shared_usage

from .builders import admitted, admitted_status, cluster_queue, run_until_quiet, state_with, workload

GPU = "nvidia.com/gpu"
NANO = 10**9


def running(name: str, gpus: str = "1", namespace: str = "ns") -> WorkloadInfo:
    status = admitted_status("research", {GPU: "gpu-nodes"}, {GPU: gpus})
    return WorkloadInfo.from_workload(workload(name, {GPU: gpus}, namespace=namespace, status=status))


def test_admitted_workloads_of_one_shape_hold_one_copy_of_what_they_have_in_common() -> None:
    first, second = running("first"), running("second")
    assert first.key != second.key
    assert first.pod_sets is second.pod_sets
    assert first.shape is second.shape
    assert first.admission is second.admission
    assert first.usage is second.usage
    assert first.usage == {("gpu-nodes", GPU): NANO}


def test_workloads_of_other_shapes_keep_their_own() -> None:
    one, two = running("one"), running("two", gpus="2")
    elsewhere = running("elsewhere", namespace="other")
    assert one.pod_sets != two.pod_sets and one.usage != two.usage and one.admission != two.admission
    assert two.usage == {("gpu-nodes", GPU): 2 * NANO}
    assert one.shape != elsewhere.shape  # a namespace is part of the shape (its quota may differ)
    picky = workload("picky", {GPU: "1"}, pod_spec={"nodeSelector": {"a": "b"}})
    selected = WorkloadInfo.from_workload(picky)
    plain = WorkloadInfo.from_workload(workload("plain", {GPU: "1"}))
    assert selected.pod_sets[0].node_selector == {"a": "b"} and plain.pod_sets[0].node_selector == {}


def test_a_shared_usage_cannot_be_changed_in_place() -> None:
    usage = running("first").usage
    with pytest.raises(TypeError):
        usage[("gpu-nodes", GPU)] = 0  # type: ignore[index]
    assert running("second").usage == {("gpu-nodes", GPU): NANO}


def test_many_workloads_of_one_shape_are_each_charged_and_released() -> None:
    state = state_with(cluster_queue("research", {"gpu-nodes": {GPU: 3}}), flavors=("gpu-nodes",))
    for index in range(4):
        state.upsert_workload(workload(f"job-{index}", {GPU: "1"}, created=index))
    assert admitted(run_until_quiet(state)) == ["ns/job-0", "ns/job-1", "ns/job-2"]
    assert state.ledger.usage("research") == {("gpu-nodes", GPU): 3 * NANO}
    state.delete_workload("ns/job-1")
    assert admitted(run_until_quiet(state)) == ["ns/job-3"]
    assert state.ledger.usage("research") == {("gpu-nodes", GPU): 3 * NANO}


def test_an_admission_with_a_topology_assignment_is_kept_per_workload() -> None:
    def placed(node: str) -> Admission:
        assignment = PodSetAssignment(
            "main", {GPU: "tas"}, {GPU: Quantity(NANO)}, 1, {"levels": ["host"], "domains": [[node]]}
        )
        return Admission("research", (assignment,))

    first, second = placed("node-a"), placed("node-b")
    assert shared_admission(first) is first and shared_admission(second) is second


def test_the_table_is_bounded_and_still_answers_equal_values() -> None:
    table: SharedValues[str] = SharedValues(limit=2)
    for key in ("a", "b", "c", "d"):
        assert table.get(key, key.upper) == key.upper()
        assert len(table) <= 2
    assert shared_usage({("f", "cpu"): 1}) == {("f", "cpu"): 1}
