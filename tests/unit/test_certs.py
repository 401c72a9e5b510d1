"""``kueue-webhook certs``: what a TLS client accepts, what is reused or renewed, what reaches the cluster."""

from __future__ import annotations

import base64
import datetime as dt
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kueue_webhook.cli import main
from kueue_webhook.http.ca_bundles import patch_webhook_configurations, webhook_ca_patch
from kueue_webhook.http.certs import (
    KUEUE_CRDS,
    VISIBILITY_APISERVICES,
    ca_bundle,
    ensure_certificates,
    secret_manifest,
)
from tests.unit.admission.golden import apply_patch

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "controller"


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def sans(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return san.get_values_for_type(x509.DNSName), [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]


def plain_http_kubeconfig(tmp_path: Path, port: int) -> Path:
    """A kubeconfig for a stub API server on 127.0.0.1:``port`` over plain HTTP, with a token."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return kubeconfig


def test_fresh_directory_gets_a_ca_and_a_serving_certificate_for_the_service(tmp_path: Path) -> None:
    certs = ensure_certificates(tmp_path / "certs", hosts=["webhook.example"], ips=["127.0.0.1", "::1"])
    assert certs.created_ca and certs.issued_serving
    for path in (certs.ca_cert, certs.ca_key, certs.cert, certs.key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    ca, serving = load(certs.ca_cert), load(certs.cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    serving.verify_directly_issued_by(ca)
    dns, ips = sans(serving)
    assert dns == [
        "kueue-webhook",
        "kueue-webhook.kueue-system",
        "kueue-webhook.kueue-system.svc",
        "kueue-webhook.kueue-system.svc.cluster.local",
        "webhook.example",
    ]
    assert ips == ["127.0.0.1", "::1"]
    assert isinstance(serving.public_key(), ec.EllipticCurvePublicKey)
    assert serving.public_key().curve.name == "secp256r1"  # type: ignore[union-attr]
    lifetime = serving.not_valid_after_utc - dt.datetime.now(dt.UTC)
    assert dt.timedelta(days=364) < lifetime <= dt.timedelta(days=365)


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    first = ensure_certificates(tmp_path)
    before = {p: p.read_bytes() for p in (first.ca_cert, first.ca_key, first.cert, first.key)}
    again = ensure_certificates(tmp_path)
    assert not again.created_ca and not again.issued_serving
    assert {p: p.read_bytes() for p in before} == before


def test_new_name_reissues_the_serving_certificate_but_keeps_the_ca(tmp_path: Path) -> None:
    first = ensure_certificates(tmp_path)
    ca_before, serving_before = first.ca_cert.read_bytes(), load(first.cert)
    again = ensure_certificates(tmp_path, ips=["10.0.0.7"])
    assert again.issued_serving and not again.created_ca
    assert again.ca_cert.read_bytes() == ca_before
    assert load(again.cert).serial_number != serving_before.serial_number
    assert sans(load(again.cert))[1] == ["10.0.0.7"]


def test_certificate_near_expiry_is_renewed(tmp_path: Path) -> None:
    ensure_certificates(tmp_path, days=20)
    assert ensure_certificates(tmp_path, renew_before_days=30).issued_serving
    assert not ensure_certificates(tmp_path, renew_before_days=30).issued_serving


def test_serving_certificate_from_a_replaced_ca_is_reissued(tmp_path: Path) -> None:
    certs = ensure_certificates(tmp_path)
    certs.ca_cert.unlink()
    again = ensure_certificates(tmp_path)
    assert again.created_ca and again.issued_serving
    load(again.cert).verify_directly_issued_by(load(again.ca_cert))


def test_rsa_keys_on_request(tmp_path: Path) -> None:
    certs = ensure_certificates(tmp_path, key_type="rsa-2048")
    key = load(certs.cert).public_key()
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048


def test_bad_ip_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"999\.1\.1\.1"):
        ensure_certificates(tmp_path / "certs", ips=["999.1.1.1"])
    assert not (tmp_path / "certs").exists()


def test_cli_prints_the_ca_bundle_and_the_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = tmp_path / "certs"
    assert (
        main(["certs", "--dir", str(directory), "--ip", "127.0.0.1", "--print-ca-bundle", "--secret", "-"])
        == 0
    )
    out = capsys.readouterr().out
    bundle, manifest_text = out.split("\n", 1)
    assert base64.b64decode(bundle) == (directory / "ca.crt").read_bytes()
    manifest = yaml.safe_load(manifest_text)
    assert manifest["type"] == "kubernetes.io/tls"
    assert manifest["metadata"] == {
        "name": "kueue-webhook-tls",
        "namespace": "kueue-system",
        "labels": {"app.kubernetes.io/name": "kueue-webhook"},
    }
    assert base64.b64decode(manifest["data"]["tls.key"]) == (directory / "tls.key").read_bytes()


def test_cli_writes_secret_and_bundle_files_privately(tmp_path: Path) -> None:
    secret, bundle = tmp_path / "secret.yaml", tmp_path / "bundle.txt"
    assert (
        main(
            ["certs", "--dir", str(tmp_path / "c"), "--secret", str(secret), "--ca-bundle-file", str(bundle)]
        )
        == 0
    )
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert yaml.safe_load(secret.read_text())["kind"] == "Secret"
    assert base64.b64decode(bundle.read_text().strip()) == (tmp_path / "c" / "ca.crt").read_bytes()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ip", "not-an-ip"], "does not appear to be an IPv4 or IPv6 address"),
        (["--days", "10", "--renew-before-days", "30"], "--renew-before-days must be less than --days"),
    ],
)
def test_cli_bad_input_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["certs", "--dir", str(tmp_path), *argv]) == 2
    assert message in capsys.readouterr().err


def test_ca_patch_covers_every_webhook_of_the_shipped_configuration(tmp_path: Path) -> None:
    configuration = yaml.safe_load((MANIFESTS / "validatingwebhookconfiguration.yaml").read_text())
    bundle = ca_bundle(ensure_certificates(tmp_path))
    patched = apply_patch(configuration, webhook_ca_patch(configuration, bundle))
    assert patched["webhooks"] and all(w["clientConfig"]["caBundle"] == bundle for w in patched["webhooks"])


async def test_patch_webhook_configurations_through_the_api(
    tmp_path: Path, aiohttp_server_factory: Any
) -> None:
    stored = {
        ("mutatingwebhookconfigurations", "kueue-webhook-mutating"): yaml.safe_load(
            (MANIFESTS / "mutatingwebhookconfiguration.yaml").read_text()
        ),
        ("validatingwebhookconfigurations", "kueue-webhook-validating"): yaml.safe_load(
            (MANIFESTS / "validatingwebhookconfiguration.yaml").read_text()
        ),
    }
    content_types: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        key = (request.match_info["plural"], request.match_info["name"])
        if key not in stored:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        if request.method == "PATCH":
            content_types.append(request.content_type)
            stored[key] = apply_patch(stored[key], await request.json())
        return web.json_response(stored[key])

    app = web.Application()
    app.router.add_route("*", "/apis/admissionregistration.k8s.io/v1/{plural}/{name}", handle)
    server = await aiohttp_server_factory(app)
    kubeconfig = plain_http_kubeconfig(tmp_path, server.port)
    bundle = ca_bundle(ensure_certificates(tmp_path / "certs"))
    lines = await patch_webhook_configurations(
        bundle,
        mutating=["kueue-webhook-mutating"],
        validating=["kueue-webhook-validating"],
        kubeconfig=str(kubeconfig),
    )
    assert content_types == ["application/json-patch+json"] * 2
    for configuration in stored.values():
        assert all(w["clientConfig"]["caBundle"] == bundle for w in configuration["webhooks"])
    assert lines[0] == "MutatingWebhookConfiguration kueue-webhook-mutating: caBundle set on 3 webhook(s)"
    assert lines[1].startswith("ValidatingWebhookConfiguration kueue-webhook-validating: caBundle set on ")


async def test_patch_sets_the_conversion_webhook_ca_bundle_of_the_kueue_crds(
    tmp_path: Path, aiohttp_server_factory: Any
) -> None:
    crds = {
        path.name: yaml.safe_load(path.read_text()) for path in (MANIFESTS.parent / "crds").glob("*s.yaml")
    }
    stored = {crd["metadata"]["name"]: crd for crd in crds.values()}
    assert set(stored) == set(KUEUE_CRDS)

    async def handle(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if request.method == "PATCH":
            stored[name] = apply_patch(stored[name], await request.json())
        return web.json_response(stored[name])

    async def no_webhooks(request: web.Request) -> web.Response:
        return web.json_response({"webhooks": []})

    app = web.Application()
    app.router.add_route("*", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", handle)
    app.router.add_route("*", "/apis/admissionregistration.k8s.io/v1/{plural}/{name}", no_webhooks)
    server = await aiohttp_server_factory(app)
    kubeconfig = plain_http_kubeconfig(tmp_path, server.port)
    bundle = ca_bundle(ensure_certificates(tmp_path / "certs"))
    lines = await patch_webhook_configurations(
        bundle, mutating=[], validating=[], crds=KUEUE_CRDS, kubeconfig=str(kubeconfig)
    )
    for crd in stored.values():
        client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client == {"service": client["service"], "caBundle": bundle}
        assert client["service"]["path"] == "/convert"
    assert lines == [
        f"CustomResourceDefinition {name}: conversion webhook caBundle set" for name in KUEUE_CRDS
    ]


def shipped_apiservice(path: Path) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "APIService")


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (MANIFESTS / "visibility.yaml", "APIService v1beta2.visibility.kueue.x-k8s.io: caBundle set"),
        (MANIFESTS / "local" / "visibility.yaml", "not verified (insecureSkipTLSVerify)"),
        (None, "APIService v1beta2.visibility.kueue.x-k8s.io: not installed"),
    ],
)
async def test_patch_sets_the_visibility_apiservice_ca_bundle_where_it_is_verified(
    tmp_path: Path, aiohttp_server_factory: Any, manifest: Path | None, expected: str
) -> None:
    """The shipped APIService is verified and gets the bundle; the out-of-cluster one skips verification
    (kube-apiserver refuses a caBundle beside insecureSkipTLSVerify) and is left alone; none is no error."""
    stored = {} if manifest is None else {"v1beta2.visibility.kueue.x-k8s.io": shipped_apiservice(manifest)}
    original = yaml.safe_dump(stored)

    async def handle(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in stored:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        if request.method == "PATCH":
            stored[name] = apply_patch(stored[name], await request.json())
        return web.json_response(stored[name])

    app = web.Application()
    app.router.add_route("*", "/apis/apiregistration.k8s.io/v1/apiservices/{name}", handle)
    server = await aiohttp_server_factory(app)
    bundle = ca_bundle(ensure_certificates(tmp_path / "certs"))
    [line] = await patch_webhook_configurations(
        bundle,
        mutating=[],
        validating=[],
        apiservices=VISIBILITY_APISERVICES,
        kubeconfig=str(plain_http_kubeconfig(tmp_path, server.port)),
    )
    assert expected in line
    if manifest == MANIFESTS / "visibility.yaml":
        assert stored["v1beta2.visibility.kueue.x-k8s.io"]["spec"]["caBundle"] == bundle
    else:
        assert yaml.safe_dump(stored) == original


@pytest.fixture
async def aiohttp_server_factory() -> Any:
    runners: list[web.AppRunner] = []

    class Started:
        def __init__(self, port: int) -> None:
            self.port = port

    async def start(app: web.Application) -> Started:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return Started(int(runner.addresses[0][1]))

    yield start
    for runner in runners:
        await runner.cleanup()


def test_secret_manifest_names_and_namespace_are_configurable(tmp_path: Path) -> None:
    manifest = secret_manifest(ensure_certificates(tmp_path), name="tls", namespace="ops")
    assert (manifest["metadata"]["name"], manifest["metadata"]["namespace"]) == ("tls", "ops")
