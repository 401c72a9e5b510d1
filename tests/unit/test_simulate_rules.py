"""``simulate`` follows the controller's rules: a Job's priority is the one the controller writes on its
Workload, and a preempted Workload queues again as its owner leaves it (checks and priority kept)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import yaml

from kueue_webhook.api.integrations import JOB
from kueue_webhook.api.integrations.engine import PriorityClasses, workload_for
from kueue_webhook.api.objects import Workload
from kueue_webhook.core.scheduler import SchedulerState
from kueue_webhook.simulate import Scenario, add_document, replay
from tests.support import builders

REPLAY = importlib.import_module("kueue_webhook.simulate.replay")

CLUSTER = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
    - coveredResources: [cpu]
      flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
"""

#: after the Jobs that name them, on purpose: the input's order must not matter
CLASSES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: critical-pods}
value: 1000
"""


class RecordingState(SchedulerState):
    """The real scheduler, remembering every Workload the replay hands it."""

    upserted: list[Workload] = []

    def upsert_workload(self, workload: Workload) -> None:
        RecordingState.upserted.append(workload)
        super().upsert_workload(workload)


@pytest.fixture
def upserted(monkeypatch: pytest.MonkeyPatch) -> list[Workload]:
    monkeypatch.setattr(RecordingState, "upserted", [])
    monkeypatch.setattr(REPLAY, "SchedulerState", RecordingState)
    return RecordingState.upserted


def job(
    name: str, *, labels: dict[str, str] | None = None, arrival: str = "0s", **pod: Any
) -> dict[str, Any]:
    busybox = builders.container(resources=builders.cpu_requests("1"))
    return builders.job(
        name,
        "team",
        queue="q",
        labels=labels,
        metadata={"uid": f"uid-{name}", "annotations": {"simulate.kueue-webhook/arrival": arrival}},
        suspend=None,
        pod_spec={"containers": [busybox], **pod},
    )


def scenario(*docs: Any) -> Scenario:
    out = Scenario()
    for index, doc in enumerate(docs):
        add_document(out, doc, source="test.yaml", index=index)
    return out


def _priorities(jobs: list[dict[str, Any]], *docs: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Each Job's Workload priority as ``simulate`` replays it, and as the controller writes it."""
    RecordingState.upserted.clear()
    replayed = scenario(*yaml.safe_load_all(CLUSTER), *jobs, *docs)
    replay(replayed)
    simulated = {w.name.removeprefix("job-").rsplit("-", 1)[0]: w.priority for w in RecordingState.upserted}
    classes = replayed.priority_classes
    controller = {j["metadata"]["name"]: workload_for(JOB, j, classes)["spec"]["priority"] for j in jobs}
    return simulated, controller


def test_a_jobs_priority_in_simulate_is_the_one_the_controller_writes(upserted: list[Workload]) -> None:
    jobs = [
        job("labelled", labels={"kueue.x-k8s.io/priority-class": "low"}, priorityClassName="critical-pods"),
        job("pod-class", priorityClassName="critical-pods"),
        job("unknown-class", labels={"kueue.x-k8s.io/priority-class": "nonexistent"}),
        job("empty-label", labels={"kueue.x-k8s.io/priority-class": ""}, priority=7),
        job("pod-priority", priority=5),
        job("plain"),
    ]
    simulated, controller = _priorities(jobs, *yaml.safe_load_all(CLASSES))
    assert simulated == controller
    # the label wins over the pod's class; a class named but absent counts 0 (the controller makes no
    # Workload for it until it exists); a template's bare ``priority`` is not read, as Kueue's
    # ExtractPriority reads class names only
    assert controller == {
        "labelled": 10,
        "pod-class": 1000,
        "unknown-class": 0,
        "empty-label": 0,
        "pod-priority": 0,
        "plain": 0,
    }


DEFAULTS = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: cluster-default}
value: 300
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: lower-default}
value: 200
globalDefault: true
"""


def test_a_job_naming_no_class_gets_the_clusters_default_priority_class_in_simulate_as_in_the_controller(
    upserted: list[Workload],
) -> None:
    """Kueue's getDefaultPriority: a Job naming no class gets the globalDefault PriorityClass, the lowest of
    several; one naming a class keeps its own."""
    jobs = [
        job("plain"),
        job("pod-class", priorityClassName="critical-pods"),
        job("labelled", labels={"kueue.x-k8s.io/priority-class": "high"}),
    ]
    simulated, controller = _priorities(jobs, *yaml.safe_load_all(CLASSES), *yaml.safe_load_all(DEFAULTS))
    assert simulated == controller == {"plain": 200, "pod-class": 1000, "labelled": 100}
    classes = PriorityClasses.from_objects([], yaml.safe_load_all(DEFAULTS))
    assert workload_for(JOB, job("plain"), classes)["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "lower-default",
    }


CHECKED = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: checked
  namespace: team
  labels: {kueue.x-k8s.io/priority-class: low}
spec:
  queueName: q
  podSets:
    - name: main
      count: 1
      template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]}}
status:
  admissionChecks:
    - {name: approval, state: Ready, message: approved by alice, lastTransitionTime: "2026-01-01T00:00:00Z"}
    - {name: capacity, state: Pending, message: waiting for nodes, lastTransitionTime: "2026-01-01T00:00:00Z"}
"""


@pytest.mark.parametrize("priority", [None, 10], ids=["no-spec-priority", "spec-priority"])
def test_a_preempted_workload_queues_again_with_its_admission_checks(
    upserted: list[Workload], priority: int | None
) -> None:
    checked = yaml.safe_load(CHECKED)
    if priority is not None:
        checked["spec"]["priority"] = priority
    urgent = job("urgent", labels={"kueue.x-k8s.io/priority-class": "high"}, arrival="10s")
    result = replay(scenario(*yaml.safe_load_all(CLUSTER), *yaml.safe_load_all(CLASSES), checked, urgent))
    assert [p.workload for p in result.preemptions] == ["team/checked"]
    arrived, requeued = (w for w in upserted if w.key == "team/checked")
    assert requeued.admission is None and requeued.conditions == ()
    assert [(c.name, c.state) for c in requeued.admission_checks] == [
        ("approval", "Ready"),
        ("capacity", "Pending"),
    ]
    assert requeued.admission_checks == arrived.admission_checks
    assert requeued.priority == arrived.priority == priority


APPROVAL = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: approval}
spec: {controllerName: kueue-webhook.io/manual-approval}
"""


@pytest.mark.parametrize("given", [True, False], ids=["check-given", "check-missing"])
def test_a_cluster_queue_naming_a_check_admits_only_when_the_check_is_in_the_input(given: bool) -> None:
    cluster = CLUSTER.replace(
        "  namespaceSelector: {}", "  namespaceSelector: {}\n  admissionChecks: [approval]"
    )
    docs = [*yaml.safe_load_all(cluster), job("first")]
    if given:
        docs.append(yaml.safe_load(APPROVAL))
    result = replay(scenario(*docs))
    (record,) = result.records.values()
    if given:
        assert record.admitted_at == 0
        assert result.snapshot.queues["cq"]["conditions"][0]["reason"] == "Ready"
    else:
        assert record.admitted_at is None
        assert record.wait is not None and record.wait.message == "ClusterQueue cq is inactive"
        assert result.snapshot.queues["cq"]["conditions"][0]["reason"] == "AdmissionCheckNotFound"
