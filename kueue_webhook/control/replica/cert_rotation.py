"""The leader renews the webhook's serving certificate in the cluster (``internalCertManagement``), so an
install keeps working past the certificate's year without anyone running ``kueue-webhook certs`` again.

When leadership starts, when the configuration changes and every hour, the leader reads the Secret and
asks ``kueue_webhook.http.cert_renewal.renewal_decision`` whether to issue a serving certificate again
(expiring within 30 days, not for the Service's names, not signed by the Secret's CA, missing). The CA is
the Secret's own when it holds ``ca.key``; otherwise (a Secret written by ``certs --secret``) or when it is
expiring, a new CA is made. The order of the writes is what keeps the webhook answering throughout:

1. every caBundle that must trust the serving certificate (both webhook configurations, the kueue.x-k8s.io
   CRDs' conversion webhook, the visibility APIService) is made to hold the new CA *and* the one it
   replaces, since the pods serve the old certificate until kubelet refreshes their Secret volume;
2. only then is the Secret replaced, guarded by its resourceVersion and keeping every other key; the
   pods' ``CertificateReloader`` loads the new pair without a restart.

If a caBundle cannot be written, a new CA is not put in force (the old certificate keeps working, and the
next attempt comes after a backoff). Each pass also repairs drift: a caBundle that does not hold the
Secret's CA (a configuration applied again from a manifest without one) is set. A rotation is a Normal
Event ``CertificateRotated`` on the Secret and a log line; failures are logged and retried, never fatal.
A missing Secret is only reported: creating it is the install's job (``certs --secret``), and the RBAC
grants get and update of that one Secret by name, no create.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from cryptography import x509

from kueue_webhook.api.config import Configuration
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    API_SERVICES,
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOKS,
    SECRETS,
    VALIDATING_WEBHOOKS,
    Kind,
)
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.events import EventSink
from kueue_webhook.control.replica.declared_webhooks import DEFAULT_NAMES
from kueue_webhook.http.ca_bundles import (
    apiservice_ca_patch,
    bundle_of,
    bundle_trusts,
    conversion_ca_patch,
    webhook_ca_patch,
)
from kueue_webhook.http.cert_renewal import renew_secret, renewal_decision
from kueue_webhook.http.certs import KUEUE_CRDS, VISIBILITY_APISERVICES, service_dns_names
from kueue_webhook.runtime import wait_until_set

__all__ = ["RESYNC_SECONDS", "CertificateRotation"]

log = logging.getLogger("kueue_webhook.cert_rotation")
JSON = dict[str, Any]
RESYNC_SECONDS = 3600.0
_ATTEMPTS = 5
_KEYS = ("tls.crt", "tls.key", "ca.crt", "ca.key")


class _Unreachable(Exception):
    """A caBundle could not be written: a new CA must not come into force."""


@dataclass(frozen=True, slots=True)
class _Target:
    """An object whose caBundle(s) must trust the serving certificate, and how to patch it."""

    kind: Kind
    name: str
    patch: Callable[[JSON, str], list[JSON]]


def _targets(configuration: Configuration, namespace: str) -> list[_Target]:
    service = configuration.internal_cert_management.webhook_service_name

    def apiservice(obj: JSON, bundle: str) -> list[JSON]:
        return apiservice_ca_patch(obj, bundle, service=service, namespace=namespace)

    return [
        _Target(MUTATING_WEBHOOKS, DEFAULT_NAMES["mutating"], webhook_ca_patch),
        _Target(VALIDATING_WEBHOOKS, DEFAULT_NAMES["validating"], webhook_ca_patch),
        *(_Target(CUSTOM_RESOURCE_DEFINITIONS, name, conversion_ca_patch) for name in KUEUE_CRDS),
        *(_Target(API_SERVICES, name, apiservice) for name in VISIBILITY_APISERVICES),
    ]


def _pointer(obj: Any, path: str) -> Any:
    """The value at a JSON Pointer (the caBundle a patch operation would replace); None when absent."""
    for token in path.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(obj, list) and token.isdigit() and int(token) < len(obj):
            obj = obj[int(token)]
        elif isinstance(obj, dict):
            obj = obj.get(token)
        else:
            return None
    return obj


def _decoded(secret: JSON) -> dict[str, bytes]:
    """The Secret's certificate keys as bytes; a value that is not base64 counts as absent."""
    data = secret.get("data") or {}
    out: dict[str, bytes] = {}
    for key in _KEYS:
        with contextlib.suppress(binascii.Error, ValueError, TypeError):
            if isinstance(data.get(key), str):
                out[key] = base64.b64decode(data[key], validate=True)
    return out


class CertificateRotation:
    """Keeps the serving certificate Secret and the caBundles current while this replica leads."""

    def __init__(
        self,
        client: KubeClient,
        configuration: Callable[[], Configuration],
        events: EventSink,
        *,
        namespace: str,
        resync_seconds: float = RESYNC_SECONDS,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        backoff: Backoff | None = None,
    ) -> None:
        self.client = client
        self.configuration = configuration
        self.events = events
        #: the controller's namespace (``serve --namespace``): its pods', so the Secret they mount and the
        #: Service in front of them are there
        self.namespace = namespace
        self.resync_seconds = resync_seconds
        self.now = now
        self.backoff = backoff or Backoff(base=5.0, cap=300.0)
        self._wanted = asyncio.Event()

    def request(self) -> None:
        """Ask for a check (the configuration changed)."""
        self._wanted.set()

    async def run(self) -> None:
        while True:
            self._wanted.clear()
            wait = self.resync_seconds
            try:
                await self.sync()
                self.backoff.reset()
            except NotLeader:
                pass  # said once by the elector; a new term checks again
            except (_Unreachable, ApiError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                wait = self.backoff.next_delay()
                log.warning(
                    "serving certificate not renewed, retrying",
                    extra={"error": str(exc), "retry_seconds": round(wait, 1)},
                )
            except Exception:  # never fatal: a bug here must not end the upkeep for the whole term
                wait = self.backoff.next_delay()
                log.exception(
                    "serving certificate check failed, retrying", extra={"retry_seconds": round(wait, 1)}
                )
            await wait_until_set(self._wanted, wait)

    async def sync(self) -> None:
        """One pass: renew the Secret if due (caBundles first), else repair caBundles that lack its CA."""
        configuration = self.configuration()
        settings = configuration.internal_cert_management
        if not settings.enable:
            return
        namespace, name = self.namespace, settings.webhook_secret_name
        where = {"secret": f"{namespace}/{name}"}
        dns_names = service_dns_names(settings.webhook_service_name, namespace)
        for _ in range(_ATTEMPTS):
            try:
                secret = await self.client.get(SECRETS, name=name, namespace=namespace)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                log.warning(
                    "the serving certificate Secret does not exist: create it once with `kueue-webhook "
                    "certs --secret - | kubectl apply -f -`, the leader renews it from then on",
                    extra=where,
                )
                return
            data = _decoded(secret)
            now = self.now()
            renewal = renewal_decision(data, dns_names=dns_names, now=now)
            if renewal.serving is None:
                log.debug("serving certificate current", extra=where)
                current = x509.load_pem_x509_certificate(data["ca.crt"])  # the decision found it readable
                await self._ensure_bundles(configuration, current, bundle=None, required=False)
                return
            renewed = renew_secret(data, renewal, dns_names=dns_names, now=now)
            # the caBundles trust the new CA before any pod can serve a certificate signed by it
            await self._ensure_bundles(
                configuration, renewed.ca_cert, bundle=renewed.bundle, required=renewal.ca is not None
            )
            encoded = {key: base64.b64encode(value).decode("ascii") for key, value in renewed.data.items()}
            body = {**secret, "data": {**(secret.get("data") or {}), **encoded}}
            try:
                written = await self.client.replace(SECRETS, body)
            except ApiError as exc:
                if exc.status == 409:
                    continue  # changed under us: decide again from what is there now
                raise
            message = (
                f"serving certificate renewed ({renewal.serving}), valid until "
                f"{renewed.not_after:%Y-%m-%dT%H:%M:%SZ}"
                + (f"; new CA ({renewal.ca})" if renewal.ca is not None else "")
            )
            log.info(
                "serving certificate renewed",
                extra={
                    **where,
                    "reason": renewal.serving,
                    "new_ca": renewal.ca is not None,
                    "not_after": renewed.not_after.isoformat(),
                },
            )
            self.events.record(
                {**written, "apiVersion": "v1", "kind": "Secret"},
                type="Normal",
                reason="CertificateRotated",
                message=message,
            )
            return
        raise _Unreachable(f"Secret {namespace}/{name} kept changing")

    async def _ensure_bundles(
        self, configuration: Configuration, ca_cert: x509.Certificate, *, bundle: str | None, required: bool
    ) -> None:
        """Make every caBundle hold ``ca_cert``: set it to ``bundle`` (or to ``ca_cert`` alone) where it does
        not. An object that is not installed is skipped; with ``required`` (a new CA is about to come into
        force) any other failure raises, so the Secret is not replaced."""
        value = bundle if bundle is not None else bundle_of(ca_cert)
        failed: list[str] = []
        for target in _targets(configuration, self.namespace):
            if not await self._ensure_bundle(target, ca_cert, value):
                failed.append(f"{target.kind.kind} {target.name}")
        if failed and required:
            raise _Unreachable(f"caBundle not written on {', '.join(failed)}: the new CA is not put in force")

    async def _ensure_bundle(self, target: _Target, ca_cert: x509.Certificate, bundle: str) -> bool:
        """True when ``target`` trusts ``ca_cert`` (or is not installed, or has nothing to verify)."""
        where = {"object": f"{target.kind.kind}/{target.name}"}
        for _ in range(_ATTEMPTS):
            try:
                current = await self.client.get(target.kind, name=target.name)
            except ApiError as exc:
                if exc.status == 404:
                    return True
                problem = {"status": exc.status, "error": exc.message}
                log.warning("cannot read a caBundle", extra={**where, **problem})
                return False
            patch = target.patch(current, bundle)
            stale = [
                op
                for op in patch
                if op["op"] == "add" and not bundle_trusts(_pointer(current, op["path"]), ca_cert)
            ]
            if not stale:
                return True
            version = (current.get("metadata") or {}).get("resourceVersion")
            guarded = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}, *patch]
            try:
                await self.client.patch(target.kind, name=target.name, patch=guarded, patch_type="json")
            except ApiError as exc:
                if exc.status in (409, 422):
                    continue  # changed under us: look again
                log.warning(
                    "cannot write a caBundle", extra={**where, "status": exc.status, "error": exc.message}
                )
                return False
            log.info("caBundle set to trust the serving certificate's CA", extra=where)
            return True
        log.warning("caBundle kept changing, retried later", extra=where)
        return False
