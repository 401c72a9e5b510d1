"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's timing rules.

Every replica serves the webhook, but only one may run the scheduling task: two schedulers reading the same
ledger would both admit into the last free GPU. The Lease is the lock. Expiry is judged the way client-go
judges it: not by comparing our clock with the ``renewTime`` another machine wrote (clocks skew), but by how
long *we* have watched the record stay unchanged.

A leader that cannot renew within ``renew_deadline`` (shorter than ``lease_duration``) steps down before
anyone else may take over, so two leaders never overlap. The deadline runs from the moment the last
successful renewal was *sent* (the record cannot have changed before then, so no other replica can have
started its lease-duration wait earlier), and it bounds the request itself: client-go's ``renew()`` polls
under a context whose timeout is the renew deadline, and here every attempt runs under an asyncio timeout
that ends at the deadline. A request the API server never answers (a stalled connection, a pool whose
connections are all busy) therefore cannot keep a replica acting as leader past it. Seeing another holder in
the record steps it down at once. On shutdown the lease is released (holder cleared), bounded by the renew
deadline as client-go's ``release()`` is, so a rolling update fails over immediately instead of after a full
lease duration, and a stalled API server cannot hold up the exit.

A leader renews as client-go's fast path does: one write of the Lease as it last wrote it (its
resourceVersion the precondition), the read only when that fails; and it sends each renewal a retry period
after the previous one was sent, not after it was answered. Under load every request costs the API
server's latency, and the renew deadline is counted in them.

Stepping down happens at a tick, and a tick is a task like any other: an event loop stalled past the deadline
(a long collection, a blocking call, a starved process) runs the tick late, and until then the ``leading``
flag still says yes. So the flag does not decide whether a write may go out. ``fence`` does, on the
monotonic clock at the moment of the write: the client whose writes only a leader may send
(``KubeClient.fenced``) calls it just before each one goes on the wire, and a write after the renew deadline
is refused with ``NotLeader`` and never sent, and the replica steps down there and then. What it would have
written is not lost: it is derived from the cluster, which the next term (this replica's or another's) reads
again.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import LEASES
from kueue_webhook.control.kube.verbs import Creates, Gets, Replaces

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.leader")

#: Lease timings. A replica that dies holding the Lease is replaced once the Lease has stayed unchanged for
#: ``LEASE_DURATION`` as its peers see it (they look every ``RETRY_PERIOD``, jittered), so failover takes
#: 10-12.4 s, within 15 s where Kueue's 15 / 10 / 2 s cannot be; the renew deadline leaves a slow API 7 s.
LEASE_DURATION = 10.0
RENEW_DEADLINE = 7.0
RETRY_PERIOD = 2.0


class NotLeader(Exception):
    """A write refused before it was sent: this replica cannot be sure it holds the Lease right now."""


class LeaseClient(Gets, Creates, Replaces, Protocol):
    """The verbs the elector sends to its Lease."""


def micro_time(now: datetime) -> str:
    """Kubernetes MicroTime, as kube-apiserver prints it."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaign for a Lease; ``leading`` is set while we hold it, ``on_change`` hears every transition."""

    def __init__(
        self,
        *,
        client: LeaseClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        on_change: Callable[[bool], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_change = on_change
        #: monotonic seconds; the event loop's own clock unless a test injects one, so that asyncio
        #: timeouts and this clock agree (and a test loop with fake time drives both)
        self.clock = clock or _loop_time
        self.leading = asyncio.Event()
        self._observed_spec: JSON | None = None
        #: the Lease as our last successful write (or read) left it: a leader renews by replacing it
        self._lease: JSON | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._attempt_started = 0.0
        self._rng = random.Random(identity)

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    def step_down(self) -> None:
        """Stop leading now, the Lease kept as it is (the next tick campaigns again, and takes it back while
        the record is still ours): for a term that could not start."""
        self._set(False)

    def fence(self) -> float:
        """Seconds left before the renew deadline, read on the clock now; ``NotLeader`` when we do not lead.

        The writes only a leader may send ask this at the moment they are sent; the Lease's own requests
        never do (they are what renews it). A leader asked after its deadline steps down here and then,
        as its next tick would have (client-go's OnStoppedLeading at the renew deadline), so the lapse is
        said once and every task that writes stops; the next tick campaigns again.
        """
        if not self.is_leader:
            raise NotLeader(f"{self.identity} does not hold lease {self.name}: write not sent")
        left = self._deadline() - self.clock()
        if left > 0:
            return left
        log.warning(
            "lease renew deadline passed before a write could be sent: write refused, stepping down",
            extra={"lease": self.name, "identity": self.identity, "late_seconds": round(-left, 3)},
        )
        self._set(False)
        raise NotLeader(f"{self.identity} passed the renew deadline of lease {self.name}: write not sent")

    async def run(self) -> None:
        """Campaign and renew until cancelled; releases the lease on the way out if we hold it."""
        try:
            while True:
                await self.tick()
                await asyncio.sleep(self._until_next_tick())
        finally:
            if self.is_leader:
                self._set(False)
                await self._release()

    def _until_next_tick(self) -> float:
        """A retry period (jittered while campaigning, as client-go's JitterUntil). A leader counts it from
        when its last attempt *started*: the renew deadline runs from then too, so a renewal the API server
        was slow to answer is followed by the next one at once, not a whole period later, and a slow API
        leaves each renewal all the time the deadline allows. A leader also wakes up no later than its
        renew deadline, to step down on time even if every attempt before it failed fast."""
        if not self.is_leader:
            return self.retry_period * self._rng.uniform(1.0, 1.2)
        return max(0.0, min(self._attempt_started + self.retry_period, self._deadline()) - self.clock())

    def _deadline(self) -> float:
        """When a leader must have renewed by, or stop acting as leader."""
        return self._last_renew + self.renew_deadline

    async def tick(self) -> None:
        """One round: try to acquire or renew, then step up, or down when renewal has failed too long.

        The attempt is bounded: a leader's by what is left of its renew deadline, a candidate's by a whole
        renew deadline (so a stalled request cannot hold up the campaign either).
        """
        started = self._attempt_started = self.clock()
        budget = self._deadline() - started if self.is_leader else self.renew_deadline
        acquired = False
        if budget > 0:
            try:
                async with asyncio.timeout(budget):
                    acquired = await self.try_acquire_or_renew()
            except TimeoutError:
                log.warning("lease request timed out after %.3fs", budget, extra={"lease": self.name})
            except Exception as exc:  # any failure to reach the API counts as a missed renewal, never a crash
                log.warning("lease request failed: %r", exc, extra={"lease": self.name})
        if acquired:
            self._last_renew = started  # the record changed no earlier than this: others wait from later
            self._set(True)
        elif self.is_leader and (self.clock() >= self._deadline() or self._held_by_other()):
            self._set(False)

    def _held_by_other(self) -> bool:
        holder = (self._observed_spec or {}).get("holderIdentity") or ""
        return bool(holder) and holder != self.identity

    def _set(self, leading: bool) -> None:
        if leading == self.is_leader:
            return
        if leading:
            self.leading.set()
        else:
            self.leading.clear()
        log.info(
            "leadership changed", extra={"lease": self.name, "leader": leading, "identity": self.identity}
        )
        if self.on_change is not None:
            self.on_change(leading)

    async def try_acquire_or_renew(self) -> bool:
        """One round of client-go's algorithm; True if we hold the lease afterwards."""
        now_wall = datetime.now(UTC)
        spec_ours = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "renewTime": micro_time(now_wall),
        }
        lease_we_wrote = self._lease
        if self.is_leader and lease_we_wrote is not None:  # noqa: SIM102 (the await only if both hold)
            if await self._renew_optimistically(lease_we_wrote, spec_ours):
                return True
        try:
            lease = await self.client.get(LEASES, name=self.name, namespace=self.namespace)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec_ours, "acquireTime": micro_time(now_wall), "leaseTransitions": 0},
            }
            try:
                created = await self.client.create(LEASES, body, namespace=self.namespace)
            except ApiError as create_exc:
                if create_exc.status == 409:
                    return False
                raise
            self._observe(created.get("spec") or {})
            self._lease = created
            return True
        spec = dict(lease.get("spec") or {})
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        now = self.clock()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False
        if holder == self.identity:
            new_spec = {**spec, **spec_ours}
        else:
            new_spec = {
                **spec,
                **spec_ours,
                "acquireTime": micro_time(now_wall),
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (1 if holder else 0),
            }
        body = {**lease, "spec": new_spec}
        try:
            updated = await self.client.replace(LEASES, body)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        self._observe(updated.get("spec") or new_spec)
        self._lease = updated
        return True

    async def _renew_optimistically(self, lease: JSON, spec_ours: JSON) -> bool:
        """client-go's fast path for a leader: replace the Lease as we last wrote it, with its
        resourceVersion as the precondition, in one request instead of a read and a write (under load each
        costs the API server's latency, and the renew deadline is counted in them). A conflict (someone
        else wrote it) or any other failure falls back to the read and the full algorithm, as client-go
        does; the attempt's time still counts against the same deadline."""
        body = {**lease, "spec": {**(lease.get("spec") or {}), **spec_ours}}
        try:
            updated = await self.client.replace(LEASES, body)
        except Exception as exc:  # a cancellation (the attempt's deadline) is not caught: it ends the tick
            log.info("lease renewal without a read failed, reading it: %r", exc, extra={"lease": self.name})
            self._lease = None
            return False
        self._observe(updated.get("spec") or body["spec"])
        self._lease = updated
        return True

    def _observe(self, spec: JSON) -> None:
        if spec != self._observed_spec:
            self._observed_spec = dict(spec)
            self._observed_at = self.clock()

    async def _release(self) -> None:
        """Clear the holder, best effort and bounded: an API that does not answer must not hold up shutdown
        (the lease then simply expires)."""
        try:
            async with asyncio.timeout(self.renew_deadline):
                await self._clear_holder()
        except Exception as exc:
            log.warning("could not release lease: %r", exc, extra={"lease": self.name})

    async def _clear_holder(self) -> None:
        lease = await self.client.get(LEASES, name=self.name, namespace=self.namespace)
        spec = dict(lease.get("spec") or {})
        if spec.get("holderIdentity") != self.identity:
            return
        spec.update({"holderIdentity": "", "leaseDurationSeconds": 1})
        await self.client.replace(LEASES, {**lease, "spec": spec})


def _loop_time() -> float:
    return asyncio.get_running_loop().time()
