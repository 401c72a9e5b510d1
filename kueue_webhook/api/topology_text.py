"""v1beta1 topology domains written straight as JSON text, and their size known before they are written.

Reading a v1beta2 Workload as v1beta1 expands each compressed topology slice into one
``{"values":[...],"count":N}`` object per domain: up to 100,000 for one pod set (Kueue's largest slice).
Built as dicts and then serialised, that costs about a microsecond a domain, a tenth of a second for
Kueue's largest assignment, which is the whole time a webhook answer may take. A slice is a few columns
(one per level that varies, plus the pod counts when they vary) between constant text, so the same JSON is
joined from the columns at C speed in a few milliseconds: :func:`domains_text`, which the conversion answer
embeds as it is (``orjson.Fragment``). :func:`domains_size` is the exact length of that text, computed
without building it, so a ConversionReview is measured against its budget before any domain is written.

The text is exactly what ``orjson.dumps`` writes for the dicts (the tests compare them). Slices come here
checked against the Workload CRD's rules (``kueue_webhook.api.conversion``): a value source per level, exactly
one of ``universal`` and ``individual``, lists as long as ``domainCount``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

import orjson

__all__ = ["domains_size", "domains_text"]

Obj = dict[str, Any]
Slice = tuple[int, Sequence[Obj], Obj]
"""(domainCount, valuesPerLevel, podCounts) of one checked slice"""

#: the characters JSON escapes in a string (orjson writes every other character as it is, in UTF-8)
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def _inner(value: str) -> str:
    """``value`` as inside a JSON string (escaped, without the quotes)."""
    return orjson.dumps(value).decode()[1:-1]


def _row(levels: Sequence[Obj], pods: Obj) -> tuple[list[str], list[list[Any]]]:
    """A domain's JSON as constant texts and columns between them: ``k0 c1[i] k1 c2[i] ... kN``; a column is
    the raw list (``roots`` strings, or pod counts) that varies from domain to domain."""
    constants = ['{"values":[']
    columns: list[list[Any]] = []
    for index, level in enumerate(levels):
        comma = "," if index else ""
        if level.get("universal") is not None:
            constants[-1] += comma + orjson.dumps(level["universal"]).decode()
            continue
        individual = level["individual"]
        constants[-1] += comma + '"' + _inner(individual.get("prefix") or "")
        columns.append(individual["roots"])
        constants.append(_inner(individual.get("suffix") or "") + '"')
    constants[-1] += '],"count":'
    if pods.get("individual") is not None:
        columns.append(pods["individual"])
        constants.append("}")
    else:
        constants[-1] += str(pods["universal"]) + "}"
    return constants, columns


def _texts(column: list[Any]) -> list[str]:
    """A column's values as they appear in the JSON text: counts as digits, strings escaped."""
    if type(column[0]) is int:
        return orjson.dumps(column).decode()[1:-1].split(",")
    if _ESCAPED.search("".join(column)) is None:
        return column
    return [_inner(value) for value in column]


def _slice_text(count: int, levels: Sequence[Obj], pods: Obj) -> str:
    """Every domain's ``k0 c1[i] k1 ... kN`` joined by commas: the constants laid out once per domain in one
    list, each column assigned into its places in it, and the list joined, all in C-speed passes."""
    constants, columns = _row(levels, pods)
    if not columns:
        return ",".join(repeat(constants[0], count))
    pattern: list[str] = []
    for constant in constants[1:-1]:
        pattern += ["", constant]
    pattern += ["", constants[-1] + "," + constants[0]]
    parts = pattern * count
    for index, column in enumerate(columns):
        parts[2 * index :: len(pattern)] = _texts(column)
    parts[-1] = constants[-1]
    return constants[0] + "".join(parts)


def _slice_size(count: int, levels: Sequence[Obj], pods: Obj) -> int:
    constants, columns = _row(levels, pods)
    size = count * sum(len(constant.encode()) for constant in constants) + count - 1
    for column in columns:
        # orjson writes the list as [v,v,...]: brackets and commas around the values, quotes around strings
        size += len(orjson.dumps(column)) - 2 - (count - 1)
        if column and type(column[0]) is str:
            size -= 2 * count
    return size


def domains_text(slices: Iterable[Slice]) -> str:
    """The v1beta1 ``domains`` list of a topology assignment made of ``slices``, as JSON text."""
    return "[" + ",".join(_slice_text(*piece) for piece in slices) + "]"


def domains_size(slices: Sequence[Slice]) -> int:
    """The length in bytes of :func:`domains_text` for ``slices``, computed in C-speed passes over the
    columns without building the text."""
    return 2 + sum(_slice_size(*piece) for piece in slices) + max(len(slices) - 1, 0)
