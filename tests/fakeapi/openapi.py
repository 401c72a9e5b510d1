"""OpenAPI v3 documents, just enough for kubectl's apply/create/patch to take their normal path.

kubectl v1.32 reads `/openapi/v3` and the document of the group-version it writes to. From it, it learns
whether the server supports server-side field validation (a `fieldValidation` query parameter on the
operations of that kind); when it does, kubectl skips client-side schema validation and sends
`fieldValidation=Strict`. Each document therefore lists the collection and item paths of every served kind
with that parameter and `x-kubernetes-group-version-kind`, and carries the CRD's structural schema (built-in
kinds get an open object schema). Documents are addressed by a content hash, as the apiserver does, so
kubectl's on-disk cache is invalidated when a CRD changes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from tests.fakeapi.resources import Registry, ResourceType

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


def _schema_name(rtype: ResourceType) -> str:
    if rtype.group:
        reversed_group = ".".join(reversed(rtype.group.split(".")))
        return f"{reversed_group}.{rtype.version}.{rtype.kind}"
    return f"io.k8s.api.core.{rtype.version}.{rtype.kind}"


def _operation(rtype: ResourceType, action: str, ref: str) -> dict[str, Any]:
    params = [
        {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for p in _QUERY_PARAMS
    ]
    content = {"application/json": {"schema": {"$ref": ref}}}
    op: dict[str, Any] = {
        "operationId": f"{action}{rtype.kind}",
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": content}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rtype.group,
            "version": rtype.version,
            "kind": rtype.kind,
        },
    }
    if action in ("post", "put", "patch"):
        op["requestBody"] = {"content": content}
    return op


def _object_schema(rtype: ResourceType) -> dict[str, Any]:
    base: dict[str, Any] = dict(rtype.schema) if rtype.schema else {"type": "object"}
    if rtype.schema is None:
        base["x-kubernetes-preserve-unknown-fields"] = True
    properties = dict(base.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties.setdefault("metadata", {"type": "object"})
    base["properties"] = properties
    base["x-kubernetes-group-version-kind"] = [
        {"group": rtype.group, "kind": rtype.kind, "version": rtype.version}
    ]
    return base


def document_for(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in sorted(types, key=lambda t: t.plural):
        name = _schema_name(rtype)
        ref = f"#/components/schemas/{name}"
        schemas[name] = _object_schema(rtype)
        base = (
            f"{prefix}/namespaces/{{namespace}}/{rtype.plural}"
            if rtype.namespaced
            else f"{prefix}/{rtype.plural}"
        )
        paths[base] = {"get": _operation(rtype, "list", ref), "post": _operation(rtype, "post", ref)}
        paths[f"{base}/{{name}}"] = {
            action: _operation(rtype, action, ref) for action in ("get", "put", "patch", "delete")
        }
        if rtype.status_subresource:
            paths[f"{base}/{{name}}/status"] = {
                action: _operation(rtype, action, ref) for action in ("get", "put", "patch")
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


class OpenApi:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def _documents(self) -> dict[str, bytes]:
        docs: dict[str, bytes] = {}
        for group, versions in self.registry.groups().items():
            for version in versions:
                key = f"apis/{group}/{version}" if group else f"api/{version}"
                doc = document_for(self.registry, group, version)
                if doc is not None:
                    docs[key] = orjson.dumps(doc)
        return docs

    def index(self) -> dict[str, Any]:
        paths = {}
        for key, body in sorted(self._documents().items()):
            digest = hashlib.sha512(body).hexdigest().upper()
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
        return {"paths": paths}

    def document(self, path: str) -> bytes | None:
        return self._documents().get(path.strip("/"))
