"""Objects, one global resourceVersion counter, and the event log every watch is fed from.

Like etcd behind kube-apiserver, every successful write takes the next integer resourceVersion and appends one
event to a single log; watches are cursors into that log, so a client resuming from resourceVersion N receives
exactly the events after N, and a cursor older than the retained window gets 410 Expired. Stored objects are
never mutated after they are committed (a write builds a new dict), which lets lists, watches and Tables share
them without copying. A write that changes nothing keeps its resourceVersion and emits no event, as the
apiserver does.

Everything here is synchronous: the asyncio server calls it between awaits, so no write can interleave with
another and no lock is needed.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakeapi.errors import already_exists, conflict, expired, not_found

Obj = dict[str, Any]
StorageKey = tuple[str, str]
ObjList = list[Obj]
KeyList = list[StorageKey]
DependentList = list[tuple[StorageKey, Obj]]
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Event:
    rv: int
    type: str
    key: StorageKey
    namespace: str
    name: str
    obj: Obj
    old: Obj | None = None
    encoded: dict[str, bytes] = field(default_factory=dict)


EventList = list[Event]


def _rv_of(event: Event) -> int:
    return event.rv


class Store:
    """All objects of all kinds, keyed by (group, plural) then (namespace, name)."""

    def __init__(self, *, history: int = 20000, first_rv: int = 1) -> None:
        self.history = history
        self.rv = first_rv
        self._objects: dict[StorageKey, dict[tuple[str, str], Obj]] = {}
        self._log: list[Event] = []
        #: the same events per kind, so a watch reads and wakes for its own kind only
        self._log_by_key: dict[StorageKey, list[Event]] = {}
        self._compacted_rv = first_rv
        #: per kind, the newest of its events that compaction dropped (a watch of it older than that lost one)
        self._compacted_by_key: dict[StorageKey, int] = {}
        self._changed = asyncio.Event()
        self._changed_by_key: dict[StorageKey, asyncio.Event] = {}
        # owner uid -> dependents, so garbage collection does not scan every object on each delete.
        self._dependents: dict[str, set[tuple[StorageKey, str, str]]] = {}

    # ---- reads -------------------------------------------------------------------------------------------
    def get(self, key: StorageKey, namespace: str, name: str) -> Obj | None:
        return self._objects.get(key, {}).get((namespace, name))

    def list(self, key: StorageKey, namespace: str | None = None) -> ObjList:
        bucket = self._objects.get(key, {})
        if namespace is None:
            items = list(bucket.values())
        else:
            items = [o for (ns, _), o in bucket.items() if ns == namespace]
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items

    def kinds(self) -> KeyList:
        return list(self._objects)

    # ---- writes ------------------------------------------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def insert(self, key: StorageKey, obj: Obj, *, plural: str) -> Obj:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        bucket = self._objects.setdefault(key, {})
        if (namespace, name) in bucket:
            raise already_exists(plural=plural, group=key[0], name=name)
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        bucket[(namespace, name)] = obj
        self._index_owners(key, obj, add=True)
        self._append(Event(rv, "ADDED", key, namespace, name, obj))
        return obj

    def replace(self, key: StorageKey, obj: Obj, *, expected_rv: str, plural: str) -> Obj:
        """Commit if the stored object still has `expected_rv`; an unchanged object keeps its version."""
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        current = self.get(key, namespace, name)
        if current is None:
            raise not_found(plural=plural, group=key[0], name=name)
        if current["metadata"]["resourceVersion"] != expected_rv:
            raise conflict(plural=plural, group=key[0], name=name)
        meta["resourceVersion"] = expected_rv
        if obj == current:
            return current
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        self._objects[key][(namespace, name)] = obj
        self._index_owners(key, current, add=False)
        self._index_owners(key, obj, add=True)
        self._append(Event(rv, "MODIFIED", key, namespace, name, obj, current))
        return obj

    def remove(self, key: StorageKey, namespace: str, name: str, *, plural: str) -> Obj:
        current = self._objects.get(key, {}).pop((namespace, name), None)
        if current is None:
            raise not_found(plural=plural, group=key[0], name=name)
        self._index_owners(key, current, add=False)
        rv = self.next_rv()
        gone = dict(current)
        gone["metadata"] = dict(current["metadata"], resourceVersion=str(rv))
        self._append(Event(rv, "DELETED", key, namespace, name, gone))
        return gone

    def _index_owners(self, key: StorageKey, obj: Obj, *, add: bool) -> None:
        meta = obj["metadata"]
        ident = (key, meta.get("namespace", ""), meta["name"])
        for ref in meta.get("ownerReferences") or ():
            uid = ref.get("uid")
            if not uid:
                continue
            if add:
                self._dependents.setdefault(uid, set()).add(ident)
            else:
                dependents = self._dependents.get(uid)
                if dependents is not None:
                    dependents.discard(ident)
                    if not dependents:
                        del self._dependents[uid]

    def dependents_of(self, uid: str) -> DependentList:
        """Objects whose ownerReferences name `uid`."""
        found: DependentList = []
        for key, namespace, name in sorted(self._dependents.get(uid, ())):
            obj = self.get(key, namespace, name)
            if obj is not None:
                found.append((key, obj))
        return found

    def _append(self, event: Event) -> None:
        self._log.append(event)
        own = self._log_by_key.setdefault(event.key, [])
        own.append(event)
        excess = len(self._log) - self.history
        if excess > max(1000, self.history // 10):
            del self._log[:excess]
            self._compacted_rv = max(self._compacted_rv, self._log[0].rv - 1)
            for kind, events in self._log_by_key.items():
                dropped = bisect_right(events, self._compacted_rv, key=_rv_of)
                if dropped:
                    self._compacted_by_key[kind] = events[dropped - 1].rv
                    del events[:dropped]
        self._notify_key(event.key)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _notify_key(self, key: StorageKey) -> None:
        changed = self._changed_by_key.pop(key, None)
        if changed is not None:
            changed.set()

    def notify(self) -> None:
        """Wake every waiter, whatever it watches (compaction, a server shutting its watches)."""
        for key in list(self._changed_by_key):
            self._notify_key(key)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ---- history -----------------------------------------------------------------------------------------
    @property
    def compacted_rv(self) -> int:
        """The oldest resourceVersion a watch may resume from; anything older answers 410 Expired."""
        return self._compacted_rv

    def compact(self) -> None:
        """Forget all history, as an etcd compaction at the current revision does."""
        self._log.clear()
        self._log_by_key.clear()
        self._compacted_rv = self.rv
        self._compacted_by_key = dict.fromkeys(self._objects, self.rv)
        self.notify()

    def compacted_rv_of(self, key: StorageKey) -> int:
        """A watch of this kind at a version older than this has lost events: it must relist (410)."""
        return self._compacted_by_key.get(key, 0)

    def check_watch_rv(self, rv: int) -> None:
        if rv < self._compacted_rv:
            raise expired(f"too old resource version: {rv} ({self._compacted_rv})")

    def events_after(self, rv: int, key: StorageKey) -> EventList:
        """The events of one kind newer than ``rv`` (what a watch of that kind has not sent yet)."""
        events = self._log_by_key.get(key, [])
        if not events or rv >= events[-1].rv:
            return []
        return events[bisect_right(events, rv, key=_rv_of) :]

    async def changed(self, timeout: float | None, key: StorageKey | None = None) -> bool:
        """Wait for the next write (of kind ``key`` when given) or a notify; False on timeout."""
        if key is None:
            waiter = self._changed
        else:
            waiter = self._changed_by_key.get(key) or self._changed_by_key.setdefault(key, asyncio.Event())
        try:
            async with asyncio.timeout(timeout):
                await waiter.wait()
        except TimeoutError:
            return False
        return True

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
        """Return as soon as `predicate()` holds after some write; raise TimeoutError otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0 or not await self.changed(remaining):
                if predicate():
                    return
                raise TimeoutError(f"condition not met within {timeout}s")

    # ---- helpers for the layers above --------------------------------------------------------------------
    @staticmethod
    def new_uid() -> str:
        return str(uuid.uuid4())

    @staticmethod
    def generate_name(prefix: str) -> str:
        return prefix + "".join(random.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
