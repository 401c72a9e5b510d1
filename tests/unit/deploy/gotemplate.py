"""Renders the Helm chart (charts/kueue-webhook) without a helm binary: the small part of Go's text/template
and Helm's functions the chart uses, strictly.

No helm binary installs here (Debian has none, PyPI's Helm bindings need Python >= 3.12), so the tests that
compare the chart with manifests/ render it with this instead; where ``helm`` is on PATH they run
``helm template`` and ``helm lint`` too. Anything outside the subset (an unknown function, an action it does
not know, a missing value) raises instead of rendering something else, so the chart cannot silently depend
on a construct this renderer gets wrong. The subset: ``{{ pipeline }}`` with ``{{-``/``-}}`` trimming,
``if``/``else if``/``else``/``end``, ``range [$k, $v :=] pipeline``, ``$var := pipeline`` and
``$var = pipeline``, fields of ``.``, ``$`` and variables, parenthesised pipelines, string, number and
boolean literals; functions ``default``, ``quote``, ``toYaml``, ``indent``, ``nindent``, ``replace``,
``printf`` (%s, %d, %v), ``eq``, ``ne``, ``not``, ``and``, ``or``, ``empty``, ``fail``, and ``.Files.Get`` /
``.Files.Glob``.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]


class TemplateError(Exception):
    """The template uses something outside the subset, or names a value that does not exist."""


# -- parsing ------------------------------------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<op>:=|\||\(|\)|,|=)
      | (?P<word>[^\s|(),="`]+)
    )""",
    re.X,
)


@dataclass
class Text:
    text: str


@dataclass
class Action:
    pipeline: list[str]


@dataclass
class Assign:
    name: str
    pipeline: list[str]


@dataclass
class If:
    pipeline: list[str]
    then: list[Any] = field(default_factory=list)
    otherwise: list[Any] = field(default_factory=list)


@dataclass
class Range:
    names: list[str]
    pipeline: list[str]
    body: list[Any] = field(default_factory=list)


def tokens(source: str) -> list[str]:
    out: list[str] = []
    position = 0
    source = source.rstrip()
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None or match.end() == position:
            raise TemplateError(f"cannot read {source[position:]!r}")
        out.append(match.group(match.lastgroup or "word"))
        position = match.end()
    return out


def _pieces(template: str) -> list[Text | tuple[str, list[str]]]:
    """Text and actions, with the trim markers applied to the text around them."""
    pieces: list[Text | tuple[str, list[str]]] = []
    position = 0
    trim_next = False
    for match in _ACTION.finditer(template):
        text = template[position : match.start()]
        if trim_next:
            text = text.lstrip()
        if match.group(1):
            text = text.rstrip()
        pieces.append(Text(text))
        body = match.group(2).strip()
        if body.startswith("/*"):
            if not body.endswith("*/"):
                raise TemplateError(f"unterminated comment {body!r}")
        else:
            words = tokens(body)
            keyword = words[0] if words and words[0] in {"if", "else", "end", "range"} else ""
            pieces.append((keyword, words[1:] if keyword else words))
        trim_next = bool(match.group(3))
        position = match.end()
    tail = template[position:]
    pieces.append(Text(tail.lstrip() if trim_next else tail))
    return pieces


def parse(template: str) -> list[Any]:
    root: list[Any] = []
    #: (block, the list its next nodes go to, whether it is an ``else if`` closed by its parent's ``end``)
    stack: list[tuple[Any, list[Any], bool]] = [(None, root, False)]
    for piece in _pieces(template):
        node, body, chained = stack[-1]
        if isinstance(piece, Text):
            body.append(piece)
            continue
        keyword, words = piece
        if keyword == "if":
            new = If(words)
            body.append(new)
            stack.append((new, new.then, False))
        elif keyword == "range":
            names: list[str] = []
            if ":=" in words:
                split = words.index(":=")
                names = [w for w in words[:split] if w != ","]
                words = words[split + 1 :]
            new_range = Range(names, words)
            body.append(new_range)
            stack.append((new_range, new_range.body, False))
        elif keyword == "else":
            if not isinstance(node, If) or body is not node.then:
                raise TemplateError("else outside if")
            stack[-1] = (node, node.otherwise, chained)
            if words[:1] == ["if"]:
                nested = If(words[1:])
                node.otherwise.append(nested)
                stack.append((nested, nested.then, True))
            elif words:
                raise TemplateError(f"else {' '.join(words)}")
        elif keyword == "end":
            if len(stack) == 1:
                raise TemplateError("end without a block")
            while stack.pop()[2]:
                pass
        elif len(words) >= 3 and words[0].startswith("$") and words[1] in {":=", "="}:
            body.append(Assign(words[0], words[2:]))
        else:
            body.append(Action(words))
    if len(stack) != 1:
        raise TemplateError("a block is not closed with end")
    return root


# -- evaluation ---------------------------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and not (isinstance(value, (dict, list)) and not value)


def _printf(form: str, *args: Any) -> str:
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        return _text(next(values))

    return re.sub(r"%%|%[sdv]", one, form)


def _quote(value: Any) -> str:
    return '"' + _text(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).removesuffix("\n")


def _indent(spaces: int, text: str) -> str:
    pad = " " * spaces
    return pad + text.replace("\n", "\n" + pad)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "default": lambda fallback, value=None: value if _truthy(value) else fallback,
    "quote": _quote,
    "toYaml": _to_yaml,
    "indent": _indent,
    "nindent": lambda spaces, text: "\n" + _indent(spaces, text),
    "replace": lambda old, new, text: text.replace(old, new),
    "printf": _printf,
    "eq": lambda a, *others: all(a == b for b in others),
    "ne": lambda a, b: a != b,
    "not": lambda a: not _truthy(a),
    "and": lambda *values: next((v for v in values if not _truthy(v)), values[-1]),
    "or": lambda *values: next((v for v in values if _truthy(v)), values[-1]),
    "empty": lambda value: not _truthy(value),
    "fail": lambda message: _fail(message),
}


def _fail(message: str) -> None:
    raise TemplateError(f"fail: {message}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TemplateError(f"cannot print {type(value).__name__} {value!r}: use toYaml")


class _Files:
    def __init__(self, chart: Path) -> None:
        self.chart = chart

    def Get(self, path: str) -> str:  # Helm's name
        target = self.chart / path
        if not target.is_file():
            raise TemplateError(f".Files.Get {path}: no such file in the chart")
        return target.read_text()

    def Glob(self, pattern: str) -> dict[str, str]:  # Helm's name
        found = {
            str(p.relative_to(self.chart)): p.read_text()
            for p in self.chart.rglob("*")
            if p.is_file() and fnmatch.fnmatch(str(p.relative_to(self.chart)), pattern)
        }
        return dict(sorted(found.items()))


class _Scope:
    def __init__(self, root: Obj) -> None:
        self.root = root
        self.variables: dict[str, Any] = {"$": root}

    def field(self, base: Any, path: list[str], word: str) -> Any:
        for name in path:
            if isinstance(base, dict):
                if name not in base:
                    raise TemplateError(f"{word}: no value {name!r}")
                base = base[name]
            elif hasattr(base, name):
                base = getattr(base, name)
            else:
                raise TemplateError(f"{word}: {type(base).__name__} has no field {name!r}")
        return base

    def operand(self, word: str, dot: Any) -> Any:
        if word.startswith('"'):
            return bytes(word[1:-1], "utf-8").decode("unicode_escape")
        if word.startswith("`"):
            return word[1:-1]
        if word in {"true", "false"}:
            return word == "true"
        if re.fullmatch(r"-?\d+", word):
            return int(word)
        if word == ".":
            return dot
        if word.startswith("."):
            return self.field(dot, word[1:].split("."), word)
        if word.startswith("$"):
            name, *path = word.split(".")
            if name not in self.variables:
                raise TemplateError(f"undefined variable {name}")
            return self.field(self.variables[name], path, word)
        raise TemplateError(f"unknown operand {word!r}")

    def pipeline(self, words: list[str], dot: Any) -> Any:
        commands: list[list[str]] = [[]]
        depth = 0
        for word in words:
            depth += (word == "(") - (word == ")")
            if word == "|" and depth == 0:
                commands.append([])
            else:
                commands[-1].append(word)
        value: Any = _NOTHING
        for command in commands:
            value = self.command(command, dot, value)
        return value

    def command(self, words: list[str], dot: Any, piped: Any) -> Any:
        args: list[Any] = []
        index = 1
        while index < len(words):
            index, arg = self.argument(words, index, dot)
            args.append(arg)
        if piped is not _NOTHING:
            args.append(piped)
        head = words[0]
        if head == "(":
            _, value = self.argument(words, 0, dot)
            if args:
                raise TemplateError(f"cannot call {words}")
            return value
        if head in FUNCTIONS:
            try:
                return FUNCTIONS[head](*args)
            except TypeError as exc:
                raise TemplateError(f"{head}: {exc}") from exc
        if re.fullmatch(r"[A-Za-z_]\w*", head) and head not in {"true", "false"}:
            raise TemplateError(f"function {head!r} is outside the supported subset")
        value = self.operand(head, dot)
        if callable(value):
            return value(*args)
        if args:
            raise TemplateError(f"{head} is not a function")
        return value

    def argument(self, words: list[str], index: int, dot: Any) -> tuple[int, Any]:
        if words[index] != "(":
            return index + 1, self.operand(words[index], dot)
        depth, end = 0, index
        for end in range(index, len(words)):
            depth += (words[end] == "(") - (words[end] == ")")
            if depth == 0:
                break
        return end + 1, self.pipeline(words[index + 1 : end], dot)

    def render(self, nodes: list[Any], dot: Any) -> str:
        out: list[str] = []
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.text)
            elif isinstance(node, Action):
                out.append(_text(self.pipeline(node.pipeline, dot)))
            elif isinstance(node, Assign):
                self.variables[node.name] = self.pipeline(node.pipeline, dot)
            elif isinstance(node, If):
                branch = node.then if _truthy(self.pipeline(node.pipeline, dot)) else node.otherwise
                out.append(self.render(branch, dot))
            elif isinstance(node, Range):
                out.append(self.range(node, dot))
        return "".join(out)

    def range(self, node: Range, dot: Any) -> str:
        collection = self.pipeline(node.pipeline, dot)
        pairs = sorted(collection.items()) if isinstance(collection, dict) else list(enumerate(collection))
        out: list[str] = []
        for key, item in pairs:
            if len(node.names) == 2:
                self.variables[node.names[0]], self.variables[node.names[1]] = key, item
            elif len(node.names) == 1:
                self.variables[node.names[0]] = item
            out.append(self.render(node.body, item))
        return "".join(out)


_NOTHING = object()


def merge(base: Obj, override: Obj) -> Obj:
    """Helm's values merge: maps deep, everything else replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render_chart(chart: Path, values: Obj | None = None, *, release: str = "kueue-webhook") -> list[Obj]:
    """The objects ``helm template <release> <chart> [-f values]`` prints, as parsed YAML documents."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    root: Obj = {
        "Values": merge(yaml.safe_load((chart / "values.yaml").read_text()) or {}, values or {}),
        "Release": {"Name": release, "Namespace": "default", "Service": "Helm"},
        "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta.get("appVersion", "")},
        "Files": _Files(chart),
    }
    objects: list[Obj] = []
    for template in sorted((chart / "templates").glob("*.yaml")):
        scope = _Scope(root)
        try:
            text = scope.render(parse(template.read_text()), root)
        except TemplateError as exc:
            raise TemplateError(f"{template.name}: {exc}") from exc
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects
