"""internalCertManagement on the fake API server: the leader renews a serving certificate Secret about to
expire, writing the caBundles (new CA and old) before the Secret, and the webhook keeps answering; a
replica that does not lead writes nothing."""

from __future__ import annotations

import asyncio
import base64
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.kube.leader import NotLeader, micro_time
from kueue_webhook.control.replica.cert_rotation import CertificateRotation
from kueue_webhook.http.certs import KUEUE_CRDS, ensure_certificates, secret_manifest, service_dns_names
from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import controller_config, events_of, serving_webhook
from tests.support.replica import certificates, replica
from tests.support.research import HANG, QUOTA, gpu_job

JSON = dict[str, Any]
MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "controller"
SECRET = ("secrets", "kueue-webhook-tls", "kueue-system")
ENABLED = "internalCertManagement: {enable: true}\n"
WEBHOOK_CONFIGURATIONS = (
    ("mutatingwebhookconfigurations", "kueue-webhook-mutating"),
    ("validatingwebhookconfigurations", "kueue-webhook-validating"),
)
APISERVICE = ("apiservices", "v1beta2.visibility.kueue.x-k8s.io")


def expiring_secret(tls_dir: Path, workdir: Path) -> JSON:
    """The Secret ``certs --secret`` writes (no ca.key), with a serving certificate of ``tls_dir``'s CA
    that ends tomorrow, and one key of the admin's own that must survive the renewal."""
    workdir.mkdir()
    for name in ("ca.crt", "ca.key"):
        shutil.copy(tls_dir / name, workdir / name)
    secret = secret_manifest(ensure_certificates(workdir, days=1, renew_before_days=0))
    secret["data"]["note"] = base64.b64encode(b"kept").decode()
    return secret


def parsed_configuration(text: str) -> Configuration:
    parsed = parse_configuration(text)
    assert isinstance(parsed, Configuration)
    return parsed


def shipped_apiservice() -> JSON:
    docs = yaml.safe_load_all((MANIFESTS / "visibility.yaml").read_text())
    return next(d for d in docs if d and d["kind"] == "APIService")


def certificate(data: JSON, key: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(data[key]))


def bundle(encoded: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(encoded))


def is_certificate_write(line: str) -> bool:
    method, path = line.split(" ", 1)
    watched = ("/secrets/", "webhookconfigurations/", "/customresourcedefinitions/", "/apiservices/")
    return method != "GET" and any(part in path for part in watched)


def secret_of(fake_api: FakeApiServer) -> JSON:
    found = fake_api.get(*SECRET)
    assert found is not None
    return found


async def test_the_leader_renews_an_expiring_secret_after_trusting_the_new_ca_everywhere(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    tls = certificates(tmp_path / "tls")
    old_secret = expiring_secret(tls.directory, tmp_path / "expiring")
    await fake_api.apply_manifests(controller_config("logLevel: info") + "---\n" + QUOTA)
    await fake_api.create(old_secret)
    await fake_api.create(shipped_apiservice())
    old_ca = certificate(old_secret["data"], "ca.crt")
    async with serving_webhook(fake_api, tmp_path) as leader:
        await asyncio.wait_for(leader.controller.leading.wait(), HANG)
        before = fake_api.get(*SECRET)
        marker = len(fake_api.requests)
        await fake_api.patch(  # turned on live, as an admin edits the ConfigMap
            "configmaps", "kueue-webhook-config", {"data": {"config.yaml": ENABLED}}, namespace="kueue-system"
        )
        await fake_api.wait_for(lambda: secret_of(fake_api) != before, timeout=HANG)
        data = secret_of(fake_api)["data"]

        # a new CA (the Secret had no ca.key), its key kept in the Secret, the admin's key untouched
        new_ca = certificate(data, "ca.crt")
        assert new_ca != old_ca and set(data) == {"tls.crt", "tls.key", "ca.crt", "ca.key", "note"}
        assert data["note"] == old_secret["data"]["note"]
        served = certificate(data, "tls.crt")
        served.verify_directly_issued_by(new_ca)
        san = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == service_dns_names("kueue-webhook", "kueue-system")
        assert served.not_valid_after_utc.timestamp() - time.time() > 300 * 86400

        # every caBundle trusts the new CA and the old one (the pods serve the old until kubelet syncs)
        for kind, name in WEBHOOK_CONFIGURATIONS:
            for hook in (fake_api.get(kind, name) or {})["webhooks"]:
                assert bundle(hook["clientConfig"]["caBundle"]) == [new_ca, old_ca]
        for crd in KUEUE_CRDS:
            conversion = (fake_api.get("customresourcedefinitions", crd) or {})["spec"]["conversion"]
            assert bundle(conversion["webhook"]["clientConfig"]["caBundle"]) == [new_ca, old_ca]
        assert bundle((fake_api.get(*APISERVICE) or {})["spec"]["caBundle"]) == [new_ca, old_ca]

        # ...written before the Secret
        writes = [line for line in fake_api.requests[marker:] if line.split(" ")[0] in ("PATCH", "PUT")]
        secret_write = next(i for i, line in enumerate(writes) if "/secrets/kueue-webhook-tls" in line)
        bundle_writes = [
            i for i, line in enumerate(writes) if "webhookconfigurations/" in line or "/apiservices/" in line
        ]
        assert len(bundle_writes) == 3 and max(bundle_writes) < secret_write
        assert sum("/customresourcedefinitions/" in line for line in writes[:secret_write]) == len(KUEUE_CRDS)

        # said on the Secret
        await fake_api.wait_for(
            lambda: "CertificateRotated" in events_of(fake_api, "kueue-system", "kueue-webhook-tls"),
            timeout=HANG,
        )
        message = events_of(fake_api, "kueue-system", "kueue-webhook-tls")["CertificateRotated"]
        assert "within the renewal window" in message and "new CA" in message

        # the webhook, still serving the old certificate, is trusted: a queued Job is suspended on create
        created = await fake_api.create(gpu_job("after-rotation", suspend=False), admit=True)
        assert created["spec"]["suspend"] is True

        # nothing more to do: the next pass writes none of them
        settled = len(fake_api.requests)
        await leader.controller.cert_rotation.sync()
        assert not [line for line in fake_api.requests[settled:] if is_certificate_write(line)]


async def test_a_replica_that_does_not_lead_writes_nothing(fake_api: FakeApiServer, tmp_path: Path) -> None:
    tls = certificates(tmp_path / "tls")
    await fake_api.apply_manifests(controller_config(ENABLED))
    await fake_api.create(expiring_secret(tls.directory, tmp_path / "expiring"))
    now = micro_time(datetime.now(UTC))
    await fake_api.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "kueue-webhook-leader", "namespace": "kueue-system"},
            "spec": {
                "holderIdentity": "another-replica",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    before = fake_api.get(*SECRET)
    async with replica(fake_api.kubeconfig_path(), identity="standby") as standby:
        assert standby.controller.configuration().internal_cert_management.enable
        assert not standby.controller.is_leader()
        marker = len(fake_api.requests)
        with pytest.raises(NotLeader):  # even asked directly, its first write is refused unsent
            await standby.controller.cert_rotation.sync()
        assert not [line for line in fake_api.requests[marker:] if is_certificate_write(line)]
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "certificate-rotation"]
    assert fake_api.get(*SECRET) == before


class Events:
    """Collects what would be recorded."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.recorded.append((type, reason))


async def test_a_secret_changed_between_read_and_write_is_read_again_and_nothing_is_lost(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    """The Secret is replaced with the resourceVersion it was read at; someone else's write in between is a
    409, and the renewal is decided again from the Secret as it now is, keeping that write's key."""
    tls = certificates(tmp_path / "tls")
    await fake_api.apply_manifests(controller_config(ENABLED))
    secret = expiring_secret(tls.directory, tmp_path / "expiring")
    secret["data"]["ca.key"] = base64.b64encode((tls.directory / "ca.key").read_bytes()).decode()
    await fake_api.create(secret)
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path()))
    replaced = client.replace

    meanwhile = [{"data": {"added-meanwhile": base64.b64encode(b"mine").decode()}}]

    async def raced(kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        while meanwhile:  # someone else's write lands between our read and our write, once
            await fake_api.patch("secrets", "kueue-webhook-tls", meanwhile.pop(), namespace="kueue-system")
        return await replaced(kind, body, subresource=subresource)

    client.replace = raced  # type: ignore[method-assign]
    events = Events()
    rotation = CertificateRotation(
        client, lambda: parsed_configuration(ENABLED), events, namespace="kueue-system"
    )
    try:
        await rotation.sync()
    finally:
        await client.close()
    data = secret_of(fake_api)["data"]
    assert data["added-meanwhile"] == base64.b64encode(b"mine").decode()
    assert data["ca.crt"] == secret["data"]["ca.crt"]  # the Secret's own CA signs (it has its key)
    certificate(data, "tls.crt").verify_directly_issued_by(certificate(data, "ca.crt"))
    assert certificate(data, "tls.crt") != certificate(secret["data"], "tls.crt")
    assert events.recorded == [("Normal", "CertificateRotated")]
    puts = [line for line in fake_api.requests if line.startswith("PUT ") and "/secrets/" in line]
    assert len(puts) == 2  # the refused one, then the one decided again


async def test_a_new_ca_is_not_put_in_force_while_a_ca_bundle_cannot_be_written(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    """With a caBundle left on the old CA only, the new certificate would be refused there: the Secret
    stays as it is, the pass fails (the task retries after a backoff), and the next pass completes."""
    tls = certificates(tmp_path / "tls")
    await fake_api.apply_manifests(controller_config(ENABLED))
    await fake_api.create(expiring_secret(tls.directory, tmp_path / "expiring"))
    before = secret_of(fake_api)
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path()))
    events = Events()
    rotation = CertificateRotation(
        client, lambda: parsed_configuration(ENABLED), events, namespace="kueue-system"
    )
    try:
        fake_api.fail_next_writes(1, status=500)  # the first caBundle write (a CRD's)
        with pytest.raises(Exception, match="the new CA is not put in force"):
            await rotation.sync()
        assert secret_of(fake_api) == before and events.recorded == []
        await rotation.sync()
    finally:
        await client.close()
    data = secret_of(fake_api)["data"]
    new_ca = certificate(data, "ca.crt")
    for crd in KUEUE_CRDS:
        conversion = (fake_api.get("customresourcedefinitions", crd) or {})["spec"]["conversion"]
        assert bundle(conversion["webhook"]["clientConfig"]["caBundle"])[0] == new_ca
    assert events.recorded == [("Normal", "CertificateRotated")]
