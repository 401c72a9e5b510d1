"""Admission checks on the controller side: the Workload's check list and Admitted condition, and the
built-in manual-approval check.

Two small duties share one work queue keyed by Workload, because both are re-derived from the same pair
(the Workload as the store shows it, the ClusterQueue's checks as the core knows them) and both end in
one status write:

* the workload side (Kueue's workload controller, ``reconcileSyncAdmissionChecks`` and
  ``SyncAdmittedCondition``): a Workload holding a reservation lists exactly its ClusterQueue's checks and
  is ``Admitted`` only when every one is ``Ready``
  (``kueue_webhook.control.output.conditions.checks_status``); the
  Job starts once Admitted, which the reconciler already waits for;
* the check side, for every AdmissionCheck whose ``spec.controllerName`` is
  ``kueue-webhook.io/manual-approval``: the state is what ``kueue_webhook.core.checks.manual_approval_state``
  reads from the Workload's approval annotation. Who may set that annotation is enforced by the admission
  webhook (``manualApproval.approvers``), not here. Such AdmissionChecks are marked ``Active=True`` so
  users see that a controller serves them.

Retry and Rejected states need nothing here: the core turns them into ``Evict`` decisions, which the
scheduler loop carries out like any eviction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.objects import admitted_cluster_queue, has_quota_reservation
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, CLUSTER_QUEUES, WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.admitted import record_admitted, seconds_since
from kueue_webhook.control.output.conditions import (
    ConditionsEdit,
    check_state_status,
    checks_status,
    find,
    now_rfc3339,
)
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.core.checks import MANUAL_APPROVAL_CONTROLLER, manual_approval_state
from kueue_webhook.core.view import SchedulerView

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.admission_checks")
#: the AdmissionCheck condition a check controller sets (Kueue's check controllers word it so)
ACTIVE = ("True", "Active", "The admission check is active")


class AdmissionChecksController:
    """Keeps reserved Workloads' check states and Admitted condition current; runs while leading."""

    def __init__(
        self, context: ControlContext, *, state: Callable[[], SchedulerView], workers: int = 2
    ) -> None:
        self.context = context
        self.state = state
        self.workers = workers
        self.workloads: WorkQueue[tuple[str, str]] = WorkQueue()
        self.checks: WorkQueue[str] = WorkQueue()

    # -- routing -------------------------------------------------------------------------------------------

    def on_change(self, change: Change) -> None:
        """Route a change to the Workloads it concerns. Cheap on the hot path: most Workloads are in
        ClusterQueues without checks, and most ClusterQueue changes are our own status writes."""
        if change.kind is WORKLOADS and change.new is not None:
            if has_quota_reservation(change.new) and self._concerned(change.new):
                self.workloads.add(change.key)
        elif change.kind is ADMISSION_CHECKS and change.new is not None:
            self.checks.add(change.key[1])
            self._mark_reserved(lambda _workload: True)
        elif change.kind is CLUSTER_QUEUES and change.new is not None:
            if _checks_spec(change.old) == _checks_spec(change.new):
                return
            name = change.key[1]
            self._mark_reserved(lambda workload: admitted_cluster_queue(workload) == name)

    def _concerned(self, workload: JSON) -> bool:
        if (workload.get("status") or {}).get("admissionChecks"):
            return True
        spec = self.state().cluster_queue(admitted_cluster_queue(workload))
        return spec is not None and bool(spec.admission_checks)

    def resync(self) -> None:
        """Everything once (on becoming leader)."""
        self.resync_checks()
        self._mark_reserved(lambda _workload: True)

    def resync_checks(self) -> None:
        """``resync`` but for the Workloads, which ``resync_workload`` takes one at a time."""
        for check in self.context.store.items(ADMISSION_CHECKS):
            self.checks.add(key_of(check)[1])

    def resync_workload(self, workload: JSON) -> None:
        if has_quota_reservation(workload):
            self.workloads.add(key_of(workload))

    def _mark_reserved(self, wanted: Callable[[JSON], bool]) -> None:
        for workload in self.context.store.items(WORKLOADS):
            if has_quota_reservation(workload) and wanted(workload):
                self.workloads.add(key_of(workload))

    # -- running -------------------------------------------------------------------------------------------

    async def run(self) -> None:
        async def serve_workloads() -> None:
            await self.workloads.serve(self.sync_workload, on_error=self._failed)

        async def serve_checks() -> None:
            await self.checks.serve(self.sync_check, on_error=self._failed)

        await asyncio.gather(*(serve_workloads() for _ in range(self.workers)), serve_checks())

    def _failed(self, key: object, exc: BaseException) -> None:
        if not isinstance(exc, NotLeader):  # a refused write is said once, by the elector
            log.warning("admission check sync failed, retrying: %r", exc, extra={"key": str(key)})
        queue: Any = self.checks if isinstance(key, str) else self.workloads
        asyncio.get_running_loop().call_later(0.5, queue.add, key)

    async def sync_check(self, name: str) -> None:
        """Mark a manual-approval AdmissionCheck Active (others belong to other controllers)."""
        check = self.context.store.get(ADMISSION_CHECKS, name)
        if check is None or not self.context.is_leader():
            return
        if (check.get("spec") or {}).get("controllerName") != MANUAL_APPROVAL_CONTROLLER:
            return

        def build(current: JSON) -> JSON | None:
            edit = ConditionsEdit.of(current, now_rfc3339())
            return {"conditions": edit.conditions} if edit.set("Active", *ACTIVE) else None

        await self.context.writer.patch_status(ADMISSION_CHECKS, check, build)

    async def sync_workload(self, key: tuple[str, str]) -> None:
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader() or not _in_force(workload):
            return
        spec = self.state().cluster_queue(admitted_cluster_queue(workload))
        required = spec.admission_checks if spec is not None else ()
        if not required and not (workload.get("status") or {}).get("admissionChecks"):
            return  # nothing to check: the scheduler loop wrote Admitted=True with the reservation
        was_admitted = is_true(workload, "Admitted")
        updated = await self.context.writer.patch_status(
            WORKLOADS,
            workload,
            lambda current: (
                checks_status(current, admission_checks=required, now=now_rfc3339())
                if _in_force(current)
                else None
            ),
        )
        current = updated or workload
        if updated is not None and not was_admitted and is_true(updated, "Admitted"):
            self._record_admitted(updated)
        for state in (current.get("status") or {}).get("admissionChecks") or []:
            check = self.context.store.get(ADMISSION_CHECKS, str(state.get("name", "")))
            if check is None or (check.get("spec") or {}).get("controllerName") != MANUAL_APPROVAL_CONTROLLER:
                continue
            await self._approve(current, str(state["name"]))

    async def _approve(self, workload: JSON, check: str) -> None:
        annotations = (workload.get("metadata") or {}).get("annotations") or {}
        state, message = manual_approval_state(check=check, annotations=annotations)

        def build(current: JSON) -> JSON | None:
            if not _in_force(current):
                return None
            return check_state_status(current, check=check, state=state, message=message, now=now_rfc3339())

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is not None:
            log.info(
                "admission check",
                extra={"workload": "/".join(key_of(updated)), "check": check, "state": state},
            )

    def _record_admitted(self, workload: JSON) -> None:
        """The last check turned Ready: admitted now, some time after the reservation."""
        reserved = find((workload.get("status") or {}).get("conditions"), "QuotaReserved") or {}
        record_admitted(
            self.context,
            workload,
            cluster_queue=admitted_cluster_queue(workload),
            since_reservation=seconds_since(reserved.get("lastTransitionTime")),
        )


def _checks_spec(cluster_queue: JSON | None) -> tuple[object, object]:
    spec = (cluster_queue or {}).get("spec") or {}
    return spec.get("admissionChecks"), spec.get("admissionChecksStrategy")


def _in_force(workload: JSON) -> bool:
    """Holding a reservation, not finished and not being evicted (an eviction resets the checks itself)."""
    return (
        has_quota_reservation(workload)
        and not is_true(workload, "Finished")
        and not is_true(workload, "Evicted")
    )
