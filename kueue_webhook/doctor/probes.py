"""What ``kueue-webhook doctor`` reads and tries, through kube-apiserver, and the checks it makes of them.

Everything goes through the API server as the user of the kubeconfig (``KubeClient.connect``, as ``serve``
and ``kubectl kueue`` connect), with GET and LIST only, except two dry runs (``dryRun=All``: admission and
conversion run, nothing is stored): a queued Job, which kube-apiserver sends to the mutating webhook, and,
when there is no Kueue object to read at v1beta1, a v1beta1 ResourceFlavor, which it converts through
``/convert``. The serving certificate is the one the webhook presents when the webhooks are called at a URL
(an out-of-cluster install: a TLS handshake, nothing sent), else the Secret's ``tls.crt``. A read that RBAC
refuses becomes a WARN saying what was not checked.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOKS,
    VALIDATING_WEBHOOKS,
    Kind,
)
from kueue_webhook.doctor.checks import (
    Check,
    apiservice_check,
    ca_bundle_check,
    certificate_names_check,
    endpoints_check,
    expiry_check,
    probe_job_check,
)
from kueue_webhook.http.certs import DEFAULT_MUTATING, DEFAULT_VALIDATING, KUEUE_CRDS

__all__ = ["APISERVICE", "diagnose"]

JSON = dict[str, Any]
APISERVICE = "v1beta2.visibility.kueue.x-k8s.io"
SECRETS = Kind("Secret", "", "v1", "secrets", namespaced=True)
SERVICES = Kind("Service", "", "v1", "services", namespaced=True)
ENDPOINT_SLICES = Kind("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", namespaced=True)
API_SERVICES = Kind("APIService", "apiregistration.k8s.io", "v1", "apiservices", namespaced=False)
KUEUE_V1BETA1 = "/apis/kueue.x-k8s.io/v1beta1"
PROBE_QUEUE = "kueue-doctor-probe"


async def _get(client: KubeClient, kind: Kind, name: str, namespace: str | None = None) -> JSON | None:
    """The object, None when it does not exist; other errors are raised."""
    try:
        return await client.get(kind, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def _hooks(configuration: JSON | None) -> list[JSON]:
    return [dict(h) for h in (configuration or {}).get("webhooks") or [] if isinstance(h, Mapping)]


def _client_configs(webhooks: Mapping[str, JSON | None], crds: Mapping[str, JSON | None]) -> list[JSON]:
    configs = [h.get("clientConfig") or {} for c in webhooks.values() for h in _hooks(c)]
    for crd in crds.values():
        conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") == "Webhook":
            configs.append((conversion.get("webhook") or {}).get("clientConfig") or {})
    return configs


async def _served_certificate(url: str) -> x509.Certificate:
    """The certificate presented at ``url``'s host and port (the handshake only; nothing is verified)."""
    parts = urlsplit(url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    host = parts.hostname or ""
    _, writer = await asyncio.wait_for(
        asyncio.open_connection(host, parts.port or 443, ssl=context, server_hostname=host), 10
    )
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    finally:
        writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), 5)
    if not der:
        raise ValueError("no certificate presented")
    return x509.load_der_x509_certificate(der)


def _secret_certificate(secret: JSON) -> x509.Certificate:
    data = (secret.get("data") or {}).get("tls.crt")
    if not data:
        raise ValueError("it has no tls.crt")
    return x509.load_pem_x509_certificates(base64.b64decode(data))[0]


async def _serving_certificate(
    client: KubeClient, urls: list[str], namespace: str, secret_name: str, checks: list[Check]
) -> tuple[x509.Certificate | None, str]:
    if urls:
        try:
            parts = urlsplit(urls[0])
            return await _served_certificate(
                urls[0]
            ), f"the certificate served at {parts.scheme}://{parts.netloc}"
        except (OSError, TimeoutError, ValueError) as exc:
            checks.append(
                Check(
                    "FAIL",
                    "serving certificate",
                    f"no TLS answer at {urls[0]}: {exc or type(exc).__name__}",
                    "start kueue-webhook serve there (kube-apiserver calls that URL)",
                )
            )
            return None, ""
    where = f"Secret {namespace}/{secret_name}"
    try:
        secret = await _get(client, SECRETS, secret_name, namespace)
    except ApiError as exc:
        checks.append(Check("WARN", "serving certificate", f"{where} not readable: {exc.message}"))
        return None, ""
    if secret is None:
        checks.append(
            Check(
                "FAIL",
                "serving certificate",
                f"{where} not found: the Deployment mounts it",
                f"kueue-webhook certs --secret - --namespace {namespace} | kubectl apply -f -",
            )
        )
        return None, ""
    try:
        return _secret_certificate(secret), f"tls.crt of {where}"
    except ValueError as exc:
        checks.append(
            Check(
                "FAIL", "serving certificate", f"{where}: {exc}", "rewrite it: kueue-webhook certs --secret -"
            )
        )
        return None, ""


def _hosts(configs: list[JSON]) -> list[str]:
    hosts: list[str] = []
    for config in configs:
        if config.get("url"):
            host = urlsplit(str(config["url"])).hostname or ""
        elif isinstance(config.get("service"), Mapping):
            host = f"{config['service'].get('name')}.{config['service'].get('namespace')}.svc"
        else:
            continue
        if host and host not in hosts:
            hosts.append(host)
    return hosts


async def _services(client: KubeClient, configs: list[JSON], apiservice: JSON | None) -> list[Check]:
    refs: list[tuple[str, str]] = []
    for config in configs:
        service = config.get("service")
        if isinstance(service, Mapping):
            refs.append((str(service.get("namespace", "")), str(service.get("name", ""))))
    api_service = ((apiservice or {}).get("spec") or {}).get("service")
    if isinstance(api_service, Mapping):
        refs.append((str(api_service.get("namespace", "")), str(api_service.get("name", ""))))
    checks: list[Check] = []
    urls = sorted({str(c["url"]) for c in configs if c.get("url")})
    if urls:
        bases = sorted({f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in urls})
        checks.append(Check("OK", "webhook address", f"called at {', '.join(bases)} (no Service in between)"))
    for namespace, name in dict.fromkeys(refs):
        try:
            obj = await _get(client, SERVICES, name, namespace)
            slices: list[JSON] = []
            if obj is not None:
                async for page, _ in client.list_pages(
                    ENDPOINT_SLICES, namespace=namespace, label_selector=f"kubernetes.io/service-name={name}"
                ):
                    slices += page
        except ApiError as exc:
            checks.append(Check("WARN", f"Service {namespace}/{name}", f"not checked: {exc.message}"))
            continue
        checks.append(endpoints_check(f"{namespace}/{name}", obj, slices))
    return checks


def _bundles(configuration: JSON | None) -> dict[str, str | None]:
    return {
        str(h.get("name", "")): (h.get("clientConfig") or {}).get("caBundle") for h in _hooks(configuration)
    }


async def _probe_job(client: KubeClient, namespace: str) -> Check:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": "kueue-doctor-",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": PROBE_QUEUE},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "probe", "image": "busybox", "command": ["true"]}],
                }
            }
        },
    }
    try:
        created = await client.request(
            "POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", query={"dryRun": "All"}, body=job
        )
    except ApiError as exc:
        return probe_job_check(None, (exc.status, exc.message), namespace)
    return probe_job_check(created, None, namespace)


async def _conversion(client: KubeClient) -> Check:
    name = "conversion webhook"
    fix = "kube-apiserver calls /convert with the CRDs' conversion caBundle: see the caBundle check above"
    try:
        for plural in ("workloads", "clusterqueues"):
            listed = await client.request("GET", f"{KUEUE_V1BETA1}/{plural}", query={"limit": 1})
            if listed.get("items"):
                kind = str(listed["items"][0].get("kind", plural))
                return Check("OK", name, f"a {kind} read at kueue.x-k8s.io/v1beta1 was converted")
        flavor = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"generateName": "kueue-doctor-"},
        }
        created = await client.request(
            "POST", f"{KUEUE_V1BETA1}/resourceflavors", query={"dryRun": "All"}, body=flavor
        )
    except ApiError as exc:
        if exc.status == 404:
            return Check("WARN", name, "kueue.x-k8s.io/v1beta1 is not served: nothing to convert")
        if exc.status in (401, 403):
            return Check("WARN", name, f"not checked: {exc.message}")
        return Check("FAIL", name, f"a v1beta1 read or dry-run create failed: {exc.message}", fix)
    if created.get("apiVersion") != "kueue.x-k8s.io/v1beta1":
        return Check("FAIL", name, f"a v1beta1 ResourceFlavor came back as {created.get('apiVersion')}", fix)
    return Check("OK", name, "a v1beta1 ResourceFlavor created (dry run) was converted both ways")


async def diagnose(
    client: KubeClient,
    *,
    namespace: str,
    secret_name: str,
    probe_namespace: str,
    now: dt.datetime,
) -> list[Check]:
    """Every check, in the order a person would fix them."""
    checks: list[Check] = []
    webhooks: dict[str, JSON | None] = {}
    for kind, name in ((MUTATING_WEBHOOKS, DEFAULT_MUTATING), (VALIDATING_WEBHOOKS, DEFAULT_VALIDATING)):
        webhooks[f"{kind.kind} {name}"] = obj = await _get(client, kind, name)
        if obj is None:
            checks.append(
                Check(
                    "FAIL",
                    f"{kind.kind} {name}",
                    "not found: no Job is queued",
                    "kubectl apply -k manifests/",
                )
            )
    crds: dict[str, JSON | None] = {}
    try:
        for crd in KUEUE_CRDS:
            crds[crd] = await _get(client, CUSTOM_RESOURCE_DEFINITIONS, crd)
    except ApiError as exc:
        checks.append(Check("WARN", "CustomResourceDefinitions", f"not readable: {exc.message}"))
    optional = (
        "admissionchecks.kueue.x-k8s.io",
        "multikueueclusters.kueue.x-k8s.io",
        "multikueueconfigs.kueue.x-k8s.io",
    )
    missing = [name for name, obj in crds.items() if obj is None and name not in optional]
    if missing:
        checks.append(
            Check(
                "FAIL",
                "CustomResourceDefinitions",
                f"missing: {', '.join(missing)}",
                "kubectl apply -k manifests/crds",
            )
        )
    try:
        apiservice = await _get(client, API_SERVICES, APISERVICE)
    except ApiError as exc:
        apiservice = None
        checks.append(Check("WARN", f"APIService {APISERVICE}", f"not readable: {exc.message}"))
    configs = _client_configs(webhooks, crds)
    checks += await _services(client, configs, apiservice)
    urls = [str(c["url"]) for c in configs if c.get("url")]
    serving, source = await _serving_certificate(client, urls, namespace, secret_name, checks)
    if serving is not None:
        checks.append(expiry_check(serving, now=now, source=source))
        checks.append(certificate_names_check(serving, _hosts(configs)))
    for title, obj in webhooks.items():
        if obj is not None:
            checks.append(ca_bundle_check(f"caBundle of {title}", _bundles(obj), serving))
    conversions = {
        name: (((obj or {}).get("spec") or {}).get("conversion") or {}).get("webhook") or {}
        for name, obj in crds.items()
        if (((obj or {}).get("spec") or {}).get("conversion") or {}).get("strategy") == "Webhook"
    }
    if conversions:
        bundles = {
            name: (hook.get("clientConfig") or {}).get("caBundle") for name, hook in conversions.items()
        }
        checks.append(ca_bundle_check("caBundle of the CRDs' conversion webhook", bundles, serving))
    if apiservice is not None:
        spec = apiservice.get("spec") or {}
        if spec.get("insecureSkipTLSVerify"):
            checks.append(
                Check(
                    "OK",
                    f"caBundle of APIService {APISERVICE}",
                    "none: insecureSkipTLSVerify, as Kueue ships it",
                )
            )
        else:
            checks.append(
                ca_bundle_check(
                    f"caBundle of APIService {APISERVICE}", {"spec": spec.get("caBundle")}, serving
                )
            )
    checks.append(await _probe_job(client, probe_namespace))
    if crds and not missing:
        checks.append(await _conversion(client))
    if apiservice is not None or not any(c.name == f"APIService {APISERVICE}" for c in checks):
        checks.append(apiservice_check(APISERVICE, apiservice))
    return checks
