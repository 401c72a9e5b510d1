"""Owners the store does not watch (an external framework's AppWrapper, a ReplicaSet) are looked up on the
API server before the pure walk; a lookup that fails or takes too long queues the object on its own."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from kueue_webhook.admission.jobs import mutate_job
from kueue_webhook.admission.review import AdmissionRequest, GroupVersionKind
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations import JOB
from kueue_webhook.api.integrations.owners import Unresolved
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.owner_lookup import AdmissionOwners, OwnerFetcher
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import JOBS, Kind

JSON = dict[str, Any]
WRAPPERS = "workload.codeflare.dev/v1beta2"
CONFIG = parse_configuration(
    "integrations: {externalFrameworks: [AppWrapper.v1beta2.workload.codeflare.dev]}"
)
assert isinstance(CONFIG, Configuration)
WRAPPER = {
    "apiVersion": WRAPPERS,
    "kind": "AppWrapper",
    "metadata": {
        "name": "aw",
        "namespace": "ns",
        "uid": "aw-uid",
        "labels": {"kueue.x-k8s.io/queue-name": "q"},
    },
}


class FakeClient:
    """Discovery and GET of AppWrappers; ``fail``: every GET fails so, ``hang``: no GET is ever answered."""

    def __init__(self, *objects: JSON, fail: ApiError | None = None, hang: bool = False) -> None:
        self.objects = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}
        self.fail = fail
        self.hang = hang
        self.requests: list[str] = []

    async def request(self, method: str, path: str, *, timeout: float = 30.0) -> JSON:
        self.requests.append(f"{method} {path}")
        if path != f"/apis/{WRAPPERS}":
            raise ApiError(status=404, reason="NotFound", message="the server could not find the resource")
        resources = [
            {"name": "appwrappers", "kind": "AppWrapper", "namespaced": True},
            {"name": "appwrappers/status", "kind": "AppWrapper", "namespaced": True},
        ]
        return {"resources": resources}

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        self.requests.append(f"GET {kind.path(namespace=namespace, name=name)}")
        if self.hang:
            await asyncio.Event().wait()
        if self.fail is not None:
            raise self.fail
        found = self.objects.get((namespace or "", name))
        if found is None:
            raise ApiError(status=404, reason="NotFound", message=f'appwrappers "{name}" not found')
        return found


def wrapped_job() -> JSON:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "aw-job",
            "namespace": "ns",
            "uid": "job-uid",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "ownerReferences": [
                {
                    "apiVersion": WRAPPERS,
                    "kind": "AppWrapper",
                    "name": "aw",
                    "uid": "aw-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {"suspend": False, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }


async def test_an_owner_of_a_kind_the_store_does_not_watch_is_fetched_once_through_discovery() -> None:
    client = FakeClient(WRAPPER)
    fetcher = OwnerFetcher(client)  # type: ignore[arg-type]
    ancestry = await fetcher.ancestry(wrapped_job(), JOB, config=CONFIG, store=Store())
    assert ancestry.ancestor is not None and ancestry.ancestor["kind"] == "AppWrapper"
    await fetcher.ancestry(wrapped_job(), JOB, config=CONFIG, store=Store())
    assert client.requests == [
        f"GET /apis/{WRAPPERS}",
        f"GET /apis/{WRAPPERS}/namespaces/ns/appwrappers/aw",
        f"GET /apis/{WRAPPERS}/namespaces/ns/appwrappers/aw",
    ]


async def test_an_owner_the_api_server_does_not_have_queues_the_job_on_its_own() -> None:
    ancestry = await OwnerFetcher(FakeClient()).ancestry(  # type: ignore[arg-type]
        wrapped_job(), JOB, config=CONFIG, store=Store()
    )
    assert not ancestry.through_owner and ancestry.note.endswith("does not exist")


async def test_a_failed_lookup_queues_the_job_on_its_own_and_says_why() -> None:
    refused = ApiError(status=403, reason="Forbidden", message="appwrappers is forbidden")
    ancestry = await OwnerFetcher(FakeClient(WRAPPER, fail=refused)).ancestry(  # type: ignore[arg-type]
        wrapped_job(), JOB, config=CONFIG, store=Store()
    )
    assert not ancestry.through_owner
    assert ancestry.note.endswith(
        "could not be looked up: the API server answered 403 Forbidden: appwrappers is forbidden"
    )


def request(obj: JSON) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        kind=GroupVersionKind("batch", "v1", "Job"),
        operation="CREATE",
        namespace="ns",
        name="aw-job",
        sub_resource="",
        username="alice",
        groups=(),
        object=obj,
        old_object=None,
    )


async def test_the_webhook_leaves_a_job_of_a_real_external_owner_alone_and_suspends_it_if_lookup_hangs() -> (
    None
):
    store = Store()
    resolved = await AdmissionOwners(OwnerFetcher(FakeClient(WRAPPER))).view_for(  # type: ignore[arg-type]
        request(wrapped_job()), CONFIG, store
    )
    assert mutate_job(request(wrapped_job()), config=CONFIG, view=resolved).patch == ()
    hanging = AdmissionOwners(OwnerFetcher(FakeClient(WRAPPER, hang=True)), budget=0.01)  # type: ignore[arg-type]
    unresolved = await hanging.view_for(request(wrapped_job()), CONFIG, store)
    verdict = mutate_job(request(wrapped_job()), config=CONFIG, view=unresolved)
    assert {"op": "add", "path": "/spec/suspend", "value": True} in verdict.patch


def test_the_store_answers_for_the_kinds_it_mirrors_only() -> None:
    store = Store()
    job = {"metadata": {"name": "train", "namespace": "ns", "uid": "u", "resourceVersion": "1"}}
    store.upsert(JOBS, job)
    assert isinstance(store.owner("ns", "batch/v1", "Job", "train"), Unresolved)  # not listed yet
    store.mark_synced(JOBS)
    found = store.owner("ns", "batch/v1", "Job", "train")
    assert found is not None and not isinstance(found, Unresolved) and found["metadata"]["uid"] == "u"
    assert store.owner("ns", "batch/v1", "Job", "other") is None
    assert store.owner("other", "batch/v1", "Job", "train") is None
    assert isinstance(store.owner("ns", "apps/v1", "ReplicaSet", "rs"), Unresolved)


async def test_a_group_the_api_server_does_not_serve_means_no_such_owner() -> None:
    """kube-apiserver answers discovery of an unserved group with a plain-text "404 page not found"."""

    async def not_found(_: web.Request) -> web.Response:
        return web.Response(status=404, text="404 page not found")

    app = web.Application()
    app.router.add_get("/{tail:.*}", not_found)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    client = KubeClient(host=f"http://127.0.0.1:{runner.addresses[0][1]}")
    try:
        ancestry = await OwnerFetcher(client).ancestry(wrapped_job(), JOB, config=CONFIG, store=Store())
    finally:
        await client.close()
        await runner.cleanup()
    assert not ancestry.through_owner and ancestry.note.endswith("does not exist")


async def test_no_owner_is_fetched_for_an_object_no_rule_would_queue() -> None:
    """An unlabelled Job where no default queue, label policy or manageJobsWithoutQueueName applies."""
    unlabelled = wrapped_job()
    del unlabelled["metadata"]["labels"]
    client = FakeClient(WRAPPER)
    view = await AdmissionOwners(OwnerFetcher(client)).view_for(  # type: ignore[arg-type]
        request(unlabelled), CONFIG, Store()
    )
    assert client.requests == []
    assert mutate_job(request(unlabelled), config=CONFIG, view=view).patch == ()
