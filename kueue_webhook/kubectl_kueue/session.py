"""The connection of one ``kubectl kueue`` run: kubectl's kubeconfig rules, the project's own client.

Where the API server is and who we are come from ``kueue_webhook.control.kube.connection`` (``--kubeconfig``,
else
``$KUBECONFIG`` merged, else the pod's service account, else ``~/.kube/config``; ``--context``), the same
loader ``serve`` uses, and requests go through ``kueue_webhook.control.kube.client.KubeClient``. The
namespace is
kubectl's: ``-n``, else the selected context's ``namespace``, else the pod's own namespace in a pod, else
``default``. Errors are told as kubectl tells them: ``Error from server (NotFound): <the server's message>``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.connection import SERVICE_ACCOUNT, in_cluster
from kueue_webhook.control.kube.kubeconfig import KubeconfigError, load, load_selected, select, split_paths

__all__ = ["Session", "context_namespace", "describe_error"]


def context_namespace(
    kubeconfig: str | None,
    context: str | None,
    environ: Mapping[str, str] = os.environ,
    service_account: Path = SERVICE_ACCOUNT,
) -> str:
    """The namespace kubectl would use without ``-n``: the selected context's, else ``default``."""
    if kubeconfig:
        selected = load_selected([Path(kubeconfig)], explicit=True, context=context)
        return str(selected.context.body.get("namespace") or "default")
    listed = environ.get("KUBECONFIG", "")
    if listed:
        merged = load(split_paths(listed))
        if merged.files:
            return str(select(merged, context=context).context.body.get("namespace") or "default")
    if in_cluster(environ, service_account) is not None:
        own = service_account / "namespace"
        return own.read_text().strip() if own.exists() else "default"
    home = Path(environ.get("HOME") or Path.home()) / ".kube" / "config"
    if not home.exists():
        return "default"
    return str(load_selected([home], context=context).context.body.get("namespace") or "default")


def describe_error(exc: BaseException) -> str:
    """What kubectl prints for a failed request (without the trailing newline)."""
    if isinstance(exc, ApiError):
        if exc.reason:
            return f"Error from server ({exc.reason}): {exc.message}"
        return f"Error from server: {exc.message or exc.status}"
    if isinstance(exc, KubeconfigError):
        return f"error: {exc}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return (
            f"The connection to the server {exc.host}:{exc.port} was refused - "
            "did you specify the right host or port?"
        )
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return f"error: the server did not answer: {exc or type(exc).__name__}"
    return f"error: {exc}"


@dataclass
class Session:
    """A connected client and the namespace in effect."""

    client: KubeClient
    namespace: str
    #: whether -n/--namespace was given (kubectl's enforceNamespace)
    explicit_namespace: bool

    @classmethod
    async def open(cls, *, kubeconfig: str | None, context: str | None, namespace: str | None) -> Session:
        client = await KubeClient.connect(kubeconfig=kubeconfig, context=context, connections=4)
        chosen = namespace or context_namespace(kubeconfig, context)
        return cls(client, chosen, bool(namespace))

    async def close(self) -> None:
        await self.client.close()
