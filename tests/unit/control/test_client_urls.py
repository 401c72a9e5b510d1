"""The API client reaches each object under the server's own path, with the query it was given.

A kubeconfig's server may carry a path (a proxy's, as Rancher's ``/k8s/clusters/<id>``); names are
percent-encoded and empty query values left out, as before the URL was built from parts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from tests.support.local_http import serving


@pytest.fixture
async def recording_server() -> AsyncIterator[tuple[list[tuple[str, str, str]], str]]:
    seen: list[tuple[str, str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        path, _, query = request.raw_path.partition("?")
        seen.append((request.method, path, query))
        return web.json_response({"kind": "Workload", "metadata": {"name": "w"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    async with serving(app) as url:
        yield seen, url


@pytest.mark.parametrize("prefix", ["", "/k8s/clusters/c-1"])
async def test_requests_go_to_the_servers_path_with_their_query(
    recording_server: tuple[list[tuple[str, str, str]], str], prefix: str
) -> None:
    seen, url = recording_server
    client = KubeClient(host=url + prefix + "/")
    try:
        await client.patch(WORKLOADS, name="a b", namespace="team", patch={}, subresource="status")
        await client.get(WORKLOADS, name="w", namespace="team")
        async for _ in client.list_pages(WORKLOADS, label_selector="kueue.x-k8s.io/origin=m,a in (x,y)"):
            pass
    finally:
        await client.close()
    base = prefix + "/apis/kueue.x-k8s.io/v1beta2"
    assert seen == [
        ("PATCH", f"{base}/namespaces/team/workloads/a%20b/status", "fieldManager=kueue-webhook"),
        ("GET", f"{base}/namespaces/team/workloads/w", ""),
        ("GET", f"{base}/workloads", "labelSelector=kueue.x-k8s.io/origin%3Dm,a+in+(x,y)&limit=500"),
    ]
