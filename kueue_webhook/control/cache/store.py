"""One in-memory mirror of every watched object, fed by informers and by our own writes.

Watches deliver duplicates (after a relist), our own write results race their watch events, and a resumed
watch can replay what a list already showed. The store therefore accepts an object only if it is not older
than what it holds (resourceVersions compared as integers, which kube-apiserver's etcd-backed versions are),
remembers deletions as tombstones so a late event cannot resurrect a deleted object, and notifies listeners
only on a real change. Applying the same event twice is a no-op, so every handler above is idempotent.
Listeners are independent: one that raises is logged and reported (``on_listener_error``), and every other
listener still hears the change, so a bug in one consumer cannot starve the scheduler or the webhook's view;
and the change itself is kept, whoever failed on it.

Memory is the other constraint: as nested dicts a Job costs about 5 KB of Python objects, so 10,000 Jobs
and their Workloads would take 100 MB on their own. Each object is therefore kept as its JSON encoding,
deflated with a per-kind preset dictionary (the first object of that kind the store saw: objects of one
kind share most of their bytes, so a 1.5 KB Workload shrinks to a few hundred bytes), and decoded on access
(a few microseconds). Every reader gets its own fresh dict, so no caller can corrupt the mirror by
mutating what it got.

Deflating is the expensive half (priming a compressor with the dictionary costs ~0.2 ms, so each kind's
codec primes one once and copies it per object; inflating costs microseconds), and the objects that change
are few and change several times in a row (a Workload is created, marked pending, admitted, finished within
seconds). So the most recently written
objects, up to ``HOT_BYTES`` of JSON, are kept plain and deflated only when they drop out of that window: an
object rewritten while hot is never deflated at all, and the memory cost is a fixed ~1.5 MB whatever the
number of objects.
``metadata.managedFields`` and kubectl's ``last-applied-configuration`` annotation are dropped on the way
in: no controller reads them and they can double an object's size.
"""

from __future__ import annotations

import logging
import struct
import sys
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from kueue_webhook.api.integrations.owners import OwnerAnswer, Unresolved
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, cluster_queue_checks
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Kind,
)

JSON = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


class Change:
    """An observed transition of one object; ``new`` None means deleted, ``old`` None means added.

    ``old`` is decoded from the bytes the store held only when a listener first reads it (then kept for
    the others): most listeners look at ``new`` alone, and most changes are told to no listener that
    reads ``old``. ``added`` says whether there was an ``old`` without decoding it."""

    __slots__ = ("_old", "_old_raw", "key", "kind", "new")

    def __init__(self, kind: Kind, key: Key, old: JSON | None, new: JSON | None) -> None:
        self.kind = kind
        self.key = key
        self.new = new
        self._old = old
        self._old_raw: bytes | None = None

    @classmethod
    def from_held(cls, kind: Kind, key: Key, old_raw: bytes | None, new: JSON | None) -> Change:
        """A change whose ``old`` is the JSON the store held (None: nothing was), decoded on first read."""
        change = cls(kind, key, None, new)
        change._old_raw = old_raw
        return change

    @property
    def old(self) -> JSON | None:
        raw = self._old_raw
        if raw is not None:
            self._old = orjson.loads(raw)
            self._old_raw = None
        return self._old

    @property
    def added(self) -> bool:
        """There was no ``old``: the object is new to the store."""
        return self._old_raw is None and self._old is None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Change):
            return NotImplemented
        return (self.kind, self.key, self.old, self.new) == (other.kind, other.key, other.old, other.new)

    __hash__ = None  # type: ignore[assignment]  # holds dicts: compared, never hashed

    def __repr__(self) -> str:
        return (
            f"Change(kind={self.kind.kind}, key={self.key!r}, added={self.added}, deleted={self.new is None})"
        )

    def only_status_changed(self) -> bool:
        """An update that left everything but ``status`` (and the resourceVersion) as it was: for a queue
        or a flavor, most often the echo of our own status write, which nothing derived from the spec needs
        to see."""
        old, new = self.old, self.new
        if old is None or new is None or old.get("spec") != new.get("spec"):
            return False
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        return all(
            old_meta.get(field) == new_meta.get(field)
            for field in ("generation", "labels", "deletionTimestamp", "uid")
        )


Listener = Callable[[Change], None]
log = logging.getLogger("kueue_webhook.store")


def listener_name(listener: Listener) -> str:
    """A listener's qualified name, for logs and the metric's label (``SchedulerLoop.on_change``)."""
    return str(getattr(listener, "__qualname__", None) or type(listener).__qualname__)


def key_of(obj: JSON) -> Key:
    meta = obj.get("metadata") or {}
    # namespaces repeat across thousands of keys: one shared string each
    return (sys.intern(meta.get("namespace") or ""), meta.get("name") or "")


def resource_version(obj: JSON | None) -> int:
    """The object's resourceVersion as an integer; -1 when absent or not numeric (always accepted)."""
    if obj is None:
        return -1
    raw = (obj.get("metadata") or {}).get("resourceVersion") or ""
    try:
        return int(raw)
    except ValueError:
        return -1


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def slim(obj: JSON) -> JSON:
    """``obj`` without managedFields and the last-applied annotation (a shallow copy when anything goes)."""
    meta = obj.get("metadata")
    if not meta or ("managedFields" not in meta and LAST_APPLIED not in (meta.get("annotations") or {})):
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def _is_stale(incoming_version: int, held_version: int) -> bool:
    return incoming_version >= 0 and held_version >= 0 and incoming_version <= held_version


#: log2 of deflate's window: how far back it finds a match, in the dictionary or the object
_WINDOW_BITS = 13


class _Codec:
    """Raw deflate with a preset dictionary; entries encoded with it are decoded with it.

    Loading the dictionary into a compressor (hashing every byte of it) is most of the cost of deflating
    one object, so it is done once: each object is deflated by a copy of that primed compressor. The
    compressor's hash table is kept small (``memLevel`` 4), and so is its window (8 KiB, ``_WINDOW_BITS``):
    these objects are a few KiB and the dictionary a few of them, so the output is the same size as with
    deflate's defaults (32 KiB), while a copy has a third of the state to duplicate (a quarter less time
    per object)."""

    __slots__ = ("_primed", "zdict")

    def __init__(self, sample: bytes) -> None:
        self.zdict = sample[-(1 << _WINDOW_BITS) :]  # deflate looks back one window at most
        self._primed = zlib.compressobj(
            6, zlib.DEFLATED, -_WINDOW_BITS, 4, zlib.Z_DEFAULT_STRATEGY, self.zdict
        )

    def encode(self, raw: bytes) -> bytes:
        compressor = self._primed.copy()
        return compressor.compress(raw) + compressor.flush()

    def decode_raw(self, data: bytes | memoryview) -> bytes:
        decompressor = zlib.decompressobj(-_WINDOW_BITS, zdict=self.zdict)
        return decompressor.decompress(data) + decompressor.flush()


#: an entry is one bytes object: the resourceVersion (8 bytes) then the deflated JSON, no per-entry object
_VERSION = struct.Struct(">q")
#: after this many objects of a kind, its dictionary is rebuilt once from recent objects, and the kind
#: re-encoded: objects as they were created and, as much, as they were updated (these carry the status a
#: freshly created object lacks, and most of what is held is in that state). Created objects alone, as a
#: burst of creations leaves them, made the dictionary of a Workload kind one without conditions and
#: admissions: every Workload then deflated to five times its size with a full one, and took longer to.
RETRAIN_AT = 256
_SAMPLES = 6
#: retrained from creations alone, once this many objects exist and none was updated yet
_RETRAIN_WITHOUT_UPDATES_AT = 4 * RETRAIN_AT


class _Samples:
    """Recent encodings of one kind, created and updated, until its dictionary is final."""

    __slots__ = ("created", "updated")

    def __init__(self) -> None:
        self.created: list[bytes] = []
        self.updated: list[bytes] = []

    def add(self, raw: bytes, *, updated: bool) -> None:
        recent = self.updated if updated else self.created
        recent.append(bytes(raw))
        del recent[:-_SAMPLES]

    def ready(self, objects: int) -> bool:
        if objects < RETRAIN_AT:
            return False
        return len(self.updated) >= _SAMPLES // 2 or objects >= _RETRAIN_WITHOUT_UPDATES_AT

    def dictionary(self) -> bytes:
        """Half created, half updated objects, as far as there are; the updated last (nearest)."""
        updated = self.updated[-(_SAMPLES // 2) :]
        created = self.created[-(_SAMPLES - len(updated)) :]
        return b"".join(created + updated)


#: bytes of recently written objects kept as plain JSON (their entry then holds only the version); the
#: oldest are deflated beyond it
HOT_BYTES = 1536 * 1024


def _version_of(entry: bytes) -> int:
    return int(_VERSION.unpack_from(entry)[0])


class Store:
    """Objects per kind and key, tombstones for deletions, an owner index for Workloads, and listeners."""

    def __init__(self) -> None:
        self._objects: dict[Kind, dict[Key, bytes]] = {}
        self._codecs: dict[Kind, _Codec] = {}
        self._samples: dict[Kind, _Samples] = {}
        self._tombstones: dict[Kind, dict[Key, int]] = {}
        self._owned: dict[str, Key] = {}  # owner uid -> key of the Workload it controls
        self._owner_of: dict[Key, str] = {}  # the reverse: Workload key -> its controller's uid
        #: each listener with the gate it is told changes under (None: always)
        self._listeners: list[tuple[Listener, Callable[[], bool] | None]] = []
        #: told (change, listener name) when a listener raised; the other listeners were told regardless
        self.on_listener_error: Callable[[Change, str], None] | None = None
        self._synced: set[Kind] = set()
        #: (kind, key) -> plain JSON of a recently written object, oldest first
        self._hot: OrderedDict[tuple[Kind, Key], bytes] = OrderedDict()
        self._hot_bytes = 0

    def _raw(self, kind: Kind, key: Key, entry: bytes) -> bytes:
        """The JSON of a held entry: plain if hot, else inflated."""
        if len(entry) == _VERSION.size:
            return self._hot[(kind, key)]
        return self._codecs[kind].decode_raw(memoryview(entry)[_VERSION.size :])

    def _decode(self, kind: Kind, key: Key, entry: bytes) -> JSON:
        obj: JSON = orjson.loads(self._raw(kind, key, entry))
        return obj

    def _cool(self) -> None:
        """Deflate the oldest hot objects beyond ``HOT_BYTES``."""
        while self._hot_bytes > HOT_BYTES and self._hot:
            (kind, key), raw = self._hot.popitem(last=False)
            self._hot_bytes -= len(raw)
            objects = self._objects.get(kind, {})
            entry = objects.get(key)
            if entry is not None and len(entry) == _VERSION.size:
                objects[key] = entry + self._codecs[kind].encode(raw)

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, kind: Kind, name: str, namespace: str = "") -> JSON | None:
        key = (namespace, name)
        entry = self._objects.get(kind, {}).get(key)
        return self._decode(kind, key, entry) if entry is not None else None

    def items(self, kind: Kind, *, namespace: str | None = None) -> list[JSON]:
        objects = self._objects.get(kind, {})
        if not objects:
            return []
        decode = self._decode
        if namespace is None:
            return [decode(kind, key, entry) for key, entry in objects.items()]
        return [decode(kind, key, entry) for key, entry in objects.items() if key[0] == namespace]

    def contains(self, kind: Kind, name: str, namespace: str = "") -> bool:
        """Whether the object is held, without decoding it."""
        return (namespace, name) in self._objects.get(kind, {})

    def keys(self, kind: Kind) -> list[Key]:
        return list(self._objects.get(kind, {}))

    def count(self, kind: Kind) -> int:
        return len(self._objects.get(kind, {}))

    def held_bytes(self, kind: Kind) -> int:
        """The bytes ``kind``'s objects are held in: deflated, or as JSON while recently written."""
        hot = self._hot
        return sum(
            len(entry) + len(hot[(kind, key)]) if len(entry) == _VERSION.size else len(entry)
            for key, entry in self._objects.get(kind, {}).items()
        )

    def workload_owned_by(self, *, namespace: str, owner_uid: str) -> JSON | None:
        """The Workload whose controller ownerReference points at ``owner_uid`` (a Job), if any."""
        key = self._owned.get(owner_uid)
        if key is None or key[0] != namespace:
            return None
        return self.get(WORKLOADS, key[1], key[0])

    def job_of(self, workload: JSON) -> JSON | None:
        """The Job a Workload belongs to (controller ownerReference of kind Job), if it is in the store."""
        owner = controller_owner(workload)
        if owner is None or owner.get("kind") != "Job":
            return None
        namespace, _ = key_of(workload)
        job = self.get(JOBS, str(owner.get("name", "")), namespace)
        if job is None or (job.get("metadata") or {}).get("uid") != owner.get("uid"):
            return None
        return job

    # -- the admission webhook's ClusterView (kueue_webhook.admission.view)
    # ---------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """The namespace's labels (with the name label Kubernetes adds), None if it is not known."""
        ns = self.get(NAMESPACES, namespace)
        if ns is None:
            return None
        labels = dict((ns.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def local_queue_names(self, namespace: str) -> list[str]:
        """LocalQueue names in ``namespace``, sorted."""
        return sorted(name for (ns, name) in self._objects.get(LOCAL_QUEUES, {}) if ns == namespace)

    def workload(self, namespace: str, name: str) -> JSON | None:
        return self.get(WORKLOADS, name, namespace)

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        """An ownerReference's target, when its kind is mirrored here (watched and listed once): every
        enabled integration's kind is; another kind is :class:`Unresolved` (looked up by the caller)."""
        for watched in self._synced:
            if watched.kind == kind and watched.api_version == api_version and watched.namespaced:
                return self.get(watched, name, namespace)
        return Unresolved(f"{kind} objects ({api_version}) are not watched")

    def has_workload_priority_class(self, name: str) -> bool:
        return self.get(WORKLOAD_PRIORITY_CLASSES, name) is not None

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        """Whether the LocalQueue's ClusterQueue lists an AdmissionCheck whose controller is MultiKueue."""
        queue = self.get(LOCAL_QUEUES, local_queue, namespace)
        cluster_queue = self.get(
            CLUSTER_QUEUES, str(((queue or {}).get("spec") or {}).get("clusterQueue", ""))
        )
        if cluster_queue is None:
            return False
        for name in cluster_queue_checks(cluster_queue):
            check = self.get(ADMISSION_CHECKS, name)
            if check is not None and (check.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER:
                return True
        return False

    # -- sync gate ----------------------------------------------------------------------------------------

    def mark_synced(self, kind: Kind) -> None:
        self._synced.add(kind)

    def is_synced(self, kinds: Iterable[Kind]) -> bool:
        return all(kind in self._synced for kind in kinds)

    # -- writing ------------------------------------------------------------------------------------------

    def subscribe(self, listener: Listener, *, when: Callable[[], bool] | None = None) -> None:
        """Tell ``listener`` every change from now on; with ``when``, only the changes made while it
        answers True (asked for each change, as the listener's turn comes)."""
        self._listeners.append((listener, when))

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        """Add or update ``obj`` unless we hold something as new; True if the store changed."""
        key = key_of(obj)
        objects = self._objects.setdefault(kind, {})
        held = objects.get(key)
        version = resource_version(obj)
        if held is not None and _is_stale(version, _version_of(held)):
            return False  # the echo of a write whose answer we hold, or a replay: one compare, no decoding
        if held is None and _is_stale(version, self._tombstones.get(kind, {}).get(key, -1)):
            return False
        self._tombstones.get(kind, {}).pop(key, None)
        obj = slim(obj)
        raw = orjson.dumps(obj)
        old_raw = self._raw(kind, key, held) if held is not None else None
        if old_raw is not None and old_raw == raw:
            return False
        self._codec_for(kind, raw, updated=old_raw is not None)
        objects[key] = _VERSION.pack(version)
        hot_key = (kind, key)
        replaced = self._hot.pop(hot_key, None)
        self._hot_bytes += len(raw) - (len(replaced) if replaced is not None else 0)
        self._hot[hot_key] = raw
        self._cool()
        if kind is WORKLOADS:
            self._index_owner(key, obj)
        self._notify(Change.from_held(kind, key, old_raw, obj))
        return True

    def remove(self, kind: Kind, obj: JSON) -> bool:
        """Forget ``obj`` (a DELETED event carries its last state); True if it was held."""
        key = key_of(obj)
        objects = self._objects.setdefault(kind, {})
        held = objects.get(key)
        version = resource_version(obj)
        if held is not None and 0 <= version < _version_of(held):
            return False  # a late delete (e.g. of an earlier incarnation); the newer object stays
        tombstones = self._tombstones.setdefault(kind, {})
        tombstones[key] = max(version, tombstones.get(key, -1), _version_of(held) if held is not None else -1)
        if held is None:
            return False
        old_raw = self._raw(kind, key, held)
        del objects[key]
        dropped = self._hot.pop((kind, key), None)
        self._hot_bytes -= len(dropped) if dropped is not None else 0
        if kind is WORKLOADS:
            self._index_owner(key, None)
        self._notify(Change.from_held(kind, key, old_raw, None))
        return True

    def replace(self, kind: Kind, objects: Iterable[JSON]) -> None:
        """Reconcile with a complete list: upsert everything listed, remove what is no longer there."""
        listed = {key_of(obj): obj for obj in objects}
        self._tombstones.pop(kind, None)  # a list is authoritative; old tombstones cannot matter any more
        for obj in listed.values():
            self.upsert(kind, obj)
        self.retain_only(kind, set(listed))

    def retain_only(self, kind: Kind, keys: set[Key]) -> None:
        """After a relist whose objects were upserted: forget every object the list did not contain."""
        for key, held in list(self._objects.get(kind, {}).items()):
            if key not in keys:
                self.remove(kind, self._decode(kind, key, held))
        self._tombstones.pop(kind, None)

    def _codec_for(self, kind: Kind, raw: bytes, *, updated: bool) -> _Codec:
        """The kind's codec: the first object is the dictionary until ``RETRAIN_AT`` objects exist and
        some were updated, then recent objects are, once (every entry of the kind is re-encoded then)."""
        codec = self._codecs.get(kind)
        if codec is None:
            self._samples[kind] = _Samples()
            codec = self._codecs[kind] = _Codec(bytes(raw))
            return codec
        samples = self._samples.get(kind)
        if samples is None:
            return codec
        samples.add(raw, updated=updated)
        objects = self._objects.get(kind, {})
        if not samples.ready(len(objects)):
            return codec
        trained = _Codec(samples.dictionary())
        for key, entry in objects.items():
            if len(entry) == _VERSION.size:
                continue  # hot: deflated later, with the new dictionary
            objects[key] = entry[: _VERSION.size] + trained.encode(
                codec.decode_raw(memoryview(entry)[_VERSION.size :])
            )
        del self._samples[kind]
        self._codecs[kind] = trained
        return trained

    def _index_owner(self, key: Key, new: JSON | None) -> None:
        """Point the owner index at ``new``'s controller (the entry of the owner it had before goes), so
        the index needs no decoding of what the store held. An unchanged owner keeps its entries: the key
        tuple first indexed, not a fresh one per update."""
        new_owner = controller_owner(new) if new is not None else None
        new_uid = str(new_owner["uid"]) if new_owner is not None and new_owner.get("uid") else None
        old_uid = self._owner_of.get(key)
        if old_uid == new_uid and (new_uid is None or self._owned.get(new_uid) == key):
            return
        if old_uid is not None:
            del self._owner_of[key]
            if self._owned.get(old_uid) == key:
                del self._owned[old_uid]
        if new_uid is not None:
            self._owned[new_uid] = key
            self._owner_of[key] = new_uid

    def _notify(self, change: Change) -> None:
        for listener, when in self._listeners:
            if when is not None and not when():
                continue
            try:
                listener(change)
            except Exception as exc:
                name = listener_name(listener)
                namespace, object_name = change.key
                log.error(
                    "store listener failed; the others still got the change",
                    exc_info=exc,
                    extra={
                        "listener": name,
                        "kind": change.kind.kind,
                        "object": f"{namespace}/{object_name}".strip("/"),
                        "error": repr(exc),
                    },
                )
                if self.on_listener_error is not None:
                    self.on_listener_error(change, name)


def controller_owner(obj: JSON | None) -> JSON | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None
