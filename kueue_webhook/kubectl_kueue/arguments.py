"""The command line of ``kubectl kueue``: kueuectl's commands, resource names, flags and messages.

kueuectl is a cobra program; this is argparse made to accept the same words: every resource name and alias
kueuectl registers (``workload``/``kwl``/``kueueworkload``/``kueueworkloads``, ``localqueue``/``lq``,
``clusterqueue``/``cq``, ``resourceflavor``/``rf``) plus the plural and ``wl``; the connection flags
(``--kubeconfig``, ``--context``, ``-n/--namespace``) before or after the command, as cobra's persistent
flags; every usage error exits 1 with ``error: ...`` as kubectl does (argparse alone would exit 2).
``get``, ``describe``, ``edit``, ``patch`` and ``delete`` of a Kueue kind other than a Workload are handed to
kubectl unparsed (``passthrough``), as kueuectl does. Pure: nothing here reads the cluster.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

__all__ = [
    "CLUSTER_QUEUE",
    "LOCAL_QUEUE",
    "OUTPUT_FORMATS",
    "PASSTHROUGH_VERBS",
    "PODS",
    "RESOURCE_FLAVOR",
    "WORKLOAD",
    "Passthrough",
    "UsageError",
    "build_parser",
    "parse",
    "passthrough",
    "resource_of",
]

WORKLOAD = "workload"
LOCAL_QUEUE = "localqueue"
CLUSTER_QUEUE = "clusterqueue"
RESOURCE_FLAVOR = "resourceflavor"
#: ``list pods``: not a Kueue kind, so not among the names handed to kubectl as Kueue's
PODS = "pods"
#: every name a resource answers to: kueuectl's Use and Aliases, the plural, and the CRDs' short names
_ALIASES: dict[str, tuple[str, ...]] = {
    WORKLOAD: ("workloads", "wl", "kwl", "kueueworkload", "kueueworkloads"),
    LOCAL_QUEUE: ("localqueues", "lq", "queue", "queues"),
    CLUSTER_QUEUE: ("clusterqueues", "cq"),
    RESOURCE_FLAVOR: ("resourceflavors", "rf", "flavor", "flavors"),
}
#: kueuectl's pass-through commands (app/passthrough): handed to kubectl for the Kueue kinds
PASSTHROUGH_VERBS = ("get", "delete", "edit", "describe", "patch")
OUTPUT_FORMATS = ("json", "yaml", "name")
_GLOBAL_WITH_VALUE = ("--kubeconfig", "--context", "--namespace", "-n")
DRY_RUN_STRATEGIES = ("none", "server", "client")


class UsageError(Exception):
    """Bad usage: printed as ``error: <message>``, exit code 1 (kubectl's)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def resource_of(word: str) -> str | None:
    """The resource a name or alias stands for (``kwl`` -> ``workload``), None for anything else."""
    lowered = word.lower()
    for resource, aliases in _ALIASES.items():
        if lowered == resource or lowered in aliases:
            return resource
    return None


@dataclass(frozen=True, slots=True)
class Passthrough:
    """``kubectl <verb> <resource> ...``: the arguments to hand to kubectl (the type made unambiguous)."""

    args: tuple[str, ...]


def _positionals(argv: Sequence[str]) -> list[tuple[int, str]]:
    """(index, word) of the words that are not flags or the value of a global flag."""
    out: list[tuple[int, str]] = []
    skip = False
    for index, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word in _GLOBAL_WITH_VALUE:
            skip = True
            continue
        if word.startswith("-"):
            continue
        out.append((index, word))
    return out


def passthrough(argv: Sequence[str]) -> Passthrough | None:
    """kueuectl's pass-through: ``get|describe|edit|patch <kind>`` and ``delete <kind>`` of any Kueue kind
    but a Workload (``delete workload`` is its own command). The type is spelled in full
    (``workloads.kueue.x-k8s.io``) so kubectl cannot take it for another group's resource."""
    words = _positionals(argv)
    if len(words) < 2 or words[0][1] not in PASSTHROUGH_VERBS:
        return None
    verb = words[0][1]
    index, word = words[1]
    resource = resource_of(word.split("/", 1)[0])
    if resource is None:
        raise UsageError(f'unknown resource "{word}" for "{verb}": one of {", ".join(_ALIASES)}')
    if verb == "delete" and resource == WORKLOAD:
        return None
    qualified = f"{resource}s.kueue.x-k8s.io"
    typed = qualified + ("/" + word.split("/", 1)[1] if "/" in word else "")
    args = list(argv)
    args[index] = typed
    return Passthrough(tuple(args))


def _global(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    group = parser.add_argument_group("connection (as kubectl)")
    group.add_argument("--kubeconfig", default=default, help="path to the kubeconfig file")
    group.add_argument("--context", default=default, help="the kubeconfig context to use")
    group.add_argument("-n", "--namespace", default=default, help="the namespace (default: the context's)")


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="", help="json, yaml or name")


def _dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        default="none",
        help='"none", "server" or "client": client prints what would be sent, server sends it not to persist',
    )


def _selectors(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-l", "--selector", default="", help="label selector (key1=value1,key2=value2)")
    parser.add_argument("--field-selector", default="", help="field selector (key1=value1,key2=value2)")


def _sub(sub: argparse._SubParsersAction[_Parser], resource: str, help_text: str) -> _Parser:
    parser: _Parser = sub.add_parser(resource, aliases=list(_ALIASES[resource]), help=help_text)
    parser.set_defaults(resource=resource)
    _global(parser, top=False)
    return parser


def _list_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    listing = commands.add_parser(
        "list", help="display Workloads, LocalQueues, ClusterQueues, ResourceFlavors, a Job's Pods"
    )
    _global(listing, top=False)
    kinds = listing.add_subparsers(dest="resource", required=True, parser_class=_Parser)
    wl = _sub(kinds, WORKLOAD, "list Workloads")
    lq = _sub(kinds, LOCAL_QUEUE, "list LocalQueues")
    cq = _sub(kinds, CLUSTER_QUEUE, "list ClusterQueues")
    rf = _sub(kinds, RESOURCE_FLAVOR, "list ResourceFlavors")
    for parser in (wl, lq, cq, rf):
        _selectors(parser)
        _output(parser)
    for parser in (wl, lq):
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="across all namespaces")
        parser.add_argument("-c", "--clusterqueue", default="", help="only those of this ClusterQueue")
    wl.add_argument("-q", "--localqueue", default="", help="only those of this LocalQueue")
    wl.add_argument("--for", dest="for_object", default="", help="only those of TYPE[.GROUP]/NAME")
    wl.add_argument(
        "--status",
        action="append",
        default=[],
        help='"all", "pending", "quotareserved", "admitted", "finished"',
    )
    cq.add_argument(
        "--active", action="append", default=[], help="true or false: Active ClusterQueues or not"
    )
    pods: _Parser = kinds.add_parser("pods", aliases=["po"], help="list the Pods of a Job (any queued kind)")
    pods.set_defaults(resource=PODS)
    _global(pods, top=False)
    _selectors(pods)
    pods.add_argument("-o", "--output", default="", help="json, yaml, name or wide")
    pods.add_argument("-A", "--all-namespaces", action="store_true", help="across all namespaces")
    pods.add_argument("--for", dest="for_object", default="", help="TYPE[.API-GROUP]/NAME (required)")


def _stop_resume(commands: argparse._SubParsersAction[_Parser]) -> None:
    for verb, what in (("stop", "put on hold"), ("resume", "resume what was put on hold")):
        command = commands.add_parser(verb, help=f"{what}: a Workload, LocalQueue or ClusterQueue")
        _global(command, top=False)
        kinds = command.add_subparsers(dest="resource", required=True, parser_class=_Parser)
        for resource in (WORKLOAD, LOCAL_QUEUE, CLUSTER_QUEUE):
            parser = _sub(kinds, resource, f"{verb} a {resource}")
            parser.add_argument("name")
            _dry_run(parser)
            _output(parser)
            if verb == "stop" and resource != WORKLOAD:
                parser.add_argument(
                    "--keep-already-running",
                    action="store_true",
                    help="admit nothing more, let admitted Workloads run (stopPolicy Hold, not HoldAndDrain)",
                )


def _create(commands: argparse._SubParsersAction[_Parser]) -> None:
    command = commands.add_parser("create", help="create a LocalQueue, ClusterQueue or ResourceFlavor")
    _global(command, top=False)
    kinds = command.add_subparsers(dest="resource", required=True, parser_class=_Parser)
    lq = _sub(kinds, LOCAL_QUEUE, "create a LocalQueue")
    lq.add_argument("-c", "--clusterqueue", default="", help="its ClusterQueue (required)")
    lq.add_argument(
        "-i", "--ignore-unknown-cq", action="store_true", help="even if the ClusterQueue is unknown"
    )
    cq = _sub(kinds, CLUSTER_QUEUE, "create a ClusterQueue")
    cq.add_argument("--cohort", default="")
    cq.add_argument("--queuing-strategy", default=None, help="BestEffortFIFO (default) or StrictFIFO")
    cq.add_argument("--namespace-selector", default=None, help="key=value,... (default: every namespace)")
    cq.add_argument("--reclaim-within-cohort", default=None, help="Never (default), LowerPriority or Any")
    cq.add_argument(
        "--preemption-within-cluster-queue", default=None, help="Never (default), LowerPriority, ..."
    )
    for flag in ("--nominal-quota", "--borrowing-limit", "--lending-limit"):
        cq.add_argument(flag, action="append", default=[], help='"FLAVOR:RESOURCE=QUANTITY;...,FLAVOR2:..."')
    rf = _sub(kinds, RESOURCE_FLAVOR, "create a ResourceFlavor")
    rf.add_argument("--node-labels", default=None, help="key=value,...")
    rf.add_argument("--node-taints", action="append", default=[], help="KEY[=VALUE]:EFFECT,...")
    rf.add_argument("--tolerations", action="append", default=[], help="KEY[=VALUE][:EFFECT]|:EFFECT,...")
    for parser in (lq, cq, rf):
        parser.add_argument("name")
        _dry_run(parser)
        _output(parser)


def _delete(commands: argparse._SubParsersAction[_Parser]) -> None:
    command = commands.add_parser("delete", help="delete Workloads and their Jobs (other kinds: kubectl)")
    _global(command, top=False)
    kinds = command.add_subparsers(dest="resource", required=True, parser_class=_Parser)
    wl = _sub(kinds, WORKLOAD, "delete Workloads, or the objects owning them")
    wl.add_argument("names", nargs="*")
    wl.add_argument("-y", "--yes", action="store_true", help="do not ask before deleting their Jobs")
    wl.add_argument("--all", action="store_true", help="every Workload of the namespace")
    wl.add_argument("-A", "--all-namespaces", action="store_true", help="with --all: of every namespace")
    _dry_run(wl)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kubectl kueue",
        description="Kueue's kubectl plugin (kueuectl's commands), and `why` a Job waits.",
        epilog="get, describe, edit and patch of a Kueue kind (workloads, localqueues, clusterqueues, "
        "resourceflavors), and delete of any but a workload, are handed to kubectl.",
    )
    _global(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _list_commands(commands)
    _stop_resume(commands)
    _create(commands)
    _delete(commands)
    why = commands.add_parser(
        "why", help="why a Job (or any queued object, or a Workload) waits, and until when"
    )
    _global(why, top=False)
    why.add_argument("target", help="TYPE/NAME: job/train, jobset/x, pod/p, workload/job-train-1a2b3")
    why.add_argument("-o", "--output", default="", help="json or yaml (default: text)")
    version = commands.add_parser("version", help="the client version and the controller's image")
    _global(version, top=False)
    return parser


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parsed arguments, with the checks kueuectl makes before it connects; raises UsageError."""
    args = build_parser().parse_args(list(argv))
    output = getattr(args, "output", "")
    allowed: tuple[str, ...] = ("json", "yaml") if args.command == "why" else OUTPUT_FORMATS
    if args.command == "list" and args.resource == PODS:
        allowed = (*OUTPUT_FORMATS, "wide")
        if not args.for_object:
            raise UsageError('required flag(s) "for" not set')
    if output and output not in allowed:
        raise UsageError(
            f'unable to match a printer suitable for the output format "{output}", '
            f"allowed formats are: {','.join(sorted(allowed))}"
        )
    dry_run = getattr(args, "dry_run", "none")
    if dry_run not in DRY_RUN_STRATEGIES:
        raise UsageError(f'invalid dry-run value ({dry_run}). Must be "none", "server", or "client"')
    if args.command == "list" and args.resource == CLUSTER_QUEUE:
        active = [value for item in args.active for value in item.split(",") if value]
        if any(value.lower() not in ("true", "false") for value in active):
            raise UsageError(f"invalid argument {','.join(active)!r} for --active: must be true or false")
        if len(active) > 1:
            raise UsageError("only one active flag can be provided")
        args.active = active[0].lower() == "true" if active else None
    if args.command == "list" and args.resource == WORKLOAD:
        args.status = statuses(args.status)
    if args.command == "create" and args.resource == LOCAL_QUEUE and not args.clusterqueue:
        raise UsageError('required flag(s) "clusterqueue" not set')
    if args.command == "delete":
        if not args.all and not args.names:
            raise UsageError("requires at least 1 arg(s), only received 0")
        if args.all and args.names:
            raise UsageError("name cannot be provided when a selector is specified")
        if args.all_namespaces and args.names:
            raise UsageError("a resource cannot be retrieved by name across all namespaces")
    return args


_STATUSES = {
    "all": "all",
    "pending": "pending",
    "quotareserved": "quotaReserved",
    "admitted": "admitted",
    "finished": "finished",
}


def statuses(values: Sequence[str]) -> frozenset[str]:
    """``--status`` values as Kueue's status names; empty (or ``all``) means every status."""
    out = set()
    for value in values:
        status = _STATUSES.get(value.lower())
        if status is None:
            raise UsageError(
                f'invalid status value ({value}). Must be "all", "pending", "admitted" or "finished"'
            )
        out.add(status)
    return frozenset() if "all" in out else frozenset(out)
