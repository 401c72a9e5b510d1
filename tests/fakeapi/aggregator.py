"""kube-apiserver's aggregation layer, as far as an APIService backed by a Service needs it.

A request under ``/apis/<group>/<version>`` whose APIService ``<version>.<group>`` names a Service is proxied
to that Service (the endpoint a test registered with ``set_service_endpoint``, as for webhooks) with the
method, path, query and body unchanged and the caller's identity in ``X-Remote-User``/``X-Remote-Group``, the
headers the real aggregator sets. The serving certificate is checked against ``caBundle`` unless
``insecureSkipTLSVerify`` is set. A Service with no endpoint is ``503 ServiceUnavailable``, as kube-apiserver
answers when it cannot reach the backend. The answer (status, body, content type) is passed back unchanged.
Not modelled: aggregated discovery of the group, availability checks.
"""

from __future__ import annotations

import base64
import ssl
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from tests.fakeapi.errors import ApiError
from tests.fakeapi.identity import UserInfo

if TYPE_CHECKING:
    from tests.fakeapi.server import FakeApiServer

__all__ = ["Aggregator"]


class Aggregator:
    def __init__(self, server: FakeApiServer) -> None:
        self.server = server
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _backend(self, group: str, version: str) -> tuple[str, ssl.SSLContext] | None:
        """(https://endpoint, TLS verification) of the APIService for group/version; None: no APIService."""
        service_object = self.server.get("apiservices", f"{version}.{group}")
        spec = (service_object or {}).get("spec") or {}
        service = spec.get("service")
        if not service:
            return None
        endpoint = self.server.admission.service_endpoints.get(
            (service.get("namespace", ""), service.get("name", ""))
        )
        if endpoint is None:
            raise ApiError(
                code=503,
                reason="ServiceUnavailable",
                message=f'service "{service.get("name")}.{service.get("namespace")}.svc" has no endpoints',
            )
        if spec.get("insecureSkipTLSVerify"):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cadata=base64.b64decode(spec.get("caBundle") or "").decode())
            context.check_hostname = False  # issued for the Service's DNS name, reached here at an address
        client = self.server.front_proxy_client
        context.load_cert_chain(str(client.cert), str(client.key))
        return f"https://{endpoint}", context

    async def forward(self, request: web.Request, user: UserInfo) -> web.Response | None:
        """The backend's answer, or None when no APIService serves this group/version."""
        backend = self._backend(request.match_info["group"], request.match_info["version"])
        if backend is None:
            return None
        base, verify = backend
        if self._session is None:
            self._session = aiohttp.ClientSession()
        headers = {
            "X-Remote-User": user.username,
            "Accept": request.headers.get("Accept", "application/json"),
        }
        if request.content_type:
            headers["Content-Type"] = request.content_type
        async with self._session.request(
            request.method,
            f"{base}{request.path_qs}",
            data=await request.read() if request.can_read_body else None,
            headers=[*headers.items(), *(("X-Remote-Group", g) for g in user.groups)],
            ssl=verify,
            timeout=aiohttp.ClientTimeout(total=30),
        ) as answer:
            body = await answer.read()
            return web.Response(
                status=answer.status,
                body=body,
                headers={"Content-Type": answer.headers.get("Content-Type", "application/json")},
            )
