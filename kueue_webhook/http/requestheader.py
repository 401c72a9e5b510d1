"""The front proxy's requestheader settings, read from ``kube-system/extension-apiserver-authentication`` and
read again every ``interval`` seconds, as k8s.io/apiserver keeps them current from the same ConfigMap.

kube-apiserver publishes its ``--requestheader-*`` flags there; reading it needs ``get`` on that one
ConfigMap, which Kubernetes' Role ``extension-apiserver-authentication-reader`` in ``kube-system`` grants (the
manifests bind it to the controller). Each new CA is handed to ``trust`` (the TLS context then asks clients
for a certificate and verifies one against it) and the settings to ``auth``. A ConfigMap that cannot be read
or parsed leaves the settings in force as they were, and the log says why; before the first good read no
front proxy is believed and the visibility API answers 401 through the aggregator.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.front_proxy import (
    CONFIGMAP_NAME,
    CONFIGMAP_NAMESPACE,
    RequestHeaderError,
    parse_settings,
)

__all__ = ["CONFIGMAP_PATH", "RequestHeaderSource"]

log = logging.getLogger("kueue_webhook.auth")
CONFIGMAP_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps/{CONFIGMAP_NAME}"


class ConfigMapClient(Protocol):
    async def request(self, method: str, path: str, *, timeout: float = ...) -> dict[str, Any]: ...


class RequestHeaderSource:
    def __init__(
        self,
        client: ConfigMapClient,
        auth: HttpsAuth,
        trust: Callable[[bytes], None],
        *,
        interval: float = 10.0,
    ) -> None:
        self.client = client
        self.auth = auth
        self.trust = trust
        self.interval = interval
        #: set after every read that changed the settings (tests await it)
        self.changed = asyncio.Event()
        self._data: dict[str, str] | None = None

    async def load(self) -> bool:
        """Read the ConfigMap once; True when the settings changed."""
        try:
            configmap = await self.client.request("GET", CONFIGMAP_PATH, timeout=10.0)
        except Exception as exc:  # keep what is in force: a later read may succeed
            log.warning(
                "requestheader settings not read; the front proxy is believed as before",
                extra={"configmap": f"{CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}", "error": repr(exc)},
            )
            return False
        data = {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}
        if data == self._data:
            return False
        try:
            settings = parse_settings(data)
        except RequestHeaderError as exc:
            log.warning(
                "requestheader settings unusable, keeping the current ones", extra={"error": str(exc)}
            )
            return False
        self._data = data
        if settings is not None and (
            self.auth.settings is None or settings.ca_pem != self.auth.settings.ca_pem
        ):
            self.trust(settings.ca_pem)
        self.auth.settings = settings
        log.info(
            "requestheader settings loaded",
            extra={
                "client_ca": settings is not None,
                "allowed_names": sorted(settings.allowed_names) if settings else [],
            },
        )
        self.changed.set()
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.load()
