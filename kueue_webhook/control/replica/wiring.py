"""What ``kueue-webhook serve`` runs, put together in one place: the API client, the controller on it, and the
admission webhook answering from the controller's view.

``serve`` builds its replica here from its arguments, and the integration and e2e harness
(``tests/support/replica.py``) builds its replicas here too, so the tests run exactly the wiring production
runs; only the arguments differ (short lease timings, an ephemeral port, no webhook where a test needs none).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.jobs.owner_lookup import AdmissionOwners
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import DEFAULT_SETTINGS, ControllerSettings
from kueue_webhook.control.scheduling.decision_writes import DECISION_WRITES_IN_FLIGHT
from kueue_webhook.core.recent_decisions import RecentDecisions
from kueue_webhook.http.app import create_app, create_metrics_app
from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.dashboard import Dashboard
from kueue_webhook.http.requestheader import RequestHeaderSource
from kueue_webhook.http.reviews import Reviewer
from kueue_webhook.http.server import DEFAULT_PORT, PlainMetricsServer, WebhookServer
from kueue_webhook.http.visibility import Visibility

#: the request pool (watches have their own, a connection each): one connection per decision write in
#: flight, so an admission burst never waits for a connection. Kept to that for memory: more writes in flight
#: during a burst leave Python's allocator holding more memory for the same live data (the measurements are
#: in bench/baseline/README.md).
API_CONNECTIONS = DECISION_WRITES_IN_FLIGHT


@dataclass(frozen=True, slots=True)
class Listen:
    """Where the webhook listens, and the serving certificate it presents."""

    cert_file: Path
    key_file: Path
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    #: (host, port) of a plain-HTTP ``/metrics`` without authentication (``--metrics-bind-address``);
    #: None: only the HTTPS port's, which asks for a token
    metrics_address: tuple[str, int] | None = None


def https_auth(client: KubeClient) -> HttpsAuth:
    """The HTTPS port's guards, reviewing through ``client``: the visibility API with k8s.io/apiserver's
    default cache times (10 s each), ``/metrics`` with controller-runtime's metrics filter's (a token a
    minute, allowed 5 minutes, denied 30 s)."""
    return HttpsAuth(
        visibility=Reviewer(client, token_ttl=10.0, allow_ttl=10.0, deny_ttl=10.0),
        metrics=Reviewer(client, token_ttl=60.0, allow_ttl=300.0, deny_ttl=30.0),
    )


@dataclass(eq=False)
class Replica:
    """One replica: ``start`` it, ``stop`` it; ``running`` is the controller's task once started."""

    client: KubeClient
    controller: Controller
    #: None: the controller alone, with no webhook
    server: WebhookServer | None
    running: asyncio.Task[None] | None = None
    #: the front proxy's requestheader settings (with a webhook)
    requestheader: RequestHeaderSource | None = None
    #: ``/metrics`` over plain HTTP, when asked for
    plain_metrics: PlainMetricsServer | None = None
    _background: list[asyncio.Task[None]] | None = None

    @property
    def port(self) -> int:
        """The port the webhook listens on (the one the system chose, for port 0); 0 without a webhook."""
        return self.server.port if self.server is not None else 0

    async def start(self) -> asyncio.Task[None]:
        """Listen (raising if the serving certificate is unusable), then run the controller in a task."""
        loop = asyncio.get_running_loop()
        self._background = []
        if self.requestheader is not None:  # before listening: the aggregator's first call is believed
            await self.requestheader.load()
            self._background.append(loop.create_task(self.requestheader.run(), name="requestheader"))
        if self.server is not None:
            await self.server.start()
        if self.plain_metrics is not None:
            await self.plain_metrics.start()
        name = f"controller-{self.controller.identity}"
        self.running = loop.create_task(self.controller.run(), name=name)
        return self.running

    async def stop(self) -> None:
        """Cancel the controller (a leader releases its Lease), then stop listening and close the client."""
        try:
            if self.running is not None:
                self.running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.running
        finally:
            for task in self._background or []:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if self.plain_metrics is not None:
                await self.plain_metrics.stop()
            if self.server is not None:
                await self.server.stop()
            await self.client.close()


async def build(
    *,
    namespace: str,
    identity: str,
    kubeconfig: str | None = None,
    context: str | None = None,
    connections: int = API_CONNECTIONS,
    settings: ControllerSettings = DEFAULT_SETTINGS,
    listen: Listen | None = None,
    workers: WorkerClusters | None = None,
) -> Replica:
    """Connect as kubectl would (``KubeClient.connect``) and wire the controller and, with ``listen``, the
    webhook on the controller's store, configuration, metrics registry and readiness. Nothing runs yet."""
    client = await KubeClient.connect(kubeconfig=kubeconfig, context=context, connections=connections)
    controller = Controller(
        client=client, namespace=namespace, identity=identity, settings=settings, workers=workers
    )
    if listen is None:
        return Replica(client, controller, None)
    auth = https_auth(client)
    recent = RecentDecisions()

    def record(change: Change) -> None:  # every replica: the Workloads' conditions, not the leader's cycles
        if change.kind is WORKLOADS:
            recent.observe(change.old, change.new)

    controller.store.subscribe(record)

    def workload(namespace: str, name: str) -> dict[str, Any] | None:
        return controller.store.get(WORKLOADS, name, namespace)

    app = create_app(
        view=controller.store,
        config=controller.configuration,
        registry=controller.metrics.registry,
        ready=controller.ready,
        auth=auth,
        visibility=Visibility(scheduler=controller.pending_queues, workload=workload, identity=identity),
        dashboard=Dashboard(
            scheduler=controller.pending_queues,
            workload=workload,
            recent=recent.latest,
            leading=controller.is_leader,
            identity=identity,
        ),
        owners=AdmissionOwners(controller.owner_fetcher).view_for,
    )
    server = WebhookServer(
        app, cert_file=listen.cert_file, key_file=listen.key_file, host=listen.host, port=listen.port
    )
    plain_metrics = None
    if listen.metrics_address is not None:
        host, port = listen.metrics_address
        plain_metrics = PlainMetricsServer(
            create_metrics_app(controller.metrics.registry), host=host, port=port
        )
    return Replica(
        client,
        controller,
        server,
        requestheader=RequestHeaderSource(client, auth, server.trust_client_ca),
        plain_metrics=plain_metrics,
    )
