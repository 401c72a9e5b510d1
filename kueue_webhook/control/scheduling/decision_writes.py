"""The scheduler loop's write side: each decision of a cycle becomes a Workload status write of its own.

A cycle does not wait for the API (``scheduler_loop``): the core charges an admission's quota at once and
the write runs here as a task, at most ``DECISION_WRITES_IN_FLIGHT`` at a time. A write that fails, is
refused, or is no longer ours to send (leadership lost) hands the decision back to the core (``forget``,
``eviction_failed``) and kicks the loop, so the quota returns and the Workload is decided again; the
tasks are cancelled together the moment leadership is lost. Kept apart from the cycle driver so each reads
as one concern: when to decide, and how a decision reaches the API server. An admission's task goes on to
start the admitted Job from the write's answer (``start_admitted``, the job reconciler's) while a write slot
is free, so the Job's start waits for no other task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.pods_ready import BLOCKED_MESSAGE, WAITING_FOR_PODS_READY, tracks_pods_ready
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.admitted import record_admitted, record_quota_reserved
from kueue_webhook.control.output.conditions import admitted_status, evicted_status, now_rfc3339
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.scheduling.evictions import (
    counted_as,
    deactivate,
    evicted_condition,
    record_eviction,
)
from kueue_webhook.control.scheduling.pending_conditions import PendingConditions
from kueue_webhook.core.decisions import Wait
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.scheduler")
#: decision writes (admissions, evictions, pending reasons) in flight at once
DECISION_WRITES_IN_FLIGHT = 16


class DecisionWrites:
    """Writes a cycle's decisions and keeps their tasks; ``SchedulerLoop`` sets these up and runs cycles."""

    context: ControlContext
    store: Store
    state: SchedulerState
    pending: PendingConditions
    admitted: int
    on_admitted: list[Callable[[str], None]]
    _kick: asyncio.Event
    _slots: asyncio.Semaphore
    _tasks: set[asyncio.Task[None]]
    #: Workloads whose admission write is in flight (blockAdmission counts them as not ready)
    _admitting: set[str]
    #: the ``status.admission`` of each admission write in flight, by Workload (its answer needs no parse)
    _written_admissions: dict[str, JSON]
    #: starts the object of a Workload from its admission write's answer, in that write's task (the job
    #: reconciler's ``start_admitted``); None leaves it to the reconciler's workers
    start_admitted: Callable[[JSON], Awaitable[None]] | None = None

    def kick(self) -> None:
        self._kick.set()

    def abandon_writes(self) -> None:
        """Cancel every decision write in flight, now: called the moment leadership is lost, before any of
        them can resume. A request already on the wire cannot be recalled, but none goes on to a retry or a
        follow-up write (a deactivation after an eviction), and the slots it held are not handed on."""
        for task in list(self._tasks):
            task.cancel()

    def _blocks_admission(self) -> bool:
        config = self.context.configuration().wait_for_pods_ready
        return config.enable and config.block_admission

    async def _tell_blocked(self, decision: Admit) -> None:
        """blockAdmission blocked this admission: the Workload is told why, as Kueue's scheduler says while
        it waits (QuotaReserved=False WaitingForPodsReady)."""
        await self.pending.write(
            Wait(decision.workload, decision.cluster_queue, WAITING_FOR_PODS_READY, BLOCKED_MESSAGE),
            at_once=True,  # not the core's decision: the paced pass would not know it
        )

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()
        if not task.cancelled() and task.exception() is not None:
            log.error("decision write crashed", extra={"error": repr(task.exception())})

    @property
    def in_flight(self) -> int:
        """Decision writes still running."""
        return len(self._tasks)

    async def wait_writes(self) -> None:
        """Until every decision write in flight has finished (tests, orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _admit(self, decision: Admit) -> None:
        try:
            await self._admit_one(decision)
        finally:
            self._admitting.discard(str(decision.workload))
            if self._blocks_admission():
                self.kick()  # blockAdmission re-reads the store now that the write has landed (or failed)

    async def _admit_one(self, decision: Admit) -> None:
        key = str(decision.workload)
        self.pending.forget(key)
        namespace, _, name = key.partition("/")
        workload = self.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            self.state.forget(key)
            return
        admission = decision.admission.to_dict()

        checks = decision.admission_checks
        pods_ready = tracks_pods_ready(
            workload,
            self.context.configuration().wait_for_pods_ready,
            self.context.configuration().pods_ready_kinds(),
        )

        def build(current: JSON) -> JSON | None:
            if not self.context.is_leader() or has_quota_reservation(current) or is_true(current, "Finished"):
                return None
            if is_deleting(current):  # deleted since the cycle decided: it is on its way out
                return None
            return admitted_status(
                current,
                admission=admission,
                now=now_rfc3339(),
                admission_checks=checks,
                pods_ready=pods_ready,
            )

        self._written_admissions[key] = admission
        try:
            updated = await self._write_decision(
                key,
                workload,
                build,
                what="admission",
                landed=has_quota_reservation,
                undo=self.state.forget,
            )
        finally:
            self._written_admissions.pop(key, None)
        if updated is not None:
            self._record_admission(updated, decision)
            if self.start_admitted is not None and not self._slots.locked():
                # from here, unless every write slot is taken (a burst): then the reconciler's workers
                # start it, and the slot goes back to the admissions waiting for it
                await self.start_admitted(updated)

    async def _write_decision(
        self,
        key: str,
        workload: JSON,
        build: Callable[[JSON], JSON | None],
        *,
        what: str,
        landed: Callable[[JSON], bool],
        undo: Callable[[str], None],
    ) -> JSON | None:
        """Write a decision into the Workload's status; the updated Workload, or None when nothing was
        written. A write that failed, or that ``build`` declined while the store does not show the decision
        ``landed`` (by an earlier write of ours, say), is handed back to the core with ``undo`` and the loop
        kicked, so the quota it charged returns and the workload is decided again."""
        try:
            updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        except NotLeader:  # not sent (said once, by the elector): the core forgets it, as for a failure
            undo(key)
            self.kick()
            return None
        except Exception as exc:
            log.warning(f"{what} write failed", extra={"workload": key, "error": repr(exc)})
            undo(key)
            self.kick()
            return None
        if updated is None:
            namespace, _, name = key.partition("/")
            current = self.store.get(WORKLOADS, name, namespace)
            if current is None or not landed(current):
                undo(key)
                self.kick()
        return updated

    def _record_admission(self, workload: JSON, decision: Admit) -> None:
        self.admitted += 1
        key = str(decision.workload)
        cluster_queue = decision.cluster_queue
        record_quota_reserved(self.context, workload, cluster_queue=cluster_queue)
        if not decision.admission_checks:  # with checks, Admitted comes when they are all Ready
            record_admitted(self.context, workload, cluster_queue=cluster_queue, since_reservation=0.0)
        log.info("admitted", extra={"workload": key, "cluster_queue": cluster_queue, "decision": "admit"})
        for callback in self.on_admitted:
            callback(key)

    async def _evict(self, decision: Evict) -> None:
        """Evicted=True (and Preempted=True); the reconciler then stops the Job and clears the reservation,
        which is when the core releases the quota."""
        key = str(decision.workload)
        namespace, _, name = key.partition("/")
        workload = self.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            self.state.eviction_failed(key)
            return

        def build(current: JSON) -> JSON | None:
            if (
                not self.context.is_leader()
                or not has_quota_reservation(current)
                or is_true(current, "Finished")
            ):
                return None
            if is_true(current, "Evicted"):
                return None
            reason, message = evicted_condition(decision)
            return evicted_status(
                current,
                reason=reason,
                message=message,
                preemption_reason=decision.preemption_reason,
                now=now_rfc3339(),
                counted_as=counted_as(decision),
            )

        updated = await self._write_decision(
            key,
            workload,
            build,
            what="eviction",
            landed=lambda current: is_true(current, "Evicted"),
            undo=self.state.eviction_failed,
        )
        if updated is None:
            return
        record_eviction(self.context, self.state, updated, decision)
        if decision.deactivate:
            await deactivate(self.context, updated, key)
        log.info(
            "evicted",
            extra={
                "workload": key,
                "cluster_queue": decision.cluster_queue,
                "decision": "evict",
                "reason": decision.message,
            },
        )
