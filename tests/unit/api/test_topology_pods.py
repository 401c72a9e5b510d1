"""Gated pods of a topology-aware Workload placed on its assigned domains (kueue_webhook.api.topology_pods),
by Kueue's topology ungater's rules: rank order where ranks can be read, else greedy; never more pods in a
domain than its count; the same answer however often it is asked (a restart, a new leader)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.api.topology_assignment import Domain
from kueue_webhook.api.topology_pods import (
    POD_INDEX_OFFSET_ANNOTATION,
    TOPOLOGY_GATE,
    PodView,
    RankSource,
    owner_rank_source,
    place_gated_pods,
    pod_view,
    rank_source,
)

HOST = "kubernetes.io/hostname"
INDEX = "batch.kubernetes.io/job-completion-index"
JOB_RANKS = RankSource(INDEX)
TWO_HOSTS = [Domain(("host-a",), 2), Domain(("host-b",), 2)]


def pod(name: str, index: int | None = None, *, on: str | None = None, created: str = "") -> PodView:
    labels = {} if index is None else {INDEX: str(index)}
    selector = {} if on is None else {HOST: on}
    return PodView(
        name, gated=on is None, node_selector=selector, labels=labels, annotations={}, created=created
    )


def hosts(placements: list) -> dict[str, str]:
    return {p.pod: p.node_selector[HOST] for p in placements}


def test_an_indexed_jobs_pods_take_the_domains_in_rank_order() -> None:
    # Kueue's rank-based ordering: ranks 0,1 on the first host, 2,3 on the second, whatever the pod order
    pods = [pod("p3", 3), pod("p0", 0), pod("p2", 2), pod("p1", 1)]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=JOB_RANKS)
    assert hosts(placed) == {"p0": "host-a", "p1": "host-a", "p2": "host-b", "p3": "host-b"}
    assert placed[0].node_selector == {HOST: "host-a"}


def test_every_level_of_the_assignment_becomes_the_node_selector() -> None:
    levels = ["cloud.com/rack", HOST]
    placed = place_gated_pods(levels, [Domain(("r1", "h1"), 1)], [pod("p", 0)], size=1, ranks=JOB_RANKS)
    assert placed[0].node_selector == {"cloud.com/rack": "r1", HOST: "h1"}


def test_pods_already_ungated_are_not_placed_again_after_a_restart() -> None:
    pods = [pod("p0", 0, on="host-a"), pod("p1", 1), pod("p2", 2, on="host-b"), pod("p3", 3)]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=JOB_RANKS)
    assert hosts(placed) == {"p1": "host-a", "p3": "host-b"}


def test_without_ranks_the_oldest_gated_pods_fill_the_domains_in_order_up_to_their_counts() -> None:
    pods = [pod(f"p{i}", created=f"2026-01-01T00:00:0{i}Z") for i in (4, 1, 3, 2, 0)]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=None)
    assert hosts(placed) == {"p0": "host-a", "p1": "host-a", "p2": "host-b", "p3": "host-b"}


def test_greedy_counts_ungated_pods_against_the_domain_their_selector_names() -> None:
    pods = [pod("x", on="host-a"), pod("y", on="host-a"), pod("g1", created="1"), pod("g2", created="2")]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=None)
    assert hosts(placed) == {"g1": "host-b", "g2": "host-b"}


@pytest.mark.parametrize(
    "pods",
    [
        [pod("a", 0), pod("b")],  # one pod has no index label
        [pod("a", 0), pod("b", 0)],  # two pods claim the same rank
        [pod("a", 0), pod("b", 4)],  # a rank beyond the pod set
        [pod("a", 0, on="host-b"), pod("b", 1)],  # an ungated pod sits elsewhere than its rank says
    ],
    ids=["missing-label", "duplicate-rank", "rank-out-of-range", "selector-disagrees"],
)
def test_unusable_ranks_fall_back_to_greedy_placement(pods: list[PodView]) -> None:
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=JOB_RANKS)
    ungated = Counter(p.node_selector[HOST] for p in pods if not p.gated)
    per_host = Counter(hosts(placed).values()) + ungated
    assert all(count <= 2 for count in per_host.values())
    assert len(placed) == sum(p.gated for p in pods)


def test_a_jobset_rank_combines_the_job_index_and_the_completion_index() -> None:
    # Kueue: rank = completion index + job index * pods per job (2 Jobs of 2 pods)
    source = RankSource(INDEX, "jobset.sigs.k8s.io/job-index", 2)

    def member(name: str, job: int, index: int) -> PodView:
        labels = {INDEX: str(index), "jobset.sigs.k8s.io/job-index": str(job)}
        return PodView(name, True, {}, labels, {})

    pods = [member("j1-0", 1, 0), member("j0-1", 0, 1), member("j1-1", 1, 1), member("j0-0", 0, 0)]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=source)
    assert hosts(placed) == {"j0-0": "host-a", "j0-1": "host-a", "j1-0": "host-b", "j1-1": "host-b"}


def test_the_pod_index_offset_shifts_ranks() -> None:
    pods = [
        PodView(f"p{i}", True, {}, {INDEX: str(i + 10)}, {POD_INDEX_OFFSET_ANNOTATION: "10"})
        for i in range(4)
    ]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=JOB_RANKS)
    assert hosts(placed) == {"p0": "host-a", "p1": "host-a", "p2": "host-b", "p3": "host-b"}


def test_pods_bound_for_an_unhealthy_node_stay_gated() -> None:
    pods = [pod(f"p{i}", i) for i in range(4)]
    placed = place_gated_pods([HOST], TWO_HOSTS, pods, size=4, ranks=JOB_RANKS, unhealthy_nodes=["host-b"])
    assert hosts(placed) == {"p0": "host-a", "p1": "host-a"}


@given(
    counts=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=4),
    gated=st.integers(min_value=0, max_value=12),
    ungated=st.lists(st.integers(min_value=0, max_value=3), max_size=6),
)
def test_no_domain_ever_gets_more_pods_than_its_count(
    counts: list[int], gated: int, ungated: list[int]
) -> None:
    domains = [Domain((f"h{i}",), count) for i, count in enumerate(counts)]
    pods = [pod(f"g{i}") for i in range(gated)]
    pods += [pod(f"u{i}", on=f"h{host}") for i, host in enumerate(ungated) if host < len(counts)]
    before = Counter(p.node_selector[HOST] for p in pods if not p.gated)
    placed = place_gated_pods([HOST], domains, pods, size=sum(counts), ranks=None)
    for domain in domains:
        host = domain.values[0]
        added = sum(1 for p in placed if p.node_selector[HOST] == host)
        assert added <= max(domain.count - before[host], 0)
    # asking again once these are ungated places nothing more: placement is idempotent
    after = [p if p.name not in hosts(placed) else pod(p.name, on=hosts(placed)[p.name]) for p in pods]
    assert place_gated_pods([HOST], domains, after, size=sum(counts), ranks=None) == []


def test_a_pod_is_read_with_its_gate_selector_and_labels() -> None:
    raw = {
        "metadata": {"name": "p", "labels": {INDEX: "1"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedulingGates": [{"name": TOPOLOGY_GATE}], "nodeSelector": {"a": "b"}},
    }
    view = pod_view(raw)
    assert (view.gated, view.node_selector, view.labels[INDEX]) == (True, {"a": "b"}, "1")
    assert not pod_view({"metadata": {"name": "q"}, "spec": {}}).gated


def test_rank_sources_come_from_the_topology_request_or_the_owner_kind() -> None:
    pod_set = {"topologyRequest": {"podIndexLabel": INDEX, "subGroupIndexLabel": "j", "subGroupCount": 3}}
    assert rank_source(pod_set) == RankSource(INDEX, "j", 3)
    assert rank_source({"topologyRequest": {"required": "rack"}}) is None
    assert owner_rank_source("batch/v1", "Job") == JOB_RANKS
    assert owner_rank_source("kubeflow.org/v1", "PyTorchJob") == RankSource(
        "training.kubeflow.org/replica-index"
    )
    assert owner_rank_source("v1", "ConfigMap") is None
