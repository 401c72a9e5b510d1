"""Every replica answers the dashboard, and a replica that does not lead shows what the leader shows: the
same queues, usage, pending Workloads with their reasons, and recent admissions, from its own copy of the
queues and its own record of the Workloads' conditions.

The requests come as the aggregator sends them (the fake API server's front-proxy certificate, the user in
``X-Remote-User``); research's 4 GPUs hold two 2-GPU Jobs, three wait.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from kueue_webhook.http.dashboard import DASHBOARD_PATH
from tests.fakeapi import FakeApiServer
from tests.support.replica import certificates
from tests.support.research import HANG, leader_and_standby

ADMIN = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters", "Accept": "application/json"}


async def document(fake_api: FakeApiServer, port: int, ca: Path) -> dict[str, Any]:
    context = fake_api.front_proxy_client.context(ca)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}{DASHBOARD_PATH}", ssl=context, headers=ADMIN) as response,
    ):
        assert response.status == 200
        parsed: dict[str, Any] = json.loads(await response.text())
        return parsed


def shown(doc: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of the cluster (not who answered, nor when)."""
    return {key: value for key, value in doc.items() if key not in ("replica", "generatedAt")}


async def test_a_replica_that_does_not_lead_shows_what_the_leader_shows(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    tls = certificates(tmp_path / "tls")
    async with leader_and_standby(fake_api, tls) as (leader, standby):
        async with asyncio.timeout(HANG):  # each replica computes its document at most once a second
            while True:
                ours, theirs = [await document(fake_api, r.port, tls.ca_cert) for r in (leader, standby)]
                if shown(ours) == shown(theirs) and ours["totals"]["pending"] == 3:
                    break
                await asyncio.sleep(0.1)
        assert ours["replica"] == {"name": "replica-a", "role": "leader"}
        assert theirs["replica"] == {"name": "replica-b", "role": "follower"}
        assert (theirs["totals"]["admitted"], theirs["totals"]["pending"]) == (2, 3)
        [group] = theirs["pending"]
        assert [w["owner"] for w in group["workloads"]] == ["Job/j2", "Job/j3", "Job/j4"]
        assert all("insufficient unused quota for nvidia.com/gpu" in w["message"] for w in group["workloads"])
        assert sorted(d["kind"] for d in theirs["recent"]) == ["Admitted", "Admitted"]
