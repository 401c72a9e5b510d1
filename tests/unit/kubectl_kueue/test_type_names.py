"""A type on the command line is matched as kubectl's REST mapper matches it: plural, singular, short name or
kind, optionally with its group."""

from __future__ import annotations

from kueue_webhook.control.kube.kinds import JOBS
from kueue_webhook.kubectl_kueue.reads import match_type

DISCOVERED = [
    ("v1", {"name": "pods", "singularName": "pod", "kind": "Pod", "namespaced": True, "shortNames": ["po"]}),
    ("v1", {"name": "pods/status", "singularName": "", "kind": "Pod", "namespaced": True}),
    ("batch/v1", {"name": "jobs", "singularName": "job", "kind": "Job", "namespaced": True}),
    ("example.com/v1", {"name": "jobs", "singularName": "job", "kind": "Job", "namespaced": True}),
    (
        "kubeflow.org/v1",
        {"name": "pytorchjobs", "singularName": "pytorchjob", "kind": "PyTorchJob", "namespaced": True},
    ),
]


def test_names_short_names_and_kinds_with_an_optional_group() -> None:
    assert match_type("job", DISCOVERED) == JOBS
    assert match_type("Jobs", DISCOVERED) == JOBS
    assert match_type("jobs.example.com", DISCOVERED).group == "example.com"  # type: ignore[union-attr]
    assert match_type("po", DISCOVERED).plural == "pods"  # type: ignore[union-attr]
    found = match_type("PyTorchJob", DISCOVERED)
    assert found is not None and (found.group, found.version, found.plural) == (
        "kubeflow.org",
        "v1",
        "pytorchjobs",
    )
    assert match_type("status", DISCOVERED) is None  # a subresource is not a type
    assert match_type("jobs.other.io", DISCOVERED) is None
