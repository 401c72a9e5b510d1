"""No credential reaches a log line or an error message, and key material spilled to disk is private and
short-lived.

The secrets below are what a real run carries: a bearer token in the request headers aiohttp keeps in its
exceptions, a proxy password in the proxy URL and in aiohttp's ``BasicAuth``, a service account JWT, a
kubeconfig whose malformed line sits next to its token, inline client keys written to a temp file for ssl.
"""

from __future__ import annotations

import base64
import io
import logging
import ssl
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from kueue_webhook.control.kube import connection
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.connection import resolve
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.kubeconfig import KubeconfigError
from kueue_webhook.http import tls
from kueue_webhook.http.certs import ensure_certificates
from kueue_webhook.logs import RedactSecrets, redact
from kueue_webhook.runtime import JsonFormatter
from tests.unit.control.kubeconfigs import write

TOKEN = "s3cr3t-t0ken-value"
PROXY_PASSWORD = "hunter2-proxy"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLWJ5dGVz"


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """The process's handler as ``serve`` sets it up (JSON lines, secrets redacted), writing here."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("kueue_webhook.test_secrets")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        logger.removeHandler(handler)


def response_error() -> aiohttp.ClientResponseError:
    """What aiohttp raises for a proxy refusing the tunnel: its repr prints the request's headers."""
    url = URL("https://10.0.0.1:6443/apis/kueue.x-k8s.io/v1beta2/workloads")
    headers = CIMultiDictProxy(
        CIMultiDict(
            {
                "Authorization": f"Bearer {TOKEN}",
                "Proxy-Authorization": "Basic "
                + base64.b64encode(f"alice:{PROXY_PASSWORD}".encode()).decode(),
            }
        )
    )
    info = aiohttp.RequestInfo(url, "PATCH", headers, url)
    return aiohttp.ClientResponseError(info, (), status=407, message="Proxy Authentication Required")


def test_an_aiohttp_error_logged_in_every_way_carries_no_credential(log_lines: io.StringIO) -> None:
    exc = response_error()
    assert TOKEN in repr(exc)  # what would leak without the filter
    log = logging.getLogger("kueue_webhook.test_secrets")
    log.warning("lease request failed: %r", exc)
    log.warning("write failed", extra={"error": repr(exc), "errors": [repr(exc)], "raw": exc})
    try:
        raise exc
    except aiohttp.ClientResponseError:
        log.exception("crashed")
    text = log_lines.getvalue()
    assert TOKEN not in text
    assert base64.b64encode(f"alice:{PROXY_PASSWORD}".encode()).decode() not in text
    lines = [orjson.loads(line) for line in text.splitlines()]
    assert len(lines) == 3
    assert "Authorization': 'Bearer ***'" in lines[0]["msg"]  # still says what was there
    assert "407" in lines[1]["error"] and isinstance(lines[1]["errors"], list)
    assert "ClientResponseError" in lines[2]["exception"]


def test_proxy_credentials_tokens_in_urls_jwts_and_keys_are_redacted() -> None:
    connection_key = (
        f"ConnectionKey(host='10.0.0.1', proxy=URL('http://alice:{PROXY_PASSWORD}@proxy:3128'), "
        f"proxy_auth=BasicAuth(login='alice', password='{PROXY_PASSWORD}', encoding='latin1'))"
    )
    assert PROXY_PASSWORD not in redact(connection_key)
    assert "alice:***@proxy:3128" in redact(connection_key)
    assert redact(f"GET https://api/x?watch=true&access_token={TOKEN}&limit=5") == (
        "GET https://api/x?watch=true&access_token=***&limit=5"
    )
    assert JWT not in redact(f"token rejected: {JWT}")
    key = "-----BEGIN PRIVATE KEY-----\nMIIEv...\n-----END PRIVATE KEY-----"
    assert "MIIEv" not in redact(f"bad pair: {key}")
    assert redact("client-key-data: LS0tLS1CRUdJTi\ntoken: abc123") == "client-key-data: ***\ntoken: ***"
    assert redact("admitted team/w0 in cq") == "admitted team/w0 in cq"  # ordinary lines are untouched


async def test_a_real_proxy_connection_error_logged_whole_shows_no_proxy_password(
    log_lines: io.StringIO,
) -> None:
    """aiohttp's own error for an unreachable proxy, as the elector logs it (``%r``)."""
    client = KubeClient(host="http://127.0.0.1:9", proxy=f"http://alice:{PROXY_PASSWORD}@127.0.0.1:9")
    try:
        with pytest.raises(aiohttp.ClientError) as raised:
            await client.get(WORKLOADS, name="w", namespace="ns")
    finally:
        await client.close()
    logging.getLogger("kueue_webhook.test_secrets").warning("lease request failed: %r", raised.value)
    assert log_lines.getvalue()
    assert PROXY_PASSWORD not in log_lines.getvalue()


def test_a_malformed_kubeconfig_error_names_the_line_but_quotes_none_of_it(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\n"
        "users:\n"
        "- name: u\n"
        "  user:\n"
        f"    token: {TOKEN}\n"
        "    client-key-data: [unclosed\n"
        "contexts: []\n"
    )
    with pytest.raises(KubeconfigError) as raised:
        connection.load_selected([path], explicit=True)
    message = str(raised.value)
    assert TOKEN not in message and "unclosed" not in message
    assert message.startswith(f"{path}: cannot read kubeconfig: ")
    assert "line 7" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # nor in a traceback


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temp files go here, so the test sees every one made and that none is left."""
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    return spills


def inline_client_certificate(tmp_path: Path, *, key: bytes | None = None) -> Path:
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    return write(
        tmp_path,
        {
            "client-certificate-data": base64.b64encode(pki.cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(key or pki.key.read_bytes()).decode(),
        },
    )


async def test_inline_client_keys_are_written_0600_and_removed_once_loaded(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modes: dict[str, int] = {}
    load = connection._ssl_context

    def checking(**kwargs: object) -> object:
        cert = kwargs["cert"]
        assert isinstance(cert, tuple)
        for file in cert:
            modes[Path(file).name] = stat.S_IMODE(Path(file).stat().st_mode)
            modes["directory"] = stat.S_IMODE(Path(file).parent.stat().st_mode)
        return load(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(connection, "_ssl_context", checking)
    await resolve(str(inline_client_certificate(tmp_path)), environ={})
    assert modes == {"client.crt": 0o600, "client.key": 0o600, "directory": 0o700}
    assert list(private_tmp.iterdir()) == []


async def test_inline_client_keys_are_removed_when_they_cannot_be_loaded(
    tmp_path: Path, private_tmp: Path
) -> None:
    with pytest.raises(KubeconfigError, match="cannot load the certificates"):
        await resolve(str(inline_client_certificate(tmp_path, key=b"not a key")), environ={})
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("valid", [True, False])
def test_the_serving_key_snapshot_is_private_and_removed_whether_or_not_it_loads(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch, valid: bool
) -> None:
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    if not valid:
        pki.key.write_bytes(b"not a key")
    modes: dict[str, int] = {}
    check = tls.server_ssl_context

    def checking(cert: Path, key: Path) -> object:
        modes.update(key=stat.S_IMODE(key.stat().st_mode), directory=stat.S_IMODE(key.parent.stat().st_mode))
        return check(cert, key)

    monkeypatch.setattr(tls, "server_ssl_context", checking)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    reloader = tls.CertificateReloader(context=context, cert_file=pki.cert, key_file=pki.key)
    assert reloader.load_if_changed() is valid
    assert modes == {"key": 0o600, "directory": 0o700}
    assert list(private_tmp.iterdir()) == []
