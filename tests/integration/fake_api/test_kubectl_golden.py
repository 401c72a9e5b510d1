"""Real kubectl output against the fake equals what it printed against kube-apiserver v1.36.2 (golden logs).

The cluster state of the captures is rebuilt by replaying the captured requests; kubectl's output is then
compared line by line, with ages, uids and resourceVersions normalised.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer
from tests.fakeapi import golden as captures
from tests.fakeapi.identity import UserInfo

_AGE = re.compile(r"\b\d+[smhd]\b")


def normalise_output(text: str) -> list[str]:
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uid>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    text = re.sub(r"(Resource Version:\s+)\d+", r"\1<rv>", text)
    return [_AGE.sub("<age>", line).rstrip() for line in text.splitlines()]


@pytest.fixture
async def golden_state(fake_api: FakeApiServer) -> AsyncIterator[FakeApiServer]:
    """The objects the captures were taken with: the sample Job, the queue objects and a finished Workload."""
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "golden"}})
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=fake_api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        for name in (
            "job-create.json",
            "kueue-resourceflavor-create.json",
            "kueue-clusterqueue-create.json",
            "kueue-localqueue-create.json",
            "kueue-workload-create.json",
            "kueue-workload-status-merge-patch.json",
            "webhook-workload-status-update.json",
        ):
            await captures.replay_file(session, name)
    yield fake_api


async def kubectl_output(kubectl: Callable[..., Any], *args: str, input: str | None = None) -> str:
    result = await asyncio.to_thread(kubectl, *args, input=input)
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


@pytest.mark.parametrize(
    ("log", "args"),
    [
        ("kubectl-get-clusterqueue-wide.log", ("get", "clusterqueue", "research", "-o", "wide")),
        ("kubectl-get-workloads.log", ("-n", "golden", "get", "workloads")),
        ("kubectl-describe-workload.log", ("-n", "golden", "describe", "workload", "job-sample-abcde")),
    ],
)
async def test_kubectl_prints_what_it_printed_against_kube_apiserver(
    golden_state: FakeApiServer, kubectl: Callable[..., Any], log: str, args: tuple[str, ...]
) -> None:
    printed = await kubectl_output(kubectl, *args)
    assert normalise_output(printed) == normalise_output(captures.kubectl_stdout(log))


async def test_kubectl_write_commands_print_the_same(
    golden_state: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    local_queue = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata:\n  name: applied\n  namespace: golden\n"
        "spec:\n  clusterQueue: research\n"
    )
    steps = [
        ("kubectl-apply-localqueue.log", ("apply", "-f", "-"), local_queue),
        (
            "kubectl-create-job.log",
            ("-n", "golden", "create", "job", "kc-job", "--image=busybox", "--", "true"),
            None,
        ),
        ("kubectl-label-job.log", ("-n", "golden", "label", "job", "kc-job", "a=b"), None),
        ("kubectl-delete-job.log", ("-n", "golden", "delete", "job", "kc-job"), None),
    ]
    for log, args, stdin in steps:
        printed = await kubectl_output(kubectl, *args, input=stdin)
        assert printed == captures.kubectl_stdout(log), log


@pytest.mark.parametrize(
    ("log", "args"),
    [
        ("kubectl-auth-whoami.log", ("auth", "whoami")),
        ("kubectl-auth-whoami-json.log", ("auth", "whoami", "-o", "json")),
    ],
)
async def test_kubectl_auth_whoami_prints_the_same(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], log: str, args: tuple[str, ...]
) -> None:
    # the captured admin: a client certificate there, a token here; the identity it carries is the same
    fake_api.tokens.add(
        "captured-admin",
        UserInfo(
            username="kubernetes-admin",
            groups=("system:masters",),
            extra={
                "authentication.kubernetes.io/credential-id": [
                    "X509SHA256=bed6fdfdd4889dfe57e4a98c196c155ff2cf9f99dbf9cc8422340be3cad70a82"
                ]
            },
        ),
    )
    result = await asyncio.to_thread(kubectl, *args, token="captured-admin")
    assert result.returncode == 0, result.stderr
    assert normalise_output(result.stdout) == normalise_output(captures.kubectl_stdout(log))
