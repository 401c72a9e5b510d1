"""``-o json|yaml|name`` as kubectl prints objects, and colour only where a person reads it.

JSON is indented by 4 spaces (kubectl's printer); YAML has sorted keys and block style (sigs.k8s.io/yaml);
``name`` and the default message of a write are cli-runtime's NamePrinter: ``<kind>.<group>/<name>`` and
the operation (``created``, ``stopped``, ``(server dry run)``). Colour follows the no-color.org convention:
only on a terminal, never when ``NO_COLOR`` is set to anything non-empty.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

import yaml

__all__ = ["colour_enabled", "dump", "name_line", "paint"]

_COLOURS = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def dump(obj: Any, output: str) -> str:
    """``obj`` as ``json`` or ``yaml`` text, ending in a newline."""
    if output == "json":
        return json.dumps(obj, indent=4, ensure_ascii=False) + "\n"
    text: str = yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return text


def name_line(obj: Mapping[str, Any], operation: str = "", dry_run: str = "none") -> str:
    """NamePrinter: ``workload.kueue.x-k8s.io/wl stopped``; ``-o name`` passes no operation."""
    kind = str(obj.get("kind", "")).lower()
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    name = str((obj.get("metadata") or {}).get("name", ""))
    if dry_run in ("client", "server"):
        operation = f"{operation} ({dry_run} dry run)"
    suffix = f" {operation}" if operation else ""
    return f"{kind}.{group}/{name}{suffix}" if group else f"{kind}/{name}{suffix}"


def colour_enabled(stream: TextIO, environ: Mapping[str, str]) -> bool:
    if environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, colour: str, enabled: bool) -> str:
    return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if enabled and text else text
