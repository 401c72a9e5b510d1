"""``kueue-webhook certs``: the CA and serving certificate on disk, and where to put the CA.

One run makes or reuses the certificates (``kueue_webhook.http.certs.ensure_certificates``: the CA once,
the serving certificate when missing, expiring within ``--renew-before-days``, no longer covering the names
asked for, or signed by another CA), so it can run on every deploy. ``--print-ca-bundle`` /
``--ca-bundle-file`` give the base64 caBundle, ``--secret`` writes the ``kubernetes.io/tls`` Secret manifest
for in-cluster use, and ``--patch-webhook-configurations`` fills the caBundle of every webhook in
``kueue-webhook-mutating`` and ``kueue-webhook-validating``, of the conversion webhook of the
kueue.x-k8s.io CRDs and of the visibility APIService through the API (``kueue_webhook.http.ca_bundles``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import yaml

from kueue_webhook.http.ca_bundles import patch_webhook_configurations
from kueue_webhook.http.certs import (
    CA_DAYS,
    DEFAULT_MUTATING,
    DEFAULT_NAMESPACE,
    DEFAULT_SECRET,
    DEFAULT_SERVICE,
    DEFAULT_VALIDATING,
    KUEUE_CRDS,
    RENEW_BEFORE_DAYS,
    SERVING_DAYS,
    VISIBILITY_APISERVICES,
    ca_bundle,
    ensure_certificates,
    secret_manifest,
    write_private,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", default="certs", help="where ca.crt, ca.key, tls.crt, tls.key live (default certs/)"
    )
    parser.add_argument("--service", default=DEFAULT_SERVICE, help="the webhook Service name")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="the webhook Service namespace")
    parser.add_argument(
        "--host", action="append", default=[], help="extra DNS name for the certificate (repeatable)"
    )
    parser.add_argument(
        "--ip", action="append", default=[], help="extra IP address, e.g. 127.0.0.1 (repeatable)"
    )
    parser.add_argument("--days", type=int, default=SERVING_DAYS, help="serving certificate validity in days")
    parser.add_argument("--ca-days", type=int, default=CA_DAYS, help="CA validity in days (new CA only)")
    parser.add_argument(
        "--renew-before-days", type=int, default=RENEW_BEFORE_DAYS, help="reissue this close to expiry"
    )
    parser.add_argument("--key-type", choices=("ecdsa-p256", "rsa-2048"), default="ecdsa-p256")
    parser.add_argument(
        "--force", action="store_true", help="reissue the serving certificate even if still good"
    )
    parser.add_argument("--print-ca-bundle", action="store_true", help="print the base64 caBundle on stdout")
    parser.add_argument("--ca-bundle-file", help="write the base64 caBundle to this file")
    parser.add_argument(
        "--secret", metavar="PATH", help="write the kubernetes.io/tls Secret manifest here ('-' = stdout)"
    )
    parser.add_argument("--secret-name", default=DEFAULT_SECRET)
    parser.add_argument(
        "--patch-webhook-configurations",
        action="store_true",
        help="set caBundle in the webhook configurations, the kueue.x-k8s.io CRDs' conversion webhook and "
        "the visibility APIService",
    )
    parser.add_argument(
        "--mutating-webhook-configuration", action="append", help=f"default {DEFAULT_MUTATING}"
    )
    parser.add_argument(
        "--validating-webhook-configuration", action="append", help=f"default {DEFAULT_VALIDATING}"
    )
    parser.add_argument(
        "--kubeconfig", help="kubeconfig for --patch-webhook-configurations (default: as kubectl, like serve)"
    )


def run(args: argparse.Namespace) -> int:
    if args.days <= 0 or args.ca_days <= 0 or args.renew_before_days < 0:
        print(
            "kueue-webhook certs: --days and --ca-days must be positive, --renew-before-days >= 0",
            file=sys.stderr,
        )
        return 2
    if args.renew_before_days >= args.days:
        print("kueue-webhook certs: --renew-before-days must be less than --days", file=sys.stderr)
        return 2
    try:
        certs = ensure_certificates(
            args.dir,
            service=args.service,
            namespace=args.namespace,
            hosts=args.host,
            ips=args.ip,
            days=args.days,
            ca_days=args.ca_days,
            renew_before_days=args.renew_before_days,
            key_type=args.key_type,
            force=args.force,
        )
    except ValueError as exc:
        print(f"kueue-webhook certs: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"kueue-webhook certs: cannot write certificates: {exc}", file=sys.stderr)
        return 1
    print(
        f"{'created' if certs.created_ca else 'reused'} CA {certs.ca_cert}; "
        f"{'issued' if certs.issued_serving else 'kept'} serving certificate {certs.cert}",
        file=sys.stderr,
    )
    bundle = ca_bundle(certs)
    if args.print_ca_bundle:
        print(bundle)
    if args.ca_bundle_file:
        Path(args.ca_bundle_file).write_text(bundle + "\n")
    if args.secret:
        manifest = yaml.safe_dump(
            secret_manifest(certs, name=args.secret_name, namespace=args.namespace), sort_keys=False
        )
        if args.secret == "-":
            sys.stdout.write(manifest)
        else:
            write_private(Path(args.secret), manifest.encode())
    if args.patch_webhook_configurations:
        try:
            lines = asyncio.run(
                patch_webhook_configurations(
                    bundle,
                    mutating=args.mutating_webhook_configuration or [DEFAULT_MUTATING],
                    validating=args.validating_webhook_configuration or [DEFAULT_VALIDATING],
                    crds=KUEUE_CRDS,
                    apiservices=VISIBILITY_APISERVICES,
                    service=args.service,
                    namespace=args.namespace,
                    kubeconfig=args.kubeconfig,
                )
            )
        except Exception as exc:  # API, connection and kubeconfig errors all mean the same to the user
            print(f"kueue-webhook certs: patching the webhook configurations failed: {exc}", file=sys.stderr)
            return 1
        for line in lines:
            print(line, file=sys.stderr)
    return 0
