"""Job admission as a user meets it: what gets suspended and labelled, what is denied and the exact words."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.admission.jobs import QUEUE_LABEL, mutate_job, validate_job
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, ControllerIdentity, parse_configuration
from tests.unit.admission.golden import CONTROLLER, apply_patch, golden_review, request_of

NS = "golden-hooked"
ENFORCING = parse_configuration(
    "labelPolicy:\n  enforcedNamespaceSelector: {matchLabels: {queues: enforced}}\n"
    "  defaultQueues: {elsewhere: batch}\n"
)
assert isinstance(ENFORCING, Configuration)


def view(*queues: str, enforced: bool = False, namespace: str = NS) -> StaticClusterView:
    labels = {"kubernetes.io/metadata.name": namespace}
    if enforced:
        labels["queues"] = "enforced"
    return StaticClusterView(namespaces={namespace: labels}, local_queues={namespace: set(queues)})


def job(review: dict[str, Any], which: str = "object") -> dict[str, Any]:
    obj: dict[str, Any] = review["request"][which]
    return obj


def mutate(review: dict[str, Any], config: Configuration | None = None, cluster: Any = None) -> Verdict:
    return mutate_job(request_of(review), config=config or Configuration(), view=cluster or view())


def validate(review: dict[str, Any], config: Configuration | None = None, cluster: Any = None) -> Verdict:
    return validate_job(request_of(review), config=config or Configuration(), view=cluster or view())


def mutated_object(review: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    assert verdict.allowed
    result: dict[str, Any] = apply_patch(job(review), list(verdict.patch))
    return result


# -- mutation ---------------------------------------------------------------------------------------


def test_golden_create_already_suspended_needs_no_patch() -> None:
    verdict = mutate(golden_review(0))
    assert verdict.allowed and not verdict.patch


def test_queue_labelled_job_created_running_is_suspended() -> None:
    review = golden_review(0)
    job(review)["spec"]["suspend"] = False
    obj = mutated_object(review, mutate(review))
    assert obj["spec"]["suspend"] is True
    assert obj["metadata"]["labels"] == {QUEUE_LABEL: "team-a-gpu"}


def test_kubectl_create_job_without_label_is_untouched_by_default() -> None:
    review = golden_review(6)  # kubectl create job: no labels, suspend false
    verdict = mutate(review)
    assert verdict.allowed and not verdict.patch


def test_kubectl_create_job_gets_the_default_local_queue_and_is_suspended() -> None:
    review = golden_review(6)
    obj = mutated_object(review, mutate(review, cluster=view("default", "gpu")))
    assert obj["metadata"]["labels"] == {QUEUE_LABEL: "default"}
    assert obj["spec"]["suspend"] is True


def test_default_queue_is_added_next_to_existing_labels() -> None:
    review = golden_review(6)
    job(review)["metadata"]["labels"] = {"app": "x"}
    obj = mutated_object(review, mutate(review, cluster=view("default")))
    assert obj["metadata"]["labels"] == {"app": "x", QUEUE_LABEL: "default"}


def test_configured_default_queue_name_replaces_default_in_that_namespace() -> None:
    review = golden_review(6)
    review["request"]["namespace"] = job(review)["metadata"]["namespace"] = "elsewhere"
    cluster = view("default", "batch", namespace="elsewhere")
    obj = mutated_object(review, mutate(review, config=ENFORCING, cluster=cluster))
    assert obj["metadata"]["labels"] == {QUEUE_LABEL: "batch"}


def test_default_queue_is_not_applied_outside_managed_namespaces() -> None:
    review = golden_review(6)
    review["request"]["namespace"] = "kube-system"
    verdict = mutate(review, cluster=view("default", namespace="kube-system"))
    assert verdict.allowed and not verdict.patch


def test_manage_jobs_without_queue_name_suspends_unlabelled_jobs_in_managed_namespaces_only() -> None:
    config = parse_configuration("manageJobsWithoutQueueName: true\n")
    assert isinstance(config, Configuration)
    review = golden_review(6)
    obj = mutated_object(review, mutate(review, config=config))
    assert obj["spec"]["suspend"] is True and "labels" not in obj["metadata"]
    review["request"]["namespace"] = "kube-system"
    assert not mutate(review, config=config, cluster=view(namespace="kube-system")).patch


def test_update_is_never_mutated() -> None:
    verdict = mutate(golden_review(4))
    assert verdict.allowed and not verdict.patch


def test_malformed_job_is_refused_with_a_clear_400() -> None:
    review = golden_review(0)
    job(review)["metadata"]["labels"] = ["not", "a", "map"]
    verdict = mutate(review)
    assert (verdict.allowed, verdict.code) == (False, 400)
    assert verdict.message == "object.metadata.labels must be an object"


def test_other_kinds_are_refused_by_the_job_endpoints() -> None:
    verdict = validate(golden_review(8))
    assert (verdict.allowed, verdict.code) == (False, 400)
    assert "batch/v1 Jobs" in verdict.message


# -- validation: Kueue's rules, Kueue's words -------------------------------------------------------


def test_golden_create_is_allowed() -> None:
    assert validate(golden_review(1)).allowed


def test_queue_name_must_be_a_dns_subdomain() -> None:
    review = golden_review(1)
    job(review)["metadata"]["labels"][QUEUE_LABEL] = "Team_A"
    verdict = validate(review)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, "Forbidden")
    assert verdict.message == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Team_A": a lowercase RFC 1123 subdomain '
        "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ten", 'Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax'),
        ("0", "Invalid value: 0: should be greater than 0"),
    ],
)
def test_max_exec_time_label_must_be_a_positive_integer(value: str, message: str) -> None:
    review = golden_review(1)
    job(review)["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = value
    assert validate(review).message == f"metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: {message}"


def update_review(*, old_suspend: bool, new_suspend: bool, user: str = CONTROLLER) -> dict[str, Any]:
    review = golden_review(5)
    job(review, "oldObject")["spec"]["suspend"] = old_suspend
    job(review)["spec"]["suspend"] = new_suspend
    review["request"]["userInfo"]["username"] = user
    return review


def test_queue_label_is_immutable_while_the_job_runs() -> None:
    review = update_review(old_suspend=False, new_suspend=False)
    job(review)["metadata"]["labels"][QUEUE_LABEL] = "other"
    assert (
        validate(review).message
        == 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable'
    )


def test_queue_label_may_change_while_suspended() -> None:
    review = update_review(old_suspend=True, new_suspend=True, user="alice")
    job(review)["metadata"]["labels"][QUEUE_LABEL] = "other"
    assert validate(review).allowed


def test_queue_label_may_not_be_dropped_where_a_default_queue_exists() -> None:
    review = update_review(old_suspend=True, new_suspend=True, user="alice")
    del job(review)["metadata"]["labels"][QUEUE_LABEL]
    assert validate(review).allowed  # no default queue: Kueue lets the Job go unmanaged
    assert validate(review, cluster=view("default")).message == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": '
        "queue-name must not be empty in namespace with default queue"
    )


def test_priority_class_cannot_be_added_to_a_running_job_nor_removed() -> None:
    review = update_review(old_suspend=False, new_suspend=False)
    job(review)["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    assert validate(review).message == (
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": '
        "WorkloadPriorityClass cannot be added to a non-suspended workload"
    )
    review = update_review(old_suspend=True, new_suspend=True)
    job(review, "oldObject")["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    assert validate(review).message == (
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": '
        "WorkloadPriorityClass cannot be removed from a workload"
    )


def test_several_violations_are_listed_together_like_kubernetes_aggregates() -> None:
    review = update_review(old_suspend=False, new_suspend=False)
    labels = job(review)["metadata"]["labels"]
    labels[QUEUE_LABEL] = "Other"
    labels["kueue.x-k8s.io/priority-class"] = "high"
    message = validate(review).message
    assert message.startswith(
        '[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Other": a lowercase'
    )
    assert (
        ', metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Other": field is immutable, '
        in message
    )
    assert message.endswith("WorkloadPriorityClass cannot be added to a non-suspended workload]")


# -- label policy -----------------------------------------------------------------------------------


def test_enforced_namespace_denies_an_unlabelled_job_naming_the_queues_to_use() -> None:
    verdict = validate(golden_review(7), config=ENFORCING, cluster=view("gpu", "cpu", enforced=True))
    assert (verdict.allowed, verdict.code) == (False, 403)
    assert verdict.message.startswith(
        'metadata.labels[kueue.x-k8s.io/queue-name]: Required value: namespace "golden-hooked" requires '
        "every Job to name its LocalQueue in the label kueue.x-k8s.io/queue-name; LocalQueues in namespace "
        '"golden-hooked": "cpu", "gpu". kubectl create job cannot set labels'
    )
    assert "kubectl label --local -f - kueue.x-k8s.io/queue-name=QUEUE" in verdict.message


def test_enforced_namespace_without_queues_says_there_are_none() -> None:
    verdict = validate(golden_review(7), config=ENFORCING, cluster=view(enforced=True))
    assert 'there is no LocalQueue in namespace "golden-hooked" yet' in verdict.message


def test_namespaces_outside_the_selector_are_untouched() -> None:
    assert validate(golden_review(7), config=ENFORCING, cluster=view("gpu")).allowed


def test_enforced_namespace_with_default_queue_admits_kubectl_create_job_after_mutation() -> None:
    review = golden_review(7)
    cluster = view("default", enforced=True)
    mutated = mutate(review, config=ENFORCING, cluster=cluster)
    review["request"]["object"] = mutated_object(review, mutated)
    assert validate(review, config=ENFORCING, cluster=cluster).allowed


def test_queue_label_cannot_be_removed_in_an_enforced_namespace_even_when_suspended() -> None:
    review = update_review(old_suspend=True, new_suspend=True, user="alice")
    del job(review)["metadata"]["labels"][QUEUE_LABEL]
    message = validate(review, config=ENFORCING, cluster=view("team-a-gpu", enforced=True)).message
    assert message.startswith(
        'metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: namespace "golden-hooked" requires the label'
    )
    assert "set spec.suspend: true and change the label's value" in message


# -- anti-bypass ------------------------------------------------------------------------------------


def test_golden_unsuspend_by_a_user_is_denied() -> None:
    review = golden_review(5)  # admin flips suspend true -> false on a queued Job
    verdict = validate(review)
    assert (verdict.allowed, verdict.code) == (False, 403)
    assert verdict.message.startswith(
        f"spec.suspend: Forbidden: only the queueing controller ({CONTROLLER}) may start a queued Job, "
        'user "admin" may not; the Job starts by itself once its Workload is admitted through LocalQueue '
        '"team-a-gpu"'
    )


def test_the_controller_identity_may_unsuspend() -> None:
    assert validate(update_review(old_suspend=True, new_suspend=False)).allowed


def test_configured_controller_identity_replaces_the_default() -> None:
    config = parse_configuration("controllerIdentity: {username: ops-bot}\n")
    assert isinstance(config, Configuration)
    assert validate(update_review(old_suspend=True, new_suspend=False, user="ops-bot"), config=config).allowed
    assert not validate(update_review(old_suspend=True, new_suspend=False), config=config).allowed


def test_the_identity_the_api_server_reported_for_the_controller_may_unsuspend_too() -> None:
    # out of cluster with an admin kubeconfig: the SelfSubjectReview at start said "kubernetes-admin"
    config = Configuration(controller_identity=ControllerIdentity(discovered="kubernetes-admin"))
    starting = update_review(old_suspend=True, new_suspend=False, user="kubernetes-admin")
    assert validate(starting, config=config).allowed
    assert validate(update_review(old_suspend=True, new_suspend=False), config=config).allowed
    verdict = validate(update_review(old_suspend=True, new_suspend=False, user="alice"), config=config)
    assert verdict.message.startswith(
        f"spec.suspend: Forbidden: only the queueing controller ({CONTROLLER} or kubernetes-admin) may start "
        'a queued Job, user "alice" may not'
    )


def test_unmanaged_jobs_may_be_unsuspended_by_anyone() -> None:
    review = update_review(old_suspend=True, new_suspend=False, user="alice")
    del job(review)["metadata"]["labels"][QUEUE_LABEL]
    del job(review, "oldObject")["metadata"]["labels"][QUEUE_LABEL]
    assert validate(review).allowed


def test_dropping_the_label_does_not_let_a_user_start_the_job() -> None:
    review = update_review(old_suspend=True, new_suspend=False, user="alice")
    del job(review)["metadata"]["labels"][QUEUE_LABEL]
    assert "spec.suspend: Forbidden" in validate(review).message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodeSelector", {"gpu": "a100"}),
        ("tolerations", [{"key": "gpu", "operator": "Exists"}]),
    ],
)
def test_admitted_job_placement_cannot_be_changed_by_users(field: str, value: Any) -> None:
    review = update_review(old_suspend=False, new_suspend=False, user="alice")
    job(review)["spec"]["template"]["spec"][field] = value
    message = validate(review).message
    assert message.startswith(
        f"spec.template.spec.{field}: Forbidden: cannot be changed while the Job is admitted"
    )
    review["request"]["userInfo"]["username"] = CONTROLLER
    assert validate(review).allowed


def test_admitted_job_resources_cannot_be_changed_by_users_but_suspended_ones_can() -> None:
    review = update_review(old_suspend=False, new_suspend=False, user="alice")
    job(review)["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "8"}
    }
    assert validate(review).message.startswith("spec.template.spec.containers[*].resources: Forbidden")
    review = update_review(old_suspend=True, new_suspend=True, user="alice")
    job(review)["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "8"}
    }
    assert validate(review).allowed


def test_users_may_still_suspend_a_running_job() -> None:
    assert validate(update_review(old_suspend=False, new_suspend=True, user="alice")).allowed


def test_default_queue_patch_works_on_a_job_without_metadata_labels_or_spec() -> None:
    review = golden_review(6)
    obj = job(review)
    obj.pop("spec")
    obj["metadata"] = {"name": "bare"}
    patched = mutated_object(review, mutate(review, cluster=view("default")))
    assert patched["metadata"]["labels"] == {QUEUE_LABEL: "default"}
    assert patched["spec"] == {"suspend": True}
