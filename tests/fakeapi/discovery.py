"""Discovery documents, legacy and aggregated, computed from the registry.

kubectl v1.32 first asks `/api` and `/apis` for the aggregated form (`as=APIGroupDiscoveryList`) and only
falls back to per-group-version documents when the server does not offer it; we serve both shapes as v1.36
does (see golden `discovery-*.json`), including its quirk of leaving `responseKind.group/version` empty for
built-in kinds. CRD groups list versions in the CRD's order, so the first is the preferred one.
"""

from __future__ import annotations

from typing import Any

from tests.fakeapi.resources import Registry, ResourceType

VERSION_INFO = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.2",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.27.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _legacy_resource(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    if rtype.stored:
        main["storageVersionHash"] = rtype.storage_version_hash
    out = [main]
    for sub, verbs in rtype.subresources():
        out.append(
            {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": list(verbs),
            }
        )
    return out


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rtype in sorted(types, key=lambda t: t.plural):
        resources.extend(_legacy_resource(rtype))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.groups().get(group)
    if not versions:
        return None
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [api_group(registry, g) for g in registry.groups() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g]}


def _aggregated_resource(rtype: ResourceType) -> dict[str, Any]:
    response_kind = (
        {"group": "", "version": "", "kind": rtype.kind}
        if rtype.builtin
        else {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
    )
    entry: dict[str, Any] = {
        "resource": rtype.plural,
        "responseKind": response_kind,
        "scope": "Namespaced" if rtype.namespaced else "Cluster",
        "singularResource": rtype.singular,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    subs = rtype.subresources()
    if subs:
        entry["subresources"] = [
            {"subresource": sub, "responseKind": response_kind, "verbs": list(verbs)} for sub, verbs in subs
        ]
    return entry


def _aggregated_group(registry: Registry, group: str, versions: list[str]) -> dict[str, Any]:
    out_versions = []
    for version in versions:
        types = sorted(registry.in_group_version(group, version), key=lambda t: t.plural)
        out_versions.append(
            {
                "version": version,
                "resources": [_aggregated_resource(t) for t in types],
                "freshness": "Current",
            }
        )
    metadata: dict[str, Any] = {"name": group} if group else {}
    return {"metadata": metadata, "versions": out_versions}


def aggregated(registry: Registry, *, legacy: bool) -> dict[str, Any]:
    """`/api` (legacy=True, the core group) or `/apis` (every named group) as an APIGroupDiscoveryList."""
    groups = registry.groups()
    items = (
        [_aggregated_group(registry, "", groups.get("", ["v1"]))]
        if legacy
        else [_aggregated_group(registry, g, v) for g, v in groups.items() if g]
    )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str) -> bool:
    return "v=v2;as=APIGroupDiscoveryList" in accept
