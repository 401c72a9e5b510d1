"""Whether an object is queued through a real owner rather than on its own (Kueue's
``FindAncestorJobManagedByKueue``), as a pure walk up the controller ownerReferences.

An ownerReference is only a claim: anyone who may create a Job may write one naming any kind, name and UID.
Trusting the claim would let a user free a Job from quota by naming a JobSet that does not exist. So, as Kueue
does, an owner counts only when the claim is checked against the cluster: its apiVersion and kind are those
of a kind Kueue knows (``Integrations.known_owner``), the object exists in the same namespace, and its UID is
the reference's. The walk goes on up the controller chain (a Job of a JobSet of an AppWrapper) and returns the
highest owner that is queued (an enabled integration or an external framework, with a queue name unless
``manageJobsWithoutQueueName``); the object is queued through that ancestor, and on its own when there is
none. Cycles and chains deeper than Kueue's limit stop the walk.

Where Kueue answers an error (an owner that is not found, a cycle, a chain too deep), the object is queued on
its own here instead: a forged or broken claim then costs its author quota, never the cluster. One rule is
stricter than Kueue: a ``batch/v1`` Job never counts as the controller of another ``batch/v1`` Job. No
Kubernetes controller makes such a pair (CronJobs, JobSets, RayJobs, Kubeflow and AppWrapper controllers make
Jobs; the Job controller makes pods), while a user can name an admitted Job of the namespace, with its real
UID, as the controller of a Job of their own and have it run on the other Job's admission.

The walk reads the cluster through ``OwnerLookup``: the admission webhook's ClusterView, or the controller's
store, either of which may answer :class:`Unresolved` for a kind it does not watch and could not look up;
the object is then queued on its own and the reason said.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kueue_webhook.api.integrations.engine import queue_name
from kueue_webhook.api.integrations.registry import Integrations

__all__ = [
    "MAX_OWNER_DEPTH",
    "Ancestry",
    "OwnerAnswer",
    "OwnerLookup",
    "Unresolved",
    "controller_reference",
    "queued_ancestor",
]

#: Kueue's ``managedOwnersChainLimit``: more owners than this above an object stop the walk
MAX_OWNER_DEPTH = 10

_JOB_GROUP_KIND = ("batch", "Job")


@dataclass(frozen=True, slots=True)
class Unresolved:
    """The owner could not be looked up (its kind is not watched, the API server did not answer)."""

    reason: str


#: the owner as last seen, None when it does not exist, or why it could not be looked up
OwnerAnswer = Mapping[str, Any] | Unresolved | None


class OwnerLookup(Protocol):
    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        """The object ``namespace/name`` of ``api_version``/``kind``."""
        ...


@dataclass(frozen=True, slots=True)
class Ancestry:
    """Where the walk up the controller chain ended.

    ``ancestor`` is the highest owner queued instead of the object (None: the object is queued on its own,
    if at all); ``note`` says why the walk stopped where a user or an operator would want to know (a claimed
    owner that does not exist, a lookup that failed, a cycle); ``too_deep`` is Kueue's ``JobNestingTooDeep``.
    """

    ancestor: Mapping[str, Any] | None = None
    note: str = ""
    too_deep: bool = False

    @property
    def through_owner(self) -> bool:
        return self.ancestor is not None


def controller_reference(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The object's ownerReference with ``controller: true``, None when it has none (or it is malformed)."""
    meta = obj.get("metadata")
    owners = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(owners, list):
        return None
    for ref in owners:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _describe(ref: Mapping[str, Any]) -> str:
    return f"{ref.get('kind')} {ref.get('name')!r} ({ref.get('apiVersion')}, uid {ref.get('uid')})"


def queued_ancestor(
    obj: Mapping[str, Any],
    *,
    api_version: str,
    kind: str,
    integrations: Integrations,
    lookup: OwnerLookup,
    manage_jobs_without_queue_name: bool = False,
    namespace: str | None = None,
) -> Ancestry:
    """Kueue's ``FindAncestorJobManagedByKueue`` for ``obj`` (of ``api_version``/``kind``, in ``namespace``,
    by default its own), each claimed owner checked against ``lookup`` (see the module docstring for where
    this differs from Kueue)."""
    if namespace is None:
        namespace = str(_meta(obj).get("namespace") or "")
    seen: set[str] = set()
    current, current_type = obj, (api_version, kind)
    top: Mapping[str, Any] | None = None
    while True:
        uid = str(_meta(current).get("uid") or "")
        if uid and uid in seen:
            return Ancestry(None, "cyclic ownership: its controller references form a loop")
        seen.add(uid)
        ref = controller_reference(current)
        if ref is None:
            return Ancestry(top)
        ref_version, ref_kind = ref.get("apiVersion"), ref.get("kind")
        if not isinstance(ref_version, str) or not isinstance(ref_kind, str):
            return Ancestry(top)
        if (_group(current_type[0]), current_type[1]) == _JOB_GROUP_KIND and (
            (_group(ref_version), ref_kind) == _JOB_GROUP_KIND
        ):
            # stricter than Kueue: nothing but a user makes a Job the controller of a Job
            return Ancestry(top, f"a Job's controller cannot be another Job ({_describe(ref)})")
        if not integrations.known_owner(ref_version, ref_kind):
            return Ancestry(top)
        answer = lookup.owner(namespace, ref_version, ref_kind, str(ref.get("name") or ""))
        if isinstance(answer, Unresolved):
            return Ancestry(top, f"its controller {_describe(ref)} could not be looked up: {answer.reason}")
        if answer is None:
            return Ancestry(top, f"its controller {_describe(ref)} does not exist")
        if str(_meta(answer).get("uid") or "") != str(ref.get("uid") or "") or not ref.get("uid"):
            return Ancestry(top, f"its controller {_describe(ref)} is another object (another UID)")
        if integrations.managing_owner(ref_version, ref_kind) and (
            manage_jobs_without_queue_name or queue_name(answer) is not None
        ):
            top = answer
        current, current_type = answer, (ref_version, ref_kind)
        if len(seen) > MAX_OWNER_DEPTH:
            return Ancestry(
                None,
                "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of "
                f"{MAX_OWNER_DEPTH}",
                too_deep=True,
            )
