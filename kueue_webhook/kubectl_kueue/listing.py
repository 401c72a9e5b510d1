"""``kubectl kueue list``: kueuectl's four lists, their filters and columns, read page by page.

Pages are ``KUEUECTL_LIST_REQUEST_LIMIT`` objects (default 100, kueuectl's); filters the server cannot apply
(LocalQueue, ClusterQueue, status, ``--active``) are applied here as kueuectl applies them (the ClusterQueue
filter of Workloads looks at their admission only, as kueuectl's does). Positions come from the visibility
API, one read per ClusterQueue with pending Workloads listed; when it cannot be read the column stays empty
and a warning says why, rather than failing the whole list.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, WORKLOADS, Kind
from kueue_webhook.kubectl_kueue import arguments as a
from kueue_webhook.kubectl_kueue.arguments import UsageError
from kueue_webhook.kubectl_kueue.columns import (
    CLUSTER_QUEUE_COLUMNS,
    LOCAL_QUEUE_COLUMNS,
    RESOURCE_FLAVOR_COLUMNS,
    WORKLOAD_COLUMNS,
    cluster_queue_row,
    is_true,
    local_queue_row,
    resource_flavor_row,
    workload_cluster_queue,
    workload_row,
    workload_status,
)
from kueue_webhook.kubectl_kueue.output import dump, name_line
from kueue_webhook.kubectl_kueue.reads import (
    NotQueued,
    find_workload,
    kind_for,
    pending_summary,
    resource_names,
    warn,
)
from kueue_webhook.kubectl_kueue.session import Session, describe_error
from kueue_webhook.kubectl_kueue.table import render_table

__all__ = ["list_command", "page_size"]

JSON = dict[str, Any]
LIMIT_VARIABLE = "KUEUECTL_LIST_REQUEST_LIMIT"
_KINDS: dict[str, Kind] = {
    a.WORKLOAD: WORKLOADS,
    a.LOCAL_QUEUE: LOCAL_QUEUES,
    a.CLUSTER_QUEUE: CLUSTER_QUEUES,
    a.RESOURCE_FLAVOR: RESOURCE_FLAVORS,
}


def page_size(environ: Mapping[str, str]) -> int:
    raw = environ.get(LIMIT_VARIABLE, "")
    if not raw:
        return 100
    try:
        return int(raw)
    except ValueError:
        raise UsageError("invalid list request limit") from None


async def _items(
    session: Session, kind: Kind, args: argparse.Namespace, namespace: str | None, label: str
) -> list[JSON]:
    out: list[JSON] = []
    async for page, _ in session.client.list_pages(
        kind,
        namespace=namespace,
        field_selector=args.field_selector,
        label_selector=label,
        page_size=page_size(os.environ),
    ):
        out.extend(page)
    return out


def _keep_workload(args: argparse.Namespace) -> Callable[[JSON], bool]:
    def keep(workload: JSON) -> bool:
        spec = workload.get("spec") or {}
        admission = (workload.get("status") or {}).get("admission") or {}
        if args.localqueue and spec.get("queueName") != args.localqueue:
            return False
        if args.clusterqueue and admission.get("clusterQueue") != args.clusterqueue:
            return False
        return not args.status or workload_status(workload) in args.status

    return keep


async def _workloads(session: Session, args: argparse.Namespace, namespace: str | None) -> list[JSON] | None:
    label = args.selector
    if not args.for_object:
        return [
            w for w in await _items(session, WORKLOADS, args, namespace, label) if _keep_workload(args)(w)
        ]
    word, slash, name = args.for_object.partition("/")
    if not slash or not name:
        raise UsageError("--for must be in resource/name form")
    if "/" in name:
        raise UsageError("arguments in resource/name form may not have more than one slash")
    kind = await kind_for(session.client, word)
    try:
        _, obj = await find_workload(session.client, kind, name, session.namespace)
    except NotQueued:
        return None
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    uid = str(((obj or {}).get("metadata") or {}).get("uid", ""))
    by_label = ",".join(p for p in (label, f"kueue.x-k8s.io/job-uid={uid}") if p)
    found = await _items(session, WORKLOADS, args, namespace, by_label)
    if not found:
        found = [
            w
            for w in await _items(session, WORKLOADS, args, namespace, label)
            if any(ref.get("uid") == uid for ref in (w.get("metadata") or {}).get("ownerReferences") or [])
        ]
    return [w for w in found if _keep_workload(args)(w)]


async def _workload_rows(session: Session, workloads: list[JSON], now: datetime) -> list[list[str]]:
    local_queues: dict[tuple[str, str], JSON | None] = {}
    for workload in workloads:
        if ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue"):
            continue
        key = (
            str(workload["metadata"].get("namespace", "")),
            str((workload.get("spec") or {}).get("queueName", "")),
        )
        if key in local_queues:
            continue
        try:
            local_queues[key] = await session.client.get(LOCAL_QUEUES, name=key[1], namespace=key[0])
        except ApiError as exc:
            if exc.status != 404:
                raise
            local_queues[key] = None
    positions = await _positions(session, workloads, local_queues)
    api_versions = {
        str(ref.get("apiVersion", ""))
        for w in workloads
        for ref in (w.get("metadata") or {}).get("ownerReferences") or []
    }
    names = await resource_names(session.client, api_versions)
    return [
        workload_row(w, now=now, local_queues=local_queues, positions=positions, names=names)
        for w in workloads
    ]


async def _positions(
    session: Session, workloads: list[JSON], local_queues: dict[tuple[str, str], JSON | None]
) -> dict[tuple[str, str], int]:
    """(namespace, name) -> positionInLocalQueue of the pending Workloads listed: one ClusterQueue read each,
    or, where that is forbidden (a namespace's user has Kueue's LocalQueue viewer role only), one read per
    LocalQueue."""
    waiting: dict[str, set[tuple[str, str]]] = {}
    for workload in workloads:
        queue = workload_cluster_queue(workload, local_queues)
        if queue and workload_status(workload) == "pending":
            meta = workload["metadata"]
            local = (str(meta.get("namespace", "")), str((workload.get("spec") or {}).get("queueName", "")))
            waiting.setdefault(queue, set()).add(local)
    summaries: list[JSON | None] = []
    for queue in sorted(waiting):
        try:
            summaries.append(await pending_summary(session.client, f"clusterqueues/{queue}/pendingworkloads"))
            continue
        except ApiError as exc:
            if exc.status != 403:
                warn(f"no queue positions for ClusterQueue {queue}: {describe_error(exc)}")
                continue
        for namespace, name in sorted(waiting[queue]):
            try:
                path = f"namespaces/{namespace}/localqueues/{name}/pendingworkloads"
                summaries.append(await pending_summary(session.client, path))
            except ApiError as exc:
                warn(f"no queue positions for LocalQueue {namespace}/{name}: {describe_error(exc)}")
    positions: dict[tuple[str, str], int] = {}
    for summary in summaries:
        for item in (summary or {}).get("items") or []:
            meta = item.get("metadata") or {}
            key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
            positions[key] = int(item.get("positionInLocalQueue", 0))
    return positions


def _nothing(args: argparse.Namespace, namespace: str | None, err: TextIO) -> int:
    if args.resource in (a.WORKLOAD, a.LOCAL_QUEUE) and namespace is not None:
        print(f"No resources found in {namespace} namespace.", file=err)
    else:
        print("No resources found", file=err)
    return 0


async def list_command(session: Session, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    kind = _KINDS[args.resource]
    namespaced = args.resource in (a.WORKLOAD, a.LOCAL_QUEUE)
    namespace = None if namespaced and args.all_namespaces else session.namespace if namespaced else None
    items: list[JSON] | None
    if args.resource == a.WORKLOAD:
        items = await _workloads(session, args, namespace)
    else:
        items = await _items(session, kind, args, namespace, args.selector)
    if items is None:
        return _nothing(args, namespace, sys.stderr)
    if args.resource == a.LOCAL_QUEUE and args.clusterqueue:
        items = [q for q in items if (q.get("spec") or {}).get("clusterQueue") == args.clusterqueue]
    if args.resource == a.CLUSTER_QUEUE and args.active is not None:
        items = [q for q in items if is_true(q, "Active") == args.active]
    if args.output in ("json", "yaml"):
        listing = {
            "apiVersion": kind.api_version,
            "kind": f"{kind.kind}List",
            "metadata": {},
            "items": items or [],
        }
        out.write(dump(listing, args.output))
        return 0
    if not items:
        return _nothing(args, namespace, sys.stderr)
    if args.output == "name":
        out.write("".join(name_line(item) + "\n" for item in items))
        return 0
    now = datetime.now(UTC)
    headers: tuple[str, ...]
    if args.resource == a.WORKLOAD:
        headers, rows = WORKLOAD_COLUMNS, await _workload_rows(session, items, now)
    elif args.resource == a.LOCAL_QUEUE:
        headers, rows = LOCAL_QUEUE_COLUMNS, [local_queue_row(q, now=now) for q in items]
    elif args.resource == a.CLUSTER_QUEUE:
        headers, rows = CLUSTER_QUEUE_COLUMNS, [cluster_queue_row(q, now=now) for q in items]
    else:
        headers, rows = RESOURCE_FLAVOR_COLUMNS, [resource_flavor_row(f, now=now) for f in items]
    if namespaced and args.all_namespaces:
        headers = ("Namespace", *headers)
        rows = [
            [str(item["metadata"].get("namespace", "")), *row] for item, row in zip(items, rows, strict=True)
        ]
    out.write(render_table(headers, rows))
    return 0
