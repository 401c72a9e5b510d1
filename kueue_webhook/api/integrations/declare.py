"""Suspendable kinds an admin declares in the ConfigMap (``integrations.declaredKinds``), read into the same
``Integration`` description the built-in kinds use, so the webhook, the controller and ``simulate`` treat a
declared CRD exactly as they treat a JobSet.

A declaration is data the controller reloads live, so it is checked whole before anything uses it: every
problem is reported as ``integrations.declaredKinds[i].<field>: reason`` (all of them at once), and a
configuration with any problem is refused as a whole, keeping the last good one. The YAML names mirror the
model's fields (``suspendPath``, ``podSets[].countPaths``, ``finished.succeededConditions`` ...); a field
this parser does not know is an error, so a typo cannot silently turn a rule off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast

from kueue_webhook.api.errors import type_name
from kueue_webhook.api.field_reader import FieldReader
from kueue_webhook.api.integrations.builtin import BUILTIN
from kueue_webhook.api.integrations.model import (
    ActiveRule,
    CountFactor,
    FieldIs,
    FinishedRule,
    Integration,
    MinCount,
    PodSetSource,
    PodsReadyRule,
)
from kueue_webhook.api.integrations.paths import FieldPath, parse_path
from kueue_webhook.api.validation import dns1123_label_problems, dns1123_subdomain_problems

__all__ = ["FIELD", "declared_name", "parse_declared_kinds"]

#: the key under ``integrations`` that holds the declarations
FIELD = "declaredKinds"

_KIND = re.compile(r"[A-Z][A-Za-z0-9]*")
_VERSION = re.compile(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?")
_DECLARATION_FIELDS = frozenset(
    {
        "group",
        "version",
        "kind",
        "resource",
        "suspendPath",
        "podSets",
        "finished",
        "active",
        "podsReady",
        "priorityClassPaths",
        "skipWhenSet",
    }
)
_POD_SET_FIELDS = frozenset(
    {"path", "each", "name", "nameField", "order", "templatePath", "countPath", "countPaths", "minCountPath"}
)
_COUNT_FIELDS = frozenset({"path", "default", "atMost"})
_FINISHED_FIELDS = frozenset(
    {
        "succeededConditions",
        "failedConditions",
        "phasePath",
        "succeededPhases",
        "failedPhases",
        "successWhen",
        "messagePath",
    }
)
_ACTIVE_FIELDS = frozenset({"countPaths", "when"})
_READY_FIELDS = frozenset({"conditions", "when", "readyPaths", "totalPaths"})
_WHEN_FIELDS = frozenset({"path", "in", "missing"})
_EACH = ("one", "list", "map")


def declared_name(group: str, kind: str) -> str:
    """A declared kind's framework name, spelled as Kueue spells its own: ``example.com/trainingrun``."""
    return f"{group}/{kind.lower()}"


class DeclarationReader(FieldReader):
    """Reads one declaration into an ``Integration``, collecting ``path: reason`` for every problem."""

    ABSENT_IS_EMPTY = False
    NAMES_KNOWN_FIELDS = True

    def text(self, value: object, path: str, *, required: bool = True) -> str:
        if value is None:
            if required:
                self.fail(path, "Required value")
            return ""
        if not isinstance(value, str) or not value:
            self.fail(path, f"must be a non-empty string, got {value!r}")
            return ""
        return value

    def path(
        self, value: object, path: str, *, required: bool = False, wildcard: bool = False
    ) -> FieldPath | None:
        if value is None:
            if required:
                self.fail(path, "Required value: a dotted field path such as spec.suspend")
            return None
        parsed = parse_path(value, wildcard=wildcard)
        if isinstance(parsed, str):
            self.fail(path, f"{parsed}, got {value!r}")
            return None
        return parsed

    def paths(self, value: object, path: str, *, wildcard: bool = False) -> tuple[FieldPath, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(path, f"must be a list of field paths, got {type_name(value)}")
            return ()
        found = (
            self.path(item, f"{path}[{i}]", required=True, wildcard=wildcard) for i, item in enumerate(value)
        )
        return tuple(p for p in found if p is not None)

    def when(self, value: object, path: str) -> FieldIs | None:
        """``{path, in, missing?}``: the field's value is one of ``in`` (absent, it reads as ``missing``)."""
        if value is None:
            return None
        section = self.mapping(value, path, _WHEN_FIELDS)
        if section is None:
            return None
        field = self.path(section.get("path"), f"{path}.path", required=True)
        raw = section.get("in")
        values = self.strings(raw, f"{path}.in")
        if raw is None or raw == []:
            self.fail(f"{path}.in", "Required value: the values that make the rule hold")
        missing = section.get("missing", "")
        if not isinstance(missing, str):
            self.fail(f"{path}.missing", f"must be a string, got {missing!r}")
            missing = ""
        if field is None or not values:
            return None
        return FieldIs(field, frozenset(values), missing)

    # -- the declaration ------------------------------------------------------------------------------

    def declaration(self, value: object, path: str) -> Integration | None:
        section = self.mapping(value, path, _DECLARATION_FIELDS)
        if section is None:
            return None
        before = len(self.errors)
        group = self.text(section.get("group"), f"{path}.group")
        if group:
            for problem in dns1123_subdomain_problems(group):
                self.fail(f"{path}.group", f"{problem}, got {group!r}")
        version = self.text(section.get("version"), f"{path}.version")
        if version and not _VERSION.fullmatch(version):
            self.fail(f"{path}.version", f"must be an API version such as v1 or v1beta2, got {version!r}")
        kind = self.text(section.get("kind"), f"{path}.kind")
        if kind and not _KIND.fullmatch(kind):
            self.fail(
                f"{path}.kind",
                f"must be a kind such as TrainingRun (a capital, then letters and digits), got {kind!r}",
            )
        resource = self.text(section.get("resource"), f"{path}.resource")
        if resource:
            for problem in dns1123_label_problems(resource):
                self.fail(
                    f"{path}.resource",
                    f"must be the lowercase plural resource name: {problem}, got {resource!r}",
                )
        builtin = next((i for i in BUILTIN.values() if (i.group, i.kind) == (group, kind)), None)
        if builtin is not None:
            self.fail(
                path, f"{kind}.{group} is built in: enable it with integrations.frameworks: [{builtin.name}]"
            )
        if group == "kueue.x-k8s.io":
            self.fail(
                f"{path}.group", "kueue.x-k8s.io kinds are the queueing API itself and cannot be queued"
            )
        suspend = self.path(section.get("suspendPath"), f"{path}.suspendPath", required=True)
        pod_sets = self.pod_sets(section.get("podSets"), f"{path}.podSets")
        finished = self.finished(section.get("finished"), f"{path}.finished")
        active = self.active(section.get("active"), f"{path}.active")
        ready = self.pods_ready(section.get("podsReady"), f"{path}.podsReady")
        priority = self.paths(section.get("priorityClassPaths"), f"{path}.priorityClassPaths")
        skip = self.paths(section.get("skipWhenSet"), f"{path}.skipWhenSet")
        if len(self.errors) > before or suspend is None:
            return None
        return Integration(
            name=declared_name(group, kind),
            group=group,
            version=version,
            kind=kind,
            plural=resource,
            suspend=suspend,
            pod_sets=pod_sets,
            finished=finished,
            active=active,
            pods_ready=ready,
            priority_class=priority,
            skip_when_set=skip,
            declared=True,
        )

    def pod_sets(self, value: object, path: str) -> tuple[PodSetSource, ...]:
        if value is None:
            self.fail(path, "Required value: at least one pod set (where the object's pod templates are)")
            return ()
        if not isinstance(value, list) or not value:
            self.fail(path, f"must be a non-empty list of pod sets, got {value!r}")
            return ()
        out = [self.pod_set(item, f"{path}[{index}]") for index, item in enumerate(value)]
        partial = [i for i, s in enumerate(out) if s is not None and s.min_count is not None]
        for index in partial[1:]:
            self.fail(
                f"{path}[{index}].minCountPath",
                f"only one pod set may have a minCount (a Workload allows one), {path}[{partial[0]}] has one",
            )
        names = [s.name for s in out if s is not None and s.each == "one"]
        for index, source in enumerate(out):
            if source is not None and source.each == "one" and names.count(source.name) > 1:
                self.fail(f"{path}[{index}].name", f"Duplicate value: {source.name!r}")
                names.remove(source.name)
        return tuple(s for s in out if s is not None)

    def pod_set(self, value: object, path: str) -> PodSetSource | None:
        section = self.mapping(value, path, _POD_SET_FIELDS)
        if section is None:
            return None
        before = len(self.errors)
        where = self.path(section.get("path"), f"{path}.path", required=True)
        each = section.get("each", "one")
        if each not in _EACH:
            self.fail(f"{path}.each", f"must be one of {', '.join(_EACH)}, got {each!r}")
            each = "one"
        name = ""
        if each == "one":
            name = self.text(section.get("name"), f"{path}.name").lower()
            for problem in dns1123_label_problems(name) if name else ():
                self.fail(f"{path}.name", f"{problem}, got {section.get('name')!r}")
        elif section.get("name") is not None:
            self.fail(f"{path}.name", f"only for each: one; each {each} pod set is named by its item")
        name_field = self.path(section.get("nameField"), f"{path}.nameField")
        if name_field is not None and each != "list":
            self.fail(f"{path}.nameField", "only for each: list (a map's pod sets are named by their keys)")
        order = self.strings(section.get("order"), f"{path}.order")
        if order and each != "map":
            self.fail(f"{path}.order", "only for each: map")
        template = self.path(section.get("templatePath"), f"{path}.templatePath") or FieldPath(("template",))
        count = self.counts(section, path)
        min_count = self.min_count(section.get("minCountPath"), f"{path}.minCountPath", each, count)
        if len(self.errors) > before or where is None:
            return None
        return PodSetSource(
            path=where,
            each=cast(Literal["one", "list", "map"], each),
            name=name,
            name_field=name_field,
            order=order,
            template=template,
            count=count,
            min_count=min_count,
        )

    def min_count(
        self, value: object, path: str, each: str, count: tuple[CountFactor, ...]
    ) -> MinCount | None:
        """``minCountPath: minReplicas``: the fewest pods the pod set may start with (its Workload's
        ``minCount``), read from its element like ``countPath``. Starting it with fewer pods writes the
        admitted count into its count field and stopping it writes the full count back, so the pod set
        must be one element counted by one field."""
        found = self.path(value, path)
        if found is None:
            return None
        if each != "one":
            self.fail(
                path, f"only for each: one (each {each} item is a pod set, and one pod set may have it)"
            )
        elif not count:
            self.fail(path, "needs countPath: the field the admitted count is written into")
        elif len(count) > 1:
            self.fail(path, "needs one count field (countPath), not a product of countPaths")
        elif count[0].path == found:
            self.fail(path, f"must differ from the count field {found}")
        return MinCount(path=found)

    def counts(self, section: Mapping[str, Any], path: str) -> tuple[CountFactor, ...]:
        """``countPath: replicas`` or ``countPaths: [replicas, {path: parallelism, atMost: completions}]``:
        the pod set's count is the product, each unset integer counting as its ``default`` (1)."""
        if section.get("countPath") is not None and section.get("countPaths") is not None:
            self.fail(f"{path}.countPaths", "give countPath or countPaths, not both")
            return ()
        if section.get("countPath") is not None:
            found = self.path(section["countPath"], f"{path}.countPath")
            return (CountFactor(found),) if found is not None else ()
        value = section.get("countPaths")
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(f"{path}.countPaths", f"must be a list of field paths, got {type_name(value)}")
            return ()
        out = []
        for index, item in enumerate(value):
            where = f"{path}.countPaths[{index}]"
            if isinstance(item, Mapping):
                entry = self.mapping(item, where, _COUNT_FIELDS) or {}
                found = self.path(entry.get("path"), f"{where}.path", required=True)
                default = entry.get("default", 1)
                if not isinstance(default, int) or isinstance(default, bool) or default < 0:
                    self.fail(f"{where}.default", f"must be an integer >= 0, got {default!r}")
                    default = 1
                at_most = self.path(entry.get("atMost"), f"{where}.atMost")
                if found is not None:
                    out.append(CountFactor(found, default, at_most))
            else:
                found = self.path(item, where, required=True)
                if found is not None:
                    out.append(CountFactor(found))
        return tuple(out)

    def finished(self, value: object, path: str) -> FinishedRule:
        if value is None:
            return FinishedRule()  # never finishes by itself (like a RayCluster): its Workload ends with it
        section = self.mapping(value, path, _FINISHED_FIELDS)
        if section is None:
            return FinishedRule()
        phase = self.path(section.get("phasePath"), f"{path}.phasePath")
        succeeded_phases = self.strings(section.get("succeededPhases"), f"{path}.succeededPhases")
        failed_phases = self.strings(section.get("failedPhases"), f"{path}.failedPhases")
        if (succeeded_phases or failed_phases) and phase is None:
            self.fail(
                f"{path}.phasePath", "Required value: succeededPhases and failedPhases are values of it"
            )
        return FinishedRule(
            succeeded=self.strings(section.get("succeededConditions"), f"{path}.succeededConditions"),
            failed=self.strings(section.get("failedConditions"), f"{path}.failedConditions"),
            phase=phase,
            succeeded_phases=succeeded_phases,
            failed_phases=failed_phases,
            success=self.when(section.get("successWhen"), f"{path}.successWhen"),
            message=self.path(section.get("messagePath"), f"{path}.messagePath"),
        )

    def active(self, value: object, path: str) -> ActiveRule:
        if value is None:
            return ActiveRule()
        section = self.mapping(value, path, _ACTIVE_FIELDS)
        if section is None:
            return ActiveRule()
        return ActiveRule(
            counts=self.paths(section.get("countPaths"), f"{path}.countPaths", wildcard=True),
            when=self.when(section.get("when"), f"{path}.when"),
        )

    def pods_ready(self, value: object, path: str) -> PodsReadyRule | None:
        if value is None:
            return None
        section = self.mapping(value, path, _READY_FIELDS)
        if section is None:
            return None
        return PodsReadyRule(
            conditions=self.strings(section.get("conditions"), f"{path}.conditions"),
            when=self.when(section.get("when"), f"{path}.when"),
            ready=self.paths(section.get("readyPaths"), f"{path}.readyPaths", wildcard=True),
            total=self.paths(section.get("totalPaths"), f"{path}.totalPaths", wildcard=True),
        )


def _duplicates(
    declared: Iterable[tuple[int, Integration]],
    path: str,
    key: Callable[[Integration], tuple[str, str]],
    what: str,
) -> list[str]:
    seen: dict[tuple[str, str], int] = {}
    errors = []
    for index, integration in declared:
        found = key(integration)
        if found in seen:
            errors.append(
                f"{path}[{index}]: {what} {'/'.join(found)} is already declared by {path}[{seen[found]}]"
            )
        else:
            seen[found] = index
    return errors


def parse_declared_kinds(
    value: object, path: str = f"integrations.{FIELD}"
) -> tuple[tuple[Integration, ...], list[str]]:
    """The declared integrations, and every problem as ``path: reason`` (when there is any, the caller
    refuses the whole configuration, so the integrations returned then are incomplete)."""
    if value is None:
        return (), []
    if not isinstance(value, list):
        return (), [f"{path}: must be a list of kind declarations, got {type_name(value)}"]
    errors: list[str] = []
    reader = DeclarationReader(errors)
    found = [(index, reader.declaration(item, f"{path}[{index}]")) for index, item in enumerate(value)]
    declared = [(index, i) for index, i in found if i is not None]
    errors += _duplicates(declared, path, lambda i: (i.group, i.kind), "kind")
    errors += _duplicates(declared, path, lambda i: (i.group, i.plural), "resource")
    return tuple(i for _, i in declared), errors
