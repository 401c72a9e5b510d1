"""Admission of objects claiming an owner: only a real queued owner leaves an object to it; a forged claim
(an owner that does not exist, another UID, another Job) is queued on its own, and a queued object cannot be
made somebody's child by a later edit of its ownerReferences."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.integrations import mutate_object, validate_object
from kueue_webhook.admission.jobs import QUEUE_LABEL, mutate_job, validate_job
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations.engine import workload_name
from tests.unit.admission.golden import CONTROLLER, apply_patch, golden_review, request_of

NS = "golden-hooked"
JOBSET_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSETS = parse_configuration(
    "integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset, ray.io/rayjob, ray.io/raycluster, pod]}\n"
    "labelPolicy:\n  enforcedNamespaceSelector: {matchLabels: {queues: enforced}}\n"
)
assert isinstance(JOBSETS, Configuration)


def cluster(*owners: dict[str, Any], enforced: bool = False) -> StaticClusterView:
    labels = {"kubernetes.io/metadata.name": NS, **({"queues": "enforced"} if enforced else {})}
    view = StaticClusterView(namespaces={NS: labels}, local_queues={NS: {"team-a-gpu"}})
    for owner in owners:
        view.add_owner(owner)
    return view


def owner(
    api_version: str, kind: str, name: str, uid: str, queue: str | None = "team-a-gpu"
) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": uid, "labels": labels},
    }


QUEUED_JOBSET = owner(JOBSET_VERSION, "JobSet", "js", "js-uid")
ADMITTED_JOB = owner("batch/v1", "Job", "admitted", "admitted-uid")


def reference(target: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    meta = target["metadata"]
    return {
        "apiVersion": target["apiVersion"],
        "kind": target["kind"],
        "name": meta["name"],
        "uid": meta["uid"] if uid is None else uid,
        "controller": True,
    }


def claiming(review: dict[str, Any], ref: dict[str, Any], which: str = "object") -> dict[str, Any]:
    review["request"][which]["metadata"]["ownerReferences"] = [ref]
    return review


def running_create(*, labelled: bool = True) -> dict[str, Any]:
    review = golden_review(0 if labelled else 6)
    review["request"]["object"]["spec"]["suspend"] = False
    return review


def mutate(review: dict[str, Any], view: StaticClusterView) -> Verdict:
    return mutate_job(request_of(review), config=JOBSETS, view=view)


def validate(review: dict[str, Any], view: StaticClusterView) -> Verdict:
    return validate_job(request_of(review), config=JOBSETS, view=view)


def suspended(review: dict[str, Any], verdict: Verdict) -> bool:
    assert verdict.allowed
    return bool(apply_patch(review["request"]["object"], list(verdict.patch))["spec"].get("suspend"))


def test_a_job_of_a_real_queued_jobset_is_left_to_it() -> None:
    review = claiming(running_create(), reference(QUEUED_JOBSET))
    assert not mutate(review, cluster(QUEUED_JOBSET)).patch


def test_a_labelled_job_naming_a_jobset_that_does_not_exist_is_suspended() -> None:
    review = claiming(running_create(), reference(QUEUED_JOBSET))
    assert suspended(review, mutate(review, cluster()))


def test_a_labelled_job_naming_a_real_jobset_with_another_uid_is_suspended() -> None:
    review = claiming(running_create(), reference(QUEUED_JOBSET, uid="forged"))
    assert suspended(review, mutate(review, cluster(QUEUED_JOBSET)))


def test_a_labelled_job_naming_an_admitted_job_with_its_real_uid_is_suspended() -> None:
    review = claiming(running_create(), reference(ADMITTED_JOB))
    assert suspended(review, mutate(review, cluster(ADMITTED_JOB)))


def test_the_label_policy_applies_to_a_job_whose_owner_is_forged() -> None:
    review = golden_review(7)  # validate create of an unlabelled Job
    review["request"]["namespace"] = review["request"]["object"]["metadata"]["namespace"] = NS
    claiming(review, reference(QUEUED_JOBSET))
    denied = validate(review, cluster(enforced=True))
    assert not denied.allowed and denied.message.startswith(
        f'metadata.labels[{QUEUE_LABEL}]: Required value: namespace "{NS}" requires every Job'
    )
    assert validate(review, cluster(QUEUED_JOBSET, enforced=True)).allowed


def update(*, user: str, old_suspend: bool = True, new_suspend: bool = True) -> dict[str, Any]:
    review = golden_review(5)
    review["request"]["oldObject"]["spec"]["suspend"] = old_suspend
    review["request"]["object"]["spec"]["suspend"] = new_suspend
    review["request"]["userInfo"]["username"] = user
    return review


def test_an_owner_reference_added_to_a_queued_job_is_denied_to_users() -> None:
    review = claiming(update(user="alice"), reference(QUEUED_JOBSET))
    verdict = validate(review, cluster(QUEUED_JOBSET))
    assert (verdict.allowed, verdict.code) == (False, 403)
    assert verdict.message == (
        "metadata.ownerReferences: Forbidden: the Job is queued on its own (its Workload holds its quota), "
        f"so only the queueing controller ({CONTROLLER}) may make another object its controller; "
        'user "alice" may not: delete the Job and create it from its owner instead'
    )
    assert validate(
        claiming(update(user=CONTROLLER), reference(QUEUED_JOBSET)), cluster(QUEUED_JOBSET)
    ).allowed


def test_an_owner_reference_that_frees_nothing_may_be_added() -> None:
    review = claiming(update(user="alice"), reference(QUEUED_JOBSET))
    assert validate(review, cluster()).allowed  # the JobSet does not exist: the Job stays queued


def test_a_job_with_a_forged_owner_is_still_guarded_against_a_user_unsuspending_it() -> None:
    review = update(user="alice", old_suspend=True, new_suspend=False)
    for which in ("oldObject", "object"):
        claiming(review, reference(ADMITTED_JOB), which)
    verdict = validate(review, cluster(ADMITTED_JOB))
    assert not verdict.allowed and verdict.message.startswith(
        "spec.suspend: Forbidden: only the queueing controller"
    )


def test_a_child_of_a_real_queued_jobset_may_be_started_by_its_jobset_controller() -> None:
    review = update(user="system:serviceaccount:jobset-system:jobset", old_suspend=True, new_suspend=False)
    for which in ("oldObject", "object"):
        claiming(review, reference(QUEUED_JOBSET), which)
    assert validate(review, cluster(QUEUED_JOBSET)).allowed


# -- the other kinds, through the same walk ---------------------------------------------------------------


def create(obj: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "namespace": NS,
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": obj,
        },
    }


def raycluster(ref: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "rc",
            "namespace": NS,
            "labels": {QUEUE_LABEL: "team-a-gpu"},
            "ownerReferences": [ref],
        },
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}}},
    }


def test_a_raycluster_naming_a_rayjob_that_does_not_exist_is_suspended() -> None:
    rayjob = owner("ray.io/v1", "RayJob", "rj", "rj-uid")
    review = create(raycluster(reference(rayjob)), "ray.io", "v1", "RayCluster")
    assert mutate_object(request_of(review), config=JOBSETS, view=cluster(rayjob)).patch == ()
    verdict = mutate_object(request_of(review), config=JOBSETS, view=cluster())
    assert {"op": "add", "path": "/spec/suspend", "value": True} in verdict.patch


def pod(ref: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-abcde",
            "namespace": NS,
            "labels": {QUEUE_LABEL: "team-a-gpu"},
            "ownerReferences": [ref],
        },
        "spec": {"containers": [{"name": "c"}]},
    }


def test_a_pod_of_a_real_queued_job_is_left_to_it_and_a_forged_ones_is_gated() -> None:
    job = owner("batch/v1", "Job", "train", "job-uid")
    real = mutate_object(
        request_of(create(pod(reference(job)), "", "v1", "Pod")), config=JOBSETS, view=cluster(job)
    )
    assert real.allowed and real.patch == ()
    forged = mutate_object(
        request_of(create(pod(reference(job, uid="forged")), "", "v1", "Pod")),
        config=JOBSETS,
        view=cluster(job),
    )
    assert any(op["path"] == "/spec/schedulingGates" for op in forged.patch)


def test_an_owner_reference_added_to_a_queued_raycluster_is_denied_to_users() -> None:
    rayjob = owner("ray.io/v1", "RayJob", "rj", "rj-uid")
    old = raycluster(reference(rayjob))
    old["metadata"]["ownerReferences"] = []
    old["spec"]["suspend"] = True
    new = raycluster(reference(rayjob))
    new["spec"]["suspend"] = True
    review = create(new, "ray.io", "v1", "RayCluster")
    review["request"].update(operation="UPDATE", oldObject=old)
    verdict = validate_object(request_of(review), config=JOBSETS, view=cluster(rayjob))
    assert not verdict.allowed and verdict.message.startswith(
        "metadata.ownerReferences: Forbidden: the RayCluster is queued on its own"
    )


def test_a_job_with_a_workload_of_its_own_stays_guarded_whatever_its_owner_becomes() -> None:
    """Queued on its own first (its JobSet had no queue name), it keeps its Workload when the JobSet gets
    one: the user may still not start it."""
    review = update(user="alice", old_suspend=True, new_suspend=False)
    for which in ("oldObject", "object"):
        claiming(review, reference(QUEUED_JOBSET), which)
    meta = review["request"]["object"]["metadata"]
    view = cluster(QUEUED_JOBSET)
    assert validate(review, view).allowed  # no Workload of its own: left to its JobSet
    own = workload_name(meta["name"], meta["uid"])
    view.workloads[(NS, own)] = {"metadata": {"name": own, "namespace": NS}}
    verdict = validate(review, view)
    assert not verdict.allowed and verdict.message.startswith("spec.suspend: Forbidden: only the queueing")
