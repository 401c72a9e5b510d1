"""Which URL path runs which admission rule: the one table the HTTP server consults.

Paths are Kueue's (``/mutate-batch-v1-job``, ``/validate-kueue-x-k8s-io-v1beta2-clusterqueue``...), so
webhook configurations written for Kueue work unchanged. Two catch-all paths, ``/mutate`` and
``/validate``, dispatch on the request's kind: one webhook entry can then cover every resource, which is
how the golden captures were taken and what a hand-written configuration is most likely to use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kueue_webhook.admission.integrations import mutate_object, validate_object
from kueue_webhook.admission.jobs import mutate_job, validate_job
from kueue_webhook.admission.kueue import KUEUE_KINDS, validate_kueue_object
from kueue_webhook.admission.review import AdmissionRequest, Verdict
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations import BUILTIN
from kueue_webhook.api.objects import GROUP

__all__ = ["ROUTES", "Handler"]


class Handler(Protocol):
    def __call__(self, request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict: ...


def _pinned(kind: str) -> Handler:
    def handler(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
        return validate_kueue_object(request, config=config, view=view, kind=kind)

    return handler


def _no_defaults(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's defaulting paths for its own kinds, answered without a patch.

    Kueue's defaulters add the ``resource-in-use`` finalizer (ClusterQueue, ResourceFlavor) and drop
    ``minCount`` when partial admission is off (Workload). Nothing here removes that finalizer and partial
    admission is on, so the faithful answer is "no change"; the paths exist so that a webhook configuration
    written for Kueue keeps working instead of failing closed on a 404.
    """
    del config, view
    if request.kind.group != GROUP or request.kind.kind not in KUEUE_KINDS:
        return Verdict.unprocessable(f"this endpoint defaults {GROUP} objects, got {request.kind}")
    return Verdict.allow()


def _is_job(request: AdmissionRequest) -> bool:
    return (request.kind.group, request.kind.kind) == ("batch", "Job")


def mutate_any(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Jobs and the other queued kinds are defaulted; nothing else is changed (Kueue's finalizer defaulting
    is the controller's job)."""
    if _is_job(request):
        return mutate_job(request, config=config, view=view)
    return mutate_object(request, config=config, view=view)


def validate_any(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    if _is_job(request):
        return validate_job(request, config=config, view=view)
    if request.kind.group == GROUP and request.kind.kind in KUEUE_KINDS:
        return validate_kueue_object(request, config=config, view=view)
    if config.integrations.for_kind(request.kind.group, request.kind.kind) is not None:
        return validate_object(request, config=config, view=view)
    if any((i.group, i.kind) == (request.kind.group, request.kind.kind) for i in BUILTIN.values()):
        return Verdict.allow()  # a kind we could queue, whose integration is off: left alone
    return Verdict.unprocessable(
        f"no admission rules for {request.kind}; check the webhook configuration's rules"
    )


def _kueue_path(verb: str, group: str, version: str, kind: str) -> str:
    """Kueue's webhook path for a kind: ``/mutate-kubeflow-org-v1-pytorchjob``."""
    return f"/{verb}-{group.replace('.', '-')}-{version}-{kind.lower()}"


ROUTES: Mapping[str, Handler] = {
    "/mutate": mutate_any,
    "/validate": validate_any,
    "/mutate-batch-v1-job": mutate_job,
    "/validate-batch-v1-job": validate_job,
    **{
        _kueue_path(verb, i.group, i.version, i.kind): handler
        for i in BUILTIN.values()
        if i.group != "batch"
        for verb, handler in (("mutate", mutate_object), ("validate", validate_object))
    },
    **{f"/validate-kueue-x-k8s-io-v1beta2-{kind.lower()}": _pinned(kind) for kind in KUEUE_KINDS},
    **{
        f"/mutate-kueue-x-k8s-io-v1beta2-{kind}": _no_defaults
        for kind in ("clusterqueue", "resourceflavor", "workload")
    },
}
