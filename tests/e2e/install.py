"""docs/install.md's two ways to run kueue-webhook, carried out on a real API server on this host.

* **Out of cluster**: ``kubectl apply -k manifests/controller/local``, ``kueue-webhook certs --ip 127.0.0.1
  --patch-webhook-configurations``, ``kueue-webhook serve --kubeconfig <admin kubeconfig> --tls-dir ...
  --no-leader-election``, word for word but for the port (below).
* **In cluster**: ``kubectl apply -k manifests/`` (CRDs, RBAC, Deployment, Service, webhook configurations),
  the serving certificate as the Secret ``certs --secret -`` writes, the caBundle patched in; then the
  process runs as the Deployment's container would: with the ServiceAccount's token and the cluster CA at
  ``/var/run/secrets/kubernetes.io/serviceaccount``, ``KUBERNETES_SERVICE_HOST/PORT``, ``POD_NAME``, the
  Deployment's own arguments and leader election. The token directory is mounted in a private mount
  namespace (``unshare``, root only), so nothing is left on the machine. Two things differ from a real
  node, because this control plane has no kubelet and its API server cannot reach Services: the process runs
  here rather than in a Pod, and the webhook configurations are pointed at ``https://127.0.0.1:9443``.

The out-of-cluster install listens on a free port rather than 9443 (its manifests rendered with that port),
so e2e runs against different clusters of one host do not meet on it.

Both stop the process and remove the webhook configurations and the visibility APIService on the way out:
left behind, they would make the API server refuse every Job create in the cluster (``failurePolicy:
Fail``) and leave every namespace deletion waiting on an unavailable API. Both also delete the install's
Service and Deployment, which another install of the same names (the Helm chart) would inherit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from tests.e2e.cluster import Cluster, until
from tests.support.fake_cluster import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
PORT = 9443
WEBHOOK_CONFIGURATIONS = (
    ("mutatingwebhookconfiguration", "kueue-webhook-mutating"),
    ("validatingwebhookconfiguration", "kueue-webhook-validating"),
)
VISIBILITY_API_SERVICE = ("apiservice", "v1beta2.visibility.kueue.x-k8s.io")
KUEUE_WEBHOOK = [sys.executable, "-m", "kueue_webhook"]


@dataclass
class Running:
    """A ``kueue-webhook serve`` process and where its log goes."""

    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def kueue_webhook(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*KUEUE_WEBHOOK, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"kueue-webhook {' '.join(args)}: {result.stderr}"
    return result


def start(command: list[str], *, cwd: Path, env: dict[str, str], log: Path, port: int = PORT) -> Running:
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = Running(process, log)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def ready() -> bool:
        assert process.poll() is None, f"kueue-webhook serve exited {process.returncode}:\n{running.tail()}"
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    try:
        until(ready, "kueue-webhook serve to report /readyz", timeout=60, every=0.2)
    except BaseException:
        running.stop()
        raise
    return running


def patch_ca_bundles(cluster: Cluster, workdir: Path) -> Path:
    """``kueue-webhook certs --ip 127.0.0.1 --patch-webhook-configurations``; the certificates' directory."""
    tls = workdir / "certs"
    command = ["certs", "--dir", str(tls), "--ip", "127.0.0.1", "--patch-webhook-configurations"]
    kueue_webhook(*command, "--kubeconfig", str(cluster.kubeconfig), cwd=workdir)
    return tls


def remove_webhook_configurations(cluster: Cluster) -> None:
    """What points the API server at a process that is going away: the webhook configurations, and the
    visibility APIService (left unavailable, it would block every namespace deletion in the cluster)."""
    for kind, name in (*WEBHOOK_CONFIGURATIONS, VISIBILITY_API_SERVICE):
        cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)


def remove_service_and_deployment(cluster: Cluster) -> None:
    """Delete the install's Service (an ExternalName one out of cluster) and Deployment: left behind, a later
    install of the same names (the Helm chart's) would be merged into them."""
    cluster.kubectl(
        "delete",
        "-n",
        "kueue-system",
        "deployment,service",
        "kueue-webhook",
        "--ignore-not-found",
        "--wait=false",
        check=False,
    )


def local_install(cluster: Cluster, port: int) -> str:
    """``manifests/controller/local`` as ``kubectl kustomize`` renders it, sending to ``port`` instead of
    9443 (every URL, and the visibility API's Service and APIService port)."""
    rendered = cluster.kubectl("kustomize", str(REPO_ROOT / "manifests" / "controller" / "local")).stdout
    return rendered.replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}").replace(
        f"port: {PORT}", f"port: {port}"
    )


@contextlib.contextmanager
def out_of_cluster(cluster: Cluster, workdir: Path, *, port: int | None = None) -> Iterator[Running]:
    """``port``: where the process listens and everything installed sends; a free one by default, so that
    runs on other clusters of this host (each its own API server) do not meet on 9443."""
    port = port or free_port()
    cluster.apply(local_install(cluster, port))
    try:
        tls = patch_ca_bundles(cluster, workdir)
        command = [
            *KUEUE_WEBHOOK,
            "serve",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--tls-dir",
            str(tls),
            "--port",
            str(port),
            "--no-leader-election",
        ]
        running = start(command, cwd=workdir, env=dict(os.environ), log=workdir / "serve.log", port=port)
        try:
            yield running
        finally:
            running.stop()
    finally:
        remove_webhook_configurations(cluster)
        remove_service_and_deployment(cluster)


def can_mount_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("unshare") is not None


@contextlib.contextmanager
def in_cluster(cluster: Cluster, workdir: Path, *, port: int = PORT) -> Iterator[Running]:
    """``port``: where the process listens and the webhook configurations send (9443, the Deployment's, by
    default; another where a test must not share it with other processes on this host)."""
    cluster.kubectl("apply", "-k", str(REPO_ROOT / "manifests"))
    try:
        secret = kueue_webhook("certs", "--dir", "certs", "--ip", "127.0.0.1", "--secret", "-", cwd=workdir)
        cluster.apply(secret.stdout)
        tls = patch_ca_bundles(cluster, workdir)
        for kind, name in WEBHOOK_CONFIGURATIONS:  # the API server here cannot reach the Service
            hooks = cluster.get(kind, name)["webhooks"]
            patch = [
                {"op": "replace", "path": f"/webhooks/{i}/clientConfig", "value": url_config(hook, port)}
                for i, hook in enumerate(hooks)
            ]
            cluster.kubectl("patch", kind, name, "--type=json", "-p", yaml.safe_dump(patch))
        running = pod_like(cluster, workdir, tls, port=port)
        try:
            yield running
        finally:
            running.stop()
    finally:
        remove_webhook_configurations(cluster)
        remove_service_and_deployment(cluster)


def url_config(hook: dict[str, object], port: int = PORT) -> dict[str, object]:
    config = dict(hook["clientConfig"])  # type: ignore[call-overload]
    service = config.pop("service")
    config["url"] = f"https://127.0.0.1:{port}{service['path']}"
    return config


def pod_like(cluster: Cluster, workdir: Path, tls: Path, *, port: int = PORT) -> Running:
    """The Deployment's container, run here: its arguments (listening on ``port``), its ServiceAccount, its
    environment."""
    deployment = yaml.safe_load((REPO_ROOT / "manifests" / "controller" / "deployment.yaml").read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("/etc/kueue-webhook/tls", str(tls)) for a in container["args"]]
    args = [f"--port={port}" if a.startswith("--port=") else a for a in args]
    account = workdir / "serviceaccount"
    account.mkdir()
    token = cluster.kubectl("-n", "kueue-system", "create", "token", "kueue-webhook", "--duration=1h").stdout
    (account / "token").write_text(token.strip())
    (account / "ca.crt").write_bytes(cluster.ca_certificate())
    (account / "namespace").write_text("kueue-system")
    server = urlsplit(cluster.server)
    env = {
        **{k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
        "KUBERNETES_SERVICE_HOST": server.hostname or "",
        "KUBERNETES_SERVICE_PORT": str(server.port or 443),
        "POD_NAME": "kueue-webhook-e2e-0",
    }
    mount = (
        "mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && "
        f"mount --bind {shlex.quote(str(account))} /run/secrets/kubernetes.io/serviceaccount && "
        f"exec {shlex.join([*KUEUE_WEBHOOK, *args])}"
    )
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount]
    return start(command, cwd=workdir, env=env, log=workdir / "serve.log", port=port)
