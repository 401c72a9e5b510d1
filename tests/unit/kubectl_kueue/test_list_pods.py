"""``kubectl kueue list pods --for TYPE/NAME``: the label each queued kind's pods carry (Kueue's
per-integration ``PodLabelSelector``), the API server's pod table as kubectl prints it, and kueuectl's usage
errors."""

from __future__ import annotations

import pytest

from kueue_webhook.control.kube.kinds import JOBS, Kind
from kueue_webhook.kubectl_kueue.arguments import UsageError, parse
from kueue_webhook.kubectl_kueue.pods import pod_selector, table_rows
from kueue_webhook.kubectl_kueue.table import render_table


def kind(group: str, name: str) -> Kind:
    return Kind(name, group, "v1", name.lower() + "s", namespaced=True)


@pytest.mark.parametrize(
    ("group", "name", "selector"),
    [
        ("batch", "Job", "batch.kubernetes.io/job-name=train"),
        ("jobset.x-k8s.io", "JobSet", "jobset.sigs.k8s.io/jobset-name=train"),
        ("trainer.kubeflow.org", "TrainJob", "jobset.sigs.k8s.io/jobset-name=train"),
        (
            "kubeflow.org",
            "PyTorchJob",
            "training.kubeflow.org/job-name=train,training.kubeflow.org/operator-name=pytorchjob-controller",
        ),
        (
            "kubeflow.org",
            "MPIJob",
            "training.kubeflow.org/job-name=train,training.kubeflow.org/operator-name=mpi-operator",
        ),
        ("ray.io", "RayCluster", "ray.io/cluster=train"),
        ("sparkoperator.k8s.io", "SparkApplication", "sparkoperator.k8s.io/app-name=train"),
        ("apps", "Deployment", ""),
    ],
)
def test_each_kind_lists_its_pods_by_kueues_label(group: str, name: str, selector: str) -> None:
    assert pod_selector(kind(group, name), {"metadata": {"name": "train"}}) == selector


def test_a_rayjob_names_its_cluster_once_it_has_one_and_a_pod_its_group() -> None:
    rayjob = kind("ray.io", "RayJob")
    assert pod_selector(rayjob, {"metadata": {"name": "r"}}) == ""  # unsupported until it has a cluster
    assert pod_selector(rayjob, {"metadata": {"name": "r"}, "status": {"rayClusterName": "r-x"}}) == (
        "ray.io/cluster=r-x"
    )
    pod = {"metadata": {"name": "p", "labels": {"kueue.x-k8s.io/pod-group-name": "g"}}}
    assert (
        pod_selector(Kind("Pod", "", "v1", "pods", namespaced=True), pod) == "kueue.x-k8s.io/pod-group-name=g"
    )
    assert pod_selector(JOBS, {"metadata": {"name": "j"}}) == "batch.kubernetes.io/job-name=j"


TABLE = {
    "kind": "Table",
    "columnDefinitions": [
        {"name": "Name", "priority": 0},
        {"name": "Ready", "priority": 0},
        {"name": "Status", "priority": 0},
        {"name": "IP", "priority": 1},
        {"name": "Nominated Node", "priority": 1},
    ],
    "rows": [
        {
            "cells": ["train-abc", "0/1", "Pending", None, "<none>"],
            "object": {"metadata": {"name": "train-abc", "namespace": "team-a"}},
        }
    ],
}


def test_the_table_is_the_servers_columns_as_kubectl_prints_them() -> None:
    headers, rows = table_rows(TABLE, wide=False, namespaces=False)
    assert render_table(headers, rows) == "NAME        READY   STATUS\ntrain-abc   0/1     Pending\n"
    headers, rows = table_rows(TABLE, wide=True, namespaces=True)
    assert headers == ["Namespace", "Name", "Ready", "Status", "IP", "Nominated Node"]
    assert rows == [["team-a", "train-abc", "0/1", "Pending", "<none>", "<none>"]]


def test_for_is_required_and_outputs_are_kueuectls() -> None:
    with pytest.raises(UsageError, match='required flag\\(s\\) "for" not set'):
        parse(["list", "pods"])
    args = parse(["list", "po", "--for", "job/train", "-o", "wide", "-A", "-l", "a=b"])
    assert (args.resource, args.for_object, args.output, args.all_namespaces, args.selector) == (
        "pods",
        "job/train",
        "wide",
        True,
        "a=b",
    )
    with pytest.raises(UsageError, match="allowed formats are: json,name,wide,yaml"):
        parse(["list", "pods", "--for", "job/train", "-o", "table"])
