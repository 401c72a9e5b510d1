"""A front proxy's PKI for tests: a requestheader client CA, client certificates it issues, and the ConfigMap
``kube-system/extension-apiserver-authentication`` kube-apiserver would publish for it."""

from __future__ import annotations

import datetime as dt
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kueue_webhook.http.certs import generate_ca


@dataclass(frozen=True)
class ClientPair:
    cert: Path
    key: Path

    def context(self, server_ca: Path) -> ssl.SSLContext:
        """A client TLS context presenting this certificate and trusting ``server_ca``."""
        context = ssl.create_default_context(cafile=str(server_ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context

    def der(self) -> bytes:
        return x509.load_pem_x509_certificate(self.cert.read_bytes()).public_bytes(serialization.Encoding.DER)


class ProxyCA:
    """A CA that issues front-proxy client certificates into ``directory``."""

    def __init__(self, directory: Path, common_name: str = "front-proxy-ca") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.key, self.cert = generate_ca(common_name=common_name)
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self, common_name: str = "front-proxy-client", *, not_after: dt.datetime | None = None
    ) -> ClientPair:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(not_after or now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            # as kube-apiserver's front-proxy certificates name their CA's key: a rotated CA keeps its name
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.cert.public_key()),  # type: ignore[arg-type]
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        stem = self.directory / f"{common_name}-{cert.serial_number:x}"
        pair = ClientPair(Path(f"{stem}.crt"), Path(f"{stem}.key"))
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return pair


def requestheader_data(
    ca_pem: bytes, *, allowed_names: tuple[str, ...] = ("front-proxy-client",)
) -> dict[str, str]:
    """The ConfigMap's requestheader keys as kube-apiserver writes them (JSON lists)."""
    return {
        "requestheader-client-ca-file": ca_pem.decode(),
        "requestheader-allowed-names": json.dumps(list(allowed_names)),
        "requestheader-username-headers": json.dumps(["X-Remote-User"]),
        "requestheader-uid-headers": json.dumps(["X-Remote-Uid"]),
        "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
        "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
    }


def requestheader_configmap(ca_pem: bytes, **kwargs: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
        "data": requestheader_data(ca_pem, **kwargs),
    }
