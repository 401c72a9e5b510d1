"""A ResourceFlavor's taints and tolerations are checked when it is applied, not when a Job needs them.

The controller copies a flavor's tolerations into every Job it admits on that flavor. A toleration the
API server would refuse in a pod template (an operator other than ``Equal``/``Exists``, an unknown effect)
must therefore be refused when the ResourceFlavor is applied, as Kueue's CRD does: accepted, it would only
surface later, as a Job patch the API server rejects and a Job that never starts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.support.builders import resource_flavor


def flavor(
    *, tolerations: list[dict[str, Any]] | None = None, taints: list[dict[str, Any]] | None = None
) -> str:
    return json.dumps(
        resource_flavor("gpu", node_labels={"pool": "gpu"}, tolerations=tolerations, taints=taints)
    )


@pytest.mark.parametrize(
    ("field", "bad", "manifest"),
    [
        (
            "spec.tolerations[0].operator",
            "Equals",
            flavor(
                tolerations=[{"key": "gpu", "operator": "Equals", "value": "true", "effect": "NoSchedule"}]
            ),
        ),
        (
            "spec.tolerations[0].effect",
            "NoScheduling",
            flavor(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoScheduling"}]),
        ),
        (
            "spec.nodeTaints[0].effect",
            "Sometimes",
            flavor(taints=[{"key": "gpu", "value": "true", "effect": "Sometimes"}]),
        ),
    ],
)
async def test_a_flavor_with_an_invalid_toleration_or_taint_is_refused_by_the_api_server(
    kubectl: Callable[..., Any], field: str, bad: str, manifest: str
) -> None:
    refused = await asyncio.to_thread(kubectl, "apply", "-f", "-", input=manifest)
    assert refused.returncode != 0
    assert f'{field}: Unsupported value: "{bad}"' in refused.stderr


async def test_a_flavor_with_valid_tolerations_and_taints_is_accepted(
    kubectl: Callable[..., Any], fake_api: FakeApiServer
) -> None:
    manifest = flavor(
        tolerations=[
            {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Exists"},
            {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        ],
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
    )
    applied = await asyncio.to_thread(kubectl, "apply", "-f", "-", input=manifest)
    assert applied.returncode == 0, applied.stderr
    stored = fake_api.get("resourceflavors", "gpu")
    assert stored is not None and len(stored["spec"]["tolerations"]) == 3
