"""A throwaway CA and serving certificate for 127.0.0.1, made once per process.

kubectl will not send a bearer token over plain HTTP (verified with v1.32: the Authorization header is simply
omitted), so the fake serves HTTPS and writes its CA into every kubeconfig. Generation uses an EC P-256 key
(milliseconds, unlike RSA) and is cached, keeping fixture start-up far under a second.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class ServingMaterial:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    directory: Path

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.crt"

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.directory / "tls.crt", self.directory / "tls.key")
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@lru_cache(maxsize=1)
def serving_material() -> ServingMaterial:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("fake-kube-apiserver-ca"))
        .issuer_name(_name("fake-kube-apiserver-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory = Path(tempfile.mkdtemp(prefix="fakeapi-tls-"))
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (directory / "ca.crt").write_bytes(ca_pem)
    (directory / "tls.crt").write_bytes(cert_pem + ca_pem)
    (directory / "tls.key").write_bytes(key_pem)
    return ServingMaterial(ca_pem=ca_pem, cert_pem=cert_pem, key_pem=key_pem, directory=directory)
