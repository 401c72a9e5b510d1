"""CRD conversion webhooks, called the way kube-apiserver calls them.

A custom resource is stored in its CRD's storage version. When a client reads or writes another served
version and the CRD says ``conversion: {strategy: Webhook}``, kube-apiserver POSTs a ConversionReview
``apiextensions.k8s.io/v1`` (``request: {uid, desiredAPIVersion, objects}``) to ``spec.conversion.webhook.
clientConfig`` (``url``, or ``service`` reached through the endpoint a test registered), verifying the serving
certificate against its caBundle, and takes ``response.convertedObjects`` in the same order. A failed call, a
``Failure`` result, a uid or count that does not match, or an object that changed kind, name or namespace
fails the request with the InternalError kube-apiserver returns (``conversion webhook for <group/version>,
Kind=<kind> failed: ...``). CRDs with ``strategy: None`` (the default) only get their apiVersion relabelled.
"""

from __future__ import annotations

import uuid

import aiohttp
import orjson

from tests.fakeapi.admission import WebhookAdmission
from tests.fakeapi.errors import ApiError
from tests.fakeapi.store import Obj

CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"


class WebhookConversion:
    """Converts objects through a CRD's conversion webhook, with the admission caller's TLS and endpoints."""

    def __init__(self, *, admission: WebhookAdmission) -> None:
        self.admission = admission
        self.calls: list[Obj] = []  # every ConversionReview sent, for tests that assert on the wire shape
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def convert(self, crd: Obj, objects: list[Obj], desired_api_version: str) -> list[Obj]:
        webhook = ((crd.get("spec") or {}).get("conversion") or {}).get("webhook") or {}
        source = objects[0].get("apiVersion", "") if objects else ""
        failed = (
            f"conversion webhook for {source}, Kind={objects[0].get('kind', '') if objects else ''} failed"
        )
        try:
            url, server_hostname, shown_url = self.admission._url(webhook)
        except ApiError as exc:
            raise _failure(f"{failed}: {exc.message}") from exc
        review = {
            "kind": "ConversionReview",
            "apiVersion": CONVERSION_API_VERSION,
            "request": {
                "uid": str(uuid.uuid4()),
                "desiredAPIVersion": desired_api_version,
                "objects": objects,
            },
        }
        self.calls.append(review)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(
                f"{url}?timeout=30s",
                data=orjson.dumps(review),
                headers={"Content-Type": "application/json", "Accept": "application/json, */*"},
                ssl=self.admission._ssl_context((webhook.get("clientConfig") or {}).get("caBundle")),
                server_hostname=server_hostname,
                timeout=aiohttp.ClientTimeout(total=30),
            ) as response:
                raw = await response.read()
                if response.status != 200:
                    raise _failure(
                        f"{failed}: conversion webhook returned HTTP {response.status}: {raw[:200]!r}"
                    )
                answer = orjson.loads(raw)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise _failure(f'{failed}: Post "{shown_url}?timeout=30s": {exc}') from exc
        result = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(result, dict) or result.get("uid") != review["request"]["uid"]:
            raise _failure(f"{failed}: expected response.uid to match the request uid")
        status = result.get("result") or {}
        if status.get("status") != "Success":
            raise _failure(f"{failed}: {status.get('message', '')}")
        converted = result.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(objects):
            raise _failure(f"{failed}: expected {len(objects)} converted objects, got {converted!r:.100}")
        for before, after in zip(objects, converted, strict=True):
            if not isinstance(after, dict) or after.get("apiVersion") != desired_api_version:
                raise _failure(
                    f"{failed}: invalid converted object: expected apiVersion {desired_api_version}"
                )
            for field in ("name", "namespace", "uid"):
                if (after.get("metadata") or {}).get(field) != (before.get("metadata") or {}).get(field):
                    raise _failure(f"{failed}: invalid metadata: metadata.{field} changed")
        return converted


def _failure(message: str) -> ApiError:
    return ApiError(code=500, reason="InternalError", message=f"Internal error occurred: {message}")
