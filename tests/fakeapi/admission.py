"""Admission webhooks, called the way kube-apiserver calls them.

Webhook configurations are ordinary stored objects; every write re-reads them, so a test that creates a
configuration through the API sees it honoured on the next request, as on a cluster. The request is an
AdmissionReview v1 built like the golden `admission-*.json` captures (uid, kind/resource/requestKind/
requestResource, subResource, userInfo, object/oldObject, dryRun, options), POSTed over HTTPS to the webhook
URL with `?timeout=Ns`, verifying the server certificate against the configuration's caBundle. Mutating
webhooks run first, in configuration-name order, each seeing the previous one's JSON Patch; validating
webhooks see the final object. Denials and call failures become the same Status bodies the apiserver returns,
and failurePolicy decides whether an unreachable webhook blocks the request.
"""

from __future__ import annotations

import base64
import ssl
import uuid

import aiohttp
import orjson

from kueue_webhook.api.selectors import SelectorError, parse_label_selector
from tests.fakeapi import patches
from tests.fakeapi.api import AdmissionRequest
from tests.fakeapi.errors import ApiError
from tests.fakeapi.store import Obj, Store

MUTATING = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
_SKIPPED_GROUPS = frozenset({"admissionregistration.k8s.io"})


class WebhookAdmission:
    """Implements the api.Admission protocol against the configurations found in the store."""

    def __init__(self, *, store: Store) -> None:
        self.store = store
        self.service_endpoints: dict[tuple[str, str], str] = {}
        self.calls: list[Obj] = []  # every AdmissionReview sent, for tests that assert on the wire shape
        self._session: aiohttp.ClientSession | None = None
        self._ssl: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def mutate(self, request: AdmissionRequest) -> Obj | None:
        obj = request.obj
        for config, hook in self._matching(MUTATING, request):
            current = AdmissionRequest(
                request.rtype,
                request.operation,
                request.subresource,
                request.namespace,
                request.name,
                obj,
                request.old_obj,
                request.user,
                request.dry_run,
                request.options,
            )
            response = await self._call(config, hook, current)
            if response is None:
                continue
            patch = response.get("patch")
            if patch and obj is not None:
                if response.get("patchType", "JSONPatch") != "JSONPatch":
                    raise _webhook_failure(hook, f"unsupported patch type {response.get('patchType')!r}")
                try:
                    operations = orjson.loads(base64.b64decode(patch))
                    obj = patches.json_patch(obj, operations)
                except (ValueError, ApiError) as exc:
                    raise _webhook_failure(hook, f"JSON Patch could not be applied: {exc}") from exc
        return obj

    async def validate(self, request: AdmissionRequest) -> None:
        for config, hook in self._matching(VALIDATING, request):
            await self._call(config, hook, request)

    # ---- matching ----------------------------------------------------------------------------------------
    def _matching(self, key: tuple[str, str], request: AdmissionRequest) -> list[tuple[Obj, Obj]]:
        if request.rtype.group in _SKIPPED_GROUPS:
            return []
        found = []
        for config in self.store.list(key):
            for hook in config.get("webhooks") or []:
                if self._matches(hook, request):
                    found.append((config, hook))
        return found

    def _matches(self, hook: Obj, request: AdmissionRequest) -> bool:
        if not any(_rule_matches(rule, request) for rule in hook.get("rules") or []):
            return False
        return self._namespace_matches(hook, request) and _object_matches(hook, request)

    def _namespace_matches(self, hook: Obj, request: AdmissionRequest) -> bool:
        selector = hook.get("namespaceSelector") or {}
        if not selector:
            return True
        if request.rtype.namespaced:
            ns = self.store.get(("", "namespaces"), "", request.namespace)
            labels = (ns or {}).get("metadata", {}).get("labels") or {}
        elif request.rtype.group == "" and request.rtype.plural == "namespaces":
            source = request.obj or request.old_obj or {}
            labels = source.get("metadata", {}).get("labels") or {}
        else:
            return True
        return _selector_matches(selector, labels)

    # ---- calling -----------------------------------------------------------------------------------------
    def _ssl_context(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = ca_bundle or ""
        context = self._ssl.get(key)
        if context is None:
            context = ssl.create_default_context()
            if ca_bundle:
                context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
            self._ssl[key] = context
        return context

    def _url(self, hook: Obj) -> tuple[str, str | None, str]:
        """The URL to POST to, the name the certificate must carry (service refs), the URL errors show.

        kube-apiserver reaches `service: {name, namespace}` through the cluster network and verifies the
        serving certificate for `<name>.<namespace>.svc`; we connect to the endpoint a test registered and
        verify the same name.
        """
        client = hook.get("clientConfig") or {}
        if client.get("url"):
            return str(client["url"]), None, str(client["url"])
        service = client.get("service") or {}
        name, namespace = service.get("name", ""), service.get("namespace", "")
        endpoint = self.service_endpoints.get((namespace, name))
        if endpoint is None:
            raise _webhook_failure(hook, f'service "{name}.{namespace}.svc" has no endpoints')
        path = service.get("path", "")
        shown = f"https://{name}.{namespace}.svc:{service.get('port', 443)}{path}"
        return f"https://{endpoint}{path}", f"{name}.{namespace}.svc", shown

    async def _call(self, config: Obj, hook: Obj, request: AdmissionRequest) -> Obj | None:
        timeout = int(hook.get("timeoutSeconds") or 10)
        name = hook.get("name", "")
        try:
            url, server_hostname, shown_url = self._url(hook)
        except ApiError:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise
        separator = "&" if "?" in url else "?"
        full_url = f"{url}{separator}timeout={timeout}s"
        shown_url = f"{shown_url}{separator}timeout={timeout}s"
        review = build_review(request)
        self.calls.append(review)
        body = orjson.dumps(review)
        if self._session is None:
            self._session = aiohttp.ClientSession(auto_decompress=True)
        try:
            async with self._session.post(
                full_url,
                data=body,
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, */*",
                    "User-Agent": "kube-apiserver-admission",
                },
                ssl=self._ssl_context((hook.get("clientConfig") or {}).get("caBundle")),
                server_hostname=server_hostname,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                raw = await response.read()
                if response.status != 200:
                    raise _CallFailed(
                        f"received invalid webhook response: HTTP {response.status}: {raw[:200]!r}"
                    )
                answer = orjson.loads(raw)
        except (aiohttp.ClientError, TimeoutError, ValueError, _CallFailed, ssl.SSLError) as exc:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise _webhook_failure(
                hook, f'failed to call webhook: Post "{shown_url}": {_go_style(exc)}'
            ) from exc
        result = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(result, dict) or result.get("uid") != review["request"]["uid"]:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise _webhook_failure(hook, "received invalid webhook response: expected response.uid to match")
        if not result.get("allowed"):
            raise _denied(name, result.get("status") or {})
        return result


class _CallFailed(Exception):
    pass


def _go_style(exc: BaseException) -> str:
    """The transport error as Go's net/http words it where tests match on it (refused, deadline)."""
    if isinstance(exc, TimeoutError):
        return "context deadline exceeded"
    if isinstance(exc, aiohttp.ClientConnectorError) and not isinstance(exc, aiohttp.ClientSSLError):
        os_error = exc.os_error
        if (
            isinstance(os_error, ConnectionRefusedError)
            or "refused" in str(os_error).lower()
            or (os_error.errno in (111, 61))
        ):
            return f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
    return str(exc) or type(exc).__name__


def _webhook_failure(hook: Obj, detail: str) -> ApiError:
    return ApiError(
        code=500,
        reason="InternalError",
        message=f'Internal error occurred: failed calling webhook "{hook.get("name", "")}": {detail}',
        details={"causes": [{"message": f'failed calling webhook "{hook.get("name", "")}": {detail}'}]},
    )


def _denied(name: str, status: Obj) -> ApiError:
    denied_by = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = denied_by
    code = int(status.get("code") or 403)
    reason = status.get("reason") or ("Forbidden" if code == 403 else "")
    return ApiError(code=code, reason=reason, message=message, details=status.get("details"))


def _rule_matches(rule: Obj, request: AdmissionRequest) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and request.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and request.rtype.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and request.rtype.version not in versions:
        return False
    scope = rule.get("scope", "*")
    if (scope == "Cluster" and request.rtype.namespaced) or (
        scope == "Namespaced" and not request.rtype.namespaced
    ):
        return False
    wanted = f"{request.rtype.plural}/{request.subresource}" if request.subresource else request.rtype.plural
    for resource in rule.get("resources") or []:
        if resource == "*/*" or resource == wanted:
            return True
        if resource == "*" and not request.subresource:
            return True
        if "/" in resource:
            main, sub = resource.split("/", 1)
            if (
                request.subresource
                and (main in ("*", request.rtype.plural))
                and sub in ("*", request.subresource)
            ):
                return True
    return False


def _selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    try:
        return parse_label_selector(selector, "selector").matches(labels)
    except SelectorError:
        return False


def _object_matches(hook: Obj, request: AdmissionRequest) -> bool:
    selector = hook.get("objectSelector") or {}
    if not selector:
        return True
    for candidate in (request.obj, request.old_obj):
        if candidate is not None and _selector_matches(selector, candidate["metadata"].get("labels") or {}):
            return True
    return False


def build_review(request: AdmissionRequest) -> Obj:
    """An AdmissionReview v1 request with the fields and shapes kube-apiserver v1.36 sends."""
    rtype = request.rtype
    kind = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    resource = {"group": rtype.group, "version": rtype.version, "resource": rtype.plural}
    inner: Obj = {
        "uid": str(uuid.uuid4()),
        "kind": kind,
        "resource": resource,
    }
    if request.subresource:
        inner["subResource"] = request.subresource
    inner["requestKind"] = dict(kind)
    inner["requestResource"] = dict(resource)
    if request.subresource:
        inner["requestSubResource"] = request.subresource
    if request.name:
        inner["name"] = request.name
    if request.namespace:
        inner["namespace"] = request.namespace
    inner["operation"] = request.operation
    inner["userInfo"] = request.user.to_review()
    inner["object"] = request.obj
    inner["oldObject"] = request.old_obj
    inner["dryRun"] = request.dry_run
    inner["options"] = request.options
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": inner}
