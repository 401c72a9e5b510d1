"""MultiKueue's objects read as data: where a ``MultiKueueCluster``'s kubeconfig lives, which clusters a
``MultiKueueConfig`` lists, which config an AdmissionCheck points at, whether a kubeconfig is safe to use,
and the ``Active`` conditions that follow from all of it.

Kept pure (no I/O) so the rules a user sees in ``kubectl get mkc,ac`` can be tested as tables and the
controller (``kueue_webhook.control.multikueue``) only fetches and connects. The rules are Kueue's
(``pkg/controller/admissionchecks/multikueue``: ``loadClientConfig``, ``validateKubeconfig``,
``ACReconciler.Reconcile``; ``pkg/util/admissioncheck``'s ``refValidForGK``): the same reasons, so
alerts and scripts written for Kueue keep working.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER
from kueue_webhook.api.objects.cel import cel_failure
from kueue_webhook.api.objects.common import (
    GROUP,
    Meta,
    NamedByMeta,
    Parsed,
    enum_value,
    finish,
    list_field,
    object_field,
    optional_object,
    parse_meta,
    parse_spec,
)

JSON = dict[str, Any]

#: the Secret key holding a worker's kubeconfig
KUBECONFIG_KEY = "kubeconfig"
#: where ``locationType: Path`` kubeconfigs must be (Kueue's MultiKueueKubeConfigPathValidation, default on)
KUBECONFIG_PATH_PREFIX = "/etc/multikueue/kubeconfigs"
#: a kubeconfig larger than this is refused unread (a Secret holds up to 1 MiB; kubeconfigs are a few KiB)
MAX_KUBECONFIG_BYTES = 256 * 1024
SECRET = "Secret"
PATH = "Path"

# -- MultiKueueCluster's Active reasons (Kueue's multikueuecluster.go) -------------------------------------
ACTIVE = "Active"
BAD_KUBECONFIG = "BadKubeConfig"
INSECURE_KUBECONFIG = "InsecureKubeConfig"
CONNECTION_FAILED = "ClientConnectionFailed"
CLUSTER_PROFILE_UNSUPPORTED = "MultiKueueClusterProfileFeatureDisabled"
#: the prefix Kueue gives every failure to read or accept a kubeconfig
LOAD_FAILED = "load client config failed"


@dataclass(frozen=True, slots=True)
class KubeConfigSource:
    """``spec.clusterSource.kubeConfig``: a Secret in the controller's namespace, or a file."""

    location: str
    location_type: str = SECRET


@dataclass(frozen=True, slots=True)
class Inactive:
    """Why a cluster cannot be connected before any connection is tried: Kueue's reason and a message."""

    reason: str
    message: str


def cluster_source(cluster: JSON) -> KubeConfigSource | Inactive:
    """Where ``cluster`` (a MultiKueueCluster, v1beta2) says its kubeconfig is."""
    source = ((cluster.get("spec") or {}).get("clusterSource")) or {}
    kube = source.get("kubeConfig")
    if isinstance(kube, dict) and kube.get("location"):
        return KubeConfigSource(str(kube["location"]), str(kube.get("locationType") or SECRET))
    if source.get("clusterProfileRef"):
        return Inactive(
            CLUSTER_PROFILE_UNSUPPORTED,
            f"{LOAD_FAILED}: ClusterProfile sources are not supported; use a kubeConfig in a Secret",
        )
    return Inactive(BAD_KUBECONFIG, f"{LOAD_FAILED}: spec.clusterSource names no kubeConfig")


def config_clusters(config: JSON | None) -> tuple[str, ...]:
    """``spec.clusters`` of a MultiKueueConfig, in order (the dispatcher's order of preference)."""
    clusters = ((config or {}).get("spec") or {}).get("clusters") or []
    return tuple(str(name) for name in clusters if isinstance(name, str) and name)


def is_multikueue_check(check: JSON | None) -> bool:
    return ((check or {}).get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER


def parameters_config(check: JSON) -> tuple[str | None, str]:
    """The MultiKueueConfig an AdmissionCheck's ``spec.parameters`` names, or (None, why it names none)
    in the words of Kueue's ``refValidForGK``."""
    ref = (check.get("spec") or {}).get("parameters")
    if not isinstance(ref, dict):
        return None, "missing parameters reference"
    if not ref.get("name"):
        return None, "empty name: bad parameters reference"
    if ref.get("apiGroup") != GROUP:
        return None, f'wrong group "{ref.get("apiGroup", "")}", expecting "{GROUP}": bad parameters reference'
    if ref.get("kind") != "MultiKueueConfig":
        return (
            None,
            f'wrong kind "{ref.get("kind", "")}", expecting "MultiKueueConfig": bad parameters reference',
        )
    return str(ref["name"]), ""


def check_active(
    *,
    config_name: str | None,
    config_problem: str,
    config: JSON | None,
    cluster_active: Mapping[str, bool | None],
) -> tuple[str, str, str]:
    """(status, reason, message) of a MultiKueue AdmissionCheck's ``Active`` condition, as Kueue's
    ``ACReconciler`` derives it: ``BadConfig`` when the parameters name no usable config, else
    ``NoUsableClusters`` when every listed cluster is missing or inactive, ``SomeActiveClusters`` (still
    True) when some are, ``Active`` when all are. ``cluster_active``: True/False per existing cluster,
    None (or absent) for one that does not exist."""
    if config_name is None or config is None:
        problem = config_problem or f'multikueueconfigs.kueue.x-k8s.io "{config_name}" not found'
        return "False", "BadConfig", f"Cannot load the AdmissionChecks parameters: {problem}"
    listed = config_clusters(config)
    missing = [name for name in listed if cluster_active.get(name) is None]
    inactive = [name for name in listed if cluster_active.get(name) is False]
    if not missing and not inactive:
        return "True", "Active", "The admission check is active"
    parts = []
    if missing:
        parts.append(f"Missing clusters: {_go_list(missing)}")
    if inactive:
        parts.append(f"Inactive clusters: {_go_list(inactive)}")
    if len(missing) + len(inactive) < len(listed):
        return "True", "SomeActiveClusters", ", ".join(parts)
    return "False", "NoUsableClusters", ", ".join(parts)


def _go_list(names: Sequence[str]) -> str:
    """A list as Go's ``%v`` prints a slice of strings (``[a b]``), as Kueue's messages show it."""
    return "[" + " ".join(names) + "]"


# -- kubeconfig safety (Kueue's validateKubeconfig / validateRestConfig) ------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _valid_host(server: str) -> bool:
    """The server's host is an IP address or a DNS-1123 subdomain (Kueue's ``isValidHostname``)."""
    try:
        host = urlsplit(server.lower()).hostname or ""
    except ValueError:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    return 0 < len(host) <= 253 and all(_DNS_LABEL.match(label) for label in host.split("."))


def kubeconfig_problem(
    *, clusters: Mapping[str, JSON], users: Mapping[str, JSON], selected_cluster: JSON, selected_user: JSON
) -> str | None:
    """What makes a worker kubeconfig unsafe for a controller that reads it from a Secret any namespace
    admin may write: files on the controller's disk, programs run by the controller, credentials that are
    not a bearer token or a client certificate, TLS checks turned off. None when it is acceptable."""
    for name, user in users.items():
        if user.get("tokenFile"):
            return f"tokenFile is not allowed (user {name})"
        for key in ("client-certificate", "client-key"):  # beyond Kueue: no file of the controller's either
            if user.get(key) and not user.get(f"{key}-data"):
                return f"{key} file paths are not allowed, use {key}-data for user {name}"
    for name, cluster in clusters.items():
        if cluster.get("insecure-skip-tls-verify"):
            return f"insecure TLS verification is not allowed for cluster {name}"
        if cluster.get("certificate-authority") and not cluster.get("certificate-authority-data"):
            return (
                "certificate-authority file paths are not allowed, "
                f"use certificate-authority-data for cluster {name}"
            )
        if not cluster.get("server"):
            return f"server URL is required for cluster {name}"
    if not _valid_host(str(selected_cluster.get("server", ""))):
        return "untrusted server endpoint"
    if selected_user.get("username") or selected_user.get("password"):
        return "basic auth is not allowed"
    if selected_user.get("exec"):
        return "exec plugins are not allowed"
    if selected_user.get("auth-provider"):
        return "auth providers are not allowed"
    return None


# -- the kinds' validation (Kueue's CRD schema and CEL rules; Kueue has no webhook for them) ---------------

MAX_CLUSTERS = 20
MAX_LOCATION = 256


@dataclass(frozen=True, slots=True)
class MultiKueueCluster(NamedByMeta):
    """A worker cluster: its kubeconfig source (None for a ClusterProfile reference, unsupported here)."""

    meta: Meta
    kubeconfig: KubeConfigSource | None


@dataclass(frozen=True, slots=True)
class MultiKueueConfig(NamedByMeta):
    """The worker clusters an AdmissionCheck dispatches to, most preferred first."""

    meta: Meta
    clusters: tuple[str, ...]


def parse_multikueue_cluster(obj: Mapping[str, Any]) -> Parsed[MultiKueueCluster]:
    """Kueue's v1beta2 schema: ``spec.clusterSource`` required, exactly one of ``kubeConfig`` and
    ``clusterProfileRef``, ``location`` 1-256 characters, ``locationType`` Secret (default) or Path."""
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors, required=True)
    source = spec.get("clusterSource")
    kube: KubeConfigSource | None = None
    if source is None:
        errors.append(FieldError.required("spec.clusterSource"))
        return finish(MultiKueueCluster(meta, None), errors)
    section = object_field(source, "spec.clusterSource", errors)
    if section is None:
        return finish(MultiKueueCluster(meta, None), errors)
    if sum(section.get(key) is not None for key in ("kubeConfig", "clusterProfileRef")) != 1:
        errors.append(
            cel_failure(
                "spec.clusterSource",
                "object",
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            )
        )
    config = optional_object(section.get("kubeConfig"), "spec.clusterSource.kubeConfig", errors)
    if config is not None:
        location = _bounded_string(
            config.get("location"), "spec.clusterSource.kubeConfig.location", MAX_LOCATION, errors
        )
        kind = enum_value(
            config.get("locationType"),
            "spec.clusterSource.kubeConfig.locationType",
            (SECRET, PATH),
            SECRET,
            errors,
        )
        kube = KubeConfigSource(location, kind)
    profile = optional_object(
        section.get("clusterProfileRef"), "spec.clusterSource.clusterProfileRef", errors
    )
    if profile is not None:
        _bounded_string(
            profile.get("name"), "spec.clusterSource.clusterProfileRef.name", MAX_LOCATION, errors
        )
    return finish(MultiKueueCluster(meta, kube), errors)


def parse_multikueue_config(obj: Mapping[str, Any]) -> Parsed[MultiKueueConfig]:
    """Kueue's v1beta2 schema: ``spec.clusters`` 1-20 names of at most 256 characters, each once;
    ``quotaManagement`` Manual or Automated."""
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors, required=True)
    raw = spec.get("clusters")
    names: list[str] = []
    if raw is None or raw == []:
        errors.append(FieldError.required("spec.clusters"))
    else:
        items = list_field(raw, "spec.clusters", errors)
        if len(items) > MAX_CLUSTERS:
            errors.append(FieldError.too_many("spec.clusters", len(items), MAX_CLUSTERS))
        for index, item in enumerate(items):
            names.append(_bounded_string(item, f"spec.clusters[{index}]", MAX_LOCATION, errors))
        if len(set(names)) != len(names):
            errors.append(cel_failure("spec.clusters", "array", "must be unique"))
    if spec.get("quotaManagement") is not None:
        enum_value(spec["quotaManagement"], "spec.quotaManagement", ("Manual", "Automated"), "Manual", errors)
    return finish(MultiKueueConfig(meta, tuple(names)), errors)


def _bounded_string(raw: Any, path: str, limit: int, errors: list[FieldError]) -> str:
    if raw is None or raw == "":
        errors.append(FieldError.required(path))
        return ""
    if not isinstance(raw, str):
        errors.append(FieldError.invalid(path, str(raw), "must be a string"))
        return ""
    if len(raw) > limit:
        errors.append(FieldError.too_long(path, limit))
    return raw
