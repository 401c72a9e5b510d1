"""The resource types the fake serves: a handful of built-in kinds plus whatever CRDs are loaded.

A resource type is data, not a class per kind: discovery, routing, defaulting, validation, Tables and
admission all read the same `ResourceType`, so a CRD loaded from YAML and a built-in kind are served by the
same code path. Built-in kinds list exactly the discovery facts kube-apiserver v1.36 publishes for them
(verbs, short names, categories, subresources); kinds we do not serve (nodes, replicasets, ...) are left
out on purpose, so a client asking for them gets the same 404 an apiserver without that API would answer.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass
class ResourceType:
    """Everything the server needs to know to serve one group/version/resource."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status_subresource: bool = False
    extra_subresources: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # CRD-only: the structural schema of this version and its printer columns.
    schema: dict[str, Any] | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    builtin: bool = True
    served_versions: tuple[str, ...] = field(default_factory=tuple)
    #: CRD-only: the version marked ``storage: true``, in which objects are stored
    storage_version: str = ""
    #: False for the create-only reviews (SelfSubjectReview): answered, never stored, no storage version hash
    stored: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def storage_key(self) -> tuple[str, str]:
        """Objects are stored once per group/resource, whatever version they were written through."""
        return (self.group, self.plural)

    @property
    def storage_version_hash(self) -> str:
        digest = hashlib.sha256(f"{self.group}/{self.version}/{self.kind}".encode()).digest()
        return base64.b64encode(digest[:8]).decode()

    def subresources(self) -> list[tuple[str, tuple[str, ...]]]:
        subs = list(self.extra_subresources)
        if self.status_subresource:
            subs.append(("status", ("get", "patch", "update")))
        return sorted(subs)


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
    status: bool = False,
    extra: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        verbs=verbs,
        status_subresource=status,
        extra_subresources=extra,
    )


def builtin_types(*, self_subject_review: bool = True) -> list[ResourceType]:
    """The built-in kinds our controller, webhook and kubectl walk-throughs touch (v1.36 discovery facts).

    Without ``self_subject_review`` the server is one from before v1.28, which does not serve
    ``authentication.k8s.io/v1`` ``selfsubjectreviews`` (a POST there answers 404).
    """
    reviews = [
        # `kubectl auth whoami`, and the controller learning its own user name at start
        ResourceType(
            group="authentication.k8s.io",
            version="v1",
            plural="selfsubjectreviews",
            singular="selfsubjectreview",
            kind="SelfSubjectReview",
            namespaced=False,
            verbs=("create",),
            stored=False,
        )
    ]
    # an extension API server's delegated authentication and authorization (the visibility API, /metrics)
    delegation = [
        ResourceType(
            group=group,
            version="v1",
            plural=f"{kind.lower()}s",
            singular=kind.lower(),
            kind=kind,
            namespaced=False,
            verbs=("create",),
            stored=False,
        )
        for group, kind in (
            ("authentication.k8s.io", "TokenReview"),
            ("authorization.k8s.io", "SubjectAccessReview"),
        )
    ]
    return [
        _builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            namespaced=False,
            short=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            status=True,
            extra=(("finalize", ("update",)),),
        ),
        _builtin("", "v1", "configmaps", "ConfigMap", short=("cm",)),
        _builtin("", "v1", "events", "Event", short=("ev",)),
        _builtin("", "v1", "secrets", "Secret"),
        _builtin("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
        _builtin("", "v1", "services", "Service", short=("svc",), categories=("all",), status=True),
        # With kube-apiserver's scheduling-gate rules (tests/fakeapi/pods.py); no subresource but status.
        _builtin("", "v1", "pods", "Pod", short=("po",), categories=("all",), status=True),
        # Stored only: topology-aware scheduling reads their labels, allocatable, taints and readiness.
        _builtin("", "v1", "nodes", "Node", namespaced=False, short=("no",), status=True),
        _builtin("batch", "v1", "jobs", "Job", categories=("all",), status=True),
        # Stored only, so that `kubectl apply -k manifests/` works: no pods are created from them here.
        _builtin(
            "apps", "v1", "deployments", "Deployment", short=("deploy",), categories=("all",), status=True
        ),
        # Stored only: tests make a StatefulSet's pods as its controller would.
        _builtin(
            "apps", "v1", "statefulsets", "StatefulSet", short=("sts",), categories=("all",), status=True
        ),
        _builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), status=True),
        _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
        _builtin(
            "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
        ),
        _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
        _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
        # Stored only (no endpoints controller): tests write the slices a Service would have.
        _builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
        # Read by the controller as a Job's priority source (pod template priorityClassName).
        _builtin(
            "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False, short=("pc",)
        ),
        _builtin("events.k8s.io", "v1", "events", "Event", short=("ev",)),
        # Stored only: the controller reads a claim template's device requests (DRA)
        _builtin("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"),
        *(reviews if self_subject_review else []),
        *delegation,
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            namespaced=False,
            categories=("api-extensions",),
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            namespaced=False,
            categories=("api-extensions",),
        ),
        # Stored (so that `kubectl apply -k manifests/` works); one naming a Service is served by proxy to it
        # (tests/fakeapi/aggregator.py).
        _builtin(
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            "APIService",
            namespaced=False,
            categories=("api-extensions",),
            status=True,
        ),
        _builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            namespaced=False,
            short=("crd", "crds"),
            categories=("api-extensions",),
            status=True,
        ),
    ]


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of an apiextensions.k8s.io/v1 CustomResourceDefinition."""
    spec = crd["spec"]
    names = spec["names"]
    served = tuple(v["name"] for v in spec["versions"] if v.get("served", True))
    storage = next((v["name"] for v in spec["versions"] if v.get("storage")), "")
    result = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        columns = tuple(
            PrinterColumn(
                name=c["name"],
                type=c["type"],
                json_path=c["jsonPath"],
                description=c.get("description", ""),
                priority=int(c.get("priority", 0)),
                format=c.get("format", ""),
            )
            for c in version.get("additionalPrinterColumns", ())
        )
        result.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                singular=names.get("singular", names["kind"].lower()),
                kind=names["kind"],
                namespaced=spec["scope"] == "Namespaced",
                short_names=tuple(names.get("shortNames", ())),
                categories=tuple(names.get("categories", ())),
                verbs=CRD_VERBS,
                status_subresource="status" in (version.get("subresources") or {}),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=columns,
                builtin=False,
                served_versions=served,
                storage_version=storage,
            )
        )
    return result


class Registry:
    """Lookup of served resource types by group/version/plural and by group/kind."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._crds: dict[str, list[ResourceType]] = {}
        for rtype in types:
            self.add(rtype)

    def add(self, rtype: ResourceType) -> None:
        self._by_gvr[(rtype.group, rtype.version, rtype.plural)] = rtype

    def add_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        self.remove_crd(crd["metadata"]["name"])
        types = types_from_crd(crd)
        for rtype in types:
            self.add(rtype)
        self._crds[crd["metadata"]["name"]] = types
        return types

    def remove_crd(self, name: str) -> None:
        for rtype in self._crds.pop(name, []):
            self._by_gvr.pop((rtype.group, rtype.version, rtype.plural), None)

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name -> served versions, preferred (storage/first listed) first, in registration order."""
        out: dict[str, list[str]] = {}
        for rtype in self._by_gvr.values():
            versions = out.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        for group, versions in out.items():
            crd_order = next(
                (t.served_versions for t in self._by_gvr.values() if t.group == group and t.served_versions),
                (),
            )
            if crd_order:
                versions.sort(key=lambda v: crd_order.index(v) if v in crd_order else len(crd_order))
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._by_gvr.values() if t.group == group and t.version == version]
