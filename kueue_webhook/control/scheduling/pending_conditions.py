"""Kueue's pending condition on waiting Workloads (QuotaReserved=False): one write, at two paces.

The reason a Workload waits is Kueue's QuotaReserved=False condition, byte for byte as Kueue writes it, so
tools and alerts matching Kueue's messages keep working; the same write sets Admitted=False
``NoReservation``, as Kueue's UnsetQuotaReservationWithCondition does, so that condition costs no write of
its own. Writing costs an API write per Workload, and most are not worth it: under a steady arrival rate
most Workloads that do not fit at once are admitted within a second, and Kueue's wording carries numbers
(``insufficient unused quota for cpu in flavor rf, 3 more needed``) that move with every admission in the
cohort. So there is one write (``_write``) and two paces at which it is called:

* at once (``write``), for a decision the scheduler just made: a new reason, or a first condition once the
  Workload has waited ``debounce`` seconds, while the informational write budget
  (``kueue_webhook.control.kube.api_health``) allows; ``at_once`` skips both waits, for a wait the core did
  not decide (blockAdmission's). The scheduler asks ``judge`` as it decides, and starts a task (``show``)
  only for the few waits that may need a write;
* paced (``run``, ``refresh_once``), for everything the first pace left: each Workload whose latest wait
  changed (a decision, or a wait the scheduler restated for its whole shape) is marked stale, and each
  pass (at most one a second) takes the stale ones front of their queues first (a heap per ClusterQueue,
  by queue order when marked), writing the latest reason and message the scheduler decided wherever what
  a Workload shows differs, while the budget allows, leaving the rest stale for the next pass. A pass
  costs the writes it makes, not the length of the queues nor the number of stale Workloads behind them
  (under a busy cohort thousands of messages move every second; a pass writes 50); a whole ClusterQueue
  can still be marked when what changed is not known Workload by Workload. On a quiet cluster a queue of
  10,000 converges in seconds; on a congested API server the writes wait and fold into fewer, never a
  write storm.

Every write re-reads the store and is declined for a Workload that holds a reservation, finished, is being
deleted or is on hold (Kueue keeps the OnHold reason and message); the resourceVersion precondition settles
a race with its admission write. Queue positions are never written (each admission would move every rank
behind it): they are served, as Kueue serves them, by the visibility API (``kueue_webhook.core.visibility``).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.conditions import condition_of, is_true
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations.statefulsets import released_at_zero
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.pods_ready import tracks_pods_ready
from kueue_webhook.control.kube.api_health import HealthSettings
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.conditions import now_rfc3339, pending_status
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.core.decisions import GATED_PREFIX, GATES_CLEARED, REASON_ADMISSION_GATED, Wait
from kueue_webhook.core.view import SchedulerView

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.pending")
#: every decision is logged once, with the scheduler's other decisions
decisions_log = logging.getLogger("kueue_webhook.scheduler")
#: how long a Workload waits before its first pending condition is written, in seconds: most Workloads
#: that do not fit at once are admitted sooner than that, and then the write would have been wasted
PENDING_DEBOUNCE = 1.0
#: the most writes one paced pass can make: the budget's bucket never holds more tokens than its top rate
PASS_WRITES_AT_MOST = int(HealthSettings().max_rate)


@dataclass(frozen=True, slots=True)
class Shown:
    """What a pending Workload's QuotaReserved=False condition shows: reason and Kueue's message."""

    reason: str
    message: str


def quota_condition(workload: JSON) -> JSON | None:
    """A copy of the Workload's QuotaReserved condition; None when it shows none."""
    condition = condition_of(workload, "QuotaReserved")
    return dict(condition) if condition is not None else None


def _event_for(reason: str, message: str) -> tuple[str, str, str]:
    """The Event that goes with a new pending reason (type, reason, message): Kueue's Warning with the
    condition's words, except for admission gates, whose workload controller says Normal things of its
    own."""
    if reason == REASON_ADMISSION_GATED:
        return "Normal", reason, f"Workload admission is gated by: {message.removeprefix(GATED_PREFIX)}"
    if message == GATES_CLEARED:
        return "Normal", "AdmissionGateCleared", "Admission gate cleared, workload is now admissible"
    return "Warning", reason, message


def shown_message(workload: JSON, *, reason: str) -> str | None:
    """Kueue's message of the pending condition the Workload shows with this reason; None when it shows no
    pending condition or another reason."""
    before = quota_condition(workload)
    if before is None or before.get("status") != "False" or before.get("reason") != reason:
        return None
    return str(before.get("message", ""))


class PendingConditions:
    """Shows why each pending Workload waits: at once for a new decision, paced for the rest."""

    def __init__(
        self,
        context: ControlContext,
        *,
        state: Callable[[], SchedulerView],
        debounce: float = PENDING_DEBOUNCE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.context = context
        self.state = state
        self.debounce = debounce
        self._clock = clock
        self._dirty: set[str] = set()  # ClusterQueues whose shown messages may all be stale
        #: ClusterQueue -> Workloads whose message may be stale: a heap in queue order, and its members
        self._stale_heaps: dict[str, list[tuple[tuple[int, float, str], str]]] = {}
        self._stale_keys: dict[str, set[str]] = {}
        self._ready = asyncio.Event()
        self._shown: dict[str, Shown | None] = {}  # workload key -> its pending condition (None: none)
        self._waiting_since: dict[str, float] = {}  # workload key -> first decided to wait (no condition)

    # -- what each Workload shows -------------------------------------------------------------------------

    def remember(self, key: str, *, reason: str, message: str) -> None:
        """A write just showed this reason and Kueue's ``message`` on the Workload."""
        self._shown[key] = Shown(reason, message)

    def forget(self, key: str) -> None:
        self._shown.pop(key, None)
        self._waiting_since.pop(key, None)

    def settled(self, key: str) -> bool:
        """Whether the Workload has waited ``debounce`` seconds since first decided to wait (the clock starts
        at the first call): only then is its first pending condition worth a write."""
        now = self._clock()
        since = self._waiting_since.setdefault(key, now)
        return now - since >= self.debounce

    def shown(self, key: str, workload: JSON | None = None) -> Shown | None:
        """The pending condition the Workload shows now (remembered, or read once from ``workload`` or the
        store)."""
        if key in self._shown:
            return self._shown[key]
        if workload is None:
            namespace, _, name = key.partition("/")
            workload = self.context.store.get(WORKLOADS, name, namespace)
        condition = quota_condition(workload or {})
        shown = None
        if condition is not None and condition.get("status") == "False":
            shown = Shown(str(condition.get("reason", "")), str(condition.get("message", "")))
        self._shown[key] = shown
        return shown

    # -- at once: the decision just made ------------------------------------------------------------------

    async def write(self, decision: Wait, *, at_once: bool = False) -> None:
        """Show ``decision`` on its Workload, now or (unless ``at_once``) when it is worth a write: ``judge``,
        then ``show`` when it asks for one."""
        if self.judge(decision, at_once=at_once):
            await self.show(decision, at_once=at_once)

    def judge(self, decision: Wait, *, at_once: bool = False) -> bool:
        """Whether ``decision`` may need a write now (then ``show`` reads the Workload and decides); False
        when it needs none, the decision counted and logged all the same.

        A cycle decides a wait for every head it could not admit, and most such decisions need no write
        (the Workload already shows the reason, is not settled yet, or the budget says wait): they are
        judged here, at once, on what the Workload shows as remembered (``shown``), so the scheduler
        starts no task for them; the scheduler has marked the ClusterQueue for the paced pass."""
        if not self.context.is_leader():
            return False
        key = str(decision.workload)
        reason = decision.reason or "Pending"
        return not self._decided_without_write(key, decision, reason, self.shown(key), at_once=at_once)

    async def show(self, decision: Wait, *, at_once: bool = False) -> None:
        """Write ``decision`` if the Workload, read from the store now, still shows something else (judged
        again on what it shows then)."""
        key = str(decision.workload)
        if not self.context.is_leader():
            return
        reason = decision.reason or "Pending"
        namespace, _, name = key.partition("/")
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None:
            return
        self._shown.pop(key, None)
        showing = self.shown(key, workload)  # what it shows now, remembered afresh
        if showing is not None and showing.reason == reason:
            if showing.message != decision.message:
                self._decided(key, decision)
            return
        if showing is None and not at_once and not self.settled(key):
            self._decided(key, decision)
            return
        if await self._write(key, workload, reason, decision.message):
            self._decided(key, decision)

    def _decided_without_write(
        self, key: str, decision: Wait, reason: str, shown: Shown | None, *, at_once: bool
    ) -> bool:
        """Whether ``decision`` needs no write now, as the Workload ``shown`` it (counted and logged when
        it is a decision all the same)."""
        if shown is not None and shown.reason == reason:
            # the wording alone moved: the paced pass brings the Workload up to date, but a new message is
            # still a decision, counted and logged once like any other
            if shown.message != decision.message:
                self._decided(key, decision)
            return True
        if at_once:
            return False
        if shown is None and not self.settled(key):
            self._decided(key, decision)
            return True  # admitted within a second, as most are, it never needs this write
        if self.context.budget.take() > 0:
            self._decided(key, decision)
            return True  # the API server is busy: the paced pass writes it when the budget allows
        return False

    def _decided(self, key: str, decision: Wait) -> None:
        decisions_log.info(
            "pending",
            extra={
                "workload": key,
                "cluster_queue": decision.cluster_queue,
                "decision": "wait",
                "reason": decision.message,
            },
        )

    # -- paced: whatever the first pace left --------------------------------------------------------------

    def mark(self, cluster_queue: str, key: str | None = None) -> None:
        """The message of Workload ``key`` in ``cluster_queue`` may have moved (without ``key``: any in it);
        the paced pass will look."""
        if not cluster_queue:
            return
        if key is None:
            self._dirty.add(cluster_queue)
        else:
            members = self._stale_keys.setdefault(cluster_queue, set())
            if key not in members:
                info = self.state().pending_workload(cluster_queue, key)
                if info is None:
                    return  # not (or no longer) pending there: nothing to show
                members.add(key)
                heapq.heappush(self._stale_heaps.setdefault(cluster_queue, []), (info.sort_key, key))
        self._ready.set()

    def _stale_in(self, cluster_queue: str) -> Iterator[str]:
        """The stale Workloads of ``cluster_queue``, front first, each taken off its heap as it is read."""
        heap = self._stale_heaps.get(cluster_queue)
        members = self._stale_keys.get(cluster_queue)
        while heap and members is not None:
            _, key = heapq.heappop(heap)
            members.discard(key)
            if not heap:
                del self._stale_heaps[cluster_queue], self._stale_keys[cluster_queue]
            yield key

    def _stale(self, key: str) -> tuple[str, str] | None:
        """(reason, message) to write if what the Workload shows is behind the scheduler."""
        latest = self.state().last_wait(key)
        if latest is None:
            return None
        shown = self.shown(key)
        wanted = (latest[0] or "Pending", latest[1])
        return wanted if shown is None or wanted != (shown.reason, shown.message) else None

    async def run(self) -> None:
        """Bring what pending Workloads show up to date: front of the queue first, within the budget,
        recomputed from the queue on every pass, at most one pass a second."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            while (self._dirty or self._stale_keys) and self.context.is_leader():
                await self.refresh_once()
                await asyncio.sleep(1.0)  # the pace of passes itself, not a synchronisation

    async def refresh_once(self) -> None:
        """One pass over the stale Workloads and dirty ClusterQueues: writes while the budget allows, the
        rest stay stale."""
        queues, self._dirty = self._dirty, set()
        stale: list[tuple[int, str, str, str, str]] = []
        later: list[tuple[str, str]] = []  # too soon to be worth a write: marked again after the pass
        state = self.state()
        for cluster_queue in sorted(queues):  # a whole queue: walked from the front
            found = 0
            for rank, info in enumerate(state.pending_in(cluster_queue)):
                key = str(info.key)
                wanted = self._wanted(cluster_queue, key, later)
                if wanted is None:
                    continue
                stale.append((rank, key, cluster_queue, *wanted))
                found += 1
                if found >= PASS_WRITES_AT_MOST:
                    # a pass writes no more than this, front first: whatever is behind in this queue
                    # cannot be among them; the next pass walks it again from the front
                    self._dirty.add(cluster_queue)
                    break
        # marked Workloads: the front of every queue in turn, until the pass holds what it may write; the
        # rest stay marked, unread
        chosen = {entry[1] for entry in stale}
        streams = {queue: self._stale_in(queue) for queue in sorted(self._stale_heaps)}
        rank = 0
        while streams and len(stale) < PASS_WRITES_AT_MOST:
            for cluster_queue in list(streams):
                for key in streams[cluster_queue]:
                    if key in chosen or state.pending_workload(cluster_queue, key) is None:
                        continue  # admitted or gone meanwhile
                    wanted = self._wanted(cluster_queue, key, later)
                    if wanted is not None:
                        stale.append((rank, key, cluster_queue, *wanted))
                        chosen.add(key)
                        break
                else:
                    del streams[cluster_queue]
                if len(stale) >= PASS_WRITES_AT_MOST:
                    break
            rank += 1
        for cluster_queue, key in later:
            self.mark(cluster_queue, key)
        stale.sort()
        writes = []
        for position, (_, key, _, reason, message) in enumerate(stale):
            if self.context.budget.take() > 0:
                for _, rest, cluster_queue, _, _ in stale[position:]:
                    self.mark(cluster_queue, rest)  # the rest on the next pass
                break
            namespace, _, name = key.partition("/")
            workload = self.context.store.get(WORKLOADS, name, namespace)
            if workload is not None:
                writes.append(self._write(key, workload, reason, message))
        await asyncio.gather(*writes)

    def _wanted(self, cluster_queue: str, key: str, later: list[tuple[str, str]]) -> tuple[str, str] | None:
        """(reason, message) to write for ``key`` in this pass; None if it shows what it should, or if its
        first condition is not worth a write yet (then it goes on ``later``)."""
        wanted = self._stale(key)
        if wanted is None:
            return None
        if self.shown(key) is None and not self.settled(key):
            later.append((cluster_queue, key))
            return None
        return wanted

    # -- the one write ------------------------------------------------------------------------------------

    async def _write(self, key: str, workload: JSON, reason: str, message: str) -> bool:
        """Show ``reason`` and ``message`` on the Workload (Kueue's event too when the reason is new); True
        once written."""

        def build(current: JSON) -> JSON | None:
            condition = quota_condition(current)
            if not self.context.is_leader() or (condition or {}).get("status") == "True":
                return None
            if has_quota_reservation(current) or is_true(current, "Finished") or is_deleting(current):
                return None
            if released_at_zero(current):
                return None  # its owner released it on purpose (Kueue keeps the OnHold reason and message)
            configuration = self.context.configuration()
            pods_ready = tracks_pods_ready(
                current, configuration.wait_for_pods_ready, configuration.pods_ready_kinds()
            )
            return pending_status(
                current, reason=reason, message=message, now=now_rfc3339(), pods_ready=pods_ready
            )

        try:
            updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        except NotLeader:
            return False  # said once by the elector; the next term writes it from the cluster
        except Exception as exc:
            log.warning("pending condition write failed", extra={"workload": key, "error": repr(exc)})
            return False
        if updated is None:
            return False
        self.remember(key, reason=reason, message=message)
        if shown_message(workload, reason=reason) is None:  # a new pending reason: Kueue's event too
            kind, event_reason, note = _event_for(reason, message)
            self.context.events.record(workload, type=kind, reason=event_reason, message=note)
        return True
