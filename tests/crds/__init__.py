"""The CRDs of the built-in integrations for tests: the upstream ones when copied into ``upstream/``, else
the hand-written structural stand-ins in ``minimal/`` (see README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
PLURALS = (
    "jobsets",
    "pytorchjobs",
    "tfjobs",
    "mpijobs",
    "xgboostjobs",
    "paddlejobs",
    "jaxjobs",
    "rayjobs",
    "rayclusters",
    "rayservices",
    "sparkapplications",
    "appwrappers",
    "leaderworkersets",
    "trainjobs",
    "trainingruntimes",
    "clustertrainingruntimes",
)


def crd_file(plural: str) -> Path:
    upstream = HERE / "upstream" / f"{plural}.yaml"
    return upstream if upstream.exists() else HERE / "minimal" / f"{plural}.yaml"


def uses_upstream(plural: str) -> bool:
    return crd_file(plural).parent.name == "upstream"


def integration_crds(*plurals: str) -> list[dict[str, Any]]:
    """The CRDs of ``plurals`` (every built-in integration's when none is named)."""
    return [yaml.safe_load(crd_file(plural).read_text()) for plural in plurals or PLURALS]
