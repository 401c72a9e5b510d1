"""``kueue-webhook serve``: the admission webhook and the controller in one asyncio process.

One process, one event loop, one in-memory view: the webhook answers admission reviews from the same store
the controller's informers keep current, so the label policy sees a LocalQueue the moment it is watched,
and ``/readyz`` turns green only when every informer has listed once (a replica with an empty view must
not take traffic). Runs in a pod (service-account credentials) or beside a local API server with
``--kubeconfig`` or ``$KUBECONFIG``; the webhook configurations then point at ``https://127.0.0.1:9443/...``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import ssl
import sys
import uuid
from pathlib import Path

from kueue_webhook import runtime
from kueue_webhook.control.kube.kubeconfig import KubeconfigError
from kueue_webhook.control.kube.leader import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.replica.wiring import API_CONNECTIONS, Listen, Replica, build
from kueue_webhook.logs import RedactSecrets, redact
from kueue_webhook.memory import collect_less_often


def api_connections(value: str) -> int:
    """``--api-connections``: a positive number of connections for requests (watches have their own)."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{count} is too few: requests need at least one connection")
    return count


def metrics_bind_address(value: str) -> tuple[str, int] | None:
    """``--metrics-bind-address``: ``host:port`` or ``:port`` (every address), or ``0`` for none, as
    controller-runtime reads its flag of that name."""
    if value == "0":
        return None
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not host:port, :port or 0: {value!r}")
    return (host.strip("[]") or "0.0.0.0", int(port))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help=(
            "kubeconfig file; without it, as kubectl: $KUBECONFIG (its files merged), else the pod's "
            "service account, else ~/.kube/config"
        ),
    )
    parser.add_argument("--context", help="kubeconfig context to use")
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "kueue-system"),
        help="namespace of the ConfigMap kueue-webhook-config and the leader Lease (default: kueue-system)",
    )
    parser.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
        help="this replica's name in the leader Lease (default: $POD_NAME or hostname_random)",
    )
    parser.add_argument(
        "--tls-dir", default="certs", help="directory holding tls.crt and tls.key (default: certs)"
    )
    parser.add_argument("--cert", help="serving certificate (default: <tls-dir>/tls.crt)")
    parser.add_argument("--key", help="serving key (default: <tls-dir>/tls.key)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default: 0.0.0.0)")
    parser.add_argument("--port", type=int, default=9443, help="HTTPS port of the webhook (default: 9443)")
    parser.add_argument(
        "--metrics-bind-address",
        type=metrics_bind_address,
        default=None,
        metavar="ADDRESS",
        help=(
            "also serve /metrics over plain HTTP WITHOUT authentication on host:port or :port, for "
            "scrapers without a token (default: 0, none; the HTTPS port's /metrics asks for a token "
            "allowed to get /metrics)"
        ),
    )
    parser.add_argument(
        "--lease-duration",
        type=float,
        default=LEASE_DURATION,
        help="leader lease duration, seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--renew-deadline",
        type=float,
        default=RENEW_DEADLINE,
        help="leader renew deadline, seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--retry-period",
        type=float,
        default=RETRY_PERIOD,
        help="leader retry period, seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--no-leader-election",
        action="store_true",
        help="run the scheduling task without a Lease (one replica only)",
    )
    parser.add_argument(
        "--api-connections",
        type=api_connections,
        default=API_CONNECTIONS,
        help=(
            f"HTTP connections to the API server for requests (default: {API_CONNECTIONS}, one for each "
            "decision write in flight); every watch has a connection of its own beside them"
        ),
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


async def build_replica(args: argparse.Namespace) -> Replica:
    """The replica as ``serve``'s arguments describe it (``kueue_webhook.control.replica.wiring.build``)."""
    tls_dir = Path(args.tls_dir)
    return await build(
        kubeconfig=args.kubeconfig,
        context=args.context,
        connections=args.api_connections,
        namespace=args.namespace,
        identity=args.identity,
        settings=ControllerSettings(
            leader_election=not args.no_leader_election,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
        ),
        listen=Listen(
            cert_file=Path(args.cert) if args.cert else tls_dir / "tls.crt",
            key_file=Path(args.key) if args.key else tls_dir / "tls.key",
            host=args.host,
            port=args.port,
            metrics_address=args.metrics_bind_address,
        ),
    )


async def serve(args: argparse.Namespace) -> None:
    """Build the replica, serve the webhook and run the controller until cancelled or signalled."""
    replica = await build_replica(args)
    try:
        running = await replica.start()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):  # a pod being stopped: release the lease, then exit 0
            loop.add_signal_handler(signum, running.cancel)
        try:
            await running
        except asyncio.CancelledError:
            logging.getLogger("kueue_webhook").info("shutting down")
    finally:
        await replica.stop()


def run(args: argparse.Namespace) -> int:
    from kueue_webhook.runtime import JsonFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactSecrets())  # before any formatter: no credential reaches a line
    # the JSON lines carry no process or thread: spare a system call per record (each decision logs one)
    logging.logProcesses = logging.logThreads = logging.logMultiprocessing = False
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler], force=True)
    collect_less_often()
    try:
        runtime.run(serve(args))
    except KeyboardInterrupt:
        return 0
    except KubeconfigError as exc:
        print(f"kueue-webhook serve: {redact(str(exc))}", file=sys.stderr)
        return 2
    except (OSError, ssl.SSLError) as exc:
        print(f"kueue-webhook serve: {redact(str(exc))}", file=sys.stderr)
        return 1
    return 0
