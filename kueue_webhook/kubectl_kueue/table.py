"""Tables as kubectl prints them, so ``kubectl kueue list`` output reads (and parses) like ``kubectl get``.

kubectl's table printer writes upper-case headers and cells through Go's ``text/tabwriter`` with a minimum
cell width of 6, padding 3 and spaces (cli-runtime ``printers.GetNewTabWriter``): a column is as wide as its
widest cell plus 3, and the last column is not padded. Ages are apimachinery's ``HumanDuration``
(``45s``, ``5m12s``, ``60m``, ``3h``, ``2d4h``, ``400d``, ``2y30d``), which kueuectl's columns use too.
Pure: no clock is read here, the caller passes ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

__all__ = ["MIN_WIDTH", "PADDING", "age", "human_duration", "parse_time", "render_table"]

MIN_WIDTH = 6
PADDING = 3


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, show_headers: bool = True) -> str:
    """Rows aligned as kubectl aligns them; headers upper-cased; '' when there is nothing to print."""
    lines = ([[h.upper() for h in headers]] if show_headers else []) + [[str(c) for c in r] for r in rows]
    if not lines:
        return ""
    columns = max(len(line) for line in lines)
    widths = [
        max(MIN_WIDTH, max((len(line[i]) for line in lines if i < len(line)), default=0) + PADDING)
        for i in range(columns - 1)
    ]
    out = []
    for line in lines:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(line[:-1])]
        out.append("".join(cells) + (line[-1] if line else ""))
    return "\n".join(out) + "\n"


def human_duration(seconds: float) -> str:
    """apimachinery ``duration.HumanDuration``: coarser as durations grow; ``<invalid>`` in the future."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp of the API (``2026-11-26T17:00:00Z``), None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def age(timestamp: object, now: datetime) -> str:
    """The AGE cell of an object created at ``timestamp`` (``<unknown>`` as kubectl shows a missing one)."""
    moment = parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())
