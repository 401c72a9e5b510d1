"""A replica's leadership terms: what starts when it wins the Lease and stops, at once, when it loses it.

Winning rebuilds the core from the store and queues every Job, so whatever a previous leader left half
done (a Workload admitted whose Job is still suspended) is finished first; that start reads each Workload
once, in slices that leave the event loop its turns (``_open_term``), so that the Lease is renewed however
long it takes. Losing cancels every writing task synchronously, before any of them can resume, and
rebuilds the standby's queues (``queues_mirror``) that the visibility API reads while this replica does
not lead. The ``Controller`` wires the pieces a term starts and stops; this is the order they go in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.control.cache.store import Change, Store
from kueue_webhook.control.cache.store_pass import store_pass
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import LeaderElector
from kueue_webhook.control.multikueue.checks import MultiKueueChecks
from kueue_webhook.control.multikueue.clusters import WorkerConnections
from kueue_webhook.control.multikueue.dispatcher import MultiKueueDispatcher
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.replica.cert_rotation import CertificateRotation
from kueue_webhook.control.replica.declared_webhooks import DeclaredWebhooks
from kueue_webhook.control.scheduling.admission_checks_controller import AdmissionChecksController
from kueue_webhook.control.scheduling.admission_sampling import AdmissionUsageSampler
from kueue_webhook.control.scheduling.execution_limits import ExecutionTimeLimits
from kueue_webhook.control.scheduling.fair_sharing_reporter import FairSharingReporter
from kueue_webhook.control.scheduling.pods_ready_timers import PodsReadyTimers
from kueue_webhook.control.scheduling.queue_status_reporter import QueueStatusReporter
from kueue_webhook.control.scheduling.retention import WorkloadRetention
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.control.topology.node_failures import NodeFailures
from kueue_webhook.control.topology.ungater import TopologyUngater
from kueue_webhook.core.scheduler import SchedulerState

log = logging.getLogger("kueue_webhook.controller")


class LeadershipTerm:
    """Starts and stops a leadership term; ``Controller`` builds every piece named here and extends this."""

    identity: str
    metrics: Metrics
    store: Store
    elector: LeaderElector | None
    configuration: Callable[[], Configuration]
    scheduler: SchedulerLoop
    queues_mirror: SchedulerLoop
    reconciler: JobReconciler
    pods_ready: PodsReadyTimers
    execution_limits: ExecutionTimeLimits
    retention: WorkloadRetention
    status: QueueStatusReporter
    checks: AdmissionChecksController
    fair_sharing: FairSharingReporter
    admission_sampler: AdmissionUsageSampler
    ungater: TopologyUngater
    node_failures: NodeFailures
    worker_clusters: WorkerConnections
    multikueue_checks: MultiKueueChecks
    multikueue: MultiKueueDispatcher
    declared_webhooks: DeclaredWebhooks
    cert_rotation: CertificateRotation
    synced: asyncio.Event
    leading: asyncio.Event
    following: asyncio.Event
    term_open: asyncio.Event
    _leader_tasks: list[asyncio.Task[Any]]
    _mirror_rebuild: asyncio.Task[None] | None
    _mirror_whole: bool
    slice_clock: Callable[[], float]

    def _leadership_changed(self, leading: bool) -> None:
        self.metrics.role = "leader" if leading else "follower"
        if not leading:
            self.metrics.forget_role("leader")
        if leading:
            self._start_leading()
        else:
            self._stop_leading()

    def _start_leading(self) -> None:
        if self.leading.is_set():
            return
        self.leading.set()
        self.following.clear()
        self._stop_mirror_rebuild()
        log.info("leading: scheduling term starting", extra={"identity": self.identity})
        self._leader_tasks = [asyncio.get_running_loop().create_task(self._open_term(), name="term-start")]

    async def _open_term(self) -> None:
        """``_start_term``; a start that fails steps down (said once, with its cause), so that the next
        tick starts a whole term again instead of leaving a leader that never schedules."""
        try:
            await self._start_term()
        except Exception:
            log.exception("leading: the scheduling term could not start; stepping down")
            if self.elector is not None:
                self.elector.step_down()
            else:
                self._stop_leading()

    async def _start_term(self) -> None:
        """Rebuild the core and queue everything a previous leader may have left half done, then start the
        term's tasks.

        Every Workload is read once and handed to the core and to each controller that looks for work in it
        (``store_pass``), in slices that give the event loop its turns: a start with tens of thousands of
        Workloads takes seconds of CPU, and the Lease must be renewed meanwhile. Store changes arriving
        during the pass reach the same consumers through their listeners (this replica leads already), so
        nothing is missed; the scheduler makes no decision before the core holds every admitted Workload.
        Cancelled with the term, like any of its tasks.
        """
        started = time.monotonic()
        self.scheduler.begin_rebuild()
        self.checks.resync_checks()
        self.node_failures.resync_nodes()
        self.multikueue_checks.resync()
        for kind, consume in self.reconciler.resync_consumers():
            await store_pass(self.store, kind, (consume,), clock=self.slice_clock)
        workloads = await store_pass(
            self.store,
            WORKLOADS,
            (
                self.scheduler.rebuild_workload,
                self.reconciler.resync_workload,
                self.pods_ready.resync_workload,
                self.execution_limits.resync_workload,
                self.retention.resync_workload,
                self.checks.resync_workload,
                self.ungater.resync_workload,
                self.node_failures.resync_workload,
                self.multikueue.resync_workload,
            ),
            clock=self.slice_clock,
        )
        self.scheduler.end_rebuild()
        self.queues_mirror.state = SchedulerState()  # the scheduler's own queues answer from now on
        self._mirror_whole = False
        self._apply_fair_sharing(self.configuration())
        self.status.mark_all()
        self.fair_sharing.mark_all()
        loop = asyncio.get_running_loop()
        self._leader_tasks += [
            loop.create_task(self.scheduler.run(), name="scheduler-loop"),
            loop.create_task(self.reconciler.run(), name="job-reconciler"),
            loop.create_task(self.pods_ready.run(), name="pods-ready-timers"),
            loop.create_task(self.execution_limits.run(), name="execution-time-limits"),
            loop.create_task(self.retention.run(), name="workload-retention"),
            loop.create_task(self.status.run(), name="queue-status"),
            loop.create_task(self.checks.run(), name="admission-checks"),
            loop.create_task(self.worker_clusters.run(), name="multikueue-clusters"),
            loop.create_task(self.multikueue_checks.run(), name="multikueue-checks"),
            loop.create_task(self.fair_sharing.run(), name="fair-sharing"),
            loop.create_task(self.admission_sampler.run(), name="admission-fair-sharing"),
            loop.create_task(self.ungater.run(), name="topology-ungater"),
            loop.create_task(self.node_failures.run(), name="topology-node-failures"),
            loop.create_task(self.declared_webhooks.run(), name="declared-webhooks"),
            loop.create_task(self.cert_rotation.run(), name="certificate-rotation"),
            loop.create_task(self.multikueue.run(), name="multikueue-dispatch"),
        ]
        self.term_open.set()
        log.info(
            "leading: scheduling task started",
            extra={
                "identity": self.identity,
                "workloads": workloads,
                "start_seconds": round(time.monotonic() - started, 3),
            },
        )

    def _stop_leading(self, *, shutting_down: bool = False) -> None:
        if not self.leading.is_set():
            return
        self.leading.clear()  # every write path checks this before writing: admitting stops now
        self.following.set()
        self.term_open.clear()
        self.scheduler.abandon_writes()  # its write tasks are its own: cancel them before any resumes
        for task in self._leader_tasks:
            task.cancel()
        self._leader_tasks = []
        if not shutting_down:  # the visibility API reads the standby's queues once they are rebuilt
            self._mirror_whole = False
            self._mirror_rebuild = asyncio.get_running_loop().create_task(
                self._rebuild_mirror(), name="queues-mirror-rebuild"
            )
        log.info("lost leadership: scheduling task stopped", extra={"identity": self.identity})

    async def _rebuild_mirror(self) -> None:
        """The standby's queues from the store, in slices (as a term's start reads it): a replica that
        just lost the Lease must be ready to campaign again on time, not busy for seconds."""
        try:
            await self.queues_mirror.rebuild_gradually(clock=self.slice_clock)
            self._configure_fair_sharing(self.queues_mirror.state, self.configuration())
            self._mirror_whole = True
        except Exception:  # the visibility API says to retry until a later rebuild; said once, with the cause
            log.exception("the standby's queues could not be rebuilt")
        finally:
            if self._mirror_rebuild is asyncio.current_task():  # not a later rebuild's
                self._mirror_rebuild = None

    def _stop_mirror_rebuild(self) -> None:
        if self._mirror_rebuild is not None:
            self._mirror_rebuild.cancel()
            self._mirror_rebuild = None

    def _while_following(self, change: Change) -> None:
        """The standby's queues follow store changes while this replica does not lead (before the first
        sync, the rebuild at sync feeds them everything at once)."""
        if not self.leading.is_set() and self.synced.is_set():
            self.queues_mirror.on_change(change)

    def _rearm_pods_ready(self, configuration: Configuration) -> None:
        """A new waitForPodsReady timeout moves every deadline: the timers are armed again from it."""
        if self.leading.is_set():
            self.pods_ready.resync()

    def _rearm_retention(self, configuration: Configuration) -> None:
        """A new ``objectRetentionPolicies`` moves every deletion: the timers are armed again from it."""
        if self.leading.is_set():
            self.retention.resync()

    def _apply_fair_sharing(self, configuration: Configuration) -> None:
        """``fairSharing`` in the ConfigMap takes effect live; a rebuilt core gets it before any cycle."""
        self._configure_fair_sharing(self.scheduler.state, configuration)
        self._configure_fair_sharing(self.queues_mirror.state, configuration)
        self.scheduler.kick()
        self.status.mark_all()
        self.fair_sharing.mark_all()

    @staticmethod
    def _configure_fair_sharing(state: SchedulerState, configuration: Configuration) -> None:
        fair = configuration.fair_sharing
        state.configure_fair_sharing(enabled=fair.enable, strategies=fair.preemption_strategies)
        state.configure_admission_fair_sharing(configuration.admission_fair_sharing)
