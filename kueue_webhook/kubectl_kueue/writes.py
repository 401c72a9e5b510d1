"""``stop``, ``resume``, ``create``, ``delete workload`` and ``version``: kueuectl's writes and messages.

``stop``/``resume`` read the object and send a JSON merge patch of the one field they change, as
kueuectl does (``client.MergeFrom``): a Workload's ``spec.active`` (false stops it: not admitted, or evicted
if it was), a LocalQueue's or ClusterQueue's ``spec.stopPolicy`` (``HoldAndDrain`` evicts what runs; with
``--keep-already-running`` ``Hold`` only stops admitting; ``resume`` sets ``None``). ``--dry-run=server``
sends the request with ``dryRun=All``; ``--dry-run=client`` sends nothing and prints what would change.
``delete workload`` deletes the objects owning a Workload (the Workload then goes by garbage collection) after
asking, or the Workload itself when nothing owns it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from kueue_webhook import __version__
from kueue_webhook.control.kube.client import PATCH_CONTENT_TYPES, ApiError
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, WORKLOADS, Kind
from kueue_webhook.kubectl_kueue import arguments as a
from kueue_webhook.kubectl_kueue import specs
from kueue_webhook.kubectl_kueue.output import dump, name_line
from kueue_webhook.kubectl_kueue.reads import kind_for
from kueue_webhook.kubectl_kueue.session import Session

__all__ = ["FIELD_MANAGER", "create_command", "delete_command", "stop_resume_command", "version_command"]

JSON = dict[str, Any]
FIELD_MANAGER = "kubectl-kueue"
_KINDS: dict[str, Kind] = {
    a.WORKLOAD: WORKLOADS,
    a.LOCAL_QUEUE: LOCAL_QUEUES,
    a.CLUSTER_QUEUE: CLUSTER_QUEUES,
}
#: where the controller runs when installed from manifests/controller (``version`` shows its image)
CONTROLLER = ("kueue-system", "kueue-webhook", "kueue-webhook")
DEPLOYMENTS = Kind("Deployment", "apps", "v1", "deployments", namespaced=True)


def _query(dry_run: str) -> dict[str, str | int]:
    query: dict[str, str | int] = {"fieldManager": FIELD_MANAGER}
    if dry_run == "server":
        query["dryRun"] = "All"
    return query


def _print(obj: JSON, args: argparse.Namespace, operation: str, out: TextIO) -> None:
    if args.output in ("json", "yaml"):
        out.write(dump(obj, args.output))
    else:
        out.write(name_line(obj, "" if args.output == "name" else operation, args.dry_run) + "\n")


def stop_patch(resource: str, *, stop: bool, keep_running: bool = False) -> JSON:
    """The merge patch of ``stop``/``resume`` (kueuectl's fields and values)."""
    if resource == a.WORKLOAD:
        return {"spec": {"active": not stop}}
    policy = ("Hold" if keep_running else "HoldAndDrain") if stop else "None"
    return {"spec": {"stopPolicy": policy}}


async def stop_resume_command(session: Session, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    kind = _KINDS[args.resource]
    namespace = session.namespace if kind.namespaced else None
    stop = args.command == "stop"
    current = await session.client.get(kind, name=args.name, namespace=namespace)
    patch = stop_patch(args.resource, stop=stop, keep_running=getattr(args, "keep_already_running", False))
    if args.dry_run == "client":
        changed = {**current, "spec": {**(current.get("spec") or {}), **patch["spec"]}}
    else:
        changed = await session.client.request(
            "PATCH",
            kind.path(namespace=namespace, name=args.name),
            body=patch,
            content_type=PATCH_CONTENT_TYPES["merge"],
            query=_query(args.dry_run),
        )
    # kueuectl: a Workload prints "stopped"/"resumed", the queues no operation
    operation = ("stopped" if stop else "resumed") if args.resource == a.WORKLOAD else ""
    _print(changed, args, operation, out)
    return 0


def _build(session: Session, args: argparse.Namespace) -> tuple[Kind, JSON]:
    if args.resource == a.LOCAL_QUEUE:
        return LOCAL_QUEUES, specs.local_queue(args.name, session.namespace, args.clusterqueue)
    if args.resource == a.CLUSTER_QUEUE:
        return CLUSTER_QUEUES, specs.cluster_queue(
            args.name,
            cohort=args.cohort,
            queuing_strategy=args.queuing_strategy,
            namespace_selector=args.namespace_selector,
            reclaim_within_cohort=args.reclaim_within_cohort,
            preemption_within_cluster_queue=args.preemption_within_cluster_queue,
            nominal_quota=args.nominal_quota,
            borrowing_limit=args.borrowing_limit,
            lending_limit=args.lending_limit,
        )
    return RESOURCE_FLAVORS, specs.resource_flavor(
        args.name, node_labels=args.node_labels, node_taints=args.node_taints, extra=args.tolerations
    )


async def create_command(session: Session, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    kind, body = _build(session, args)
    if args.resource == a.LOCAL_QUEUE and not args.ignore_unknown_cq:
        await session.client.get(CLUSTER_QUEUES, name=args.clusterqueue)
    created = body
    if args.dry_run != "client":
        namespace = session.namespace if kind.namespaced else None
        created = await session.client.request(
            "POST", kind.path(namespace=namespace), body=body, query=_query(args.dry_run)
        )
    _print(created, args, "created", out)
    return 0


def _confirmed(message: str, out: TextIO, read: Callable[[], str]) -> bool:
    out.write(message + "Do you want to proceed (y/n)? ")
    out.flush()
    return read().strip().lower() == "y"


async def delete_command(
    session: Session,
    args: argparse.Namespace,
    out: TextIO = sys.stdout,
    read: Callable[[], str] = sys.stdin.readline,
) -> int:
    """kueuectl's ``delete workload``: the owners (Jobs ...) when there are some, else the Workload."""
    workloads: list[JSON] = []
    if args.all:
        namespace = None if args.all_namespaces else session.namespace
        workloads, _ = await session.client.list_all(WORKLOADS, namespace=namespace)
    else:
        for name in args.names:
            try:
                workloads.append(await session.client.get(WORKLOADS, name=name, namespace=session.namespace))
            except ApiError as exc:
                if exc.status != 404:
                    raise
                print(exc.message, file=sys.stderr)
    if not workloads:
        return 0
    owned: list[tuple[JSON, list[tuple[Kind, str]]]] = []
    for workload in workloads:
        refs = []
        for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = await kind_for(session.client, f"{ref.get('kind', '')}.{group}".rstrip("."))
            refs.append((kind, str(ref.get("name", ""))))
        owned.append((workload, refs))
    if args.dry_run == "none" and not args.yes and any(refs for _, refs in owned):
        if args.all:
            message = "This operation will also delete the jobs associated with these workloads.\n"
        else:
            lines = [
                f"  - {', '.join(_resource(kind, name) for kind, name in refs)} associated with the "
                f"{w['metadata'].get('namespace')}/{w['metadata'].get('name')} workload\n"
                for w, refs in owned
                if refs
            ]
            message = "This operation will also delete:\n" + "\n".join(lines)
        if not _confirmed(message, out, read):
            out.write("Deletion is canceled\n")
            return 0
    suffix = {"client": " (client dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
    query = {"dryRun": "All"} if args.dry_run == "server" else None
    for workload, refs in owned:
        namespace = str(workload["metadata"].get("namespace", ""))
        if not refs:
            if args.dry_run != "client":
                path = WORKLOADS.path(namespace=namespace, name=workload["metadata"]["name"])
                await _delete(session, path, query)
            out.write(name_line(workload, "deleted", args.dry_run) + "\n")
        for kind, name in refs:
            if args.dry_run != "client":
                await _delete(session, kind.path(namespace=namespace, name=name), query)
            out.write(f"{_resource(kind, name)} deleted{suffix}\n")
    return 0


def _resource(kind: Kind, name: str) -> str:
    """``jobs.batch/name``: a GroupResource and a name, as kueuectl names what it deletes."""
    return f"{kind.plural}{'.' + kind.group if kind.group else ''}/{name}"


async def _delete(session: Session, path: str, query: dict[str, str] | None) -> None:
    try:
        await session.client.request(
            "DELETE", path, query={**(query or {})}, body={"propagationPolicy": "Background"}
        )
    except ApiError as exc:
        if exc.status != 404:
            raise


async def version_command(session: Session | None, out: TextIO = sys.stdout) -> int:
    """The client's version, and the controller's image when it runs where the manifests put it."""
    out.write(f"Client Version: {__version__}\n")
    if session is None:
        return 0
    namespace, name, container = CONTROLLER
    try:
        deployment = await session.client.get(DEPLOYMENTS, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status in (403, 404):
            return 0
        raise
    for entry in (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or []:
        if entry.get("name") == container:
            out.write(f"kueue-webhook Controller Image: {entry.get('image')}\n")
    return 0
