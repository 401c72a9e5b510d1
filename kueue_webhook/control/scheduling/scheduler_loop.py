"""The scheduling task: store events in, scheduling cycles, Workload status writes out.

The pure core (``kueue_webhook.core.scheduler.SchedulerState``) is fed one store change at a time and never
rebuilt per cycle. Whenever a change could matter the loop is kicked and runs cycles until the core has
nothing left to decide. Cycles do not wait for the API: an admitted Workload is *assumed* by the core (its
quota charged at once) and its status write runs as a task (``decision_writes``); if that write fails or
is refused the loop calls ``forget`` and the quota returns. This is what lets one cycle follow another at
memory speed while writes proceed concurrently, and it can never over-admit because the ledger is charged
before the write.

Writes follow the compatibility contract: the Workload's ``status`` (QuotaReserved=True, Admitted=True,
``status.admission``) through ``/status`` with a resourceVersion precondition, and nothing else; starting
the Job is the reconciler's business once it sees the admitted Workload (the second and last write).
A pending Workload gets QuotaReserved=False with the core's reason and Kueue's message once it has waited
a second, and when that changes, within the informational write budget
(``kueue_webhook.control.scheduling.pending_conditions``); its rank in the queue is served by the visibility
API,
never written. What follows a written eviction is ``evictions.py``'s.

The state is rebuilt from the store each time this replica becomes leader (``rebuild``): admitted
Workloads charge the ledger before any pending one is considered, so a restart cannot over-admit.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kueue_webhook.api.conditions import condition_of, is_true
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.dra import count_claims, has_claims
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import (
    Workload,
    has_quota_reservation,
    parse_admission_check,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_resource_flavor,
    parse_timestamp,
    parse_topology,
    parse_workload,
    parse_workload_priority_class,
)
from kueue_webhook.api.pods import add_requests
from kueue_webhook.api.pods_ready import (
    admission_blocked,
)
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.cache.store_pass import store_pass
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    COHORTS,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    WATCHED,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.scheduling.decision_writes import DECISION_WRITES_IN_FLIGHT, DecisionWrites
from kueue_webhook.control.scheduling.pending_conditions import PENDING_DEBOUNCE, PendingConditions
from kueue_webhook.control.scheduling.topology_feed import TopologyFeed
from kueue_webhook.control.scheduling.unparsed_changes import answers_own_admission, only_messages_changed
from kueue_webhook.core.decisions import REASON_ADMISSION_GATED, REASON_MISCONFIGURED
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState, Wait
from kueue_webhook.runtime import wait_until_set

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.scheduler")
COLLECT_AFTER_DECISIONS = 2000
#: seconds from the start of a cycle that mostly found no room (it admitted fewer than half the heads it
#: tried, or nothing) to the next cycle, while cycles come close together: under load every release,
#: arrival and answer would otherwise run a cycle of its own, most of them only to find the heads they woke
#: still do not fit; pausing lets the changes of those milliseconds be looked at together. A cycle that
#: admits most of its heads is followed at once, so a queue's run of admissions is not held back; nor is
#: the first change after a quiet spell (a lone release is served at once). 50 ms: on Kueue's baseline
#: scenario 0.4 cycles per admission (2.4 without a pause, 0.8 with 20 ms; docs/benchmarks.md).
IDLE_CYCLE_PAUSE = 0.05
#: after this many such cycles in a row the pause doubles (100 ms): the load is sustained (most cycles of
#: Kueue's baseline scenario come in such runs, each retrying the head of nearly every ClusterQueue); one
#: or two such cycles keep the short pause, so a release soon after them is not held back longer. On the
#: baseline about half the cycles and 16-19 % less controller CPU for the same work (docs/benchmarks.md).
LONG_PAUSE_AFTER = 3
#: the pause is at most this many seconds per head the last cycle tried: the changes a pause gathers are
#: worth waiting for when cycles retry many heads (on Kueue's baseline scenario a cycle that finds little
#: room tries 26 heads at the median, fewer than 10 in one of fifteen, and the 50/100 ms pause applies as
#: before), not when a cycle tried one arriving Workload: then a quota release behind a stream of
#: submissions that do not fit waits 10 ms at most instead of 100.
PAUSE_PER_HEAD_TRIED = 0.01
UNFREEZE_EVERY = 1800.0
#: pending reasons of Workloads held out of every queue (their conditions are written at once)
_HELD_OUT_OF_QUEUE = frozenset((REASON_ADMISSION_GATED, REASON_MISCONFIGURED))

#: kinds whose status the scheduler never reads (only their spec and metadata matter to it)
STATUS_ONLY_IRRELEVANT: frozenset[Kind] = frozenset(
    (RESOURCE_FLAVORS, COHORTS, CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOAD_PRIORITY_CLASSES, TOPOLOGIES)
)

#: how the core reads each kind it is fed (Namespaces are fed by their labels)
_PARSERS: dict[Kind, Callable[[JSON], Any]] = {
    TOPOLOGIES: parse_topology,
    RESOURCE_FLAVORS: parse_resource_flavor,
    ADMISSION_CHECKS: parse_admission_check,
    COHORTS: parse_cohort,
    CLUSTER_QUEUES: parse_cluster_queue,
    LOCAL_QUEUES: parse_local_queue,
    WORKLOAD_PRIORITY_CLASSES: parse_workload_priority_class,
    WORKLOADS: parse_workload,
}
#: the kinds the core is fed, in the order a rebuild feeds them: ``WATCHED``'s, capacity and routing first,
#: then Workloads
REBUILD_ORDER: tuple[Kind, ...] = tuple(kind for kind in WATCHED if kind is NAMESPACES or kind in _PARSERS)


def intern_workload_strings(workload: JSON) -> None:
    """Share the strings that repeat across thousands of Workloads (namespace, queue, flavor names) before
    the core keeps them: one copy each instead of one per Workload."""
    meta = workload.get("metadata") or {}
    if isinstance(meta.get("namespace"), str):
        meta["namespace"] = sys.intern(meta["namespace"])
    spec = workload.get("spec") or {}
    if isinstance(spec.get("queueName"), str):
        spec["queueName"] = sys.intern(spec["queueName"])
    for pod_set in spec.get("podSets") or []:
        if isinstance(pod_set.get("name"), str):
            pod_set["name"] = sys.intern(pod_set["name"])
    admission = (workload.get("status") or {}).get("admission") or {}
    if isinstance(admission.get("clusterQueue"), str):
        admission["clusterQueue"] = sys.intern(admission["clusterQueue"])
    for assignment in admission.get("podSetAssignments") or []:
        if isinstance(assignment.get("name"), str):
            assignment["name"] = sys.intern(assignment["name"])
        flavors = assignment.get("flavors")
        if isinstance(flavors, dict):
            for resource, flavor in flavors.items():
                if isinstance(flavor, str):
                    flavors[resource] = sys.intern(flavor)


class SchedulerLoop(DecisionWrites):
    """Feeds the core, runs cycles while leading, and writes the decisions."""

    def __init__(
        self,
        context: ControlContext,
        *,
        max_in_flight: int = DECISION_WRITES_IN_FLIGHT,
        pending_debounce: float = PENDING_DEBOUNCE,
        idle_cycle_pause: float = IDLE_CYCLE_PAUSE,
        pause_per_head_tried: float = PAUSE_PER_HEAD_TRIED,
    ) -> None:
        self.context = context
        self.store = context.store  # the core mirrors it: read on every change
        self.state = SchedulerState()
        self._kick = asyncio.Event()
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        #: Workloads whose admission write is in flight (blockAdmission counts them as not ready)
        self._admitting: set[str] = set()
        self._written_admissions: dict[str, JSON] = {}
        self.pending = PendingConditions(context, state=lambda: self.state, debounce=pending_debounce)
        self.admitted = 0
        self.cycles = 0
        self._idle_cycle_pause = idle_cycle_pause
        self._pause_per_head_tried = pause_per_head_tried
        #: when the last cycle began
        self._last_cycle_at: float | None = None
        #: how many cycles in a row mostly found no room, each close behind the one before (``_pause``)
        self._unproductive_run = 0
        #: how many heads the last cycle tried (``_pause`` is at most ``PAUSE_PER_HEAD_TRIED`` per head)
        self._last_tried = 0
        self._decided_since_collect = 0
        self._last_unfreeze = time.monotonic()
        self.on_admitted: list[Callable[[str], None]] = []
        #: nodes and bound pods for topology-aware scheduling (set by the controller)
        self.topology: TopologyFeed | None = None
        #: the DeviceClass mappings the Workloads claiming DRA devices were last read with
        self._device_class_mappings = context.configuration().device_class_mappings

    def attach_topology(self, feed: TopologyFeed) -> None:
        """Follow ``feed``'s nodes and bound pods (replayed into the core on every rebuild)."""
        self.topology = feed
        feed.subscribe(self)
        feed.replay(self)

    def node_changed(self, name: str, node: NodeView | None) -> None:
        if node is None:
            self.state.delete_node(name)
        else:
            self.state.upsert_node(node)
        self.kick()

    def pod_changed(self, key: str, pod: PodOnNode | None) -> None:
        self.state.upsert_pod(key, pod)
        self.kick()

    # -- feeding ------------------------------------------------------------------------------------------

    def rebuild(self) -> None:
        """A fresh core from everything the store holds, in one go."""
        self.begin_rebuild()
        for workload in self.store.items(WORKLOADS):
            self.rebuild_workload(workload)
        self.end_rebuild()

    async def rebuild_gradually(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        """``rebuild``, giving the event loop a turn every few milliseconds (``store_pass``): with tens of
        thousands of Workloads a rebuild takes seconds of CPU, which would otherwise hold up everything else
        the loop runs (the Lease's renewal among them). Store changes that arrive meanwhile are fed as they
        come (``on_change``), and each Workload is read from the store when its turn comes, so the result is
        what ``rebuild`` would have made at the end."""
        self.begin_rebuild()
        await store_pass(self.store, WORKLOADS, (self.rebuild_workload,), clock=clock)
        self.end_rebuild()

    def begin_rebuild(self) -> None:
        """A fresh core fed everything but the Workloads (capacity and routing: a few objects per queue);
        ``rebuild_workload`` feeds each Workload, ``end_rebuild`` finishes."""
        self.state = SchedulerState()
        self._configure_quota_check(self.state, self.context.configuration())  # before any Workload is read
        for kind in REBUILD_ORDER:
            if kind is not WORKLOADS:
                for obj in self.store.items(kind):
                    self._apply(kind, key_of(obj), obj)

    def apply_quota_check(self, configuration: Configuration) -> None:
        """The ConfigMap's ``resources`` live: the Workloads are fed again when what is counted of them
        changed (an assumed admission survives it: the tracker keeps a write in flight), those that claim
        devices through DRA when the DeviceClass mappings changed."""
        if self._configure_quota_check(self.state, configuration):
            for workload in self.store.items(WORKLOADS):
                self.rebuild_workload(workload)
        elif configuration.device_class_mappings != self._device_class_mappings:
            self.reread_claims("")
        self._device_class_mappings = configuration.device_class_mappings
        self.kick()

    @staticmethod
    def _configure_quota_check(state: SchedulerState, configuration: Configuration) -> bool:
        return state.configure_quota_check(
            excluded=configuration.exclude_resource_prefixes,
            ignore_undeclared=configuration.quota_check_strategy == "IgnoreUndeclared",
        )

    def rebuild_workload(self, workload: JSON) -> None:
        self._apply(WORKLOADS, key_of(workload), workload)

    def end_rebuild(self) -> None:
        if self.topology is not None:
            self.topology.replay(self)
        self.kick()

    def on_change(self, change: Change) -> None:
        if change.kind is JOBS:
            # Quota is released when the Workload says so (Finished, its reservation cleared, or gone), as
            # Kueue's cache releases it: never on the Job's own change, so that at no instant do the
            # Workloads holding a reservation exceed the quota, as anyone watching them (or Kueue's tools)
            # counts it. The reconciler writes Finished as soon as the Job completes.
            return
        if change.kind in STATUS_ONLY_IRRELEVANT and change.only_status_changed():
            # the echo of our own queue status write: re-reading an unchanged spec would wake every
            # parked workload of the cohort for nothing (each status flush retried them all)
            return
        if change.kind is WORKLOADS and self._confirmed_own_admission(change):
            self.kick()  # a preemptor may wait for its targets' reservations to be seen
            return
        if change.kind is WORKLOADS and only_messages_changed(change.old, change.new):
            # the answer (or echo) of a pending reason's write: the core reads no condition's message, so
            # parsing the Workload again would change nothing but cost a parse and a requeue check
            return
        if change.kind in REBUILD_ORDER:
            self._apply(change.kind, change.key, change.new)
            self.kick()
        elif change.kind == RESOURCE_CLAIM_TEMPLATES:
            self.reread_claims(change.key[0])

    def _confirmed_own_admission(self, change: Change) -> bool:
        """The answer (or echo) of an admission write in flight, showing nothing but that admission: the
        core, which assumed it, is told it landed (``confirm``) instead of parsing the Workload again."""
        namespace, name = change.key
        key = f"{namespace}/{name}"
        written = self._written_admissions.get(key)
        if written is None or not answers_own_admission(change.old, change.new, written):
            return False
        reserved = condition_of(change.new, "QuotaReserved")
        return self.state.confirm(
            key,
            cluster_queue=str(written.get("clusterQueue", "")),
            reserved_at=parse_timestamp(reserved.get("lastTransitionTime") if reserved is not None else None),
            admitted=is_true(change.new, "Admitted"),
        )

    def _apply(self, kind: Kind, key: tuple[str, str], obj: JSON | None) -> None:
        namespace, name = key
        state = self.state
        if kind is NAMESPACES:
            if obj is None:
                state.delete_namespace(name)
            else:
                state.upsert_namespace(name, self.store.namespace_labels(name))
            return
        if obj is None:
            if kind is RESOURCE_FLAVORS:
                state.delete_resource_flavor(name)
            elif kind is ADMISSION_CHECKS:
                state.delete_admission_check(name)
            elif kind is COHORTS:
                state.delete_cohort(name)
            elif kind is CLUSTER_QUEUES:
                state.delete_cluster_queue(name)
            elif kind is LOCAL_QUEUES:
                state.delete_local_queue(namespace, name)
            elif kind is WORKLOAD_PRIORITY_CLASSES:
                state.delete_priority_class(name)
            elif kind is TOPOLOGIES:
                state.delete_topology(name)
            elif kind is WORKLOADS:
                state.delete_workload(f"{namespace}/{name}")
                self.pending.forget(f"{namespace}/{name}")
            return
        if kind is WORKLOADS:
            if is_deleting(obj) and not has_quota_reservation(obj):
                # deleted while pending: the core stops queueing it (a reservation would stay counted until
                # the finalizer goes)
                self.pending.forget(f"{namespace}/{name}")
            if is_true(obj, "Finished"):
                # all the core does with a finished Workload is let it go (its quota freed, its place in
                # the queue given up), whatever else it says, as Kueue's WorkloadReconciler drops a
                # finished Workload from its queues and cache: nothing else of it needs reading
                state.finish_workload(f"{namespace}/{name}")
                return
            intern_workload_strings(obj)  # equal values, shared: harmless to other listeners of this change
        parser = _PARSERS[kind]
        parsed = parser(obj)
        if isinstance(parsed, list):
            log.warning(
                "object ignored: invalid",
                extra={
                    "kind": kind.kind,
                    "object": f"{namespace}/{name}".strip("/"),
                    "errors": [str(e) for e in parsed],
                },
            )
            return
        if kind is LOCAL_QUEUES:
            state.fairness.now = time.time()  # a LocalQueue first seen starts its history now
        elif isinstance(parsed, Workload):
            parsed = self._with_counted_claims(parsed)
        state.apply(parsed)

    def _with_counted_claims(self, workload: Workload) -> Workload:
        """``workload`` with the devices its pods claim through DRA in its pod sets' requests, as the
        configuration's ``deviceClassMappings`` and its namespace's ResourceClaimTemplates count them (or
        why they cannot be): Kueue's workload controller does the same before queueing it."""
        mappings = self.context.configuration().device_class_mappings
        if not mappings:
            return workload
        pod_sets = [(pod_set.name, pod_set.template) for pod_set in workload.pod_sets]
        if not has_claims(pod_sets):
            return workload
        namespace = workload.namespace
        counted = count_claims(
            pod_sets, lambda name: self.store.get(RESOURCE_CLAIM_TEMPLATES, name, namespace), dict(mappings)
        )
        if isinstance(counted, str):
            return replace(workload, claims_problem=counted)
        with_devices = []
        for pod_set in workload.pod_sets:
            requests = dict(pod_set.requests)
            add_requests(requests, counted.get(pod_set.name, {}))
            with_devices.append(replace(pod_set, requests=requests))
        return replace(workload, pod_sets=tuple(with_devices), claims_counted=True)

    def reread_claims(self, namespace: str) -> None:
        """A ResourceClaimTemplate of ``namespace`` changed (or the mappings did): its Workloads that claim
        devices are read again."""
        for workload in self.store.items(WORKLOADS, namespace=namespace or None):
            pod_sets = (workload.get("spec") or {}).get("podSets") or []
            if has_claims(
                (str(p.get("name", "")), p.get("template") or {}) for p in pod_sets if isinstance(p, dict)
            ):
                self._apply(WORKLOADS, key_of(workload), workload)
        self.kick()

    def sample_admission_usage(self) -> list[str]:
        """Admission fair sharing's sample of every LocalQueue's consumed resources (each
        ``usageSamplingInterval``): the LocalQueues sampled ("namespace/name"), whose status shows it. The
        new order is acted on at once."""
        sampled = self.state.sample_admission_usage(time.time())
        if sampled:
            self.kick()
        return sampled

    # -- running ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Cycle whenever kicked, until cancelled (cancelled at once when leadership is lost).

        The caller rebuilds the state first (``rebuild``, or ``rebuild_gradually`` fed changes as they come),
        so no cycle runs before every admitted Workload is charged.
        """
        self.kick()
        loop = asyncio.get_running_loop()
        messages = loop.create_task(self.pending.run(), name="pending-messages")
        try:
            while True:
                await self._kicked_or_revisit_due()
                self._kick.clear()
                while self.context.is_leader() and self._has_work(loop.time()):
                    await self._pause_after_idle_cycle(loop)
                    if not self.context.is_leader():
                        break
                    started = loop.time()
                    productive = await self._cycle()
                    self._note_cycle(started, productive=productive, tried=self.state.last_cycle_tried)
                    if self._admission_blocked():
                        break  # blockAdmission: one cycle per kick, to tell who waits; a change kicks again
                if self._decided_since_collect >= COLLECT_AFTER_DECISIONS:
                    self._collect_while_idle()
        finally:
            messages.cancel()
            self.abandon_writes()

    def _has_work(self, now: float) -> bool:
        """Whether a cycle now could decide anything. A change of usage with nothing to try (a Workload
        finished, none waiting, or all parked) only plans its cohort tree's revisit, without a cycle: such a
        cycle would try nothing, and under a stream of finishes it would come every pause."""
        self.state.plan_revisits(now)
        return self.state.has_work(now)

    async def _kicked_or_revisit_due(self) -> None:
        """Until kicked, or until the core's next revisit of parked workloads is due (the core keeps time
        by the event loop's clock, which a fake clock in tests drives).

        It always gives the loop a turn, even with a revisit already due: ``run`` could otherwise spin without
        ever suspending, and neither the cancellation that ends a lost term nor any other task would run.
        A replica that no longer leads waits for a kick only (its cycles would decide nothing; the
        cancellation that ends its term arrives at that wait)."""
        due = self.state.next_revisit()
        if due is None or not self.context.is_leader():
            await self._kick.wait()
            return
        delay = due - asyncio.get_running_loop().time()
        if delay <= 0:
            await asyncio.sleep(0)
            return
        await wait_until_set(self._kick, delay)

    def _note_cycle(self, started: float, *, productive: bool, tried: int) -> None:
        """Remember a cycle that tried ``tried`` heads: the next one pauses if this one was not productive
        (``_cycle``) and began within two pauses of the one before (the loop is busy; a quiet loop's first
        change is not held back), twice as long after ``LONG_PAUSE_AFTER`` such cycles in a row, and never
        longer than ``PAUSE_PER_HEAD_TRIED`` per head it tried."""
        previous, self._last_cycle_at = self._last_cycle_at, started
        busy = previous is not None and started - previous < 2 * max(self._pause, self._idle_cycle_pause)
        self._unproductive_run = self._unproductive_run + 1 if busy and not productive else 0
        self._last_tried = tried

    @property
    def _pause(self) -> float:
        """Seconds from the start of the last cycle to the next (0: at once), as ``_note_cycle`` left
        the run of cycles that mostly found no room and the heads the last one tried."""
        run, short = self._unproductive_run, self._idle_cycle_pause
        if run == 0:
            return 0.0
        longest = short if run < LONG_PAUSE_AFTER else 2 * short
        return min(longest, self._pause_per_head_tried * self._last_tried)

    async def _pause_after_idle_cycle(self, loop: asyncio.AbstractEventLoop) -> None:
        """Until the pause ``_note_cycle`` chose has passed since the last cycle began."""
        if self._pause and self._last_cycle_at is not None:
            pause = self._last_cycle_at + self._pause - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)

    def _collect_while_idle(self) -> None:
        """A burst leaves many long-lived survivors (one per Workload); a later full collection would scan
        them all inside some latency-sensitive cycle. So collect now, while idle, and freeze the survivors
        out of the collector's reach. Anything frozen that later dies in a reference cycle would stay, so
        every ``UNFREEZE_EVERY`` seconds the frozen set is handed back and collected once."""
        self._decided_since_collect = 0
        now = time.monotonic()
        if now - self._last_unfreeze >= UNFREEZE_EVERY:
            gc.unfreeze()
            self._last_unfreeze = now
        gc.collect()
        gc.freeze()

    async def _cycle(self) -> bool:
        """One cycle and its writes; True when it was productive: it admitted something, and at least half
        the heads it tried (with a thousand ClusterQueues, a cycle of a hundred woken heads that admits two
        costs as much as one that admits none)."""
        started = time.perf_counter()
        loop = asyncio.get_running_loop()  # once: each call checks the process id (a system call)
        self.state.fairness.now = time.time()  # admission fair sharing's clock (entry penalties' settling)
        decisions = self.state.cycle(loop.time())
        for key, cluster_queue in self.state.take_restated().items():
            self.pending.mark(cluster_queue, key)  # restated without a decision: the paced pass shows it
        self.cycles += 1
        metrics = self.context.metrics
        metrics.scheduling_cycles.inc()
        if self.state.last_cycle_tried:
            # Kueue's AdmissionAttempt: one per cycle that tried heads, a success when it admitted one
            result = "success" if any(isinstance(d, Admit) for d in decisions) else "inadmissible"
            metrics.series(metrics.admission_attempts, result, metrics.role).inc()
            took = time.perf_counter() - started
            metrics.series(metrics.admission_attempt_duration, result, metrics.role).observe(took)
            for cluster_queue, skipped in self.state.last_cycle_preemption_skips.items():
                metrics.admission_cycle_preemption_skips.labels(cluster_queue, metrics.role).set(skipped)
        self._decided_since_collect += len(decisions)
        # blockAdmission: admit at most one Workload, and none while an admitted one is not ready yet
        admissions_blocked = self._admission_blocked()
        for decision in decisions:
            # a Workload held out of the queue (admission gates, a misconfiguration such as devices claimed
            # through DRA) is in no queue the paced pass walks: what it waits for is written at once, as
            # Kueue's workload controller does
            at_once = isinstance(decision, Wait) and decision.reason in _HELD_OUT_OF_QUEUE
            if isinstance(decision, Wait):
                self.pending.mark(decision.cluster_queue, str(decision.workload))
                if not self.pending.judge(decision, at_once=at_once):
                    continue  # nothing to write now (most waits): no task, no write slot
            await self._slots.acquire()
            if not self.context.is_leader():
                # leadership went while waiting for a slot: write nothing more (the next term rebuilds)
                self._slots.release()
                return False
            if isinstance(decision, Admit) and admissions_blocked:
                self.state.forget(str(decision.workload))  # undone at once: the Workload queues again
                coroutine = self._tell_blocked(decision)
            elif isinstance(decision, Admit):
                admissions_blocked = self._blocks_admission()
                self._admitting.add(str(decision.workload))
                coroutine = self._admit(decision)
            elif isinstance(decision, Evict):
                coroutine = self._evict(decision)
            else:
                coroutine = self.pending.show(decision, at_once=at_once)
            task = loop.create_task(coroutine)
            self._tasks.add(task)
            task.add_done_callback(self._finished)
        if decisions:
            log.debug(
                "cycle",
                extra={"decisions": len(decisions), "ms": round((time.perf_counter() - started) * 1e3, 3)},
            )
        await asyncio.sleep(0)  # let write tasks and watch events in between cycles
        admitted = sum(1 for decision in decisions if isinstance(decision, Admit))
        return admitted > 0 and 2 * admitted >= self.state.last_cycle_tried

    def _admission_blocked(self) -> bool:
        """waitForPodsReady.blockAdmission: an admission is in flight, or a Workload holding a reservation is
        not PodsReady=True yet (Kueue's podsReadyForAllAdmittedWorkloads); the next Workload change kicks
        the loop again. Reads every Workload, only when blockAdmission is on."""
        if not self._blocks_admission():
            return False
        config = self.context.configuration().wait_for_pods_ready
        return bool(self._admitting) or admission_blocked(self.store.items(WORKLOADS), config)
