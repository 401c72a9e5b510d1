"""The controller learns who it is from the API server, so the webhook lets it start Jobs, whoever it is.

Out of cluster the controller runs with whatever kubeconfig its user has (an admin's, typically), not as
the service account ``controllerIdentity.username`` names. With the webhook installed, the API server asks
our validating webhook about every start; the webhook must recognise the controller's own user, which
the controller learned at start with a SelfSubjectReview. Where the API server cannot say (before v1.28)
and the configured name is wrong, the refusal is visible on the Workload and as Events, and an edit of
``controllerIdentity`` in the ConfigMap lets the retried start through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.fake_cluster import condition, serving_webhook
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]


def starts_reviewed(fake_api: FakeApiServer) -> list[str]:
    """The user of every review (mutating or validating) of an update setting a Job's spec.suspend false."""
    users = []
    for review in fake_api.admission_reviews:
        request = review["request"]
        old, new = request.get("oldObject") or {}, request.get("object") or {}
        starting = (old.get("spec") or {}).get("suspend") and not (new.get("spec") or {}).get("suspend")
        if request["kind"]["kind"] == "Job" and request["operation"] == "UPDATE" and starting:
            users.append(request["userInfo"]["username"])
    return users


async def test_an_admin_credentialed_controller_starts_jobs_through_the_webhook(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    # the fake's admin (user "admin"), not system:serviceaccount:kueue-system:kueue-webhook
    async with serving_webhook(fake_api, tmp_path) as serving:
        identity = serving.controller.configuration().controller_identity
        assert identity.usernames == ("system:serviceaccount:kueue-system:kueue-webhook", "admin")

        job = await fake_api.create(gpu_job("train-1"), admit=True)
        assert job["spec"]["suspend"] is True  # queued by the mutating webhook
        await fake_api.wait_for(lambda: running(fake_api, "train-1"), timeout=HANG)
        assert set(starts_reviewed(fake_api)) == {"admin"}  # the webhook was asked, and allowed it
        [workload] = workloads_of(fake_api, "train-1")
        assert condition(workload, "StartFailed") is None


async def test_a_refused_start_shows_on_the_workload_and_as_events_until_the_identity_is_fixed(
    make_fake_api: Any, tmp_path: Path
) -> None:
    fake_api: FakeApiServer = await make_fake_api(self_subject_review=False)  # a server from before v1.28
    await fake_api.apply_manifests(QUOTA)
    async with serving_webhook(fake_api, tmp_path):
        await fake_api.create(gpu_job("train-1"), admit=True)

        def start_failed() -> JSON | None:
            found = workloads_of(fake_api, "train-1")
            return condition(found[0], "StartFailed") if found else None

        await fake_api.wait_for(lambda: start_failed() is not None, timeout=HANG)
        failed = start_failed()
        assert failed is not None and (failed["status"], failed["reason"]) == ("True", "Forbidden")
        assert failed["message"].startswith(
            "Admitted by clusterQueue research, but the API server refused to start the Job (403 Forbidden): "
            'admission webhook "vjob.kueue.x-k8s.io" denied the request: spec.suspend: Forbidden: only the '
            "queueing controller (system:serviceaccount:kueue-system:kueue-webhook) may start a queued Job, "
            'user "admin" may not'
        )
        assert failed["message"].endswith("; retrying")
        [workload] = workloads_of(fake_api, "train-1")
        assert harness.is_true(workload, "Admitted")
        assert not running(fake_api, "train-1")

        def warnings_of(name: str) -> JSON | None:
            return next(
                (
                    e
                    for e in fake_api.list("events", "team-a")
                    if e["involvedObject"]["name"] == name and e["reason"] == "FailedToStart"
                ),
                None,
            )

        name = workload["metadata"]["name"]
        await fake_api.wait_for(lambda: warnings_of(name) and warnings_of("train-1"), timeout=HANG)
        for involved in (name, "train-1"):
            event = warnings_of(involved)
            assert event is not None
            assert (event["type"], event["message"]) == ("Warning", failed["message"])

        # the operator names the identity the controller runs as; the retried start goes through
        await fake_api.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kueue-webhook-config", "namespace": "kueue-system"},
                "data": {"config.yaml": "controllerIdentity: {username: admin}\n"},
            }
        )
        await fake_api.wait_for(lambda: running(fake_api, "train-1"), timeout=HANG)
        await fake_api.wait_for(lambda: (start_failed() or {}).get("status") == "False", timeout=HANG)
        cleared = start_failed()
        assert cleared is not None and cleared["reason"] == "Started"
