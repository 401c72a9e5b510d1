"""A Workload's topology assignment (``status.admission.podSetAssignments[].topologyAssignment``) read and
written in Kueue's v1beta2 encoding.

An assignment says, for one pod set, which topology domains (one value per level, e.g. rack and host) take
how many of its pods. v1beta2 stores the domains compressed as ``slices``: per slice, ``domainCount``
domains; per level a value that is the same for all of them (``universal``) or one per domain
(``individual``: ``prefix + roots[i] + suffix``); the pod counts likewise ``universal`` or ``individual``
(Kueue's apis/kueue/v1beta2 workload_types.go, decoded as its pkg/util/tas does). The conversion webhook
(v1beta1 ``domains``), the scheduler that writes assignments and the controller that ungates pods onto
their domains all read and write through this module, so there is one decoder and one encoder.

:func:`decode` checks the shape the Workload CRD requires before expanding anything (a 600-byte slice may
claim a million domains); :func:`checked_slices` is that check alone, for callers that measure or write the
expansion themselves. :func:`encode` writes Kueue's single-slice form (shared prefixes and suffixes taken
out of each level's values); Kueue may also split an assignment into several slices by hostname prefix,
which :func:`decode` reads to the same domains. :func:`encode_rows` is the plainer form the conversion
webhook writes for v1beta1 domains whose values it passes on as they are. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson

from kueue_webhook.api.bounds import shown
from kueue_webhook.api.topology_text import Slice

__all__ = [
    "MAX_DOMAINS",
    "MAX_LEVELS",
    "MAX_SLICES",
    "Domain",
    "TooManyDomains",
    "TopologyAssignmentError",
    "all_of_type",
    "checked_slices",
    "decode",
    "domain_objects",
    "encode",
    "encode_rows",
]

Obj = dict[str, Any]

#: domains one topology assignment may hold: Kueue's MaxItems on a slice's ``roots`` and
#: ``podCounts.individual``, the most domains v1beta2 can name one by one (more than any cluster has nodes)
MAX_DOMAINS = 100_000
#: Kueue's MaxItems on ``levels`` and on ``slices`` (workload_types.go)
MAX_LEVELS = 16
MAX_SLICES = 1000

_WHERE = "topologyAssignment"


class TopologyAssignmentError(ValueError):
    """The assignment is not shaped as the Workload CRD requires; the message names the field."""


class TooManyDomains(TopologyAssignmentError):
    """The slices add up to more than :data:`MAX_DOMAINS` domains."""


@dataclass(frozen=True, slots=True)
class Domain:
    """One topology domain of an assignment: its value at each level (outermost first) and its pods."""

    values: tuple[str, ...]
    count: int


def decode(topology: Any, where: str = _WHERE) -> list[Domain]:
    """The domains of a v1beta2 topology assignment, in the order the slices list them.

    Raises :class:`TopologyAssignmentError` (naming ``where`` and the field) unless the assignment is shaped
    as the Workload CRD requires.
    """
    if not isinstance(topology, dict):
        raise TopologyAssignmentError(f"{where} must be an object")
    domains: list[Domain] = []
    for count, per_level, pods in checked_slices(topology, where):
        columns = [_column(level, count) for level in per_level]
        counts = pods.get("individual") or [pods["universal"]] * count
        rows = zip(*columns, strict=True) if columns else ((),) * count
        domains.extend(map(Domain, map(tuple, rows), counts))
    return domains


def domain_objects(piece: Slice) -> list[Obj]:
    """The domains of one checked slice as v1beta1 ``{"values": [...], "count": n}`` objects."""
    count, per_level, pods = piece
    counts = pods.get("individual")
    universal_count = pods.get("universal")
    columns = [_column(level, count) for level in per_level]
    return [
        {"values": [column[i] for column in columns], "count": counts[i] if counts else universal_count}
        for i in range(count)
    ]


def _column(level: Obj, count: int) -> list[str]:
    if level.get("universal") is not None:
        return [level["universal"]] * count
    individual = level["individual"]
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in individual["roots"]]


def checked_slices(topology: Obj, where: str = _WHERE) -> list[Slice]:
    """The slices of a v1beta2 topology assignment, refused unless shaped as the Workload CRD requires:
    ``levels`` strings, at most :data:`MAX_LEVELS`; at most :data:`MAX_SLICES` slices adding up to at most
    :data:`MAX_DOMAINS` domains; per slice one value source per level and one pod-count source, individual
    lists exactly ``domainCount`` long. Each check runs in C-speed passes over the lists."""
    levels = topology.get("levels")
    if not isinstance(levels, list) or not all_of_type(levels, str):
        raise TopologyAssignmentError(f"{where}.levels must be a list of strings")
    if len(levels) > MAX_LEVELS:
        raise TopologyAssignmentError(f"{where}.levels: must have at most {MAX_LEVELS} items")
    raw = topology.get("slices")
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_SLICES:
        raise TopologyAssignmentError(f"{where}.slices must be a list of at most {MAX_SLICES} slices")
    checked: list[Slice] = []
    total = 0
    for index, piece in enumerate(raw):
        at = f"{where}.slices[{index}]"
        if not isinstance(piece, dict):
            raise TopologyAssignmentError(f"{at} must be an object")
        count = piece.get("domainCount")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_DOMAINS:
            raise TopologyAssignmentError(
                f"{at}.domainCount: must be a whole number from 1 to {MAX_DOMAINS}, got {shown(count)}"
            )
        total += count
        if total > MAX_DOMAINS:
            raise TooManyDomains(
                f"{where}: the slices add up to more than {MAX_DOMAINS} domains, more than Kueue lists for "
                "one pod set"
            )
        per_level = piece.get("valuesPerLevel")
        if not isinstance(per_level, list) or len(per_level) != len(levels):
            raise TopologyAssignmentError(
                f"{at}.valuesPerLevel must have the same length as the number of levels ({len(levels)})"
            )
        for level_index, level in enumerate(per_level):
            _check_level(f"{at}.valuesPerLevel[{level_index}]", level, count)
        pods = piece.get("podCounts")
        if not isinstance(pods, dict) or _one_of(pods) is None:
            raise TopologyAssignmentError(
                f"{at}.podCounts: exactly one of universal and individual must be set"
            )
        if pods.get("universal") is not None and type(pods["universal"]) is not int:
            raise TopologyAssignmentError(f"{at}.podCounts.universal must be a whole number")
        if pods.get("individual") is not None and not _int_list(pods["individual"], count):
            raise TopologyAssignmentError(
                f"{at}.podCounts.individual must be a list of whole numbers of length equal to domainCount"
            )
        checked.append((count, per_level, pods))
    return checked


def _check_level(at: str, level: Any, count: int) -> None:
    if not isinstance(level, dict) or _one_of(level) is None:
        raise TopologyAssignmentError(
            f"{at}: exactly one of the fields in [universal individual] must be set"
        )
    if level.get("universal") is not None:
        if not isinstance(level["universal"], str):
            raise TopologyAssignmentError(f"{at}.universal must be a string")
        return
    individual = level["individual"]
    if not isinstance(individual, dict):
        raise TopologyAssignmentError(f"{at}.individual must be an object")
    for affix in ("prefix", "suffix"):
        if individual.get(affix) is not None and not isinstance(individual[affix], str):
            raise TopologyAssignmentError(f"{at}.individual.{affix} must be a string")
    roots = individual.get("roots")
    if not isinstance(roots, list) or len(roots) != count or not all_of_type(roots, str):
        raise TopologyAssignmentError(
            f"{at}.individual.roots must be a list of strings of length equal to domainCount ({count})"
        )


def _one_of(values: Obj) -> str | None:
    """The one of ``universal`` / ``individual`` that is set (not null), None unless exactly one is."""
    present = [key for key in ("universal", "individual") if values.get(key) is not None]
    return present[0] if len(present) == 1 else None


def all_of_type(values: list[Any], kind: type) -> bool:
    """Whether every value is exactly of type ``kind`` (a bool is no int), in one C-speed pass."""
    return set(map(type, values)) <= {kind}


def _int_list(values: Any, length: int) -> bool:
    return isinstance(values, list) and len(values) == length and all_of_type(values, int)


def encode(levels: Sequence[str], domains: Sequence[Domain]) -> Obj:
    """The v1beta2 ``topologyAssignment`` of ``domains`` under ``levels``, as Kueue's single-slice encoding
    writes it (pkg/util/tas compactSliceEncoding): one slice; per level a value shared by every domain is
    ``universal``, else the roots left between the longest common prefix and suffix (the prefix shortened
    when the two would overlap); the pod counts ``universal`` when all equal. No ``slices`` when there are
    no domains."""
    rows = [domain.values for domain in domains]
    return _encoded(levels, rows, [domain.count for domain in domains], _compact_level)


def encode_rows(levels: Sequence[str], rows: Sequence[Sequence[Any]], counts: Sequence[Any]) -> Obj:
    """The v1beta2 ``topologyAssignment`` of domains given as their values (``rows``, each at least one value
    per level, of any JSON type) and pod counts, in C-speed passes: one slice, a level or the counts
    ``universal`` when the same for every domain, else listed whole as ``roots`` (no prefix or suffix)."""
    return _encoded(levels, rows, counts, _plain_level)


def _encoded(
    levels: Sequence[str],
    rows: Sequence[Sequence[Any]],
    counts: Sequence[Any],
    level_values: Callable[[list[Any]], Obj],
) -> Obj:
    topology: Obj = {"levels": list(levels)}
    if not rows:
        return topology
    per_level = [level_values(list(map(itemgetter(level), rows))) for level in range(len(levels))]
    pod_counts = {"universal": counts[0]} if _all_equal(list(counts)) else {"individual": list(counts)}
    topology["slices"] = [{"domainCount": len(rows), "valuesPerLevel": per_level, "podCounts": pod_counts}]
    return topology


def _plain_level(values: list[Any]) -> Obj:
    return {"universal": values[0]} if _all_equal(values) else {"individual": {"roots": values}}


def _compact_level(values: list[str]) -> Obj:
    if _all_equal(values):
        return {"universal": values[0]}
    prefix = _common_prefix(values)
    suffix = _common_prefix([value[::-1] for value in values])[::-1]
    shortest = min(map(len, values))
    if len(prefix) + len(suffix) > shortest:
        prefix = prefix[: shortest - len(suffix)]
    individual: Obj = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    end = len(suffix)
    individual["roots"] = [value[len(prefix) : len(value) - end] for value in values]
    return {"individual": individual}


def _common_prefix(values: list[str]) -> str:
    """The longest string every value starts with (the lowest and highest value share it with all)."""
    low, high = min(values), max(values)
    length = 0
    while length < len(low) and low[length] == high[length]:
        length += 1
    return low[:length]


def _all_equal(values: list[Any]) -> bool:
    """Whether every value of a non-empty list is the same (as JSON: objects compared by their text)."""
    try:
        return len(set(values)) == 1
    except TypeError:  # not hashable: a list or object where a string or number belongs
        return len(set(map(_hashable, values))) == 1


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | None) else orjson.dumps(value)
