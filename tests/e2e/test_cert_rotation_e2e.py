"""internalCertManagement on a real control plane: the leader renews a serving certificate Secret that
expires tomorrow, sets the webhook configurations' and the visibility APIService's caBundle to the new CA
and the old one first, and the webhook keeps answering.

The replica runs in this process with its own namespace (its Lease, ConfigMap and Secret live there) and
serves the webhook on an ephemeral port, the shipped webhook configurations pointed at it by URL, the
APIService (as shipped: verified, no insecureSkipTLSVerify) at it through an ``ExternalName`` Service. Out
of cluster there is no Secret volume: the server keeps serving the old certificate from its directory,
which is exactly the moment of a rotation before kubelet refreshes the pods' volume. So what is checked is
the cluster side: the Secret replaced with a certificate for the Service's names signed by a new CA whose
key it now holds, every caBundle trusting both CAs, the Event; and then that kube-apiserver still reaches
the webhook (a queued Job is suspended on create) and the aggregator still verifies the APIService.

A second test does the same through the shipped install (``tests/e2e/install.py``, ``in_cluster``): its
ConfigMap turns renewal on and the controller runs with the ServiceAccount's token, so the shipped RBAC is
what allows every write.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kueue_webhook.http.certs import (
    KUEUE_CRDS,
    ca_bundle,
    ensure_certificates,
    secret_manifest,
    service_dns_names,
)
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, until
from tests.e2e.install import can_mount_namespaces, in_cluster
from tests.e2e.support import APISERVICE, visibility_api_service
from tests.e2e.test_bounds_e2e import TIMEOUT, kubectl, queued_job, queues
from tests.e2e.test_visibility_e2e import eventually
from tests.support.replica import REPO_ROOT, start_replica, webhook_configurations

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]


def config_map(ns: str, enable: bool) -> str:
    config = {"internalCertManagement": {"enable": enable}}
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-webhook-config", "namespace": ns},
        "data": {"config.yaml": yaml.safe_dump(config)},
    }
    return yaml.safe_dump(body)


def verified_api_service(ns: str, port: int) -> str:
    """The support module's registration, verified as the shipped APIService is."""
    return visibility_api_service(ns, port).replace("  insecureSkipTLSVerify: true\n", "")


def expiring_secret(ca_dir: Path, workdir: Path, *, namespace: str, ips: list[str]) -> JSON:
    """``certs --secret``'s Secret (no ca.key) with a certificate of ``ca_dir``'s CA that ends tomorrow."""
    workdir.mkdir()
    for key in ("ca.crt", "ca.key"):
        shutil.copy(ca_dir / key, workdir / key)
    certs = ensure_certificates(workdir, namespace=namespace, ips=ips, days=1, renew_before_days=0)
    return secret_manifest(certs, name="kueue-webhook-tls", namespace=namespace)


def certificates_of(encoded: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(encoded))


async def get(*args: str) -> JSON:
    _, out, _ = await kubectl("get", *args, "-o", "json")
    return dict(json.loads(out))


async def test_the_leader_renews_an_expiring_secret_and_the_webhook_keeps_answering(tmp_path: Path) -> None:
    code, _, _ = await kubectl("get", "apiservice", APISERVICE, check=False)
    if code == 0:
        pytest.skip(f"APIService {APISERVICE} already exists (Kueue or another kueue-webhook serves it)")
    await kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
    ns = name = f"e2e-certs-{uuid.uuid4().hex[:6]}"
    tls = ensure_certificates(tmp_path / "tls", namespace=ns, ips=["127.0.0.1"], hosts=["localhost"])
    old_secret = expiring_secret(tls.directory, tmp_path / "expiring", namespace=ns, ips=[])
    old_ca = x509.load_pem_x509_certificate(tls.ca_cert.read_bytes())
    await kubectl("apply", "-f", "-", stdin=queues(ns, name))
    await kubectl("apply", "-f", "-", stdin=yaml.safe_dump(old_secret) + "---\n" + config_map(ns, False))
    crd_bundles = {
        crd: (await get("crd", crd))["spec"]["conversion"].get("webhook", {}).get("clientConfig", {})
        for crd in KUEUE_CRDS
    }
    serving = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=name)
    hooks = webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}")
    try:
        await asyncio.wait_for(serving.controller.leading.wait(), TIMEOUT)
        await kubectl("apply", "-f", "-", stdin="\n---\n".join(yaml.safe_dump(h) for h in hooks))
        await kubectl("apply", "-f", "-", stdin=verified_api_service(ns, serving.port))
        before = (await get("secret", "kueue-webhook-tls", "-n", ns))["metadata"]["resourceVersion"]
        await kubectl("apply", "-f", "-", stdin=config_map(ns, True))  # turned on live

        async def renewed() -> JSON | None:
            secret = await get("secret", "kueue-webhook-tls", "-n", ns)
            return secret if secret["metadata"]["resourceVersion"] != before else None

        data = (await eventually(renewed, "the Secret to be renewed"))["data"]
        [new_ca] = certificates_of(data["ca.crt"])
        assert new_ca != old_ca and {"tls.crt", "tls.key", "ca.crt", "ca.key"} <= set(data)
        [served] = certificates_of(data["tls.crt"])
        served.verify_directly_issued_by(new_ca)
        san = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == service_dns_names("kueue-webhook", ns)

        for hook in hooks:
            live = await get(hook["kind"].lower(), hook["metadata"]["name"])
            for entry in live["webhooks"]:
                assert certificates_of(entry["clientConfig"]["caBundle"]) == [new_ca, old_ca]
        api_service = await get("apiservice", APISERVICE)
        assert certificates_of(api_service["spec"]["caBundle"]) == [new_ca, old_ca]

        async def rotated_event() -> str | None:
            events = await get(
                "events", "-n", ns, "--field-selector", "involvedObject.name=kueue-webhook-tls"
            )
            found = [e["message"] for e in events["items"] if e["reason"] == "CertificateRotated"]
            return found[0] if found else None

        message = await eventually(rotated_event, "the CertificateRotated Event on the Secret")
        assert "within the renewal window" in message and "new CA" in message

        # kube-apiserver reaches the webhook, which still serves the old certificate, through the new bundle
        _, out, _ = await kubectl("create", "-f", "-", "-o", "json", stdin=queued_job(ns, "after-rotation"))
        assert json.loads(out)["spec"]["suspend"] is True

        async def available() -> bool | None:
            conditions = (await get("apiservice", APISERVICE)).get("status", {}).get("conditions", [])
            return (
                True if any(c["type"] == "Available" and c["status"] == "True" for c in conditions) else None
            )

        await eventually(available, f"APIService {APISERVICE} to be Available, verified with the new bundle")
    finally:
        for hook in hooks:
            await kubectl(
                "delete", hook["kind"].lower(), hook["metadata"]["name"], "--ignore-not-found", check=False
            )
        await kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
        await serving.stop()
        await _restore_conversion_bundles(crd_bundles)
        await kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        await kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)
        await kubectl("delete", "resourceflavor", name, "--ignore-not-found", check=False)


async def _restore_conversion_bundles(before: dict[str, JSON]) -> None:
    """The CRDs are the cluster's: their conversion caBundle goes back to what it was."""
    for crd, client_config in before.items():
        path = "/spec/conversion/webhook/clientConfig/caBundle"
        if "caBundle" in client_config:
            patch = [{"op": "add", "path": path, "value": client_config["caBundle"]}]
        else:
            patch = [{"op": "remove", "path": path}]
        await kubectl("patch", "crd", crd, "--type=json", "-p", json.dumps(patch), check=False)


def test_the_shipped_install_renews_its_secret_with_its_own_permissions(tmp_path: Path) -> None:
    """``kubectl apply -k manifests/`` as the README installs it (its ConfigMap turns renewal on), the
    controller running with the ServiceAccount's token (tests/e2e/install.py, ``in_cluster``): the shipped
    RBAC is all the leader needs to renew the Secret and write the caBundles."""
    if not can_mount_namespaces():
        pytest.skip("the in-cluster path mounts the service-account token with unshare, which needs root")
    with socket.socket() as probe:  # not 9443: other installs on this host may be listening there
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    cluster = Cluster(Path(KUBECONFIG))
    ns = name = f"e2e-certs-{uuid.uuid4().hex[:6]}"
    with in_cluster(cluster, tmp_path, port=port) as running:
        try:
            cluster.apply(queues(ns, name))
            old_ca = x509.load_pem_x509_certificate((tmp_path / "certs" / "ca.crt").read_bytes())
            secret = expiring_secret(
                tmp_path / "certs", tmp_path / "expiring", namespace="kueue-system", ips=[]
            )
            cluster.apply(yaml.safe_dump(secret))

            def version() -> str:
                return str(
                    cluster.get("secret", "kueue-webhook-tls", "-n", "kueue-system")["metadata"][
                        "resourceVersion"
                    ]
                )

            before = version()
            configmap = cluster.get("configmap", "kueue-webhook-config", "-n", "kueue-system")
            configmap["data"]["config.yaml"] += "# any edit makes the leader look at once\n"
            cluster.apply(json.dumps(configmap))
            until(lambda: version() != before, "the leader to renew the Secret", timeout=120)

            data = cluster.get("secret", "kueue-webhook-tls", "-n", "kueue-system")["data"]
            [new_ca] = certificates_of(data["ca.crt"])
            assert new_ca != old_ca and "ca.key" in data
            certificates_of(data["tls.crt"])[0].verify_directly_issued_by(new_ca)
            for kind, hook_name in (
                ("mutatingwebhookconfiguration", "kueue-webhook-mutating"),
                ("validatingwebhookconfiguration", "kueue-webhook-validating"),
            ):
                for entry in cluster.get(kind, hook_name)["webhooks"]:
                    assert certificates_of(entry["clientConfig"]["caBundle"]) == [new_ca, old_ca]
            assert certificates_of(cluster.get("apiservice", APISERVICE)["spec"]["caBundle"]) == [
                new_ca,
                old_ca,
            ]
            for crd in KUEUE_CRDS:
                client_config = cluster.get("crd", crd)["spec"]["conversion"]["webhook"]["clientConfig"]
                assert certificates_of(client_config["caBundle"]) == [new_ca, old_ca]
            assert "serving certificate renewed" in running.tail(200)
            assert "cannot write a caBundle" not in running.tail(200)

            created = cluster.kubectl(
                "create", "-f", "-", "-o", "json", input=queued_job(ns, "after-rotation")
            )
            assert json.loads(created.stdout)["spec"]["suspend"] is True
        finally:
            cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
            cluster.kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)
            cluster.kubectl("delete", "resourceflavor", name, "--ignore-not-found", check=False)
