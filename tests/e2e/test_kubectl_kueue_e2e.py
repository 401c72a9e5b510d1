"""``kubectl kueue`` through real kubectl's plugin mechanism, on a real API server with a controller running.

kubectl finds ``kubectl-kueue`` on PATH (the console script, next to this interpreter) and runs it for
``kubectl kueue ...``. A replica serves on an ephemeral port (a fixed one may be taken on a shared host), and
queue positions reach it through kube-apiserver's aggregator: an APIService on an ``ExternalName`` Service
naming ``localhost`` at that port, as in test_visibility_e2e. The Jobs are created suspended, as the
mutating webhook would make them, so no webhook needs registering. The queue holds 1 CPU: the first 1-CPU Job
runs and the next two wait. kubectl refuses its own flags before a plugin's name, so the kubeconfig goes in
``$KUBECONFIG``, as a user's would. Run it under ``flock`` on a shared cluster (the APIService is one per
cluster).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER
from tests.e2e.install import REPO_ROOT
from tests.e2e.support import APISERVICE, visibility_api_service
from tests.support import builders
from tests.support.replica import CONTROLLER_MANIFESTS, certificates, start_replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
SCRIPTS = Path(sys.executable).parent
TIMEOUT = 90.0
VISIBILITY = CONTROLLER_MANIFESTS / "visibility.yaml"


async def run(*argv: str, stdin: str | None = None, kubeconfig: Path | None = None) -> tuple[int, str, str]:
    """A command without blocking the event loop the replica answers on."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig or KUBECONFIG), "NO_COLOR": "1"}
    env["PATH"] = f"{SCRIPTS}{os.pathsep}{env.get('PATH', '')}"
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), TIMEOUT)
    return process.returncode or 0, out.decode(), err.decode()


async def kubectl(*args: str, stdin: str | None = None) -> str:
    code, out, err = await run(KUBECTL, *args, stdin=stdin)
    assert code == 0, f"kubectl {' '.join(args)}: {err}"
    return out


async def kubectl_kueue(*args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
    """``kubectl kueue ...``: kubectl finds the plugin on PATH."""
    return await run(KUBECTL, "kueue", *args, kubeconfig=kubeconfig)


async def get(*args: str) -> JSON:
    return dict(json.loads(await kubectl("get", *args, "-o", "json")))


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check``: a real cluster seen through kubectl offers nothing to await."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)


def job(ns: str, name: str) -> str:
    """A 1-CPU Job of LocalQueue q, suspended as the mutating webhook would make it."""
    return json.dumps(builders.queued_job(ns, name, queue="q", resources=builders.cpu_requests("1")))


def manifests(ns: str, port: int) -> str:
    queue = builders.own_queue(ns, ns, {"cpu": 1}, queue="q", namespace_selector=builders.only(ns))
    return visibility_api_service(ns, port) + "---\n" + builders.manifests(*queue)


async def table(namespace: str) -> dict[str, list[str]]:
    """``kubectl kueue list workloads`` rows by JOB NAME: (JOB NAME, STATUS, POSITION IN QUEUE)."""
    code, out, _ = await kubectl_kueue("list", "workloads", "-n", namespace)
    if code != 0 or not out:
        return {}
    header = out.splitlines()[0]
    starts = [
        header.index(name) for name in ("JOB NAME", "LOCALQUEUE", "STATUS", "POSITION IN QUEUE", "EXEC")
    ]
    rows = {}
    for line in out.splitlines()[1:]:
        cells = [line[start:end].strip() for start, end in itertools.pairwise(starts)]
        rows[cells[0]] = [cells[0], *cells[2:]]
    return rows


async def namespace_editor(ns: str, directory: Path) -> Path:
    """A kubeconfig of a ServiceAccount bound to ``edit`` in ``ns`` only, once kube-apiserver's RBAC lets it
    list the namespace's Workloads (the shipped roles are folded into ``edit`` asynchronously)."""
    roles = [d for d in yaml.safe_load_all(VISIBILITY.read_text()) if d["kind"] == "ClusterRole"]
    await kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(roles))
    await kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "roles"))
    await kubectl("create", "serviceaccount", "member", "-n", ns)
    await kubectl(
        "create",
        "rolebinding",
        "member-edit",
        "-n",
        ns,
        "--clusterrole=edit",
        f"--serviceaccount={ns}:member",
    )
    token = (await kubectl("create", "token", "member", "-n", ns)).strip()
    config = yaml.safe_load(Path(KUBECONFIG).read_text())
    config["users"] = [{"name": "member", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "member"
        context["context"]["namespace"] = ns
    path = directory / "member.kubeconfig"
    path.write_text(yaml.safe_dump(config))

    async def allowed() -> bool:
        can_i = (KUBECTL, "--kubeconfig", str(path), "auth", "can-i")
        _, workloads, _ = await run(*can_i, "list", "workloads.kueue.x-k8s.io")
        pending = "localqueues.visibility.kueue.x-k8s.io"
        _, positions, _ = await run(*can_i, "get", pending, "--subresource=pendingworkloads")
        return workloads.strip() == positions.strip() == "yes"

    await eventually(allowed, "the member to read the namespace's Workloads and LocalQueue positions")
    return path


async def suspended(namespace: str, name: str) -> bool:
    return bool((await get("job", name, "-n", namespace))["spec"].get("suspend"))


async def workload_of(namespace: str, job: str) -> JSON:
    listed = await get("workloads", "-n", namespace)
    return next(w for w in listed["items"] if w["metadata"]["ownerReferences"][0]["name"] == job)


async def test_list_why_stop_and_resume_through_kubectls_plugin_mechanism(tmp_path: Path) -> None:
    if not (SCRIPTS / "kubectl-kueue").exists():
        pytest.skip(f"the console script is not installed in {SCRIPTS} (pip install -e .)")
    code, _, _ = await run(KUBECTL, "get", "apiservice", APISERVICE)
    if code == 0:
        pytest.skip(f"APIService {APISERVICE} already exists (Kueue or another kueue-webhook serves it)")
    ns = f"e2e-kueuectl-{uuid.uuid4().hex[:6]}"
    await kubectl("create", "namespace", ns)
    serving = await start_replica(
        Path(KUBECONFIG), tls=certificates(tmp_path / "tls"), namespace=ns, identity=ns
    )
    try:
        await asyncio.wait_for(serving.controller.leading.wait(), TIMEOUT)
        await kubectl("apply", "-f", "-", stdin=manifests(ns, serving.port))
        await kubectl("create", "-f", "-", stdin=job(ns, "j0"))
        await eventually(lambda: _not(suspended(ns, "j0")), "j0 to start")
        for name in ("j1", "j2"):  # after j0 runs: the queue's order is known
            await kubectl("create", "-f", "-", stdin=job(ns, name))

        async def listed() -> bool:
            rows = await table(ns)
            return [rows.get(j, [])[1:3] for j in ("j0", "j1", "j2")] == [
                ["ADMITTED", ""],
                ["PENDING", "0"],
                ["PENDING", "1"],
            ]

        # positions come through the aggregator once the APIService is Available
        await eventually(listed, "j0 admitted, j1 and j2 pending at positions 0 and 1")
        code, out, _ = await kubectl_kueue("list", "workloads", "-n", ns)
        assert [c.strip() for c in out.splitlines()[0].split("  ") if c.strip()] == [
            "NAME",
            "JOB TYPE",
            "JOB NAME",
            "LOCALQUEUE",
            "CLUSTERQUEUE",
            "STATUS",
            "POSITION IN QUEUE",
            "EXEC TIME",
            "AGE",
        ]
        assert "job.batch" in out

        async def told_why() -> bool:  # a Workload's first pending message is written after a second
            conditions = (await workload_of(ns, "j2")).get("status", {}).get("conditions") or []
            return any("insufficient" in c.get("message", "") for c in conditions)

        await eventually(told_why, "j2's Workload to say why it waits")
        code, out, err = await kubectl_kueue("why", "job/j2", "-n", ns)
        assert code == 0, err
        workload = (await workload_of(ns, "j2"))["metadata"]["name"]
        assert f"Job {ns}/j2 -> Workload {workload}" in out
        assert "Status:          PENDING" in out
        assert "insufficient unused quota for cpu" in out
        assert "1 in ClusterQueue, 1 in LocalQueue" in out
        assert f"ClusterQueue {ns} (no cohort, Active): 1 admitted, 2 pending" in out
        assert "Estimated start: unknown: 1 admitted and 1 other pending Workload(s)" in out
        code, out, _ = await kubectl_kueue("why", f"workload/{workload}", "-n", ns, "-o", "json")
        report = json.loads(out)
        assert report["object"] == {"kind": "Workload", "name": workload, "namespace": ns}
        assert report["position"] == {"positionInClusterQueue": 1, "positionInLocalQueue": 1}
        assert await kubectl_kueue("why", "job/nope", "-n", ns) == (
            1,
            "",
            'Error from server (NotFound): jobs.batch "nope" not found\n',
        )

        # a namespace's editor: positions per LocalQueue (the ClusterQueue's are not theirs to read), and
        # `why` says what it could not read instead of failing
        member = await namespace_editor(ns, tmp_path)
        code, out, err = await kubectl_kueue("list", "wl", kubeconfig=member)
        assert code == 0, err
        assert [line.split()[5:7] for line in out.splitlines()[2:]] == [["PENDING", "0"], ["PENDING", "1"]]
        code, out, err = await kubectl_kueue("why", "job/j2", kubeconfig=member)
        assert code == 0, err
        assert "1 in ClusterQueue, 1 in LocalQueue" in out
        assert (
            f"Note: ClusterQueue {ns}: Error from server (Forbidden): "
            f'clusterqueues.kueue.x-k8s.io "{ns}" is forbidden' in out
        )
        assert (
            "Estimated start: unknown: the cohort's Workloads and queues could not be read (see notes)" in out
        )

        code, out, err = await kubectl_kueue("stop", "localqueue", "q", "-n", ns)
        assert (code, out) == (0, "localqueue.kueue.x-k8s.io/q\n"), err
        assert (await get("localqueue", "q", "-n", ns))["spec"]["stopPolicy"] == "HoldAndDrain"
        # HoldAndDrain: the running Job is evicted and suspended again
        await eventually(lambda: suspended(ns, "j0"), "j0 to be suspended by the drain")
        evicted = await workload_of(ns, "j0")
        assert any(c["type"] == "Evicted" and c["status"] == "True" for c in evicted["status"]["conditions"])

        code, _, err = await kubectl_kueue("resume", "lq", "q", "-n", ns)
        assert code == 0, err
        assert (await get("localqueue", "q", "-n", ns))["spec"]["stopPolicy"] == "None"
        await eventually(lambda: _not(suspended(ns, "j0")), "j0 to run again once the queue resumes")
    finally:
        await run(KUBECTL, "delete", "apiservice", APISERVICE, "--ignore-not-found")
        await run(KUBECTL, "delete", "namespace", ns, "--wait=false")
        await run(KUBECTL, "delete", "apiservice", APISERVICE, "--ignore-not-found")
        await run(KUBECTL, "delete", "clusterqueue,resourceflavor", ns, "--ignore-not-found")
        await serving.stop()


async def _not(value: Awaitable[bool]) -> bool:
    return not await value
