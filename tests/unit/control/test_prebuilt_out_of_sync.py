"""A MultiKueue worker's Job copy edited after its prebuilt Workload was admitted: the Workload is finished
as ``OutOfSync`` (Kueue's ensurePrebuiltWorkloadInSync), not replaced, so the manager dispatches it again."""

from __future__ import annotations

from kueue_webhook.api.integrations import JOB
from kueue_webhook.control.jobs.job_plan import DeleteWorkload, FinishWorkload, StopJob, plan_job
from tests.unit.control.plans import flavor_lookup
from tests.unit.control.test_edits_after_admission import admitted, job, raise_job, started, stopped


def test_an_edited_copy_is_stopped_then_its_prebuilt_workload_finishes_out_of_sync() -> None:
    workload = admitted(JOB, job())
    running = started(JOB, job(), workload)
    raise_job(running)
    stop = plan_job(running, workload, flavors=flavor_lookup, prebuilt=True)
    assert isinstance(stop, StopJob)
    suspended = stopped(running, stop)
    finish = plan_job(suspended, workload, flavors=flavor_lookup, prebuilt=True)
    assert isinstance(finish, FinishWorkload)
    assert (finish.reason, finish.message) == (
        "OutOfSync",
        "The prebuilt workload is out of sync with its user job",
    )
    # a Workload of its own is replaced instead
    assert isinstance(plan_job(suspended, workload, flavors=flavor_lookup), DeleteWorkload)
