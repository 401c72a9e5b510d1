"""Topology-aware placement keeps off the nodes a pod template's required node affinity rules out, as the
kube-scheduler will (Kueue's TAS filters nodes by ``requiredDuringSchedulingIgnoredDuringExecution``), and
its message counts them as ``affinity``."""

from __future__ import annotations

from typing import Any

from kueue_webhook.core.scheduler import Admit

from .builders import last_wait, run_until_quiet, workload
from .test_tas_scheduling import assignment_of, node, tas_state


def affinity_job(name: str, count: int, *terms: dict[str, Any], created: int = 0) -> Any:
    template = {
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
                }
            },
        }
    }
    pod_set = {"name": "main", "count": count, "template": template, "topologyRequest": {"preferred": "rack"}}
    return workload(name, pod_sets=[pod_set], created=created)


def placed(decisions: list[Any]) -> list[tuple[tuple[str, ...], int]]:
    (admit,) = [d for d in decisions if isinstance(d, Admit)]
    return [(domain.values, domain.count) for domain in assignment_of(admit)]


def test_pods_go_only_to_nodes_the_required_affinity_allows() -> None:
    # rack a holds the 4 pods exactly, the best fit without the affinity; the affinity allows rack b only
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 4), node("b2", "b", 4))
    rack_b = {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}
    state.upsert_workload(affinity_job("w", 4, rack_b))
    domains = placed(run_until_quiet(state))
    assert {values[0] for values, _ in domains} <= {"b1", "b2"}, domains
    assert sum(count for _, count in domains) == 4


def test_a_match_fields_term_names_the_nodes_and_terms_are_ored() -> None:
    state = tas_state(node("a1", "a", 4), node("a2", "a", 4), node("b1", "b", 4))
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a2"]}]}
    nowhere = {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["z"]}]}
    state.upsert_workload(affinity_job("w", 3, nowhere, by_name))
    assert placed(run_until_quiet(state)) == [(("a2",), 3)]


def test_nodes_ruled_out_are_counted_as_affinity_in_the_message() -> None:
    state = tas_state(node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2))
    rack_b = {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["a"]}]}
    state.upsert_workload(affinity_job("w", 3, rack_b))
    decisions = run_until_quiet(state)
    assert not [d for d in decisions if isinstance(d, Admit)]
    wait = last_wait(decisions, "ns/w")
    assert wait.message == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 2 out of 3 pod(s). '
        "Total nodes: 3; excluded: affinity: 2"
    ), wait.message
