"""A CRD no integration knows (the made-up ``example.com/v1`` TrainingRun, tests/crds/declared) queued by
declaring it in the ConfigMap at runtime, on the fake API server with the shipped webhook configurations:
the leader adds the kind to its webhook configurations, so the webhook suspends it on create; it is admitted
with its pod sets' counts and the flavor injected, preempted (suspended, templates restored), and its quota
is released when the operator (played by the test) reports it finished. Once the declaration is removed,
new TrainingRuns are left alone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.crds.declared_kind import PLURAL, config_yaml, crd, training_run
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.integrations.test_integrations import SETUP
from tests.support.builders import PRIORITY_LABEL, gpu_limits, queued_job
from tests.support.fake_cluster import condition, controller_config, running, serving_webhook
from tests.support.research import URGENT

JSON = dict[str, Any]
HANG = 30.0
MUTATING = ("mutatingwebhookconfigurations", "kueue-webhook-mutating")
VALIDATING = ("validatingwebhookconfigurations", "kueue-webhook-validating")


def entry(fake_api: FakeApiServer, where: tuple[str, str], name: str) -> JSON | None:
    config = fake_api.get(*where) or {}
    return next((h for h in config.get("webhooks") or [] if h["name"] == name), None)


def workers_template(obj: JSON) -> JSON:
    template: JSON = obj["spec"]["workers"][0]["template"]["spec"]
    return template


async def declare(fake_api: FakeApiServer, text: str) -> None:
    await fake_api.patch(
        "configmaps", "kueue-webhook-config", {"data": {"config.yaml": text}}, namespace="kueue-system"
    )


async def test_a_declared_kind_is_queued_like_a_built_in_one_and_left_alone_once_undeclared(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=[*load_crds(DEFAULT_CRDS), crd()])
    await fake_api.apply_manifests(controller_config(config_yaml(declared=False)) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        # declared at runtime: the leader lists it in both webhook configurations, copying our entries
        await declare(fake_api, config_yaml())
        await fake_api.wait_for(
            lambda: (
                entry(fake_api, MUTATING, "mdeclared.kueue.x-k8s.io") is not None
                and entry(fake_api, VALIDATING, "vdeclared.kueue.x-k8s.io") is not None
            ),
            timeout=HANG,
        )
        mutating = entry(fake_api, MUTATING, "mdeclared.kueue.x-k8s.io")
        template = entry(fake_api, MUTATING, "mintegrations.kueue.x-k8s.io")
        assert mutating is not None and template is not None
        assert mutating["clientConfig"] == template["clientConfig"]
        assert mutating["rules"] == [
            {
                "apiGroups": ["example.com"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["trainingruns"],
                "scope": "Namespaced",
            }
        ]

        created = await fake_api.create(training_run("train", "team", queue="gpus", workers=4), admit=True)
        assert created["spec"]["suspend"] is True  # queued by the mutating webhook

        def started() -> bool:
            obj = fake_api.get(PLURAL, "train", "team")
            return obj is not None and obj["spec"].get("suspend") is False

        await fake_api.wait_for(started, timeout=HANG)
        obj = fake_api.get(PLURAL, "train", "team")
        assert obj is not None
        assert workers_template(obj)["nodeSelector"] == {"node-pool": "gpu"}
        assert "nodeSelector" not in obj["spec"]["launcher"]["template"]["spec"]  # asks for no GPU
        [workload] = fake_api.list("workloads", "team")
        assert workload["metadata"]["name"].startswith("trainingrun-train-")
        assert workload["metadata"]["ownerReferences"][0]["kind"] == "TrainingRun"
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("launcher", 1), ("gpu", 4)]
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "research") or {}).get("status", {}).get("flavorsUsage")
                is not None
                and (fake_api.get("clusterqueues", "research") or {})["status"]["flavorsUsage"][0][
                    "resources"
                ][0]["total"]
                == "4"
            ),
            timeout=HANG,
        )

        # an urgent Job takes the whole quota: the TrainingRun is suspended again, its templates restored
        urgent = queued_job(
            "team", "urgent", queue="gpus", resources=gpu_limits(8), labels={PRIORITY_LABEL: URGENT}
        )
        await fake_api.create(urgent, admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "urgent"), timeout=HANG)
        obj = fake_api.get(PLURAL, "train", "team")
        assert obj is not None and obj["spec"]["suspend"] is True
        assert "nodeSelector" not in workers_template(obj)
        evicted = fake_api.get("workloads", workload["metadata"]["name"], "team")
        assert condition(evicted, "Preempted") is not None

        # the urgent Job finishes: the TrainingRun runs again, then finishes and frees the quota
        await fake_api.complete_job("team", "urgent")
        await fake_api.wait_for(started, timeout=HANG)
        done = {"type": "Succeeded", "status": "True", "reason": "Done", "message": "trained"}
        await fake_api.patch(
            PLURAL, "train", {"status": {"conditions": [done]}}, namespace="team", subresource="status"
        )

        def finished() -> bool:
            current = fake_api.get("workloads", workload["metadata"]["name"], "team")
            return current is not None and (condition(current, "Finished") or {}).get("status") == "True"

        await fake_api.wait_for(finished, timeout=HANG)
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "research") or {}).get("status", {}).get("admittedWorkloads")
                == 0
            ),
            timeout=HANG,
        )

        # undeclared: the entries go, and a new TrainingRun is neither suspended nor given a Workload
        await declare(fake_api, config_yaml(declared=False))
        await fake_api.wait_for(
            lambda: (
                entry(fake_api, MUTATING, "mdeclared.kueue.x-k8s.io") is None
                and entry(fake_api, VALIDATING, "vdeclared.kueue.x-k8s.io") is None
            ),
            timeout=HANG,
        )
        free = await fake_api.create(training_run("free", "team", queue="gpus"), admit=True)
        assert free["spec"].get("suspend") is not True
        await fake_api.create(queued_job("team", "after", queue="gpus", resources=gpu_limits(1)), admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "after"), timeout=HANG)
        owners = sorted(
            w["metadata"]["ownerReferences"][0]["name"] for w in fake_api.list("workloads", "team")
        )
        assert owners == ["after", "train", "urgent"]


async def test_a_bad_declaration_keeps_the_last_good_configuration(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=[*load_crds(DEFAULT_CRDS), crd()])
    await fake_api.apply_manifests(controller_config(config_yaml()) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        await fake_api.wait_for(
            lambda: entry(fake_api, MUTATING, "mdeclared.kueue.x-k8s.io") is not None, timeout=HANG
        )
        broken = config_yaml().replace("suspendPath: spec.suspend", "suspendPath: spec..suspend")
        await declare(fake_api, broken)

        def warned() -> bool:
            return any(
                e.get("reason") == "InvalidConfiguration"
                and "integrations.declaredKinds[0].suspendPath" in e.get("message", "")
                for e in fake_api.list("events", "kueue-system")
            )

        await fake_api.wait_for(warned, timeout=HANG)
        # still declared: a new TrainingRun is queued
        created = await fake_api.create(training_run("still", "team", queue="gpus"), admit=True)
        assert created["spec"]["suspend"] is True
        assert entry(fake_api, MUTATING, "mdeclared.kueue.x-k8s.io") is not None
