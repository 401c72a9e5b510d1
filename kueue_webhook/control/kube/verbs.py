"""The API server's verbs as one Protocol each, so a component says which it uses and a test fakes no more.

``KubeClient`` speaks them all. The Writer, the leader elector and the Event recorder each take a client
typed by the verbs they call (``class LeaseClient(Gets, Creates, Replaces, Protocol)``), so a signature is
written here once however many components share the verb.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from kueue_webhook.control.kube.kinds import Kind

JSON = dict[str, Any]
PatchType = Literal["merge", "json", "strategic"]


class Gets(Protocol):
    async def get(self, kind: Kind, *, name: str, namespace: str | None = ...) -> JSON: ...


class Creates(Protocol):
    async def create(self, kind: Kind, body: JSON, *, namespace: str | None = ...) -> JSON: ...


class Replaces(Protocol):
    async def replace(self, kind: Kind, body: JSON, *, subresource: str = ...) -> JSON: ...


class Patches(Protocol):
    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = ...,
        patch_type: PatchType = ...,
        subresource: str = ...,
    ) -> JSON: ...


class Deletes(Protocol):
    async def delete(
        self, kind: Kind, *, name: str, namespace: str | None = ..., propagation: str | None = ...
    ) -> JSON: ...
