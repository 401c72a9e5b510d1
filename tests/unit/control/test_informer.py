"""Informer: resume a dropped watch from the last seen version (bookmarks included), relist only on 410."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

from kueue_webhook.control.cache.informer import Informer
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import JOBS, Kind

JSON = dict[str, Any]


def job(name: str, rv: int) -> JSON:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": str(rv)}}


class ScriptedApi:
    """Each list answers the next scripted list; each watch plays the next scripted stream."""

    def __init__(self, lists: list[tuple[list[JSON], str]], watches: list[list[JSON | Exception]]) -> None:
        self.lists = lists
        self.watches = watches
        self.list_calls = 0
        self.watch_versions: list[str] = []
        self.exhausted = asyncio.Event()

    async def list_pages(
        self, kind: Kind, *, namespace: str | None = None, field_selector: str = "", label_selector: str = ""
    ) -> AsyncIterator[tuple[list[JSON], str]]:
        self.list_calls += 1
        items, version = self.lists.pop(0)
        for index in range(0, max(len(items), 1), 1):  # one object per page: pages must add up
            yield items[index : index + 1], version

    async def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str = "",
        timeout_seconds: int = 290,
    ) -> AsyncIterator[JSON]:
        self.watch_versions.append(resource_version)
        if not self.watches:
            self.exhausted.set()
            await asyncio.Event().wait()  # park like an idle watch
        for item in self.watches.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


async def run_until_exhausted(api: ScriptedApi, store: Store) -> Informer:
    informer = Informer(
        client=api, kind=JOBS, sink=store, backoff=Backoff(base=0.001, cap=0.002, rng=random.Random(1))
    )
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(api.exhausted.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return informer


async def test_dropped_watch_resumes_from_last_event_and_bookmark_without_relist() -> None:
    api = ScriptedApi(
        lists=[([job("a", 10)], "10")],
        watches=[
            [{"type": "ADDED", "object": job("b", 11)}, {"type": "BOOKMARK", "object": job("", 15)}],
            [ConnectionResetError("dropped")],
            [{"type": "MODIFIED", "object": job("a", 16)}],
        ],
    )
    store = Store()
    informer = await run_until_exhausted(api, store)
    assert api.list_calls == 1
    assert api.watch_versions == ["10", "15", "15", "16"]
    assert informer.synced.is_set()
    assert sorted(o["metadata"]["name"] for o in store.items(JOBS)) == ["a", "b"]


async def test_expired_watch_relists_and_drops_objects_deleted_meanwhile() -> None:
    expired = ApiError(status=410, reason="Expired", message="too old resource version: 10 (50)")
    api = ScriptedApi(
        lists=[([job("a", 10), job("b", 9)], "10"), ([job("b", 9), job("c", 60)], "60")],
        watches=[[expired]],
    )
    store = Store()
    await run_until_exhausted(api, store)
    assert api.list_calls == 2
    assert api.watch_versions == ["10", "60"]
    assert sorted(o["metadata"]["name"] for o in store.items(JOBS)) == ["b", "c"]


async def test_deleted_event_removes_object() -> None:
    api = ScriptedApi(lists=[([job("a", 10)], "10")], watches=[[{"type": "DELETED", "object": job("a", 12)}]])
    store = Store()
    await run_until_exhausted(api, store)
    assert store.items(JOBS) == []


def test_backoff_grows_exponentially_to_its_cap_and_resets() -> None:
    backoff = Backoff(base=0.1, cap=1.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    assert all(0.05 <= d <= 1.0 for d in delays)
    assert delays[0] <= 0.1 and max(delays[4:]) > 0.2
    backoff.reset()
    assert backoff.next_delay() <= 0.1
