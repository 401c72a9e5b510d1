"""In-memory stand-ins for the API verbs the control modules use, with resourceVersion preconditions, and a
``ControlContext`` made of such stand-ins."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.api_health import ApiHealth, WriteBudget
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.events import EventSink
from kueue_webhook.control.output.metrics import Metrics

JSON = dict[str, Any]


class MemoryApi:
    """get/create/replace with 404/409 semantics like kube-apiserver's; ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], JSON] = {}
        self.version = 0
        self.down = False
        self.created: list[JSON] = []

    def fenced(self, fence: Callable[[], float]) -> FencedApi:
        return FencedApi(self, fence)

    def with_own_connections(self, connections: int) -> MemoryApi:
        """No connections here to set apart: the Lease's requests go to the same objects."""
        return self

    async def close(self) -> None:
        pass

    def _check(self) -> None:
        if self.down:
            raise OSError("connection refused")

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        self._check()
        found = self.objects.get((kind.plural, namespace or "", name))
        if found is None:
            raise ApiError(status=404, reason="NotFound", message=f'{kind.plural} "{name}" not found')
        return copy.deepcopy(found)

    async def create(self, kind: Kind, body: JSON, *, namespace: str | None = None) -> JSON:
        self._check()
        key = (kind.plural, namespace or "", body["metadata"]["name"])
        if key in self.objects:
            raise ApiError(status=409, reason="AlreadyExists", message="already exists")
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[key] = stored
        self.created.append(stored)
        return copy.deepcopy(stored)

    async def replace(self, kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        self._check()
        meta = body["metadata"]
        key = (kind.plural, meta.get("namespace") or "", meta["name"])
        current = self.objects.get(key)
        if current is None:
            raise ApiError(status=404, reason="NotFound", message="not found")
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(status=409, reason="Conflict", message="the object has been modified")
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[key] = stored
        return copy.deepcopy(stored)


class FencedApi:
    """``api`` with each write sent only if ``fence()`` allows it then, as ``KubeClient.fenced`` does."""

    WRITES = frozenset({"create", "replace", "patch", "delete"})

    def __init__(self, api: Any, fence: Callable[[], float]) -> None:
        self.api = api
        self.fence = fence

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.api, name)
        if name not in self.WRITES:
            return attribute

        async def fenced(*args: Any, **kwargs: Any) -> Any:
            self.fence()
            return await attribute(*args, **kwargs)

        return fenced


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class NoEvents:
    """Events nobody reads."""

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        pass


def control_context(
    store: Store,
    *,
    writer: Any = None,
    events: EventSink | None = None,
    metrics: Metrics | None = None,
    configuration: Callable[[], Configuration] = Configuration,
    budget: WriteBudget | None = None,
) -> ControlContext:
    """The collaborators of a leading replica; ``writer`` is any stand-in with the verbs the test uses."""
    return ControlContext(
        store=store,
        writer=writer,
        events=events if events is not None else NoEvents(),
        metrics=metrics if metrics is not None else Metrics(),
        is_leader=lambda: True,
        configuration=configuration,
        budget=budget if budget is not None else ApiHealth(),
    )
