"""The serving certificate, TLS 1.2 or newer, reloaded live.

The certificate and key are reloaded when their files change (a Secret volume update, ``kueue-webhook certs``
rotating them): the files are polled, the new pair is validated in a scratch context, and only a good pair is
loaded into the live context, so a half-written rotation never breaks handshakes.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import shutil
import ssl
import tempfile
from pathlib import Path
from typing import Any

from cryptography import x509

__all__ = ["CertificateReloader", "server_ssl_context"]

log = logging.getLogger("kueue_webhook.tls")


def server_ssl_context(cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]) -> ssl.SSLContext:
    """A TLS 1.2+ server context for the given PEM files (raises ssl.SSLError / OSError when unusable)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class CertificateReloader:
    """Keeps ``context`` loaded with the current contents of ``cert_file``/``key_file``.

    ``generation`` counts successful loads; ``changed`` is set after each one (tests and the readiness
    probe await it instead of sleeping); ``not_after`` is the expiry of the certificate in force.
    """

    def __init__(
        self,
        *,
        context: ssl.SSLContext,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        interval: float = 1.0,
    ) -> None:
        self.context = context
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.interval = interval
        self.generation = 0
        self.changed = asyncio.Event()
        self._stamp: tuple[Any, ...] | None = None
        self.not_after: datetime.datetime | None = None

    def _file_stamp(self) -> tuple[Any, ...]:
        stats = [path.stat() for path in (self.cert_file, self.key_file)]
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)

    def load_if_changed(self) -> bool:
        """Load the pair if the files changed and form a valid pair; True when a new pair is in force."""
        try:
            stamp = self._file_stamp()
        except OSError as exc:
            log.warning("serving certificate unreadable", extra={"error": str(exc)})
            return False
        if stamp == self._stamp:
            return False
        scratch = Path(tempfile.mkdtemp(prefix="kueue-webhook-tls-"))
        try:
            # snapshot both files first so the pair validated is the pair loaded, even mid-rotation
            cert_copy, key_copy = scratch / "tls.crt", scratch / "tls.key"
            cert_copy.write_bytes(self.cert_file.read_bytes())
            key_copy.touch(mode=0o600)
            key_copy.write_bytes(self.key_file.read_bytes())
            server_ssl_context(cert_copy, key_copy)
            # the first certificate of the file is the one presented (load_cert_chain's rule)
            not_after = x509.load_pem_x509_certificate(cert_copy.read_bytes()).not_valid_after_utc
            self.context.load_cert_chain(cert_copy, key_copy)
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.warning(
                "serving certificate not reloaded, keeping the current one", extra={"error": str(exc)}
            )
            return False
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self._stamp = stamp
        self.not_after = not_after
        self.generation += 1
        log.info(
            "serving certificate loaded",
            extra={"cert_file": str(self.cert_file), "generation": self.generation},
        )
        self.changed.set()
        return True

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.load_if_changed()
