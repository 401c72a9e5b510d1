"""``simulate --from-cluster``'s comparison, from the live state as read: research's 4 GPUs are full (one
Workload ends in 10 minutes, one in 50), two wait; an edit that raises the quota to 6 starts the first at
once and the second 10 minutes from now. Edits merge into the live objects as ``kubectl patch`` would, with
named list items merged by name; bad edits are refused with the document and the reason."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest
import yaml

from kueue_webhook.kubectl_kueue.estimate import LiveState
from kueue_webhook.simulate.scenario import SimulationError
from kueue_webhook.simulate.whatif import (
    LiveStateError,
    apply_edits,
    parse_edits,
    render_text,
    report_data,
    what_if,
)
from tests.unit.kubectl_kueue.fixtures import CLUSTER_QUEUE, NOW, admitted, waiting
from tests.unit.kubectl_kueue.test_why import state

JSON = dict[str, Any]
HOUR = 3600.0


def edits(text: str) -> list[Any]:
    return parse_edits([("edits.yaml", i, d) for i, d in enumerate(yaml.safe_load_all(text))])


RAISE_TO_6 = """
kind: ClusterQueue
metadata: {name: research}
spec:
  resourceGroups:
  - flavors:
    - name: gpu-nodes
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 6}
"""


def cluster() -> LiveState:
    return state(
        admitted("a", since=50 * 60, max_seconds=60 * 60),  # ends in 10 minutes
        admitted("b", since=10 * 60, max_seconds=60 * 60),  # ends in 50 minutes
        waiting("c", created=120),  # no limit: runs the assumed hour
        waiting("d", created=60, max_seconds=600),
    )


def test_raising_the_quota_starts_the_waiting_workloads_sooner_by_how_much() -> None:
    result = what_if(cluster(), edits(RAISE_TO_6), now=NOW, assumed_runtime=HOUR)
    rows = {c.name: c for c in result.workloads}
    # as it is: c takes a's GPUs at +10m, d takes b's at +50m
    assert (rows["c"].before, rows["d"].before) == (600.0, 3000.0)
    # with 6 GPUs: c fits now, d when a ends
    assert (rows["c"].after, rows["d"].after) == (0.0, 600.0)
    assert (rows["c"].change, rows["c"].delta) == ("sooner", -600.0)
    assert (rows["d"].change, rows["d"].delta) == ("sooner", -2400.0)
    assert rows["c"].runtime_source == "assumed" and rows["d"].runtime_source == "maximumExecutionTimeSeconds"
    assert (result.admitted, result.pending, result.assumed) == (2, 2, 1)
    assert result.edits == ["ClusterQueue research: changed spec.resourceGroups"]
    assert result.counts() == {"sooner": 2, "later": 0, "unchanged": 0, "other": 0}


def test_the_text_says_what_was_assumed_and_the_change_per_waiting_workload() -> None:
    text = render_text(what_if(cluster(), edits(RAISE_TO_6), now=NOW, assumed_runtime=HOUR))
    assert "2 admitted and 2 pending Workload(s)" in text
    assert "Assumed: 1 Workload(s) have no spec.maximumExecutionTimeSeconds and are taken to run 1h" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("NAMESPACE"))
    assert " ".join(header.split()) == (
        "NAMESPACE WORKLOAD CLUSTERQUEUE PRIORITY RUN TIME STARTS WITH EDITS CHANGE"
    )
    row_c = next(line for line in lines if line.split()[:2] == ["team-a", "c"])
    assert "1h (assumed)" in row_c and "in 10m" in row_c and row_c.rstrip().endswith("sooner by 10m")
    row_d = next(line for line in lines if line.split()[:2] == ["team-a", "d"])
    assert row_d.rstrip().endswith("sooner by 40m")
    assert "2 sooner, 0 later, 0 unchanged." in text
    # the admitted Workloads keep their admission and are not rows
    assert not any(line.split()[:2] == ["team-a", "a"] for line in lines)


def test_the_data_has_both_starts_as_times_and_the_change() -> None:
    data = report_data(what_if(cluster(), edits(RAISE_TO_6), now=NOW, assumed_runtime=HOUR))
    json.dumps(data)  # plain data
    c = next(w for w in data["workloads"] if w["name"] == "c")
    assert c["start"] == {
        "inSeconds": 600.0,
        "at": (NOW + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert c["startWithEdits"]["inSeconds"] == 0.0
    assert (c["change"], c["changeSeconds"], c["runtimeFrom"]) == ("sooner", -600.0, "assumed")
    assert data["workloadsWithAssumedRuntime"] == 1 and data["assumedRuntimeSeconds"] == HOUR


def test_lowering_the_quota_makes_them_later_or_never() -> None:
    lower = RAISE_TO_6.replace("nominalQuota: 6", "nominalQuota: 2")
    rows = {c.name: c for c in what_if(cluster(), edits(lower), now=NOW, assumed_runtime=HOUR).workloads}
    # both admitted keep their admission (4 GPUs in use); c waits for both to end, d for c's hour
    assert rows["c"].after == 3000.0 and rows["c"].change == "later"
    assert rows["d"].after == 3000.0 + HOUR
    too_small = RAISE_TO_6.replace("nominalQuota: 6", "nominalQuota: 1")
    rows = {c.name: c for c in what_if(cluster(), edits(too_small), now=NOW, assumed_runtime=HOUR).workloads}
    assert rows["c"].after is None and rows["c"].change == "never starts with the edits"


def test_no_edits_changes_nothing() -> None:
    result = what_if(cluster(), [], now=NOW, assumed_runtime=HOUR)
    assert result.counts() == {"sooner": 0, "later": 0, "unchanged": 2, "other": 0}
    assert "Edit: none" in render_text(result)


def test_a_longer_assumed_runtime_moves_the_starts_that_rest_on_it() -> None:
    rows = {c.name: c for c in what_if(cluster(), [], now=NOW, assumed_runtime=2 * HOUR).workloads}
    assert rows["d"].before == 3000.0  # d waits for b (limited), not for c
    lower = RAISE_TO_6.replace("nominalQuota: 6", "nominalQuota: 2")
    rows = {c.name: c for c in what_if(cluster(), edits(lower), now=NOW, assumed_runtime=2 * HOUR).workloads}
    assert rows["d"].after == 3000.0 + 2 * HOUR  # behind c's assumed two hours


def test_edits_merge_by_name_add_new_objects_and_convert_v1beta1() -> None:
    live = cluster()
    edited, said = apply_edits(
        live,
        edits(
            RAISE_TO_6
            + """
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec: {cohort: all}
---
kind: Cohort
metadata: {name: all}
spec: {}
"""
        ),
    )
    research = next(q for q in edited.cluster_queues if q["metadata"]["name"] == "research")
    assert research["spec"]["cohortName"] == "all"
    resources = research["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert resources == [{"name": "nvidia.com/gpu", "nominalQuota": 6}]
    assert research["spec"]["resourceGroups"][0]["coveredResources"] == ["nvidia.com/gpu"]  # kept
    assert [c["metadata"]["name"] for c in edited.cohorts] == ["all"]
    assert said == [
        "ClusterQueue research: changed spec.resourceGroups",
        "ClusterQueue research: changed spec.cohortName",
        "Cohort all: added",
    ]
    assert CLUSTER_QUEUE["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "4"
    # a borrowing limit set to null is removed
    with_limit, _ = apply_edits(
        live, edits(RAISE_TO_6.replace("nominalQuota: 6}", "nominalQuota: 6, borrowingLimit: 2}"))
    )
    dropped, _ = apply_edits(
        with_limit, edits(RAISE_TO_6.replace("nominalQuota: 6}", "nominalQuota: 6, borrowingLimit: null}"))
    )
    first = dropped.cluster_queues[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert "borrowingLimit" not in first


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: Workload\nmetadata: {name: x}\n",
            "edits.yaml: document 1: kind 'Workload' cannot be edited here",
        ),
        (
            "kind: ClusterQueue\nspec: {}\n",
            "edits.yaml: document 1 (ClusterQueue): metadata.name is required",
        ),
        ("kind: LocalQueue\nmetadata: {name: q}\n", "(LocalQueue q): metadata.namespace is required"),
        ("- 1\n", "edits.yaml: document 1: an edit is a mapping"),
        ("apiVersion: v1\nkind: ClusterQueue\nmetadata: {name: x}\n", "apiVersion 'v1'"),
    ],
)
def test_bad_edits_are_refused_with_the_document_and_why(text: str, message: str) -> None:
    with pytest.raises(SimulationError) as caught:
        edits(text)
    assert message in str(caught.value)


def test_an_edit_the_api_would_refuse_is_an_error_naming_the_run() -> None:
    bad = RAISE_TO_6.replace("nominalQuota: 6", "nominalQuota: lots")
    with pytest.raises(SimulationError) as caught:
        what_if(cluster(), edits(bad), now=NOW, assumed_runtime=HOUR)
    assert str(caught.value).startswith("the edited cluster")
    assert "nominalQuota" in str(caught.value)


def test_a_cluster_that_cannot_be_replayed_is_not_blamed_on_the_edits() -> None:
    broken = copy.deepcopy(CLUSTER_QUEUE)
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    live = state(*cluster().workloads, cluster_queues=[broken])
    with pytest.raises(LiveStateError) as caught:
        what_if(live, edits(RAISE_TO_6), now=NOW, assumed_runtime=HOUR)
    assert str(caught.value).startswith("the cluster as it is")
