"""One replica of the controller: informers and webhook view for everyone, the scheduling task for the leader.

Every replica watches the cluster (so each can answer admission reviews from a current view and take over
without a cold start, and a replica that does not lead answers the visibility API from a copy of the queues,
``queues_mirror``) but only the Lease holder writes. Leadership gates the writing tasks, started together
when the lease is won and cancelled together, synchronously, the moment it is lost: the scheduler loop,
the Job reconciler, the queue status reporter, the admission-check controller and the fair-sharing
reporter, the topology ungater and node-failure controller, and the upkeep of our own objects (declared
webhook entries, the serving certificate); and MultiKueue's worker connections (``worker_clusters``, the
``WorkerClusters`` the dispatcher reads: a replica that does not lead holds no worker client) with its
checks' ``Active`` condition. They share one ``ControlContext`` (store, writer, Events, metrics,
leadership, configuration), built here once, as are the informers and the store listeners. How a term
starts and stops is ``leadership_term``'s; the Lease's requests have connections of their own, never
queued behind writes.
Nothing leader-only runs before every informer has listed once, and nothing at all before the API server
has said who the controller is (``kueue_webhook.control.kube.identity``): the webhook trusts that user to
start queued Jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.config import CONFIGMAP_NAME, Configuration
from kueue_webhook.control.cache.informer import Informer
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.modes import mode_of
from kueue_webhook.control.jobs.owner_lookup import OwnerFetcher
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.kube.api_health import ApiHealth
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.identity import own_username
from kueue_webhook.control.kube.kinds import (
    BOUND_PODS,
    CONFIGMAPS,
    JOBS,
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    OPTIONAL_WATCHED,
    RESOURCE_CLAIM_TEMPLATES,
    SECRETS,
    WATCHED,
    Kind,
    dependency_kind,
    kind_of,
)
from kueue_webhook.control.kube.leader import LeaderElector
from kueue_webhook.control.multikueue.checks import MultiKueueChecks
from kueue_webhook.control.multikueue.clusters import (
    WorkerConnections,
)
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings, MultiKueueDispatcher
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.events import Recorder
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.milestones import FinishedWorkloads
from kueue_webhook.control.output.writers import Writer
from kueue_webhook.control.replica.cert_rotation import CertificateRotation
from kueue_webhook.control.replica.controller_settings import DEFAULT_SETTINGS, ControllerSettings
from kueue_webhook.control.replica.declared_webhooks import DeclaredWebhooks
from kueue_webhook.control.replica.leadership_term import LeadershipTerm
from kueue_webhook.control.replica.live_config import LiveConfiguration
from kueue_webhook.control.scheduling.admission_checks_controller import AdmissionChecksController
from kueue_webhook.control.scheduling.admission_sampling import AdmissionUsageSampler
from kueue_webhook.control.scheduling.execution_limits import ExecutionTimeLimits
from kueue_webhook.control.scheduling.fair_sharing_reporter import FairSharingReporter
from kueue_webhook.control.scheduling.pods_ready_timers import PodsReadyTimers
from kueue_webhook.control.scheduling.queue_status_reporter import QueueStatusReporter
from kueue_webhook.control.scheduling.retention import WorkloadRetention
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.control.scheduling.topology_feed import BOUND_PODS_SELECTOR, TopologyFeed
from kueue_webhook.control.topology.node_failures import NodeFailures
from kueue_webhook.control.topology.replacement import CoreReplacement
from kueue_webhook.control.topology.ungater import TopologyUngater
from kueue_webhook.control.topology.watch import TopologyWatch
from kueue_webhook.core.scheduler import SchedulerState

log = logging.getLogger("kueue_webhook.controller")
LEASE_NAME = "kueue-webhook-leader"
#: connections the Lease's requests have to themselves (a second one in case the first stalls)
LEASE_CONNECTIONS = 2


class Controller(LeadershipTerm):
    """Wire the pieces for one replica; ``run`` until cancelled."""

    def __init__(
        self,
        *,
        client: KubeClient,
        namespace: str,
        identity: str,
        settings: ControllerSettings = DEFAULT_SETTINGS,
        workers: WorkerClusters | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.identity = identity
        self.metrics = Metrics()
        self.store = Store()
        self.store.on_listener_error = lambda change, listener: self.metrics.store_listener_errors.labels(
            change.kind.kind, listener
        ).inc()
        self.health = ApiHealth()
        client.observe_write = self.health.observe
        self.elector: LeaderElector | None = None
        #: the Lease's requests have connections of their own: never queued behind the writes
        self.lease_client: KubeClient | None = None
        if settings.leader_election:
            self.lease_client = client.with_own_connections(LEASE_CONNECTIONS)
            self.elector = LeaderElector(
                client=self.lease_client,
                namespace=namespace,
                name=LEASE_NAME,
                identity=identity,
                lease_duration=settings.lease_duration,
                renew_deadline=settings.renew_deadline,
                retry_period=settings.retry_period,
                on_change=self._leadership_changed,
            )
        #: what only the leader may write goes through this view of the client: each write is sent only
        #: while the Lease is held by the clock at that moment (reads, watches and the Lease use ``client``)
        self.leader_client = client if self.elector is None else client.fenced(self.elector.fence)
        self.metrics.write_budget_rate.set_function(lambda: self.health.rate)
        self.recorder = Recorder(
            client=self.leader_client,
            instance=identity,
            budget=self.health,
            on_drop=self.metrics.events_dropped.inc,
        )
        self.live_config = LiveConfiguration(
            namespace=namespace,
            events=self.recorder,
            metrics=self.metrics,
            initial=Configuration(namespace=namespace),
            records_events=self.is_leader,
        )
        self.writer = Writer(client=self.leader_client, store=self.store, metrics=self.metrics)
        self.context = ControlContext(
            store=self.store,
            writer=self.writer,
            events=self.recorder,
            metrics=self.metrics,
            is_leader=self.is_leader,
            configuration=self.configuration,
            budget=self.health,
        )
        self.scheduler = SchedulerLoop(self.context)
        #: the pending queues of a replica that does not lead, for the visibility API: fed the same store
        #: changes as the scheduler's (its feeding only: it never runs a cycle nor writes), so every replica
        #: ranks the same store contents alike; emptied while leading, rebuilt when leadership is lost
        self.queues_mirror = SchedulerLoop(self.context)
        #: looks up owners the store does not watch, for the reconciler and the webhook alike
        self.owner_fetcher = OwnerFetcher(client)
        self.reconciler = JobReconciler(self.context, owners=self.owner_fetcher)
        # an admitted Job is started from its admission write's answer, in that write's task
        self.scheduler.start_admitted = self.reconciler.start_admitted
        self.pods_ready = PodsReadyTimers(self.context)
        self.execution_limits = ExecutionTimeLimits(self.context)
        self.retention = WorkloadRetention(self.context)
        interval, watch_timeout = settings.status_interval, settings.watch_timeout_seconds
        self.status = QueueStatusReporter(self.context, state=self._core, min_interval=interval)
        self.admission_sampler = AdmissionUsageSampler(
            self.configuration, self.scheduler.sample_admission_usage, self.status.mark_local_queues
        )
        self.checks = AdmissionChecksController(self.context, state=self._core)
        self.fair_sharing = FairSharingReporter(self.context, state=self._core, min_interval=interval)
        #: Nodes and the pods of topology-aware Workloads (a store of their own), the ungater placing those
        #: pods on their domains and the controller reacting to failed nodes
        #: nodes and bound pods, reduced to what topology-aware scheduling reads (not in the store); the
        #: Nodes come from the topology watch's informer, so they are listed and watched once
        self.topology_feed = TopologyFeed()
        self.topology = TopologyWatch(
            client, watch_timeout_seconds=settings.watch_timeout_seconds, node_sink=self.topology_feed
        )
        self.ungater = TopologyUngater(self.context, self.leader_client, self.topology)
        self.node_failures = NodeFailures(
            self.context,
            self.leader_client,
            self.topology,
            replacement=CoreReplacement(lambda: self.scheduler.state),
        )
        self.topology.subscribe(self.ungater.on_watch_change)
        self.topology.subscribe(self.node_failures.on_watch_change)
        #: MultiKueue: the worker clusters' connections (the ``WorkerClusters`` the dispatcher reads) and
        #: the Active condition of MultiKueue AdmissionChecks
        self.worker_clusters = WorkerConnections(
            self.context,
            namespace=namespace,
            path_prefix=settings.multikueue_kubeconfig_dir,
            retry_base=settings.multikueue_retry_base,
            retry_cap=settings.multikueue_retry_cap,
            file_poll=settings.multikueue_file_poll,
            fence=self.elector.fence if self.elector is not None else None,
        )
        self.multikueue_checks = MultiKueueChecks(self.context)
        self.live_config.subscribe(self.worker_clusters.reconfigure)
        #: the leader dispatches Workloads of ClusterQueues with a MultiKueue check to those workers (or to
        #: ``workers``, a stand-in for them)
        self._dispatch_settings = settings.multikueue
        self.multikueue = MultiKueueDispatcher(
            self.context,
            workers=workers if workers is not None else self.worker_clusters,
            settings=self.dispatch_settings,
        )
        self.live_config.subscribe(self.multikueue.reconfigure)
        self.informers = [
            Informer(client=client, kind=kind, sink=self.store, watch_timeout_seconds=watch_timeout)
            for kind in WATCHED
            if kind not in OPTIONAL_WATCHED
        ]
        self.scheduler.attach_topology(self.topology_feed)
        self.informers += [
            self.topology.node_informer,
            Informer(
                client=client,
                kind=BOUND_PODS,
                sink=self.topology_feed,
                field_selector=BOUND_PODS_SELECTOR,
                watch_timeout_seconds=watch_timeout,
            ),
        ]
        self.informers.append(
            Informer(
                client=client,
                kind=CONFIGMAPS,
                sink=self.store,
                namespace=namespace,
                field_selector=f"metadata.name={CONFIGMAP_NAME}",
                watch_timeout_seconds=watch_timeout,
            )
        )
        #: MultiKueue's kinds and the Secrets of our namespace (worker kubeconfigs), and the Topologies: not
        #: part of readiness, as their CRDs may be missing where MultiKueue or TAS is not used (or not yet:
        #: the Topology CRD after an upgrade from a version without it)
        self.optional_informers = [
            Informer(client=client, kind=kind, sink=self.store, watch_timeout_seconds=watch_timeout)
            for kind in (
                *sorted(OPTIONAL_WATCHED, key=WATCHED.index),
                MULTIKUEUE_CLUSTERS,
                MULTIKUEUE_CONFIGS,
            )
        ]
        self.optional_informers.append(
            Informer(
                client=client,
                kind=SECRETS,
                sink=self.store,
                namespace=namespace,
                watch_timeout_seconds=watch_timeout,
            )
        )
        #: informers of the enabled integrations' kinds (JobSet, RayJob, ...), started and stopped as the
        #: configuration turns integrations on and off; not part of readiness, as their CRDs may be missing
        self.integration_informers: dict[Kind, tuple[Informer, asyncio.Task[None]]] = {}
        self._watch_timeout = watch_timeout
        self._running = False
        self.store.subscribe(self.live_config.on_change)
        self.live_config.subscribe(self._watch_integrations)
        #: the leader keeps the webhook configurations listing the kinds declared in the ConfigMap
        self.declared_webhooks = DeclaredWebhooks(
            self.leader_client, lambda: self.configuration().integrations
        )
        self.live_config.subscribe(lambda _: self.declared_webhooks.request())
        #: the leader renews the serving certificate Secret and keeps the caBundles trusting its CA
        self.cert_rotation = CertificateRotation(
            self.leader_client, self.configuration, self.recorder, namespace=namespace
        )
        self.live_config.subscribe(lambda _: self.cert_rotation.request())
        self.live_config.subscribe(_apply_log_level)
        self.live_config.subscribe(self._apply_fair_sharing)
        self.live_config.subscribe(self.scheduler.apply_quota_check)
        self.live_config.subscribe(self.queues_mirror.apply_quota_check)
        self.live_config.subscribe(self.status.reconfigure)
        self.live_config.subscribe(self._rearm_pods_ready)
        self.live_config.subscribe(self._rearm_retention)
        self.live_config.subscribe(self.admission_sampler.reconfigure)
        self.leading = asyncio.Event()
        # each of the leader's consumers is its own listener, told changes only while this replica leads:
        # one that fails does not starve the others
        for handler in (
            self.scheduler.on_change,
            self.reconciler.on_change,
            self.pods_ready.on_change,
            self.execution_limits.on_change,
            self.retention.on_change,
            self.status.on_change,
            self.checks.on_change,
            self.fair_sharing.on_change,
            self.ungater.on_workload_change,
            self.node_failures.on_workload_change,
            self.worker_clusters.on_change,
            self.multikueue_checks.on_change,
            FinishedWorkloads(self.context).on_change,
        ):
            self.store.subscribe(handler, when=self.leading.is_set)
        self.store.subscribe(self.multikueue.on_change, when=self.leading.is_set)
        self.store.subscribe(self._while_following)
        self.synced = asyncio.Event()
        #: the complement of ``leading``, so both transitions can be awaited
        self.following = asyncio.Event()
        self.following.set()
        #: set once a term's start (``_open_term``) is over and its tasks run; cleared when it ends
        self.term_open = asyncio.Event()
        self._leader_tasks: list[asyncio.Task[Any]] = []
        #: the standby's queues being rebuilt after a term (None: done, or not needed)
        self._mirror_rebuild: asyncio.Task[None] | None = None
        #: whether the standby's queues hold every pending Workload (a rebuild cut short leaves them partial)
        self._mirror_whole = False
        #: what the passes over the store measure their slices with (a test's clock can stand in)
        self.slice_clock: Callable[[], float] = time.monotonic
        self.metrics.leader.set_function(lambda: 1.0 if self.leading.is_set() else 0.0)

    # -- read side (the webhook's callables) ------------------------------------------------------------

    def configuration(self) -> Configuration:
        return self.live_config.current

    def dispatch_settings(self) -> DispatchSettings:
        """The MultiKueue dispatch settings in force: the configuration's ``multiKueue`` (unless given)."""
        if self._dispatch_settings is not None:
            return self._dispatch_settings
        multi_kueue = self.configuration().multi_kueue
        return DispatchSettings(
            origin=multi_kueue.origin,
            worker_lost_timeout=multi_kueue.worker_lost_timeout_seconds,
            gc_interval=multi_kueue.gc_interval_seconds,
            dispatcher=multi_kueue.dispatcher_name,
            step_size=multi_kueue.incremental_step_size,
        )

    def is_leader(self) -> bool:
        return self.leading.is_set()

    def ready(self) -> bool:
        return all(
            self.store.is_synced((informer.kind,))
            if informer.sink is self.store
            else self.topology_feed.is_synced(informer.kind)  # Nodes and bound pods
            for informer in self.informers
        )

    def pending_queues(self) -> SchedulerState | None:
        """The visibility API's queues: the scheduler's while leading, the mirror's otherwise; None before
        the caches are synced (a partial list would rank Workloads wrongly)."""
        if self.term_open.is_set():
            return self.scheduler.state
        # while a term starts the mirror, no longer fed, still answers: behind by a few seconds, but whole
        return self.queues_mirror.state if self.synced.is_set() and self._mirror_whole else None

    def _core(self) -> SchedulerState:
        """The scheduler loop's scheduler state, as it is now (each leadership term rebuilds it)."""
        return self.scheduler.state

    def _watch_integrations(self, configuration: Configuration) -> None:
        """Watch every enabled integration's kind (Jobs are always watched); stop watching, and forget the
        objects of, kinds turned off. A kind whose CRD is missing is looked for again by its informer."""
        if not self._running:
            return
        # a Deployment has nothing to watch (its pods are queued one by one), a StatefulSet has its Workload
        wanted = {kind_of(i) for i in configuration.integrations if mode_of(i).has_objects} - {JOBS}
        # and what some of them read their pod sets from (a TrainJob's training runtimes)
        wanted |= {
            dependency_kind(d)
            for i in configuration.integrations
            if i.resolver is not None
            for d in i.resolver.dependencies
        }
        if configuration.device_class_mappings:  # DRA claims are counted from their templates
            wanted.add(RESOURCE_CLAIM_TEMPLATES)
        for kind in list(self.integration_informers):
            if kind not in wanted:
                _, task = self.integration_informers.pop(kind)
                task.cancel()
                self.store.retain_only(kind, set())
                log.info("integration off: kind no longer watched", extra={"kind": kind.kind})
        loop = asyncio.get_running_loop()
        for kind in sorted(wanted - set(self.integration_informers), key=lambda k: k.plural):
            # a watch's connection comes from the client's watch pool: the writes' pool does not shrink
            informer = Informer(
                client=self.client, kind=kind, sink=self.store, watch_timeout_seconds=self._watch_timeout
            )
            task = loop.create_task(informer.run(), name=f"informer-{kind.plural}.{kind.group}")
            self.integration_informers[kind] = (informer, task)
            log.info("integration on: watching kind", extra={"kind": kind.kind, "group": kind.group})

    # -- running -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        # before any watch: a replica must know whom its webhook trusts before it can turn ready
        username = await own_username(self.client)
        if username is not None:
            self.live_config.trust_controller(username)
        loop = asyncio.get_running_loop()
        background = [
            loop.create_task(informer.run(), name=f"informer-{informer.kind.plural}")
            for informer in self.informers
        ]
        background.extend(
            loop.create_task(informer.run(), name=f"informer-{informer.kind.plural}")
            for informer in self.optional_informers
        )
        background.append(loop.create_task(self.recorder.run(), name="events"))
        # not part of readiness: a cluster without topology-aware Workloads needs no list of their pods (the
        # Node informer, shared with the feed, is among ``self.informers``)
        background.append(loop.create_task(self.topology.pod_informer.run(), name="topology-pods"))
        self._running = True
        self._watch_integrations(self.configuration())
        try:
            await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
            if self.elector is not None:  # without one this replica leads at once: no mirror needed
                self.queues_mirror.rebuild()
                self._configure_fair_sharing(self.queues_mirror.state, self.configuration())
                self._mirror_whole = True
            self.synced.set()
            # Everything listed so far lives as long as its object does; moving it out of the collector's
            # reach keeps full collections (and their pauses) proportional to change, not to cluster size.
            gc.collect()
            gc.freeze()
            log.info("caches synced", extra={"kinds": [i.kind.kind for i in self.informers]})
            if self.elector is None:
                self._leadership_changed(True)
                await asyncio.Event().wait()
            else:
                await self.elector.run()  # calls _leadership_changed on every transition
        finally:
            self._stop_leading(shutting_down=True)
            self._stop_mirror_rebuild()
            self._running = False
            background.extend(task for _, task in self.integration_informers.values())
            self.integration_informers.clear()
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.lease_client is not None:
                await self.lease_client.close()


def _apply_log_level(configuration: Configuration) -> None:
    """``logLevel`` in the ConfigMap takes effect live, like every other field; without it (or once it is
    removed) the level given on the command line stands: the package's logger defers to the root logger's."""
    level = configuration.log_level
    logging.getLogger("kueue_webhook").setLevel(level.upper() if level else logging.NOTSET)
