"""``kueue-webhook`` command line: serve | simulate | certs | doctor | manifests | version.

Each subcommand lives in its own module, which exposes ``add_arguments(parser)`` and ``run(args) -> int``;
modules are imported only when their subcommand runs, so ``kueue-webhook version`` or ``simulate`` never
pays for the Kubernetes client or the TLS stack. Exit codes follow the usual convention: 0 success,
1 a runtime failure, 2 bad usage or bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from kueue_webhook import __version__

#: subcommand -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": (
        "kueue_webhook.control.replica.main",
        "run the admission webhook and the controller against a cluster",
    ),
    "simulate": (
        "kueue_webhook.simulate.cli",
        "replay manifests and a job trace through the scheduler; --from-cluster: what-if of quota edits",
    ),
    "certs": (
        "kueue_webhook.http.certs_command",
        "generate the CA and serving certificate; print or patch the caBundle",
    ),
    "doctor": (
        "kueue_webhook.doctor",
        "check an install: webhook reachable, caBundles, conversion, APIService, expiry",
    ),
    "manifests": (
        "kueue_webhook.manifests",
        "print the CRDs, install manifests and examples the package ships",
    ),
}


class Subcommand(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(module: str) -> Subcommand:
    return cast(Subcommand, importlib.import_module(module))


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-webhook", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="{serve,simulate,certs,doctor,manifests,version}")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:  # only the chosen subcommand's module is imported
            _load(module).add_arguments(sub_parser)
    sub.add_parser("version", help="print the version")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "version":
        print(f"kueue-webhook {__version__}")
        return 0
    return _load(SUBCOMMANDS[args.command][0]).run(args)
