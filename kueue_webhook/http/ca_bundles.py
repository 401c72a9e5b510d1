"""caBundles: the CA kube-apiserver trusts when it calls the webhooks, the conversion webhook and the
visibility API, and the guarded JSON Patches that set them (``kueue-webhook certs
--patch-webhook-configurations`` and the leader's renewal both write them).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kueue_webhook.http.certs import DEFAULT_NAMESPACE, DEFAULT_SERVICE, cert_pem

__all__ = [
    "apiservice_ca_patch",
    "bundle_of",
    "bundle_trusts",
    "conversion_ca_patch",
    "patch_webhook_configurations",
    "webhook_ca_patch",
]


def webhook_ca_patch(configuration: Any, bundle: str) -> list[dict[str, Any]]:
    """JSON Patch setting every webhook's caBundle; each entry is guarded by a test of its name."""
    webhooks = configuration.get("webhooks") if isinstance(configuration, dict) else None
    patch: list[dict[str, Any]] = []
    for index, entry in enumerate(webhooks or []):
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": entry["name"]})
        patch.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle})
    return patch


def conversion_ca_patch(crd: Any, bundle: str) -> list[dict[str, Any]]:
    """JSON Patch setting a CRD's conversion webhook caBundle; empty when it converts without a webhook."""
    conversion = ((crd.get("spec") if isinstance(crd, dict) else None) or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return []
    return [
        {"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"},
        {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": bundle},
    ]


def apiservice_ca_patch(
    apiservice: Any, bundle: str, *, service: str = DEFAULT_SERVICE, namespace: str = DEFAULT_NAMESPACE
) -> list[dict[str, Any]]:
    """JSON Patch setting an APIService's caBundle; empty when it is not ours to verify: it sends to
    another Service (or to none: a local API), or it says ``insecureSkipTLSVerify``, which kube-apiserver
    refuses beside a caBundle (the admin chose not to verify)."""
    spec = (apiservice.get("spec") if isinstance(apiservice, dict) else None) or {}
    target = spec.get("service") or {}
    if spec.get("insecureSkipTLSVerify") or (target.get("name"), target.get("namespace")) != (
        service,
        namespace,
    ):
        return []
    return [
        {"op": "test", "path": "/spec/service/name", "value": service},
        {"op": "test", "path": "/spec/service/namespace", "value": namespace},
        {"op": "add", "path": "/spec/caBundle", "value": bundle},
    ]


def bundle_of(*certs: x509.Certificate) -> str:
    """A caBundle (base64 of the PEM certificates, in order)."""
    return base64.b64encode(b"".join(cert_pem(cert) for cert in certs)).decode("ascii")


def bundle_trusts(bundle: object, ca_cert: x509.Certificate) -> bool:
    """Whether a caBundle (base64 PEM, as the API returns it) holds ``ca_cert``; an unreadable one does
    not."""
    if not isinstance(bundle, str) or not bundle:
        return False
    try:
        certs = x509.load_pem_x509_certificates(base64.b64decode(bundle, validate=True))
    except ValueError:
        return False
    wanted = ca_cert.public_bytes(serialization.Encoding.DER)
    return any(c.public_bytes(serialization.Encoding.DER) == wanted for c in certs)


async def patch_webhook_configurations(
    bundle: str,
    *,
    mutating: Sequence[str],
    validating: Sequence[str],
    crds: Sequence[str] = (),
    apiservices: Sequence[str] = (),
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    kubeconfig: str | None = None,
) -> list[str]:
    """Fill the caBundle of the named webhook configurations, of the conversion webhook of the named
    CRDs (kube-apiserver calls ``/convert`` for kueue.x-k8s.io/v1beta1), and of the named APIServices that
    send to ``service`` in ``namespace`` (the visibility API); returns one line per object.

    Connects as ``serve`` does (``KubeClient.connect``: ``--kubeconfig``, ``$KUBECONFIG``, the pod's service
    account, ``~/.kube/config``), so both commands reach the same cluster as the same user.
    """
    from kueue_webhook.control.kube.client import ApiError, KubeClient
    from kueue_webhook.control.kube.kinds import (
        API_SERVICES,
        CUSTOM_RESOURCE_DEFINITIONS,
        MUTATING_WEBHOOKS,
        VALIDATING_WEBHOOKS,
    )

    client = await KubeClient.connect(kubeconfig=kubeconfig, connections=2)
    done: list[str] = []
    try:
        targets = [(name, MUTATING_WEBHOOKS) for name in mutating]
        targets += [(name, VALIDATING_WEBHOOKS) for name in validating]
        for name, kind in targets:
            patch = webhook_ca_patch(await client.get(kind, name=name), bundle)
            if not patch:
                done.append(f"{kind.kind} {name}: no webhooks to patch")
                continue
            await client.patch(kind, name=name, patch=patch, patch_type="json")
            done.append(f"{kind.kind} {name}: caBundle set on {len(patch) // 2} webhook(s)")
        for name in crds:
            patch = conversion_ca_patch(await client.get(CUSTOM_RESOURCE_DEFINITIONS, name=name), bundle)
            if not patch:
                done.append(f"CustomResourceDefinition {name}: no conversion webhook to patch")
                continue
            await client.patch(CUSTOM_RESOURCE_DEFINITIONS, name=name, patch=patch, patch_type="json")
            done.append(f"CustomResourceDefinition {name}: conversion webhook caBundle set")
        for name in apiservices:
            try:
                found = await client.get(API_SERVICES, name=name)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                done.append(f"APIService {name}: not installed")
                continue
            patch = apiservice_ca_patch(found, bundle, service=service, namespace=namespace)
            if not patch:
                done.append(
                    f"APIService {name}: not verified (insecureSkipTLSVerify) or not served by "
                    f"{namespace}/{service}: left alone"
                )
                continue
            await client.patch(API_SERVICES, name=name, patch=patch, patch_type="json")
            done.append(f"APIService {name}: caBundle set")
    finally:
        await client.close()
    return done
