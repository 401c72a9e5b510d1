"""Kueue's validation of a Job template's topology annotations (jobframework ValidateTASPodSetRequest and
ValidateSliceSizeAnnotationUpperBound), with Kueue's words and paths: multi-layer slices
(``podset-slice-required-topology-constraints``) exclusive with the single slice annotations and a group,
well-formed, 1 to 3 layers, sizes dividing; and the rules every topology annotation follows."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.admission.jobs import validate_job
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations.builtin import JOBSET, LEADERWORKERSET
from kueue_webhook.api.topology_validation import object_topology_errors
from tests.unit.admission.golden import golden_review, request_of

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE = "kueue.x-k8s.io/podset-slice-required-topology"
SIZE = "kueue.x-k8s.io/podset-slice-size"
LAYERS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
GROUP = "kueue.x-k8s.io/podset-group-name"
AT = "spec.template.metadata.annotations"


def message(annotations: dict[str, str], pods: int = 8) -> str:
    review = golden_review(0)
    obj = review["request"]["object"]
    obj["spec"].update(parallelism=pods, completions=pods)
    obj["spec"]["template"].setdefault("metadata", {})["annotations"] = annotations
    verdict = validate_job(request_of(review), config=Configuration(), view=StaticClusterView())
    return "" if verdict.allowed else verdict.message


def layers(*pairs: tuple[str, Any]) -> str:
    return "[" + ", ".join(f'{{"topology": "{t}", "size": {s}}}' for t, s in pairs) + "]"


def test_well_formed_layers_are_accepted() -> None:
    assert message({REQUIRED: "block", LAYERS: layers(("rack", 4), ("kubernetes.io/hostname", 2))}) == ""


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            {REQUIRED: "block", SLICE: "rack", SIZE: "4", LAYERS: layers(("rack", 4))},
            f"[{AT}[{LAYERS}]: Forbidden: may not be set when '{SLICE}' is specified, "
            f"{AT}[{LAYERS}]: Forbidden: may not be set when '{SIZE}' is specified]",
        ),
        (
            {REQUIRED: "block", GROUP: "g", LAYERS: layers(("rack", 4))},
            f"{AT}[{GROUP}]: Forbidden: may not be set when '{LAYERS}' is specified",
        ),
        (
            {REQUIRED: "block", LAYERS: "[]"},
            f'{AT}[{LAYERS}]: Invalid value: "[]": topology constraints must contain between 1 and 3 entries',
        ),
        (
            {REQUIRED: "block", LAYERS: layers(("a", 8), ("b", 4), ("c", 2), ("d", 1))},
            f"{AT}[{LAYERS}]: Invalid value: "
            + '"[{\\"topology\\": \\"a\\", \\"size\\": 8}, {\\"topology\\": \\"b\\", \\"size\\": 4}, '
            + '{\\"topology\\": \\"c\\", \\"size\\": 2}, {\\"topology\\": \\"d\\", \\"size\\": 1}]"'
            + ": topology constraints must contain between 1 and 3 entries",
        ),
        (
            {REQUIRED: "block", LAYERS: '{"topology": "rack", "size": 4}'},
            f'{AT}[{LAYERS}]: Invalid value: "{{\\"topology\\": \\"rack\\", \\"size\\": 4}}": '
            "must be a valid JSON array: json: cannot unmarshal object into Go value of type "
            "[]v1beta2.PodsetSliceRequiredTopologyConstraint",
        ),
        (
            {REQUIRED: "block", LAYERS: layers(("rack", 0))},
            f"{AT}[{LAYERS}][0].size: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            {REQUIRED: "block", LAYERS: layers(("rack", 4), ("rack", 2))},
            f'{AT}[{LAYERS}][1].topology: Duplicate value: "rack (also at index 0)"',
        ),
        (
            {REQUIRED: "block", LAYERS: layers(("rack", 4), ("kubernetes.io/hostname", 3))},
            f"{AT}[{LAYERS}][1].size: Invalid value: 3: must evenly divide the parent layer size 4",
        ),
        (
            {REQUIRED: "block", LAYERS: layers(("rack", 16))},
            f"{AT}[{LAYERS}]: Invalid value: 16: must not be greater than pod set count 8",
        ),
    ],
)
def test_multi_layer_slices_are_refused_with_kueues_words(annotations: dict[str, str], expected: str) -> None:
    assert message(annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            {REQUIRED: "rack", PREFERRED: "block"},
            f"{AT}: Invalid value: must not contain more than one topology annotation: "
            f'["{REQUIRED}", "{PREFERRED}", "kueue.x-k8s.io/podset-unconstrained-topology"]',
        ),
        (
            {REQUIRED: "rack", SLICE: "host"},
            f"{AT}[{SIZE}]: Required value: must be set when '{SLICE}' is specified",
        ),
        (
            {REQUIRED: "rack", SLICE: "host", SIZE: "0"},
            f'{AT}[{SIZE}]: Invalid value: "0": must be greater than or equal to 1',
        ),
        (
            {REQUIRED: "rack", SLICE: "host", SIZE: "9"},
            f'{AT}[{SIZE}]: Invalid value: "9": must not be greater than pod set count 8',
        ),
        (
            {GROUP: "g"},
            f"{AT}[{GROUP}]: Forbidden: "
            f"may not be set when neither '{PREFERRED}' nor '{REQUIRED}' is specified",
        ),
        ({REQUIRED: "rack", GROUP: "42"}, f'{AT}[{GROUP}]: Invalid value: "42": must not be a number'),
    ],
)
def test_the_other_topology_annotations_follow_kueues_rules(
    annotations: dict[str, str], expected: str
) -> None:
    assert message(annotations) == expected


def jobset(driver: dict[str, str], workers: dict[str, str], *, driver_pods: int = 1) -> dict[str, Any]:
    def replicated(name: str, pods: int, annotations: dict[str, str]) -> dict[str, Any]:
        template = {"metadata": {"annotations": annotations}, "spec": {"containers": [{"name": "c"}]}}
        return {
            "name": name,
            "template": {"spec": {"parallelism": pods, "completions": pods, "template": template}},
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns"},
        "spec": {
            "replicatedJobs": [replicated("driver", driver_pods, driver), replicated("workers", 3, workers)]
        },
    }


def group_messages(obj: dict[str, Any]) -> list[str]:
    return [str(error) for error in object_topology_errors(JOBSET, obj)]


def test_a_jobsets_driver_and_workers_grouped_on_one_level_are_accepted() -> None:
    both = {REQUIRED: "rack", GROUP: "g"}
    assert group_messages(jobset(both, both)) == []


def test_a_group_of_two_multi_pod_sets_or_of_different_levels_is_refused_with_kueues_words() -> None:
    at = "spec.replicatedJobs[{}].template.spec.template.metadata.annotations"
    both = {REQUIRED: "rack", GROUP: "g"}
    assert group_messages(jobset(both, both, driver_pods=2)) == [
        f'{at.format(i)}[{GROUP}]: Invalid value: "g": can only define groups where at least one pod set has '
        "only 1 replica, got: 2 replica(s) and 3 replica(s) in the group"
        for i in (0, 1)
    ]
    assert group_messages(jobset(both, {REQUIRED: "block", GROUP: "g"})) == [
        f"{at.format(0)}: Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with "
        f"'{at.format(1)}' in group 'g'",
        f"{at.format(1)}: Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with "
        f"'{at.format(0)}' in group 'g'",
    ]


def test_a_leaderworkersets_leader_and_workers_must_ask_for_one_level_in_their_group() -> None:
    def lws(worker_level: str) -> dict[str, Any]:
        def template(level: str) -> dict[str, Any]:
            return {"metadata": {"annotations": {REQUIRED: level, GROUP: "g"}}, "spec": {"containers": []}}

        lwt = {"size": 4, "leaderTemplate": template("rack"), "workerTemplate": template(worker_level)}
        return {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "spec": {"leaderWorkerTemplate": lwt},
        }

    assert object_topology_errors(LEADERWORKERSET, lws("rack")) == []
    at = "spec.leaderWorkerTemplate.{}Template.metadata.annotations"
    assert [str(e) for e in object_topology_errors(LEADERWORKERSET, lws("block"))] == [
        f"{at.format(a)}: Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' topology consistent with "
        f"'{at.format(b)}' in group 'g'"
        for a, b in (("leader", "worker"), ("worker", "leader"))
    ]
