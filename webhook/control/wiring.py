"""What ``kueue-webhook serve`` runs, put together in one place: the API client, the controller on it, and the
admission webhook answering from the controller's view.

``serve`` builds its replica here from its arguments, and the integration and e2e harness
(``tests/e2e/support.py``) builds its replicas here too, so the tests run exactly the wiring production runs;
only the arguments differ (short lease timings, an ephemeral port, no webhook where a test needs none).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from webhook.control.controller import DEFAULT_SETTINGS, Controller, ControllerSettings
from webhook.control.kinds import WORKLOADS
from webhook.control.kube import KubeClient
from webhook.control.owner_lookup import AdmissionOwners, OwnerFetcher
from webhook.control.scheduler_loop import DECISION_WRITES_IN_FLIGHT
from webhook.http.app import create_app
from webhook.http.server import DEFAULT_PORT, WebhookServer
from webhook.http.visibility import Visibility

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


@dataclass(eq=False)
class Replica:
    """One replica: ``start`` it, ``stop`` it; ``running`` is the controller's task once started."""

    client: KubeClient
    controller: Controller
    #: None: the controller alone, with no webhook
    server: WebhookServer | None
    running: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The port the webhook listens on (the one the system chose, for port 0); 0 without a webhook."""
        return self.server.port if self.server is not None else 0

    async def start(self) -> asyncio.Task[None]:
        """Listen (raising if the serving certificate is unusable), then run the controller in a task."""
        if self.server is not None:
            await self.server.start()
        name = f"controller-{self.controller.identity}"
        self.running = asyncio.get_running_loop().create_task(self.controller.run(), name=name)
        return self.running

    async def stop(self) -> None:
        """Cancel the controller (a leader releases its Lease), then stop listening and close the client."""
        try:
            if self.running is not None:
                self.running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.running
        finally:
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
) -> Replica:
    """Connect as kubectl would (``KubeClient.connect``) and wire the controller and, with ``listen``, the
    webhook on the controller's store, configuration, metrics registry and readiness. Nothing runs yet."""
    client = await KubeClient.connect(kubeconfig=kubeconfig, context=context, connections=connections)
    controller = Controller(client=client, namespace=namespace, identity=identity, settings=settings)
    server = None
    if listen is not None:
        app = create_app(
            view=controller.store,
            config=controller.configuration,
            registry=controller.metrics.registry,
            ready=controller.ready,
            visibility=Visibility(
                scheduler=controller.leading_scheduler,
                workload=lambda namespace, name: controller.store.get(WORKLOADS, name, namespace),
                identity=identity,
            ),
            owners=AdmissionOwners(OwnerFetcher(client)).view_for,
        )
        server = WebhookServer(
            app, cert_file=listen.cert_file, key_file=listen.key_file, host=listen.host, port=listen.port
        )
    return Replica(client, controller, server)
