"""``kubectl kueue list`` prints kueuectl's columns and cells, aligned as kubectl aligns tables."""

from __future__ import annotations

import pytest

from kueue_webhook.kubectl_kueue.columns import (
    WORKLOAD_COLUMNS,
    cluster_queue_row,
    job_type,
    local_queue_row,
    resource_flavor_row,
    workload_row,
    workload_status,
)
from kueue_webhook.kubectl_kueue.table import human_duration, render_table
from tests.unit.kubectl_kueue.fixtures import CLUSTER_QUEUE, FLAVOR, LOCAL_QUEUE, NOW, cond, workload


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (312, "5m12s"),
        (3600, "60m"),
        (3 * 3600 - 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 20 * 60, "5h20m"),
        (30 * 3600, "30h"),
        (52 * 3600, "2d4h"),
        (9 * 86400, "9d"),
        (800 * 86400, "2y70d"),
        (3000 * 86400, "8y"),
    ],
)
def test_ages_read_as_apimachinery_human_duration(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_a_table_is_padded_as_kubectls_tabwriter_min_width_6_padding_3() -> None:
    text = render_table(
        ("Name", "Job Type", "Age"), [["wl1", "", "60m"], ["a-longer-name", "job.batch", "3h"]]
    )
    assert text == (
        "NAME            JOB TYPE    AGE\nwl1                         60m\na-longer-name   job.batch   3h\n"
    )
    assert render_table(("A",), [], show_headers=False) == ""


def test_workload_status_is_kueues_finished_admitted_reserved_pending_in_that_order() -> None:
    assert workload_status(workload("w")) == "pending"
    assert workload_status(workload("w", conditions=[cond("QuotaReserved", "True")])) == "quotaReserved"
    both = [cond("QuotaReserved", "True"), cond("Admitted", "True")]
    assert workload_status(workload("w", conditions=both)) == "admitted"
    assert workload_status(workload("w", conditions=[*both, cond("Finished", "True")])) == "finished"
    assert workload_status(workload("w", conditions=[cond("Admitted", "False")])) == "pending"


def test_workload_rows_in_kueuectls_columns_with_exec_time_and_position() -> None:
    names = {"batch/v1": {"Job": ("job", "batch")}}
    queues = {("team-a", "team-a-gpu"): LOCAL_QUEUE}
    running = workload(
        "wl-run",
        created=3 * 3600,
        conditions=[cond("Admitted", "True", hours=2), cond("Finished", "False", hours=1)],
        admitted_to="research",
    )
    done = workload(
        "wl-done",
        created=3 * 3600,
        conditions=[cond("Admitted", "True", hours=2), cond("Finished", "True", hours=1)],
        admitted_to="research",
    )
    waiting = workload("wl-wait", created=3600, owner=("ray.io/v1", "RayJob", "rj"))
    rows = [
        workload_row(w, now=NOW, local_queues=queues, positions={("team-a", "wl-wait"): 0}, names=names)
        for w in (running, done, waiting)
    ]
    assert render_table(WORKLOAD_COLUMNS, rows) == (
        "NAME      JOB TYPE    JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE\n"  # noqa: E501
        "wl-run    job.batch   train      team-a-gpu   research       ADMITTED                       120m        3h\n"  # noqa: E501
        "wl-done   job.batch   train      team-a-gpu   research       FINISHED                       60m         3h\n"  # noqa: E501
        "wl-wait               rj         team-a-gpu   research       PENDING    0                               60m\n"  # noqa: E501
    )


def test_job_type_is_singular_dot_group_cut_at_20_characters() -> None:
    names = {
        "kubeflow.org/v1": {"PyTorchJob": ("pytorchjob", "kubeflow.org")},
        "v1": {"Pod": ("pod", "")},
    }
    # "pytorchjob.kubeflow.org" is 23 characters: the first 20, then "..." (kueuectl's crdTypeMaxLength)
    assert job_type("kubeflow.org/v1", "PyTorchJob", names) == "pytorchjob.kubeflow...."
    assert job_type("v1", "Pod", names) == "pod"
    assert job_type("example.com/v1", "Thing", names) is None


def test_queue_and_flavor_rows() -> None:
    assert local_queue_row(LOCAL_QUEUE, now=NOW) == ["team-a-gpu", "research", "2", "2", "30h"]
    assert cluster_queue_row(CLUSTER_QUEUE, now=NOW) == ["research", "", "2", "2", "true", "3d4h"]
    inactive = {**CLUSTER_QUEUE, "status": {}}
    assert cluster_queue_row(inactive, now=NOW)[2:5] == ["0", "0", "false"]
    assert resource_flavor_row(FLAVOR, now=NOW) == [
        "gpu-nodes",
        "nvidia.com/gpu.present=true, zone=a",
        "5m7s",
    ]
