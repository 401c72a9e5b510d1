"""Anyone with ``edit`` in a namespace writes these objects: whatever a field of the spec or status of a
SparkApplication, AppWrapper, RayService, Kubeflow job or LeaderWorkerSet holds, reading it (pod sets,
Workload, start and stop patches, finished, active, ready, the webhook's rules, the LeaderWorkerSet's plan)
answers or reports a problem and never raises."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_webhook.admission.kind_rules import KIND_RULES
from kueue_webhook.api.integrations import BUILTIN, engine
from kueue_webhook.api.integrations.leaderworkersets import group_metadata, workload_of_group
from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor
from kueue_webhook.control.jobs.leaderworkersets import plan_leaderworkerset
from tests.crds.samples import SAMPLES
from tests.unit.admission.damage import damage_one_field

JSON = dict[str, Any]
KINDS = ("XGBoostJob", "PaddleJob", "JAXJob", "RayService", "SparkApplication", "AppWrapper")
FLAVOR = parse_resource_flavor(
    {"metadata": {"name": "f"}, "spec": {"nodeLabels": {"pool": "a"}, "tolerations": [{"key": "k"}]}}
)
LWS: JSON = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {
        "name": "serve",
        "namespace": "team",
        "uid": "u",
        "labels": {"kueue.x-k8s.io/queue-name": "q"},
    },
    "spec": {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 2,
            "leaderTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}},
            "workerTemplate": {"spec": {"containers": [{"name": "c"}]}},
        },
    },
}
LWS_POD: JSON = {
    "metadata": {
        "name": "serve-0",
        "labels": {
            "leaderworkerset.sigs.k8s.io/name": "serve",
            "leaderworkerset.sigs.k8s.io/group-index": "0",
        },
        "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset.x-k8s.io/leaderworkerset"},
    },
    "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
}


def damaged(draw: st.DrawFn, obj: JSON) -> JSON:
    """``obj`` with fields of its spec (or its status) deleted or replaced by any JSON value; its metadata is
    whole, as the API server and the webhook's shape check (``admission.integrations``) keep it."""
    out = copy.deepcopy(obj)
    part = draw(st.sampled_from(("spec", "status")))
    wrapped = {"request": {part: out.get(part, {})}}
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        damage_one_field(draw, wrapped)
    if part in wrapped["request"]:
        out[part] = wrapped["request"][part]
    else:
        out.pop(part, None)
    return out


@st.composite
def queued_objects(draw: st.DrawFn) -> tuple[str, JSON, JSON]:
    kind = draw(st.sampled_from(KINDS))
    sample = SAMPLES[kind]
    original = sample.manifest("train", "team", "gpus")
    original["metadata"]["uid"] = "u-1"
    return kind, original, damaged(draw, original)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queued_objects())
def test_every_reading_of_a_damaged_object_answers(case: tuple[str, JSON, JSON]) -> None:
    kind, original, obj = case
    integration = BUILTIN[SAMPLES[kind].framework]
    assert isinstance(FLAVOR, ResourceFlavor)
    engine.pod_sets(integration, obj)
    workload = engine.workload_for(integration, obj)
    names = [p["name"] for p in workload["spec"]["podSets"]]
    # a nodeSelector that contradicts the flavor is reported (FlavorConflict): the object is not started
    with contextlib.suppress(engine.FlavorConflict):
        engine.start_patch(integration, obj, {name: [FLAVOR] for name in names})
    originals = [p["template"] for p in workload["spec"]["podSets"]]
    engine.stop_patches(integration, obj, originals)
    engine.finished(integration, obj)
    engine.has_active_pods(integration, obj)
    engine.pods_ready(integration, obj)
    KIND_RULES.value_errors(integration, obj, original)
    KIND_RULES.admitted_changes(integration, original, obj)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_damaged_leaderworkerset_is_planned_without_raising(data: st.DataObject) -> None:
    """(Its pods come from the API server, whose Pod schema keeps their fields' types.)"""
    lws = damaged(data.draw, LWS)
    pod = copy.deepcopy(LWS_POD)
    integration = BUILTIN["leaderworkerset.x-k8s.io/leaderworkerset"]
    KIND_RULES.value_errors(integration, lws, None)
    group_metadata(lws, pod)
    plan_leaderworkerset(lws, [pod], [workload_of_group(lws, 0)], managed=True)
