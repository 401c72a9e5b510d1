"""``kubectl kueue`` (the console script ``kubectl-kueue``, found by kubectl on PATH as a plugin).

Kueue users have kueuectl; this speaks its commands, names, flags, columns and messages so their habits and
scripts carry over (``list``, ``list pods --for``, ``stop``, ``resume``, ``create``, ``delete workload``,
``version`` and the pass-through of ``get``/``describe``/``edit``/``patch``/``delete`` to kubectl), and adds
``why TYPE/NAME``: the Workload behind a Job, Kueue's reason, its place in line, its ClusterQueue's quota in
use, and when it should start. The connection is kubectl's (``--kubeconfig``, ``$KUBECONFIG``,
``--context``, ``-n``) through the project's own loader and client. Exit codes are kubectl's: 0, or 1 with
``error: ...`` or the server's ``Error from server (Reason): message`` on stderr.

Layout: ``arguments`` (the command line), ``table``/``columns``/``output`` (how things print), ``specs`` (the
objects ``create`` sends), ``why``/``estimate`` (the report and the replay it rests on) are pure; ``session``,
``reads``, ``listing``, ``pods``, ``writes`` and ``explain`` do the I/O.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Sequence

from kueue_webhook.kubectl_kueue.arguments import PODS, UsageError, parse, passthrough

__all__ = ["main"]


def _exec_kubectl(args: Sequence[str]) -> int:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print(
            "error: pass-through commands are not available: kubectl not found in "
            f"PATH={os.environ.get('PATH', '')!r}",
            file=sys.stderr,
        )
        return 1
    sys.stdout.flush()
    os.execv(kubectl, [kubectl, *args])
    return 1  # not reached


async def _run(argv: Sequence[str]) -> int:
    from kueue_webhook.kubectl_kueue.explain import why_command
    from kueue_webhook.kubectl_kueue.listing import list_command
    from kueue_webhook.kubectl_kueue.session import Session, describe_error
    from kueue_webhook.kubectl_kueue.writes import (
        create_command,
        delete_command,
        stop_resume_command,
        version_command,
    )

    args = parse(argv)
    session = None
    try:
        session = await Session.open(
            kubeconfig=args.kubeconfig, context=args.context, namespace=args.namespace
        )
        if args.command == "list" and args.resource == PODS:
            from kueue_webhook.kubectl_kueue.pods import list_pods_command

            return await list_pods_command(session, args)
        if args.command == "list":
            return await list_command(session, args)
        if args.command in ("stop", "resume"):
            return await stop_resume_command(session, args)
        if args.command == "create":
            return await create_command(session, args)
        if args.command == "delete":
            return await delete_command(session, args)
        if args.command == "why":
            return await why_command(session, args)
        return await version_command(session)
    except UsageError:
        raise
    except Exception as exc:  # every failure is told as kubectl tells it, and exits 1
        from kueue_webhook.kubectl_kueue.specs import SpecError

        if isinstance(exc, SpecError):
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if args.command == "version" and session is None:
            await version_command(None)
        print(describe_error(exc), file=sys.stderr)
        return 1
    finally:
        if session is not None:
            await session.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        through = passthrough(argv)
        if through is not None:
            return _exec_kubectl(through.args)
        return asyncio.run(_run(argv))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
