"""The live run: create the objects at Kueue's pace, play the jobs, watch and record until the end.

Three roles share one asyncio loop in the benchmark process, as they do in Kueue's runner:

* the **generator** creates the ResourceFlavor, the queues and their namespaces, then one task per workload
  set of each queue sleeps its interval and creates the next Workload, all sets at once;
* the **execution actor** stands in for the jobs (it is the benchmark, not the product): a run time after
  it sees a Workload become ``Admitted`` it sets ``Finished=True`` (reason ``ByTest``) through the status
  subresource, and when it sees one ``Evicted`` it acknowledges by clearing the reservation
  (``QuotaReserved=False`` reason ``Pending``, ``Admitted=False``, ``status.admission`` removed), as
  runner/controller/controller.go does. By default (``actor="kueue"``) it is bench.baseline.actor: 5
  workers reading the watch cache and writing server-side apply patches, as Kueue's runner; ``"concurrent"``
  keeps the older actor, one task per finish with a JSON Patch, unbounded;
* the **recorder** watches Workloads (feeding the timeline and the actor) and ClusterQueues (Kueue's end
  condition and its usage formula).

The run ends when generation is over and every created Workload has been seen ``Finished``; Kueue's own
criterion (every ClusterQueue status shows no pending and no reserving Workloads) is awaited briefly after
that and its time reported too. The concurrent actor's writes are JSON Patches guarded by a ``test`` of the
resourceVersion, so the actor never overwrites a condition the controller wrote meanwhile; a failed guard
re-reads and retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from bench import real_cluster
from bench.baseline import scenario
from bench.baseline.actor import Conflict, KueueActor
from bench.baseline.kueue_recorder import EXIT_CHECK_EVERY_S, KueueRecorder
from bench.baseline.timeline import Change, Timeline, Transition
from bench.baseline.topology_check import TopologyCheck
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    WORKLOADS,
    Kind,
)

JSON = dict[str, Any]
log = logging.getLogger("bench.baseline")


class Api(Protocol):
    """The slice of an API client the run needs (``kueue_webhook.control.kube.client.KubeClient`` fits)."""

    async def create(
        self, kind: Kind, body: JSON, *, namespace: str | None = None, timeout: float | None = ...
    ) -> JSON: ...

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON: ...

    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: Any = "merge",
        subresource: str = "",
    ) -> JSON: ...

    async def list_all(self, kind: Kind, *, namespace: str | None = None) -> tuple[list[JSON], str]: ...

    async def delete(
        self, kind: Kind, *, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> JSON: ...

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int = 290) -> Any: ...

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Any = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> JSON: ...


ACTORS = ("kueue", "concurrent")
APPLY_PATCH = "application/apply-patch+yaml"


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set_condition(conditions: list[JSON], new: JSON) -> list[JSON]:
    """Replace the condition of the same type (keeping its transition time if the status is unchanged)."""
    out = []
    replaced = False
    for cond in conditions:
        if cond.get("type") == new["type"]:
            if cond.get("status") == new["status"]:
                new = {**new, "lastTransitionTime": cond.get("lastTransitionTime", new["lastTransitionTime"])}
            out.append(new)
            replaced = True
        else:
            out.append(cond)
    if not replaced:
        out.append(new)
    return out


def finished_patch(obj: JSON) -> list[JSON] | None:
    """JSON Patch setting Finished=True ByTest; None when already finished."""
    status = obj.get("status") or {}
    conditions = list(status.get("conditions") or [])
    if any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions):
        return None
    condition = {
        "type": "Finished",
        "status": "True",
        "reason": "ByTest",
        "message": "By test runner",
        "lastTransitionTime": _now_rfc3339(),
        "observedGeneration": (obj.get("metadata") or {}).get("generation", 1),
    }
    return _guarded(
        obj, [{"op": "add", "path": "/status/conditions", "value": _set_condition(conditions, condition)}]
    )


def eviction_ack_patch(obj: JSON) -> list[JSON] | None:
    """JSON Patch clearing the reservation of an evicted Workload; None when there is nothing to clear."""
    status = obj.get("status") or {}
    conditions = list(status.get("conditions") or [])
    reserved = any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)
    if not reserved and "admission" not in status:
        return None
    now = _now_rfc3339()
    generation = (obj.get("metadata") or {}).get("generation", 1)
    conditions = _set_condition(
        conditions,
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "Evicted by the test runner",
            "lastTransitionTime": now,
            "observedGeneration": generation,
        },
    )
    if any(c.get("type") == "Admitted" for c in conditions):
        conditions = _set_condition(
            conditions,
            {
                "type": "Admitted",
                "status": "False",
                "reason": "NoReservation",
                "message": "The workload has no reservation",
                "lastTransitionTime": now,
                "observedGeneration": generation,
            },
        )
    ops: list[JSON] = [{"op": "add", "path": "/status/conditions", "value": conditions}]
    if "admission" in status:
        ops.append({"op": "remove", "path": "/status/admission"})
    return _guarded(obj, ops)


def _guarded(obj: JSON, ops: list[JSON]) -> list[JSON]:
    version = (obj.get("metadata") or {}).get("resourceVersion")
    test = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
    if "status" not in obj:
        ops = [{"op": "add", "path": "/status", "value": {}}, *ops]
    return [*test, *ops]


@dataclass
class Counters:
    workload_events: int = 0
    workload_modified: int = 0
    cluster_queue_modified: int = 0
    actor_writes: int = 0
    actor_retries: int = 0
    created: int = 0
    create_failures: int = 0
    errors: list[str] = field(default_factory=list)


class Run:
    """One run of a plan against an API server; ``execute`` returns when it ends or times out."""

    def __init__(
        self,
        *,
        api: Api,
        plan: scenario.Plan,
        timeout: float,
        progress: Callable[[str], None],
        actor: str = "kueue",
    ) -> None:
        if actor not in ACTORS:
            raise ValueError(f"actor must be one of {ACTORS}, not {actor!r}")
        self.api = api
        self.actor = actor
        self.plan = plan
        self.timeout = timeout
        self.progress = progress
        self.timeline = Timeline(class_label=scenario.CLASS_LABEL)
        self.kueue_recorder = KueueRecorder()
        self.counters = Counters()
        topology = plan.shape.topology
        self.topology_check = TopologyCheck(topology) if topology else None
        self._templates = {
            f"{w.namespace}/{w.name}": w.template for stream in plan.streams for w in stream.workloads
        }
        self.t0 = time.monotonic()
        self.first_creation_at: float | None = None
        self.generation_done_at: float | None = None
        self.all_finished_at: float | None = None
        self.queues_idle_at: float | None = None
        #: Kueue's recorder's end: generation done and no Active ClusterQueue pending or reserving
        self.kueue_end_at: float | None = None
        self.timed_out = False
        self._latest: dict[str, JSON] = {}
        self.runtime_ms: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._finished = 0
        self._all_finished = asyncio.Event()
        self._queues_idle = asyncio.Event()
        self._active_queues: set[str] = set()
        self._queues_active = asyncio.Event()
        self._generating = True
        self.kueue_actor = KueueActor(
            read=self._latest.get,
            apply=self._apply_status,
            runtime_ms=lambda key: self.runtime_ms.get(key, 0),
            # the timeline's clock: an admission is timed at the same instant by both
            clock=self.now,
        )

    def now(self) -> float:
        return time.monotonic() - self.t0

    # -- generator ------------------------------------------------------------------------------------

    async def wait_for_terminating_namespaces(self, *, timeout: float = 300.0) -> None:
        """A previous run's namespaces may still be terminating on a real cluster (the namespace
        controller deletes their Workloads first); creating in them is forbidden until they are gone."""
        deadline = time.monotonic() + timeout
        for queue in self.plan.queues:
            while True:
                try:
                    namespace = await self.api.get(NAMESPACES, name=queue.name)
                except ApiError as exc:
                    if exc.status == 404:
                        break
                    raise
                if not (namespace.get("metadata") or {}).get("deletionTimestamp"):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"namespace {queue.name} still terminating after {timeout:.0f}s")
                await asyncio.sleep(0.5)  # another process's deletion: nothing here to await but its result

    async def setup(self) -> None:
        """ResourceFlavor, then per queue its ClusterQueue, Namespace and LocalQueue (Kueue's order)."""
        await self.wait_for_terminating_namespaces()
        slots = asyncio.Semaphore(16)
        topology = self.plan.shape.topology
        if topology is not None:
            # topology_generator.go via CreateNodesWithStatus: each Node created, its status written, then
            # the API server's not-ready taint (TaintNodesByCondition) removed, as no node lifecycle
            # controller will; then the Topology

            async def node(body: JSON, status: JSON) -> None:
                async with slots:
                    await self._create(NODES, body)
                    name = body["metadata"]["name"]
                    await self.api.patch(NODES, name=name, patch=status, subresource="status")
                    taints = ((await self.api.get(NODES, name=name)).get("spec") or {}).get("taints") or []
                    kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
                    if len(kept) != len(taints):
                        await self.api.patch(NODES, name=name, patch={"spec": {"taints": kept or None}})

            await asyncio.gather(*(node(body, status) for body, status in scenario.nodes(topology)))
            await self._create(TOPOLOGIES, scenario.topology_object(topology))
        await self._create(RESOURCE_FLAVORS, scenario.resource_flavor(self.plan.shape))

        async def one(queue: scenario.PlannedQueue) -> None:
            async with slots:
                await self._create(CLUSTER_QUEUES, scenario.cluster_queue(queue, self.plan.shape.flavor))
                await self._create(NAMESPACES, scenario.namespace(queue))
                await self._create(LOCAL_QUEUES, scenario.local_queue(queue), namespace=queue.name)

        await asyncio.gather(*(one(queue) for queue in self.plan.queues))

    async def _create(self, kind: Kind, body: JSON, *, namespace: str | None = None) -> None:
        try:
            await self.api.create(kind, body, namespace=namespace)
        except ApiError as exc:
            if exc.status != 409:  # AlreadyExists: a previous run's object, reused as is
                raise

    async def _stream(self, stream: scenario.CreationStream) -> None:
        for planned in stream.workloads:
            await asyncio.sleep(stream.interval_ms / 1000)
            key = f"{planned.namespace}/{planned.name}"
            at = self.now()
            if self.first_creation_at is None:
                self.first_creation_at = at
            self.timeline.created(
                key, class_name=planned.template.class_name, cluster_queue=stream.queue.name, at=at
            )
            self.runtime_ms[key] = planned.template.runtime_ms
            try:
                # no time limit of its own: Kueue's generator creates with controller-runtime's client on
                # client-go's default rest.Config (Timeout 0), so a slow API server delays the stream and
                # only the API server's own request timeout (60 s) fails a creation
                await self.api.create(
                    WORKLOADS, scenario.workload(planned), namespace=planned.namespace, timeout=None
                )
                self.counters.created += 1
            except ApiError as exc:
                self.counters.create_failures += 1
                self.counters.errors.append(f"create {key}: {exc}")

    async def generate(self) -> None:
        await asyncio.gather(*(self._stream(stream) for stream in self.plan.streams))
        self.generation_done_at = self.now()
        self._generating = False
        self._check_end()

    # -- recorder -------------------------------------------------------------------------------------

    async def _watch(self, kind: Kind, handle: Callable[[str, JSON], None]) -> None:
        await real_cluster.watch(self.api, kind, handle)

    def _on_workload(self, event: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if scenario.CLASS_LABEL not in (meta.get("labels") or {}):
            return
        self.counters.workload_events += 1
        if event == "MODIFIED":
            self.counters.workload_modified += 1
        deleted = event == "DELETED"
        at = self.now()  # one instant for everything that times this event
        if deleted:
            self._latest.pop(key, None)
            self.kueue_actor.forget(key)
        else:
            self._latest[key] = obj
            self.kueue_recorder.record_workload(obj, at=at)
            if self.actor == "kueue":
                self.kueue_actor.observe(key, obj, created=event == "ADDED", at=at)
        if self.topology_check is not None and not deleted:
            self.topology_check.observe(key, obj, self._templates.get(key))
        for transition in self.timeline.observe(obj, at=at, deleted=deleted):
            self._act(transition)

    def _on_cluster_queue(self, event: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        if event == "MODIFIED":
            self.counters.cluster_queue_modified += 1
        status = obj.get("status") or {}
        if any(
            c.get("type") == "Active" and c.get("status") == "True" for c in status.get("conditions") or ()
        ):
            self._active_queues.add(name)
            if len(self._active_queues) >= len(self.plan.queues):
                self._queues_active.set()
        if event != "DELETED":
            self.kueue_recorder.record_cluster_queue(obj, at=self.now())
        self._check_end()

    # -- execution actor --------------------------------------------------------------------------

    def _act(self, transition: Transition) -> None:
        key = transition.workload
        if transition.change is Change.FINISHED:
            self._timers.pop(key, None)
            self._finished += 1
            self._check_end()
        if self.actor != "concurrent":
            return
        if transition.change is Change.ADMITTED:
            delay = self.runtime_ms.get(key, 0) / 1000
            self._timers[key] = asyncio.get_running_loop().call_later(delay, self._spawn, self._finish, key)
        elif transition.change is Change.UNADMITTED:
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
        elif transition.change is Change.EVICTED:
            self._spawn(self._acknowledge_eviction, key)

    async def _apply_status(self, key: str, body: JSON, manager: str) -> None:
        """A server-side apply of the Workload's status, forced, as controller-runtime's
        ``Status().Patch(obj, client.Apply, owner, client.ForceOwnership)`` sends it."""
        namespace, name = key.split("/", 1)
        try:
            await self.api.request(
                "PATCH",
                WORKLOADS.path(namespace=namespace, name=name, subresource="status"),
                query={"fieldManager": manager, "force": "true"},
                body=body,
                content_type=APPLY_PATCH,
            )
        except ApiError as exc:
            if exc.status == 409:
                self.counters.actor_retries += 1
                raise Conflict(str(exc)) from exc
            if exc.status == 404:
                return
            self.counters.errors.append(f"apply {manager} {key}: {exc}")
            raise
        self.counters.actor_writes += 1

    def _spawn(self, action: Callable[[str], Any], key: str) -> None:
        task = asyncio.get_running_loop().create_task(action(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, key: str) -> None:
        self._timers.pop(key, None)
        await self._write(key, finished_patch)

    async def _acknowledge_eviction(self, key: str) -> None:
        await self._write(key, eviction_ack_patch)

    async def _write(self, key: str, build: Callable[[JSON], list[JSON] | None]) -> None:
        namespace, name = key.split("/", 1)
        obj = self._latest.get(key)
        for attempt in range(20):
            if obj is None:
                return
            patch = build(obj)
            if patch is None:
                return
            try:
                await self.api.patch(
                    WORKLOADS,
                    name=name,
                    namespace=namespace,
                    patch=patch,
                    patch_type="json",
                    subresource="status",
                )
                self.counters.actor_writes += 1
                return
            except ApiError as exc:
                if exc.status not in (409, 422) or attempt == 19:
                    self.counters.errors.append(f"{build.__name__} {key}: {exc}")
                    return
                self.counters.actor_retries += 1
                try:
                    obj = await self.api.get(WORKLOADS, name=name, namespace=namespace)
                except ApiError as missing:
                    if missing.status == 404:
                        return
                    raise

    # -- the end ------------------------------------------------------------------------------------

    def _check_end(self) -> None:
        if (
            not self._generating
            and self._finished >= self.counters.created
            and not self._all_finished.is_set()
        ):
            self.all_finished_at = self.now()
            self._all_finished.set()
        idle = not self._generating and not self.kueue_recorder.expects_more()
        if idle and self.kueue_end_at is None:
            self.kueue_end_at = self.now()
        if self._all_finished.is_set() and idle and self.queues_idle_at is None:
            self.queues_idle_at = self.now()
            self._queues_idle.set()

    async def _check_end_periodically(self) -> None:
        """Kueue's recorder also checks its end condition on a 5 s ticker, in case no ClusterQueue event
        comes."""
        while True:
            await asyncio.sleep(EXIT_CHECK_EVERY_S)
            self._check_end()

    async def _report_progress(self) -> None:
        while True:
            await asyncio.sleep(10)
            admitted = sum(1 for r in self.timeline.records.values() if r.admitted_at is not None)
            self.progress(
                f"t={self.now() - (self.first_creation_at or 0):6.1f}s created {self.counters.created} "
                f"admitted {admitted} finished {self._finished}"
            )

    async def execute(self, *, wait_active: float = 60.0, idle_grace: float = 120.0) -> None:
        """Run the scenario to its end. After the last Workload finished, wait up to ``idle_grace`` for
        Kueue's end condition (every Active ClusterQueue's status without pending or reserving Workloads),
        as Kueue's runner waits for its recorder: at 1,000 ClusterQueues their last status writes take
        longer than a few seconds, and a short grace would report the end condition as never reached."""
        # The actor stands in for the kubelets, so it must not lag: with the run's records alive, the
        # collector's full passes held its loop for up to a few hundred ms in the tail (finishes came late
        # and the jobs seemed to run longer). Reference counting frees nearly everything; the few cycles
        # wait for the end of the run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            await self._execute(wait_active=wait_active, idle_grace=idle_grace)
        finally:
            if collecting:
                gc.enable()

    async def _execute(self, *, wait_active: float, idle_grace: float) -> None:
        background = [
            asyncio.create_task(self._watch(WORKLOADS, self._on_workload), name="watch-workloads"),
            asyncio.create_task(self._watch(CLUSTER_QUEUES, self._on_cluster_queue), name="watch-cqs"),
        ]
        if self.actor == "kueue":
            background.append(asyncio.create_task(self.kueue_actor.run(), name="actor"))
        try:
            await self.setup()
            try:
                await asyncio.wait_for(self._queues_active.wait(), wait_active)
            except TimeoutError:
                self.progress(
                    f"only {len(self._active_queues)}/{len(self.plan.queues)} ClusterQueues Active "
                    f"after {wait_active:.0f}s; starting anyway"
                )
            background.append(asyncio.create_task(self._report_progress(), name="progress"))
            background.append(asyncio.create_task(self._check_end_periodically(), name="end-ticker"))
            generator = asyncio.create_task(self.generate(), name="generator")
            finished = asyncio.ensure_future(self._all_finished.wait())
            watchers_and_generator = [*background[:2], generator]
            if self.actor == "kueue":
                watchers_and_generator.append(background[2])
            pending = {finished, *watchers_and_generator}
            deadline = time.monotonic() + self.timeout
            while finished in pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    finished.cancel()
                    break
                done, pending = await asyncio.wait(
                    pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    if task is not finished:
                        error = task.exception()
                        if error is not None:
                            raise error
                        if task is not generator:
                            raise RuntimeError(f"{task.get_name()} ended before the run did")
            if not self.timed_out:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._queues_idle.wait(), idle_grace)
        finally:
            for task in background:
                task.cancel()
            for timer in self._timers.values():
                timer.cancel()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*background, *self._tasks, return_exceptions=True)

    async def cleanup(self) -> None:
        """Delete what setup created, as Kueue's runner does on a real cluster: namespaces (and the
        Workloads and LocalQueues in them), then the ClusterQueues and the ResourceFlavor."""
        slots = asyncio.Semaphore(16)

        async def delete(kind: Kind, name: str) -> None:
            async with slots:
                with contextlib.suppress(ApiError):
                    await self.api.delete(kind, name=name)

        await asyncio.gather(*(delete(NAMESPACES, q.name) for q in self.plan.queues))
        await asyncio.gather(*(delete(CLUSTER_QUEUES, q.name) for q in self.plan.queues))
        await delete(RESOURCE_FLAVORS, self.plan.shape.flavor)
        topology = self.plan.shape.topology
        if topology is not None:
            await delete(TOPOLOGIES, topology.name)
            await asyncio.gather(*(delete(NODES, n["metadata"]["name"]) for n, _ in scenario.nodes(topology)))

    @property
    def end_at(self) -> float:
        return self.all_finished_at if self.all_finished_at is not None else self.now()
