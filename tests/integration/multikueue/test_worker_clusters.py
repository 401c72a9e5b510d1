"""Worker clusters as an admin sees them: a MultiKueueCluster whose kubeconfig is in a Secret turns
``Active``, the MultiKueue AdmissionCheck follows, the dispatcher gets a working client; a worker that stops
answering, a bad kubeconfig or a deleted cluster turns them inactive with Kueue's reasons, and fixing the
cause brings them back without a restart. Two fake API servers: the manager and the worker."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.control.kube.kinds import NAMESPACES
from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import condition
from tests.support.replica import Replica, replica, start_replica

JSON = dict[str, Any]
FAST_RETRY = {"multikueue_retry_base": 0.05, "multikueue_retry_cap": 0.2}

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: kueue-system}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: worker-1}
spec:
  clusterSource:
    kubeConfig: {location: worker-1-kubeconfig, locationType: Secret}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: workers}
spec: {clusters: [worker-1]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: multikueue}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: workers}
"""


def secret(name: str, kubeconfig: str | bytes) -> JSON:
    raw = kubeconfig.encode() if isinstance(kubeconfig, str) else kubeconfig
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "kueue-system"},
        "data": {"kubeconfig": base64.b64encode(raw).decode()},
    }


def active(obj: JSON | None) -> tuple[str, str, str] | None:
    found = condition(obj, "Active")
    return None if found is None else (found["status"], found["reason"], found["message"])


@pytest.fixture
async def worker(make_fake_api: Callable[..., Awaitable[FakeApiServer]]) -> FakeApiServer:
    return await make_fake_api()


@pytest.fixture
async def manager(fake_api: FakeApiServer, worker: FakeApiServer) -> AsyncIterator[Replica]:
    await fake_api.apply_manifests(SETUP)
    await fake_api.create(secret("worker-1-kubeconfig", worker.kubeconfig_path().read_text()))
    async with replica(fake_api.kubeconfig_path(), settings=FAST_RETRY) as started:
        yield started


async def cluster_is(fake_api: FakeApiServer, status: str, reason: str, name: str = "worker-1") -> JSON:
    await fake_api.wait_for(
        lambda: (active(fake_api.get("multikueueclusters", name)) or ("",))[:2] == (status, reason)
    )
    found = fake_api.get("multikueueclusters", name)
    assert found is not None
    return found


async def check_is(fake_api: FakeApiServer, status: str, reason: str) -> tuple[str, str, str]:
    await fake_api.wait_for(
        lambda: (active(fake_api.get("admissionchecks", "multikueue")) or ("",))[:2] == (status, reason)
    )
    found = active(fake_api.get("admissionchecks", "multikueue"))
    assert found is not None
    return found


async def test_a_worker_kubeconfig_in_a_secret_connects_and_the_check_turns_active(
    fake_api: FakeApiServer, worker: FakeApiServer, manager: Replica
) -> None:
    cluster = await cluster_is(fake_api, "True", "Active")
    assert active(cluster) == ("True", "Active", "Connected")
    assert await check_is(fake_api, "True", "Active") == ("True", "Active", "The admission check is active")

    clusters = manager.controller.worker_clusters
    assert clusters.clusters_for("multikueue") == ("worker-1",)
    assert clusters.inactive_since("worker-1") is None
    client = clusters.client("worker-1")
    assert client is not None  # the dispatcher's client reaches the worker, not the manager
    await worker.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-on-worker"}})
    names = {n["metadata"]["name"] for n in (await client.list_all(NAMESPACES))[0]}
    assert "only-on-worker" in names


async def test_a_worker_that_stops_answering_turns_inactive_and_comes_back(
    fake_api: FakeApiServer, worker: FakeApiServer, manager: Replica
) -> None:
    await cluster_is(fake_api, "True", "Active")
    told: list[str] = []
    manager.controller.worker_clusters.subscribe(told.append)

    await worker.stop()
    lost = await cluster_is(fake_api, "False", "ClientConnectionFailed")
    message = active(lost)[2]  # type: ignore[index]
    assert "connection attempts: " in message and "next connection attempt: " in message
    assert await check_is(fake_api, "False", "NoUsableClusters") == (
        "False",
        "NoUsableClusters",
        "Inactive clusters: [worker-1]",
    )
    clusters = manager.controller.worker_clusters
    assert clusters.client("worker-1") is None
    assert clusters.inactive_since("worker-1") is not None
    assert "worker-1" in told

    await worker.start()
    assert active(await cluster_is(fake_api, "True", "Active")) == ("True", "Active", "Connected")
    await check_is(fake_api, "True", "Active")
    assert clusters.client("worker-1") is not None
    assert clusters.inactive_since("worker-1") is None


def kubeconfig_with(worker: FakeApiServer, *, cluster: JSON | None = None, user: JSON | None = None) -> str:
    document = yaml.safe_load(worker.kubeconfig_path().read_text())
    document["clusters"][0]["cluster"].update(cluster or {})
    document["users"][0]["user"] = user if user is not None else document["users"][0]["user"]
    return yaml.safe_dump(document)


@pytest.mark.parametrize(
    ("make", "reason", "message"),
    [
        (
            lambda w: "apiVersion: v1\nclusters: [\n",
            "InsecureKubeConfig",
            "load client config failed: cannot read kubeconfig: ",
        ),
        (
            lambda w: kubeconfig_with(w, user={"exec": {"command": "/bin/sh", "apiVersion": "v1"}}),
            "InsecureKubeConfig",
            "load client config failed: exec plugins are not allowed",
        ),
        (
            lambda w: kubeconfig_with(w, cluster={"insecure-skip-tls-verify": True}),
            "InsecureKubeConfig",
            "load client config failed: insecure TLS verification is not allowed for cluster fake",
        ),
        (
            lambda w: kubeconfig_with(
                w, user={"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
            ),
            "InsecureKubeConfig",
            "load client config failed: tokenFile is not allowed (user user)",
        ),
        (
            lambda w: kubeconfig_with(w, user={"username": "admin", "password": "secret"}),
            "InsecureKubeConfig",
            "load client config failed: basic auth is not allowed",
        ),
        (
            lambda w: "# " + "x" * 300_000,
            "BadKubeConfig",
            "load client config failed: the kubeconfig is 300002 bytes, more than the 262144 allowed",
        ),
    ],
    ids=["malformed", "exec", "insecure-tls", "token-file", "basic-auth", "too-large"],
)
async def test_an_unusable_kubeconfig_says_why_and_a_fixed_secret_reconnects(
    fake_api: FakeApiServer,
    worker: FakeApiServer,
    manager: Replica,
    make: Callable[[FakeApiServer], str],
    reason: str,
    message: str,
) -> None:
    """Kueue's validateKubeconfig: what would run programs or read files of the controller is refused."""
    await cluster_is(fake_api, "True", "Active")
    good = fake_api.get("secrets", "worker-1-kubeconfig", "kueue-system")
    assert good is not None
    await fake_api.patch(
        "secrets", "worker-1-kubeconfig", {"data": secret("", make(worker))["data"]}, namespace="kueue-system"
    )
    bad = await cluster_is(fake_api, "False", reason)
    assert active(bad)[2].startswith(message)  # type: ignore[index]
    assert manager.controller.worker_clusters.client("worker-1") is None

    await fake_api.patch("secrets", "worker-1-kubeconfig", {"data": good["data"]}, namespace="kueue-system")
    await cluster_is(fake_api, "True", "Active")


async def test_a_missing_secret_or_key_is_named_and_creating_it_connects(
    fake_api: FakeApiServer, worker: FakeApiServer
) -> None:
    await fake_api.apply_manifests(SETUP)
    async with replica(fake_api.kubeconfig_path(), settings=FAST_RETRY):
        missing = await cluster_is(fake_api, "False", "BadKubeConfig")
        assert active(missing)[2] == 'load client config failed: secrets "worker-1-kubeconfig" not found'  # type: ignore[index]
        await check_is(fake_api, "False", "NoUsableClusters")

        await fake_api.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "worker-1-kubeconfig", "namespace": "kueue-system"},
                "data": {"config": "eA=="},
            }
        )
        await fake_api.wait_for(
            lambda: (
                (active(fake_api.get("multikueueclusters", "worker-1")) or ("", "", ""))[2]
                == 'load client config failed: key "kubeconfig" not found in secret "worker-1-kubeconfig"'
            )
        )

        await fake_api.patch(
            "secrets",
            "worker-1-kubeconfig",
            {"data": secret("", worker.kubeconfig_path().read_text())["data"]},
            namespace="kueue-system",
        )
        await cluster_is(fake_api, "True", "Active")


async def test_some_and_no_usable_clusters_and_a_deleted_cluster(
    fake_api: FakeApiServer, worker: FakeApiServer, manager: Replica
) -> None:
    """Kueue's ACReconciler: missing or inactive clusters keep the check active while one is usable."""
    await check_is(fake_api, "True", "Active")
    await fake_api.patch("multikueueconfigs", "workers", {"spec": {"clusters": ["worker-1", "worker-2"]}})
    assert await check_is(fake_api, "True", "SomeActiveClusters") == (
        "True",
        "SomeActiveClusters",
        "Missing clusters: [worker-2]",
    )
    assert manager.controller.worker_clusters.clusters_for("multikueue") == ("worker-1", "worker-2")

    await fake_api.delete("multikueueclusters", "worker-1")
    assert await check_is(fake_api, "False", "NoUsableClusters") == (
        "False",
        "NoUsableClusters",
        "Missing clusters: [worker-1 worker-2]",
    )
    await fake_api.wait_for(lambda: manager.controller.worker_clusters.client("worker-1") is None)


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "absent"},
            'Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "absent" not found',
        ),
        (
            {"apiGroup": "example.com", "kind": "MultiKueueConfig", "name": "workers"},
            "Cannot load the AdmissionChecks parameters: "
            'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference',
        ),
        (
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "workers"},
            'Cannot load the AdmissionChecks parameters: wrong kind "ProvisioningRequestConfig", expecting '
            '"MultiKueueConfig": bad parameters reference',
        ),
    ],
    ids=["config-missing", "wrong-group", "wrong-kind"],
)
async def test_a_check_whose_parameters_name_no_config_is_inactive(
    fake_api: FakeApiServer, manager: Replica, parameters: JSON, message: str
) -> None:
    await check_is(fake_api, "True", "Active")
    await fake_api.patch("admissionchecks", "multikueue", {"spec": {"parameters": parameters}})
    assert await check_is(fake_api, "False", "BadConfig") == ("False", "BadConfig", message)
    assert manager.controller.worker_clusters.clusters_for("multikueue") is None


def path_cluster(location: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "from-file"},
        "spec": {"clusterSource": {"kubeConfig": {"location": location, "locationType": "Path"}}},
    }


async def test_a_kubeconfig_file_in_the_allowed_directory_is_used_and_followed(
    fake_api: FakeApiServer, worker: FakeApiServer, tmp_path: Path
) -> None:
    """Kueue's Path location with MultiKueueKubeConfigPathValidation: files under the directory only (no
    way out through ``..`` or a symbolic link), and a rewritten file is read again."""
    allowed = tmp_path / "kubeconfigs"
    allowed.mkdir()
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(worker.kubeconfig_path().read_text())
    (allowed / "link.yaml").symlink_to(outside)
    good = worker.kubeconfig_path().read_text()
    (allowed / "worker.yaml").write_text(good)
    await fake_api.apply_manifests(SETUP)
    settings = {**FAST_RETRY, "multikueue_kubeconfig_dir": allowed, "multikueue_file_poll": 0.05}
    async with replica(fake_api.kubeconfig_path(), settings=settings):
        await fake_api.create(path_cluster(str(allowed / "worker.yaml")))
        await cluster_is(fake_api, "True", "Active", "from-file")

        (allowed / "worker.yaml").write_text(kubeconfig_with(worker, user={"exec": {"command": "sh"}}))
        await cluster_is(fake_api, "False", "InsecureKubeConfig", "from-file")
        (allowed / "worker.yaml").write_text(good)
        await cluster_is(fake_api, "True", "Active", "from-file")

        for location in (str(allowed / "link.yaml"), str(allowed / ".." / "elsewhere.yaml"), str(outside)):
            await fake_api.patch(
                "multikueueclusters",
                "from-file",
                {"spec": {"clusterSource": {"kubeConfig": {"location": location}}}},
            )
            refused = await cluster_is(fake_api, "False", "BadKubeConfig", "from-file")
            assert active(refused)[2].startswith("load client config failed: kubeconfig path")  # type: ignore[index]
            await fake_api.patch(
                "multikueueclusters",
                "from-file",
                {"spec": {"clusterSource": {"kubeConfig": {"location": str(allowed / "worker.yaml")}}}},
            )
            await cluster_is(fake_api, "True", "Active", "from-file")


async def test_a_connection_failure_message_quotes_no_credential(
    fake_api: FakeApiServer, worker: FakeApiServer, manager: Replica
) -> None:
    """Anyone who may read MultiKueueClusters reads the condition: a proxy password stays out of it."""
    await cluster_is(fake_api, "True", "Active")
    through_proxy = kubeconfig_with(worker, cluster={"proxy-url": "http://alice:hunter2-secret@127.0.0.1:9"})
    await fake_api.patch(
        "secrets",
        "worker-1-kubeconfig",
        {"data": secret("", through_proxy)["data"]},
        namespace="kueue-system",
    )
    failed = await cluster_is(fake_api, "False", "ClientConnectionFailed")
    message = active(failed)[2]  # type: ignore[index]
    assert "127.0.0.1:9" in message, message  # the proxy was tried, and its failure is told
    assert "hunter2-secret" not in str(failed)
    assert worker.kubeconfig_path().read_text().split("token: ")[1].split()[0] not in str(failed)


async def test_only_the_leader_holds_worker_clients_and_a_new_leader_connects(
    fake_api: FakeApiServer, worker: FakeApiServer
) -> None:
    """Kueue's controllers run on the leader only: a standby has no client to hand the dispatcher."""
    await fake_api.apply_manifests(SETUP)
    await fake_api.create(secret("worker-1-kubeconfig", worker.kubeconfig_path().read_text()))
    a = await start_replica(fake_api.kubeconfig_path(), identity="replica-a", settings=FAST_RETRY)
    b = await start_replica(fake_api.kubeconfig_path(), identity="replica-b", settings=FAST_RETRY)
    try:
        await cluster_is(fake_api, "True", "Active")
        leader, standby = (a, b) if a.controller.is_leader() else (b, a)
        await fake_api.wait_for(lambda: leader.controller.worker_clusters.client("worker-1") is not None)
        assert standby.controller.worker_clusters.client("worker-1") is None

        await leader.stop()
        await asyncio.wait_for(standby.controller.leading.wait(), 30)
        await fake_api.wait_for(
            lambda: standby.controller.worker_clusters.client("worker-1") is not None, timeout=30
        )
        assert leader.controller.worker_clusters.client("worker-1") is None
    finally:
        for replica_ in (a, b):
            await replica_.stop()
