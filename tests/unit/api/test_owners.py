"""Which owner a claimed ownerReference really is: Kueue's FindAncestorJobManagedByKueue, where a forged
claim (an owner that does not exist, another UID, another kind, another Job) queues the object on its own."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations import BUILTIN, JOB
from kueue_webhook.api.integrations.managed import ancestry_of
from kueue_webhook.api.integrations.owners import MAX_OWNER_DEPTH, Ancestry

JSON = dict[str, Any]
QUEUE = "kueue.x-k8s.io/queue-name"
JOBSET_VERSION = "jobset.x-k8s.io/v1alpha2"
POD = BUILTIN["pod"]


def config(text: str = "integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}") -> Configuration:
    parsed = parse_configuration(text)
    assert isinstance(parsed, Configuration)
    return parsed


def obj(
    api_version: str, kind: str, name: str, *, uid: str, queue: str | None = None, ns: str = "ns"
) -> JSON:
    meta: JSON = {"name": name, "namespace": ns, "uid": uid}
    if queue is not None:
        meta["labels"] = {QUEUE: queue}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def owned_by(child: JSON, owner: JSON, *, uid: str | None = None, controller: bool = True) -> JSON:
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"] if uid is None else uid,
            "controller": controller,
        }
    ]
    return child


def walk(child: JSON, view: StaticClusterView, cfg: Configuration | None = None) -> Ancestry:
    return ancestry_of(child, JOB, config=cfg or config(), lookup=view)


def jobset(queue: str | None = "q", **kwargs: Any) -> JSON:
    return obj(JOBSET_VERSION, "JobSet", "js", uid="js-uid", queue=queue, **kwargs)


def child_job() -> JSON:
    return obj("batch/v1", "Job", "js-worker-0", uid="child-uid", queue="q")


def test_a_job_of_a_real_queued_jobset_is_queued_through_it() -> None:
    view = StaticClusterView()
    view.add_owner(jobset())
    ancestry = walk(owned_by(child_job(), jobset()), view)
    assert ancestry.ancestor is not None and ancestry.ancestor["metadata"]["uid"] == "js-uid"


def test_a_jobset_that_does_not_exist_frees_nothing() -> None:
    ancestry = walk(owned_by(child_job(), jobset()), StaticClusterView())
    assert not ancestry.through_owner
    assert ancestry.note == (f"its controller JobSet 'js' ({JOBSET_VERSION}, uid js-uid) does not exist")


def test_an_owner_with_another_uid_or_in_another_namespace_frees_nothing() -> None:
    view = StaticClusterView()
    view.add_owner(jobset())
    assert not walk(owned_by(child_job(), jobset(), uid="forged"), view).through_owner
    elsewhere = StaticClusterView()
    elsewhere.add_owner(jobset(ns="other"))
    assert not walk(owned_by(child_job(), jobset()), elsewhere).through_owner


def test_only_a_controller_reference_to_an_enabled_kind_of_the_same_version_counts() -> None:
    view = StaticClusterView()
    view.add_owner(jobset())
    assert not walk(owned_by(child_job(), jobset(), controller=False), view).through_owner
    assert not walk(owned_by(child_job(), jobset()), view, config("{}")).through_owner  # JobSet off
    other_version = jobset()
    other_version["apiVersion"] = "jobset.x-k8s.io/v9"
    view.add_owner(other_version)
    assert not walk(owned_by(child_job(), other_version), view).through_owner


def test_an_owner_without_a_queue_name_queues_its_child_on_its_own_unless_every_job_is_managed() -> None:
    view = StaticClusterView()
    view.add_owner(jobset(queue=None))
    child = owned_by(child_job(), jobset(queue=None))
    assert not walk(child, view).through_owner
    managing = config(
        "manageJobsWithoutQueueName: true\nintegrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}"
    )
    assert walk(child, view, managing).through_owner


def test_stricter_than_kueue_a_job_never_counts_as_the_controller_of_a_job() -> None:
    """No Kubernetes controller makes a Job of a Job; a user naming an admitted Job (its real UID) as the
    controller of their own Job must not run it on the other Job's quota."""
    admitted = obj("batch/v1", "Job", "admitted", uid="admitted-uid", queue="q")
    view = StaticClusterView()
    view.add_owner(admitted)
    ancestry = walk(owned_by(child_job(), admitted), view)
    assert not ancestry.through_owner
    assert ancestry.note.startswith("a Job's controller cannot be another Job")


def test_a_pod_of_a_real_queued_job_is_queued_through_its_job() -> None:
    job = obj("batch/v1", "Job", "train", uid="job-uid", queue="q")
    view = StaticClusterView()
    view.add_owner(job)
    pod = owned_by(obj("v1", "Pod", "train-abcde", uid="pod-uid", queue="q"), job)
    cfg = config("integrations: {frameworks: [batch/job, pod]}")
    assert ancestry_of(pod, POD, config=cfg, lookup=view).through_owner
    forged = owned_by(obj("v1", "Pod", "p", uid="p-uid", queue="q"), job, uid="forged")
    assert not ancestry_of(forged, POD, config=cfg, lookup=view).through_owner


def test_the_walk_goes_through_a_disabled_kind_up_to_an_external_framework() -> None:
    """Kueue's example: Job -> JobSet (disabled) -> AppWrapper (queue-name) => AppWrapper."""
    wrapper = obj("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", uid="aw-uid", queue="q")
    middle = owned_by(jobset(queue=None), wrapper)
    view = StaticClusterView()
    view.add_owner(wrapper)
    view.add_owner(middle)
    cfg = config("integrations: {externalFrameworks: [AppWrapper.v1beta2.workload.codeflare.dev]}")
    ancestry = walk(owned_by(child_job(), middle), view, cfg)
    assert ancestry.ancestor is not None and ancestry.ancestor["kind"] == "AppWrapper"
    assert not walk(owned_by(child_job(), middle), view).through_owner  # AppWrapper not external here


def test_an_owner_that_cannot_be_looked_up_queues_the_object_on_its_own_and_says_why() -> None:
    view = StaticClusterView(unresolved={(JOBSET_VERSION, "JobSet")})
    ancestry = walk(owned_by(child_job(), jobset()), view)
    assert not ancestry.through_owner
    assert ancestry.note.endswith("could not be looked up: JobSet objects are not watched")


def test_a_queued_ancestor_found_below_an_unresolvable_one_still_counts() -> None:
    wrapper = obj("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", uid="aw-uid")
    middle = owned_by(jobset(), wrapper)
    view = StaticClusterView(unresolved={("workload.codeflare.dev/v1beta2", "AppWrapper")})
    view.add_owner(middle)
    ancestry = walk(owned_by(child_job(), middle), view)
    assert ancestry.ancestor is not None and ancestry.ancestor["kind"] == "JobSet"


def test_cyclic_ownership_queues_the_object_on_its_own() -> None:
    first, second = jobset(), obj(JOBSET_VERSION, "JobSet", "other", uid="other-uid", queue="q")
    owned_by(first, second)
    owned_by(second, first)
    view = StaticClusterView()
    view.add_owner(first)
    view.add_owner(second)
    ancestry = walk(owned_by(child_job(), first), view)
    assert not ancestry.through_owner and ancestry.note.startswith("cyclic ownership")


def test_a_chain_deeper_than_kueues_limit_is_jobnestingtoodeep() -> None:
    view = StaticClusterView()
    owners = [obj(JOBSET_VERSION, "JobSet", f"js-{i}", uid=f"uid-{i}", queue="q") for i in range(12)]
    for lower, upper in itertools.pairwise(owners):
        owned_by(lower, upper)
    for owner in owners:
        view.add_owner(owner)
    ancestry = walk(owned_by(child_job(), owners[0]), view)
    assert ancestry.too_deep and not ancestry.through_owner
    assert ancestry.note == (
        f"Terminated search for Kueue-managed Job because ancestor depth exceeded limit of {MAX_OWNER_DEPTH}"
    )
    shallow = StaticClusterView()
    for owner in owners[:MAX_OWNER_DEPTH]:
        shallow.add_owner(owner)
    assert walk(owned_by(child_job(), owners[0]), shallow).through_owner


@pytest.mark.parametrize("reference", [{"controller": True}, {"controller": True, "kind": 3}, "x"])
def test_malformed_references_free_nothing(reference: Any) -> None:
    child = child_job()
    child["metadata"]["ownerReferences"] = [reference]
    assert not walk(child, StaticClusterView()).through_owner


class Unasked:
    """A lookup that must not be asked."""

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> None:
        raise AssertionError(f"looked up {kind} {namespace}/{name}")


def test_a_pod_of_a_queued_deployments_template_is_queued_itself_without_a_walk() -> None:
    """Kueue's pod webhook: the suspending-parent annotation gates the pod, whoever owns it."""
    replica_set = obj("apps/v1", "ReplicaSet", "web-abc", uid="rs-uid")
    pod = owned_by(obj("v1", "Pod", "web-abc-x", uid="p-uid", queue="q"), replica_set)
    pod["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-suspending-parent": "deployment"}
    cfg = config("integrations: {frameworks: [batch/job, pod, deployment]}")
    assert not ancestry_of(pod, POD, config=cfg, lookup=Unasked()).through_owner
