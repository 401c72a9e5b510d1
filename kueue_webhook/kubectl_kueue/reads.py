"""What ``kubectl kueue`` reads besides plain lists: resource types by name, discovery's singular names,
queue positions from the visibility API, and the Workload of a Job (or of any queued object).

A type on the command line (``job``, ``jobsets.jobset.x-k8s.io``, ``pytorchjob``, ``pod``) is matched against
the queued kinds this project knows first, then against discovery, as kubectl's REST mapper matches it
(plural, singular, short name or kind, optionally ``.group``). The Workload of an object is found as the
controller names it (``engine.workload_name``: kind, name and uid; for a pod, first the Workload its owner
made for it (``prebuilt-workload-name``, a StatefulSet's), then its group's), then by owner reference, as
kueuectl's ``--for`` falls back to. A pending-workloads read answered 503 (a replica that does not lead) is
retried, as the Service sends every other request to the leader.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.integrations import BUILTIN
from kueue_webhook.api.integrations.engine import JOB_UID_LABEL, workload_name
from kueue_webhook.api.integrations.pod_groups import group_name
from kueue_webhook.api.integrations.statefulsets import prebuilt_workload_name
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from kueue_webhook.kubectl_kueue.estimate import LiveState
from kueue_webhook.kubectl_kueue.session import describe_error

__all__ = [
    "VISIBILITY",
    "NotQueued",
    "find_workload",
    "kind_for",
    "match_type",
    "pending_summary",
    "read_live_state",
    "resource_names",
]

JSON = dict[str, Any]


class NotQueued(LookupError):
    """No such resource type, or no Workload for the object: told as ``error: ...`` (kubectl's wording)."""


VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
_KUEUE_KINDS = (WORKLOADS, LOCAL_QUEUES, CLUSTER_QUEUES, RESOURCE_FLAVORS)


def match_type(word: str, resources: Sequence[tuple[str, Mapping[str, Any]]]) -> Kind | None:
    """The resource of ``resources`` ((groupVersion, APIResource) pairs) that ``word`` names, None if none."""
    name, _, group = word.lower().partition(".")
    for group_version, resource in resources:
        if "/" in str(resource.get("name", "")):
            continue  # a subresource
        own_group, _, version = group_version.rpartition("/")
        if group and group != own_group:
            continue
        names = {
            str(resource.get("name", "")),
            str(resource.get("singularName", "")),
            str(resource.get("kind", "")).lower(),
            *(str(s) for s in resource.get("shortNames") or []),
        }
        if name in names:
            return Kind(
                str(resource["kind"]),
                own_group,
                version,
                str(resource["name"]),
                bool(resource.get("namespaced")),
            )
    return None


def _known() -> list[tuple[str, Mapping[str, Any]]]:
    known: list[tuple[str, Mapping[str, Any]]] = [
        (
            i.api_version,
            {"name": i.plural, "singularName": i.kind.lower(), "kind": i.kind, "namespaced": True},
        )
        for i in BUILTIN.values()
    ]
    known += [
        (
            k.api_version,
            {"name": k.plural, "singularName": k.kind.lower(), "kind": k.kind, "namespaced": k.namespaced},
        )
        for k in _KUEUE_KINDS
    ]
    return known


async def _discovered(client: KubeClient) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    core = await client.request("GET", "/api/v1")
    out += [("v1", r) for r in core.get("resources") or []]
    groups = await client.request("GET", "/apis")
    for group in groups.get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if not preferred:
            continue
        try:
            listing = await client.request("GET", f"/apis/{preferred}")
        except ApiError:
            continue  # an aggregated API that is down: kubectl skips it too
        out += [(str(preferred), r) for r in listing.get("resources") or []]
    return out


async def kind_for(client: KubeClient, word: str) -> Kind:
    """The resource ``word`` names; raises ApiError as the server would (kubectl's message)."""
    found = match_type(word, _known()) or match_type(word, await _discovered(client))
    if found is None:
        raise NotQueued(f'the server doesn\'t have a resource type "{word}"')
    return found


async def resource_names(
    client: KubeClient, api_versions: set[str]
) -> dict[str, dict[str, tuple[str, str]] | None]:
    """apiVersion -> kind -> (singular, group), from discovery of each apiVersion (None when unknown)."""
    out: dict[str, dict[str, tuple[str, str]] | None] = {}
    for api_version in sorted(api_versions):
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        group = api_version.rpartition("/")[0]
        try:
            listing = await client.request("GET", path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            out[api_version] = None
            continue
        out[api_version] = {
            str(r.get("kind")): (str(r.get("singularName") or ""), group)
            for r in listing.get("resources") or []
            if r.get("singularName")
        }
    return out


async def pending_summary(client: KubeClient, path: str, *, attempts: int = 6) -> JSON | None:
    """A PendingWorkloadsSummary; None when the queue is unknown (404). A 503 (a replica that does not
    lead) is retried after its Retry-After; other errors are raised."""
    for attempt in range(attempts):
        try:
            return await client.request("GET", f"{VISIBILITY}/{path}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            if exc.status != 503 or attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5)
    return None


def warn(message: str) -> None:
    print(f"Warning: {message}", file=sys.stderr)


async def find_workload(
    client: KubeClient, kind: Kind, name: str, namespace: str
) -> tuple[JSON, JSON | None]:
    """(the Workload, the object asked about or None for a Workload asked about directly)."""
    if kind == WORKLOADS:
        return await client.get(WORKLOADS, name=name, namespace=namespace), None
    obj = await client.get(kind, name=name, namespace=namespace if kind.namespaced else None)
    meta = obj.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    candidates = []
    if kind.kind == "Pod" and kind.group == "":
        candidates += [n for n in (prebuilt_workload_name(obj), group_name(obj)) if n]
    candidates.append(workload_name(name, uid, kind=kind.kind, group=kind.group))
    for candidate in candidates:
        try:
            return await client.get(WORKLOADS, name=candidate, namespace=namespace), obj
        except ApiError as exc:
            if exc.status != 404:
                raise
    items, _ = await client.list_all(WORKLOADS, namespace=namespace)
    for workload in items:
        labels = (workload.get("metadata") or {}).get("labels") or {}
        owners = (workload.get("metadata") or {}).get("ownerReferences") or []
        if labels.get(JOB_UID_LABEL) == uid or any(ref.get("uid") == uid for ref in owners):
            return workload, obj
    raise NotQueued(
        f'no Workload for {kind.kind.lower()} "{name}" in namespace "{namespace}" '
        "(is it labelled kueue.x-k8s.io/queue-name, and is its kind's integration enabled?)"
    )


async def read_live_state(client: KubeClient, notes: list[str], *, strict: bool = False) -> LiveState | None:
    """Every ClusterQueue, LocalQueue, ResourceFlavor, Cohort and Workload of the cluster, and the
    Namespaces' labels when readable (else None: selectors are then taken as met, and a note says so).
    When one of the Kueue lists is refused: None with a note, or with ``strict`` the ApiError. Only LIST."""
    lists: dict[Kind, list[JSON]] = {}
    for kind in (CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, COHORTS, WORKLOADS):
        try:
            lists[kind], _ = await client.list_all(kind)
        except ApiError as exc:
            if strict:
                raise
            notes.append(f"no estimate: listing {kind.plural} across the cluster: {describe_error(exc)}")
            return None
    namespaces: dict[str, dict[str, str]] | None
    try:
        items, _ = await client.list_all(NAMESPACES)
        namespaces = {str(n["metadata"]["name"]): dict(n["metadata"].get("labels") or {}) for n in items}
    except ApiError:
        namespaces = None
        notes.append("Namespaces cannot be listed: every ClusterQueue's namespaceSelector is taken as met")
    return LiveState(
        cluster_queues=lists[CLUSTER_QUEUES],
        local_queues=lists[LOCAL_QUEUES],
        resource_flavors=lists[RESOURCE_FLAVORS],
        cohorts=lists[COHORTS],
        workloads=lists[WORKLOADS],
        namespaces=namespaces,
    )
