"""A running TrainJob edited into another shape (Kueue's ``EquivalentToWorkload`` on the pod sets read
from its runtime): more nodes stop it and replace its Workload; the flavor Kueue wrote into its runtime
patch is never taken for an edit; once its runtime is gone, its Workload's pod sets stand in for it."""

from __future__ import annotations

from kueue_webhook.api.integrations import BUILTIN, engine
from kueue_webhook.control.jobs.job_plan import NO_MATCHING_WORKLOAD, DeleteWorkload, FinishWorkload, StopJob
from tests.unit.admission.golden import apply_patch
from tests.unit.api.test_trainjob import lookup_of, trainjob, view
from tests.unit.control.test_edits_after_admission import admitted, plan, started

TRAINJOB = BUILTIN["trainer.kubeflow.org/trainjob"]


def test_a_started_trainjob_matches_its_workload_despite_kueues_runtime_patch() -> None:
    workload = admitted(TRAINJOB, view(trainjob()))
    running = started(TRAINJOB, view(trainjob()), workload)
    assert engine.is_suspended(TRAINJOB, running) is False
    assert plan(TRAINJOB, view(running), workload) is None


def test_more_nodes_on_a_running_trainjob_stop_it_and_replace_its_workload() -> None:
    workload = admitted(TRAINJOB, view(trainjob()))
    running = started(TRAINJOB, view(trainjob()), workload)
    running["spec"]["trainer"] = {"numNodes": 5}
    stop = plan(TRAINJOB, view(running), workload)
    assert isinstance(stop, StopJob)
    assert stop.message == NO_MATCHING_WORKLOAD
    suspended = apply_patch(apply_patch(running, list(stop.first)), stop.patch)
    assert suspended["spec"]["suspend"] is True
    assert isinstance(plan(TRAINJOB, view(suspended), workload), DeleteWorkload)


def test_a_running_trainjob_whose_runtime_was_deleted_still_finishes() -> None:
    workload = admitted(TRAINJOB, view(trainjob()))
    running = started(TRAINJOB, view(trainjob()), workload)
    assert TRAINJOB.resolver is not None
    assert isinstance(TRAINJOB.resolver.resolve(running, lookup_of()), str)  # no runtime any more
    stand_in = TRAINJOB.resolver.from_workload(running, workload)
    assert plan(TRAINJOB, stand_in, workload) is None  # still matches: left running
    stand_in["status"] = {"conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
    finish = plan(TRAINJOB, stand_in, workload)
    assert isinstance(finish, FinishWorkload)
    assert (finish.reason, finish.message) == ("Succeeded", "done")
