"""``kueue-webhook doctor``: checks an install the way kube-apiserver will use it, and says what to fix.

One line per check, OK, WARN or FAIL, with what to do for the last two: the webhook configurations and CRDs
are there; the Services they call have ready endpoints (or the URL they call answers TLS); the serving
certificate is valid for more than 30 days and names the host kube-apiserver dials; every caBundle (mutating
and validating webhooks, the CRDs' conversion webhook, the visibility APIService) verifies it; a queued Job
created with ``dryRun=All`` comes back suspended (kube-apiserver called the mutating webhook); a Kueue object
read at v1beta1 (or a v1beta1 ResourceFlavor created as a dry run) is converted; the visibility APIService is
Available. Nothing is written (GET, LIST and two dry runs). Exit code 0 when nothing failed (warnings
included), 1 when a check failed or the API server could not be reached, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys

from kueue_webhook.doctor.checks import Check, exit_code, render
from kueue_webhook.http.certs import DEFAULT_NAMESPACE, DEFAULT_SECRET

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="as kubectl (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    parser.add_argument(
        "--namespace",
        "-n",
        default=DEFAULT_NAMESPACE,
        help=f"the namespace of the install: its Secret and Service (default {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--secret-name", default=DEFAULT_SECRET, help=f"the serving Secret (default {DEFAULT_SECRET})"
    )
    parser.add_argument(
        "--probe-namespace",
        default="default",
        help="where the queued Job is created as a dry run (default: default)",
    )
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text")


async def _diagnose(args: argparse.Namespace) -> list[Check]:
    from kueue_webhook.control.kube.client import KubeClient
    from kueue_webhook.doctor.probes import diagnose

    client = await KubeClient.connect(kubeconfig=args.kubeconfig, context=args.context, connections=2)
    try:
        return await diagnose(
            client,
            namespace=args.namespace,
            secret_name=args.secret_name,
            probe_namespace=args.probe_namespace,
            now=dt.datetime.now(dt.UTC),
        )
    finally:
        await client.close()


def run(args: argparse.Namespace) -> int:
    from kueue_webhook.kubectl_kueue.session import describe_error

    try:
        checks = asyncio.run(_diagnose(args))
    except Exception as exc:  # the API server itself: told as kubectl tells it
        checks = [Check("FAIL", "API server", describe_error(exc), "check --kubeconfig/--context")]
    if args.output == "json":
        json.dump(
            {"checks": [c.data() for c in checks], "failed": exit_code(checks) == 1}, sys.stdout, indent=2
        )
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(checks))
    return exit_code(checks)
