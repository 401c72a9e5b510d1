"""``kubectl kueue why TYPE/NAME``: read what the report needs, as far as RBAC allows, then build it.

The Workload is required (its absence or a Forbidden is the command's error, exit 1); everything else is
best effort: a LocalQueue, ClusterQueue, visibility answer or cohort list that cannot be read becomes a note
in the report, and the estimate says it is unknown and why. The estimate needs the whole cohort (every
Workload of the ClusterQueues sharing quota), which only a cluster-wide reader has.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    Kind,
)
from kueue_webhook.kubectl_kueue.arguments import UsageError
from kueue_webhook.kubectl_kueue.columns import workload_cluster_queue, workload_status
from kueue_webhook.kubectl_kueue.estimate import Estimate, estimate_start
from kueue_webhook.kubectl_kueue.output import colour_enabled, dump
from kueue_webhook.kubectl_kueue.reads import find_workload, kind_for, pending_summary, read_live_state
from kueue_webhook.kubectl_kueue.session import Session, describe_error
from kueue_webhook.kubectl_kueue.why import Subject, render, report

__all__ = ["why_command"]

JSON = dict[str, Any]


async def _optional(
    client: KubeClient, kind: Kind, name: str, namespace: str | None, notes: list[str]
) -> JSON | None:
    try:
        return await client.get(kind, name=name, namespace=namespace)
    except ApiError as exc:
        notes.append(f"{kind.kind} {name}: {describe_error(exc)}")
        return None


async def why_command(session: Session, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    word, slash, name = args.target.partition("/")
    if not slash or not name or "/" in name:
        raise UsageError(f"{args.target!r}: give TYPE/NAME, e.g. job/train or workload/job-train-1a2b3")
    client = session.client
    kind = await kind_for(client, word)
    workload, obj = await find_workload(client, kind, name, session.namespace)
    meta = workload.get("metadata") or {}
    namespace = str(meta.get("namespace", session.namespace))
    subject = Subject(
        kind=kind.kind, name=name, namespace=namespace if kind.namespaced or obj is None else ""
    )
    notes: list[str] = []
    queue_name = str((workload.get("spec") or {}).get("queueName", ""))
    local_queue = await _optional(client, LOCAL_QUEUES, queue_name, namespace, notes) if queue_name else None
    cluster_queue_name = workload_cluster_queue(workload, {(namespace, queue_name): local_queue})
    cluster_queue = (
        await _optional(client, CLUSTER_QUEUES, cluster_queue_name, None, notes)
        if cluster_queue_name
        else None
    )
    now = datetime.now(UTC)
    position: JSON | None = None
    estimate: Estimate | None = None
    estimate_note = ""
    if workload_status(workload) == "pending" and queue_name:
        try:
            summary = await pending_summary(
                client, f"namespaces/{namespace}/localqueues/{queue_name}/pendingworkloads"
            )
            for item in (summary or {}).get("items") or []:
                if (item.get("metadata") or {}).get("name") == meta.get("name"):
                    position = item
        except ApiError as exc:
            notes.append(f"queue position: {describe_error(exc)}")
        state = await read_live_state(client, notes)
        if state is None:
            estimate_note = "the cohort's Workloads and queues could not be read (see notes)"
        else:
            estimate = estimate_start(workload, state, now=now)
    data = report(
        subject,
        workload,
        local_queue=local_queue,
        cluster_queue=cluster_queue,
        cluster_queue_name=cluster_queue_name,
        position=position,
        estimate=estimate,
        now=now,
        notes=notes,
        estimate_note=estimate_note,
    )
    if args.output in ("json", "yaml"):
        out.write(dump(data, args.output))
    else:
        out.write(render(data, colour=colour_enabled(out, os.environ)))
    return 0
