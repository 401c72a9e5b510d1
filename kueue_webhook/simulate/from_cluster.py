"""``kueue-webhook simulate --from-cluster [EDITS.yaml]``: the what-if (``kueue_webhook.simulate.whatif``) on
the
cluster the kubeconfig points at.

The connection is ``serve``'s and ``kubectl kueue``'s (``--kubeconfig``, else ``$KUBECONFIG``, else the pod's
service account, else ``~/.kube/config``; ``--context``), and the objects are read by the code ``kubectl kueue
why`` reads them with (``read_live_state``): LIST requests only, nothing is written. A refused list is the
command's error (exit 1, in kubectl's words); a Namespace list refused only opens every namespaceSelector, and
the report says so. Bad options and edit files that cannot be read exit 2 before the cluster is read; an edit
the API server would refuse exits 2 after it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from kueue_webhook.simulate.scenario import SimulationError, parse_duration
from kueue_webhook.simulate.whatif import (
    Edit,
    LiveStateError,
    WhatIf,
    parse_edits,
    render_text,
    report_data,
    what_if,
)

__all__ = ["load_edits", "run_from_cluster"]

DEFAULT_ASSUMED_RUNTIME = "1h"


def load_edits(path: str) -> list[Edit]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SimulationError(f"{path}: {exc.strerror or exc}") from None
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise SimulationError(f"{path}: not YAML: {exc}") from None
    return parse_edits([(path, index, doc) for index, doc in enumerate(documents)])


async def _read(kubeconfig: str | None, context: str | None, notes: list[str]) -> Any:
    from kueue_webhook.control.kube.client import KubeClient
    from kueue_webhook.kubectl_kueue.reads import read_live_state

    client = await KubeClient.connect(kubeconfig=kubeconfig, context=context, connections=4)
    try:
        return await read_live_state(client, notes, strict=True)
    finally:
        await client.close()


def _options(args: argparse.Namespace) -> tuple[list[Edit], float]:
    if args.at is not None or args.plot:
        raise SimulationError("--at and --plot replay files; with --from-cluster give at most an edits file")
    if len(args.files) > 1:
        raise SimulationError("--from-cluster takes at most one FILE: the edits (ClusterQueues, Cohorts ...)")
    try:
        assumed = parse_duration(args.assume_runtime)
    except ValueError as exc:
        raise SimulationError(f"--assume-runtime: {exc}") from None
    if assumed <= 0:
        raise SimulationError("--assume-runtime: give a run time above 0 (30m, 2h ...)")
    return (load_edits(args.files[0]) if args.files else []), assumed


def run_from_cluster(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from kueue_webhook.kubectl_kueue.session import describe_error

    try:
        edits, assumed = _options(args)
    except SimulationError as exc:
        print(f"kueue-webhook simulate: {exc}", file=err)
        return 2
    notes: list[str] = []
    try:
        state = asyncio.run(_read(args.kubeconfig, args.context, notes))
    except Exception as exc:  # every read failure is told as kubectl tells it
        print(f"kueue-webhook simulate: reading the cluster: {describe_error(exc)}", file=err)
        return 1
    try:
        result = what_if(state, edits, now=datetime.now(UTC), assumed_runtime=assumed)
    except LiveStateError as exc:
        print(f"kueue-webhook simulate: {exc}", file=err)
        return 1
    except SimulationError as exc:
        print(f"kueue-webhook simulate: {exc}", file=err)
        return 2
    _write(result, notes, args.output, out)
    return 0


def _write(result: WhatIf, notes: list[str], output: str, out: TextIO) -> None:
    data = report_data(result)
    data["notes"] = list(notes)
    if output == "json":
        json.dump(data, out, indent=2)
        out.write("\n")
    elif output == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=False))
    else:
        out.write(render_text(result))
        for note in notes:
            out.write(f"Note: {note}\n")
