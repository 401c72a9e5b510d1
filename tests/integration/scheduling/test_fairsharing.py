"""Fair sharing through the real controller: turned on by the ConfigMap, reported in ClusterQueue and Cohort
status and in Kueue's weighted-share gauge, and used to take borrowed quota back."""

from __future__ import annotations

from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import cohort, manifests, queued_job, resource_flavor, team_queue
from tests.support.fake_cluster import condition, controller_config, running
from tests.support.replica import replica

JSON = dict[str, Any]


def setup(*, fair_sharing: bool) -> str:
    config = "fairSharing: {}\n" if fair_sharing else "logLevel: info\n"
    teams = [
        team_queue(
            team,
            {"default": {"cpu": 4}},
            queue="q",
            cohortName="org",
            preemption={"reclaimWithinCohort": "Any"},
        )
        for team in ("team-a", "team-b")
    ]
    objects = [cohort("org"), resource_flavor("default"), *teams[0], *teams[1]]
    return controller_config(config) + "---\n" + manifests(*objects)


def cpu_job(namespace: str, name: str, cpus: int) -> JSON:
    return queued_job(namespace, name, queue="q", resources={"requests": {"cpu": str(cpus)}})


def weighted_share(obj: JSON | None) -> int | None:
    value = (((obj or {}).get("status") or {}).get("fairSharing") or {}).get("weightedShare")
    return value if isinstance(value, int) else None


async def test_shares_are_reported_and_a_borrower_gives_back_under_fair_sharing(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(setup(fair_sharing=True))
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(cpu_job("team-a", "big", 6))  # 4 of its own, 2 borrowed from team-b
        await fake_api.wait_for(lambda: running(fake_api, "team-a", "big"))

        # 2 of the cohort's 8 lendable CPUs borrowed: 250 per mille at weight 1 (Kueue's dominant share)
        await fake_api.wait_for(lambda: weighted_share(fake_api.get("clusterqueues", "team-a")) == 250)
        await fake_api.wait_for(lambda: weighted_share(fake_api.get("clusterqueues", "team-b")) == 0)
        await fake_api.wait_for(lambda: weighted_share(fake_api.get("cohorts", "org")) is not None)
        registry = serving.controller.metrics.registry
        labels = {"cluster_queue": "team-a", "cohort": "org", "replica_role": "leader"}
        await fake_api.wait_for(
            lambda: registry.get_sample_value("kueue_cluster_queue_weighted_share", labels) == 250
        )

        await fake_api.create(cpu_job("team-b", "own", 4))  # team-b wants its nominal quota back
        await fake_api.wait_for(lambda: running(fake_api, "team-b", "own"), timeout=20)
        assert not running(fake_api, "team-a", "big")
        [preempted] = [w for w in fake_api.list("workloads", "team-a")]
        reason = condition(preempted, "Preempted")
        assert reason is not None and reason["status"] == "True"
        assert reason["message"].endswith("preemptor path: /org/team-b; preemptee path: /org/team-a")
        await fake_api.wait_for(lambda: weighted_share(fake_api.get("clusterqueues", "team-a")) == 0)


async def test_without_fair_sharing_no_share_is_reported(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(setup(fair_sharing=False))
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(cpu_job("team-a", "big", 6))
        await fake_api.wait_for(lambda: running(fake_api, "team-a", "big"))
        await fake_api.wait_for(
            lambda: (
                ((fake_api.get("clusterqueues", "team-a") or {}).get("status") or {}).get("admittedWorkloads")
                == 1
            )
        )
        assert weighted_share(fake_api.get("clusterqueues", "team-a")) is None
        assert weighted_share(fake_api.get("cohorts", "org")) is None
        labels = {"cluster_queue": "team-a", "cohort": "org", "replica_role": "leader"}
        assert (
            serving.controller.metrics.registry.get_sample_value("kueue_cluster_queue_weighted_share", labels)
            is None
        )
