"""The ``kueue.x-k8s.io/max-exec-time-seconds`` label of a queued object becomes its Workload's
``spec.maximumExecutionTimeSeconds``, for every kind, as Kueue's jobframework ``NewWorkload`` copies it
(``MaximumExecutionTimeSecondsForObject``); a suspended object relabelled gets its Workload brought up to date
(``EquivalentToWorkload`` then ``updateWorkloadToMatchJob``); the webhooks refuse a value that is not a
positive integer and a change while the object runs (``validateCreateForMaxExecTime``,
``validateUpdateForMaxExecTime``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kueue_webhook.admission.integrations import validate_object
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations import JOB, Integration, engine
from kueue_webhook.api.integrations.pod_groups import group_workload
from kueue_webhook.control.jobs.job_plan import DeleteWorkload, StartJob, UpdatePodSets
from tests.unit.admission.golden import request_of
from tests.unit.control.test_edits_after_admission import IDS, KINDS, admitted, plan, started

JSON = dict[str, Any]
LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
SPEC = "maximumExecutionTimeSeconds"


def labelled(obj: JSON, value: str | None) -> JSON:
    out = copy.deepcopy(obj)
    labels = out["metadata"].setdefault("labels", {})
    if value is None:
        labels.pop(LABEL, None)
    else:
        labels[LABEL] = value
    return out


@pytest.mark.parametrize(("name", "integration", "make", "grow"), KINDS, ids=IDS)
def test_every_kinds_workload_carries_the_time_limit_of_its_label(
    name: str, integration: Integration, make: Callable[[], JSON], grow: Callable[[JSON], None]
) -> None:
    workload = engine.workload_for(integration, labelled(make(), "3600"))
    assert workload["spec"][SPEC] == 3600
    assert SPEC not in engine.workload_for(integration, make())["spec"]


@pytest.mark.parametrize("value", ["0", "-5", "1h", " 60", "1_000", "2147483648", ""])
def test_a_label_kueue_would_not_read_gives_no_limit(value: str) -> None:
    make = KINDS[0][2]
    assert SPEC not in engine.workload_for(JOB, labelled(make(), value))["spec"]


def test_a_pod_groups_workload_takes_the_limit_of_its_first_pod() -> None:
    def pod(name: str) -> JSON:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "team-a",
                "uid": f"uid-{name}",
                "labels": {
                    "kueue.x-k8s.io/queue-name": "q",
                    "kueue.x-k8s.io/pod-group-name": "g",
                    LABEL: "90",
                },
                "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"},
            },
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }

    workload = group_workload("g", [pod("a"), pod("b")])
    assert isinstance(workload, dict)
    assert workload["spec"][SPEC] == 90


@pytest.mark.parametrize(("name", "integration", "make", "grow"), KINDS, ids=IDS)
def test_relabelling_a_suspended_object_updates_its_queued_workload(
    name: str, integration: Integration, make: Callable[[], JSON], grow: Callable[[JSON], None]
) -> None:
    obj = labelled(make(), "600")
    workload = engine.workload_for(integration, obj)
    assert plan(integration, obj, workload) is None  # as built: nothing to do
    step = plan(integration, labelled(obj, "1200"), workload)
    assert isinstance(step, UpdatePodSets)
    assert step.maximum_execution_time_seconds == 1200
    assert step.pod_sets == workload["spec"]["podSets"]
    removed = plan(integration, labelled(obj, None), workload)
    assert isinstance(removed, UpdatePodSets)
    assert removed.maximum_execution_time_seconds is None  # written as null: the limit goes


def test_relabelling_an_admitted_job_that_has_not_started_queues_it_again() -> None:
    make = KINDS[0][2]
    obj = labelled(make(), "600")
    workload = admitted(JOB, obj)
    assert isinstance(plan(JOB, obj, workload), StartJob)
    assert isinstance(plan(JOB, labelled(obj, "60"), workload), DeleteWorkload)


def test_a_running_job_is_not_stopped_for_a_workload_written_without_its_limit() -> None:
    """A Workload created before the label was copied holds quota and its field is immutable then."""
    make = KINDS[0][2]
    workload = admitted(JOB, make())  # no limit in the Workload
    running = labelled(started(JOB, make(), workload), "600")
    assert plan(JOB, running, workload) is None


JOBSETS = parse_configuration("integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n")
assert isinstance(JOBSETS, Configuration)


def jobset(*, suspend: bool, limit: str | None) -> JSON:
    labels = {"kueue.x-k8s.io/queue-name": "q"}
    if limit is not None:
        labels[LABEL] = limit
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team", "uid": "u", "labels": labels},
        "spec": {"suspend": suspend, "replicatedJobs": []},
    }


def review(new: JSON, old: JSON | None = None) -> JSON:
    request: JSON = {
        "uid": "1",
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "name": "js",
        "namespace": "team",
        "operation": "CREATE" if old is None else "UPDATE",
        "userInfo": {"username": "alice"},
        "object": new,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def refusal(body: JSON) -> str | None:
    view = StaticClusterView(
        namespaces={"team": {"kubernetes.io/metadata.name": "team"}}, local_queues={"team": {"q"}}
    )
    verdict = validate_object(request_of(body), config=JOBSETS, view=view)
    return None if verdict.allowed else verdict.message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1h", '"1h": strconv.Atoi: parsing "1h": invalid syntax'),
        (
            "99999999999999999999",
            '"99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range',
        ),
        ("0", "0: should be greater than 0"),
        ("-3", "-3: should be greater than 0"),
    ],
)
def test_a_jobset_with_a_limit_that_is_not_a_positive_integer_is_refused(value: str, message: str) -> None:
    assert (
        refusal(review(jobset(suspend=True, limit=value)))
        == f"metadata.labels[{LABEL}]: Invalid value: {message}"
    )
    assert refusal(review(jobset(suspend=True, limit="60"))) is None


def test_the_limit_of_a_jobset_may_change_only_while_it_stays_suspended() -> None:
    old = jobset(suspend=True, limit="60")
    assert refusal(review(jobset(suspend=True, limit="120"), old)) is None
    assert refusal(review(jobset(suspend=True, limit=None), old)) is None
    running = jobset(suspend=False, limit="60")
    message = refusal(review(jobset(suspend=False, limit="120"), running))
    assert message is not None and f"metadata.labels[{LABEL}]" in message and "immutable" in message
