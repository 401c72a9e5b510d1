"""The admission and conversion paths take no client certificate (kube-apiserver presents none), so anyone who
reaches the port can post a review, claiming any user, the controller included. That is harmless because a
review is only answered: the answer goes back to whoever asked, and nothing is written to the cluster nor
changed in the controller's store. A forged "the controller unsuspends this Job" review leaves the Job
suspended and its Workload pending.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from pathlib import Path
from typing import Any

import aiohttp

from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS
from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import condition
from tests.support.replica import certificates, replica
from tests.support.research import HANG, QUOTA, gpu_job, workloads_of

JSON = dict[str, Any]
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def pending(fake_api: FakeApiServer, name: str) -> bool:
    found = workloads_of(fake_api, name)
    reserved = condition(found[0], "QuotaReserved") if found else None
    return reserved is not None and reserved["status"] == "False"


def admission_review(user: str, old: JSON, new: JSON) -> JSON:
    meta = new["metadata"]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "forged-1",
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": meta["name"],
            "namespace": meta["namespace"],
            "operation": "UPDATE",
            "userInfo": {"username": user, "groups": ["system:masters", "system:authenticated"]},
            "object": new,
            "oldObject": old,
            "dryRun": False,
        },
    }


def conversion_review(workload: JSON) -> JSON:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "forged-2", "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": [workload]},
    }


async def test_forged_reviews_posted_directly_change_nothing(fake_api: FakeApiServer, tmp_path: Path) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await fake_api.create(gpu_job("too-big", gpus=8))  # more than the queue's 4 GPUs: it waits
        await fake_api.wait_for(lambda: pending(fake_api, "too-big"), timeout=HANG)
        store = serving.controller.store
        job = fake_api.get("jobs", "too-big", "team-a")
        [workload] = workloads_of(fake_api, "too-big")
        assert job is not None
        job_before = copy.deepcopy(store.get(JOBS, "too-big", "team-a"))
        controller_user = (
            await serving.client.request(
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            )
        )["status"]["userInfo"]["username"]

        started = copy.deepcopy(job)
        started["spec"]["suspend"] = False
        logged = len(fake_api.requests)
        context = ssl.create_default_context(cafile=str(tls.ca_cert))
        answers = []
        async with aiohttp.ClientSession(base_url=f"https://127.0.0.1:{serving.port}") as session:
            for path, review in (
                ("/validate-batch-v1-job", admission_review(controller_user, job, started)),
                ("/mutate-batch-v1-job", admission_review(controller_user, job, started)),
                ("/convert", conversion_review(workload)),
            ):
                async with session.post(path, json=review, ssl=context) as response:
                    assert response.status == 200
                    answers.append(await response.json())
        # only answers: the controller's own user may start a Job, so the validating review says yes...
        assert answers[0]["response"]["allowed"] is True
        assert answers[2]["response"]["result"] == {"status": "Success"}
        # ...but saying yes wrote nothing: no request to the cluster for the Job (the controller itself may
        # restate its Workload's pending condition meanwhile: not admitted, as checked below)
        touched = [
            line for line in fake_api.requests[logged:] if line.split(" ", 1)[0] in WRITES and "/jobs" in line
        ]
        assert touched == []
        after_job = fake_api.get("jobs", "too-big", "team-a")
        assert after_job is not None and after_job["spec"]["suspend"] is True
        assert pending(fake_api, "too-big")
        assert store.get(JOBS, "too-big", "team-a") == job_before
        in_store = store.get(WORKLOADS, workload["metadata"]["name"], "team-a")
        assert in_store is not None and "admission" not in (in_store.get("status") or {})
