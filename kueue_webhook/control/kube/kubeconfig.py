"""Kubeconfig files read and merged the way kubectl reads them (client-go ``tools/clientcmd/loader.go``).

Users point the controller at the same files they point kubectl at, so the files must mean the same thing
here: ``KUBECONFIG=a:b`` merges both files, and what kubectl would connect to is what we connect to. The
rules of client-go's ``ClientConfigLoadingRules.Load``:

* files are read in order; missing ones are skipped (an explicit ``--kubeconfig`` must exist), an unreadable
  or malformed one is an error naming it;
* the first file to set ``current-context`` wins, and the first file to define a cluster, user or context
  of a given name wins it whole: a later entry of the same name is ignored, even its fields the first lacks;
* a name defined twice in one file is an error;
* relative paths (``certificate-authority``, ``client-certificate``, ``client-key``, ``tokenFile``, and an
  exec ``command`` with a ``/`` in it) are resolved against the directory of the file that defines the entry.

This module only reads and merges; ``kueue_webhook.control.kube.connection`` turns the selected context into a
connection.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

JSON = dict[str, Any]

#: fields holding file paths, per section (client-go GetClusterFileReferences / GetAuthInfoFileReferences)
_PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
    "contexts": (),
}
_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One named cluster, user or context, with the file it came from (paths already made absolute)."""

    name: str
    body: JSON
    origin: Path


@dataclass
class Merged:
    """Several kubeconfig files as one, first definition winning."""

    files: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    current_context: str = ""
    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)
    contexts: dict[str, Entry] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return ", ".join(str(path) for path in self.files) or "kubeconfig"


@dataclass(frozen=True, slots=True)
class Selected:
    """The context in use and the cluster and user it names."""

    context: Entry
    cluster: Entry
    user: Entry | None

    def document(self) -> JSON:
        """A one-context kubeconfig of the selection, for libraries that want a whole file's content."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.cluster.name, "cluster": self.cluster.body}],
            "users": [{"name": self.user.name, "user": self.user.body}] if self.user else [],
            "contexts": [{"name": self.context.name, "context": self.context.body}],
            "current-context": self.context.name,
        }


def split_paths(value: str) -> list[Path]:
    """``$KUBECONFIG`` split at ``os.pathsep`` (``:``, ``;`` on Windows), empties and repeats dropped."""
    out: list[Path] = []
    for item in value.split(os.pathsep):
        if item and Path(item) not in out:
            out.append(Path(item))
    return out


def load(files: Iterable[Path], *, explicit: bool = False) -> Merged:
    """Read and merge ``files`` in order; ``explicit``: the file ``--kubeconfig`` names, which must exist."""
    merged = Merged()
    for path in files:
        try:
            text = path.read_text()
        except FileNotFoundError:
            if explicit:
                raise KubeconfigError(f"{path}: no such kubeconfig file") from None
            merged.missing.append(path)
            continue
        except OSError as exc:
            raise KubeconfigError(f"{path}: cannot read kubeconfig: {exc}") from exc
        _merge_text(merged, text, path)
    return merged


def load_text(text: str, *, origin: Path) -> Merged:
    """One kubeconfig given as text (a Secret's key), named ``origin`` in errors; relative paths in it are
    resolved against ``origin``'s directory, as for a file."""
    merged = Merged()
    _merge_text(merged, text, origin)
    return merged


def _merge_text(merged: Merged, text: str, path: Path) -> None:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path}: cannot read kubeconfig: {yaml_problem(exc)}") from None
    _merge(merged, document if document is not None else {}, path)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong and where (line and column), never the text around it: PyYAML's own message quotes
    the lines near the fault, which in a kubeconfig are tokens and private keys."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return type(exc).__name__
    parts = [part for part in (exc.context, exc.problem) if part]
    mark = exc.problem_mark or exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ("; ".join(parts) or "malformed YAML") + where


def _merge(merged: Merged, document: Any, path: Path) -> None:
    if not isinstance(document, dict):
        raise KubeconfigError(f"{path}: a kubeconfig is a mapping (apiVersion, clusters, users, contexts)")
    merged.files.append(path)
    current = document.get("current-context")
    if current and not merged.current_context:
        merged.current_context = str(current)
    base = path.parent.absolute()
    for section, key in _SECTIONS:
        target: dict[str, Entry] = getattr(merged, section)
        seen: set[str] = set()
        entries = document.get(section) or []
        if not isinstance(entries, list):
            raise KubeconfigError(f"{path}: {section} must be a list of {{name, {key}}} entries")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
                raise KubeconfigError(f"{path}: {section}[{index}] needs a name")
            name = entry["name"]
            if name in seen:
                raise KubeconfigError(f'{path}: duplicate name "{name}" in {section}')
            seen.add(name)
            body = entry.get(key) or {}
            if not isinstance(body, dict):
                raise KubeconfigError(f"{path}: {section}[{index}].{key} must be a mapping")
            if name not in target:
                target[name] = Entry(name, _absolute(dict(body), section, base), path)


def _absolute(body: JSON, section: str, base: Path) -> JSON:
    for key in _PATH_FIELDS[section]:
        value = body.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            body[key] = str(base / value)
    plugin = body.get("exec")
    if section == "users" and isinstance(plugin, dict):
        command = plugin.get("command")
        if isinstance(command, str) and os.sep in command and not Path(command).is_absolute():
            body["exec"] = {**plugin, "command": str(base / command)}
    return body


def select(merged: Merged, *, context: str | None = None) -> Selected:
    """The context named by ``context`` (``--context``) or ``current-context``, with its cluster and user."""
    name = context or merged.current_context
    if not name:
        raise KubeconfigError(f"{merged.where}: no current-context and no --context given")
    ctx = _named(merged.contexts, name, "context", merged.where)
    cluster_name = ctx.body.get("cluster")
    if not cluster_name:
        raise KubeconfigError(f"{ctx.origin}: context {name!r} names no cluster")
    cluster = _named(merged.clusters, str(cluster_name), "cluster", merged.where)
    user_name = ctx.body.get("user")
    user = _named(merged.users, str(user_name), "user", merged.where) if user_name else None
    return Selected(context=ctx, cluster=cluster, user=user)


def _named(entries: dict[str, Entry], name: str, what: str, where: str) -> Entry:
    found = entries.get(name)
    if found is None:
        raise KubeconfigError(f"{where}: no {what} named {name!r}")
    return found


def load_selected(files: Sequence[Path], *, explicit: bool = False, context: str | None = None) -> Selected:
    """``load`` then ``select``; an error when none of ``files`` exists."""
    merged = load(files, explicit=explicit)
    if not merged.files:
        raise KubeconfigError("no kubeconfig file found: " + ", ".join(str(path) for path in merged.missing))
    return select(merged, context=context)
