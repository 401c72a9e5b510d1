"""``kueue-webhook manifests``: the CRDs, the install and the examples, printed from the installed package.

``pip install kueue-webhook`` gives the commands but no repository, so the manifests ship inside the package
(``manifest_files``, read through importlib.resources, which works from a wheel, a zip or a checkout alike)
and this prints them: ``--list`` names every file (the kustomizations apart: they stand for their
directory) and every directory that has a ``kustomization.yaml``; ``NAME`` prints a file, or a directory as
the files its kustomization lists, in its order, as one multi-document stream for ``kubectl apply -f -``.
Only kustomizations that list resources are flattened this way: one with patches (the out-of-cluster
install) would print something kustomize does not build, so it is refused with the ``kubectl apply -k`` to
use instead.
"""

from __future__ import annotations

import argparse
import posixpath
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable

import yaml

#: the package directory the manifests ship in (a link to the repository's manifests/ in a checkout)
DIRECTORY = "manifest_files"
KUSTOMIZATION = "kustomization.yaml"
#: what a kustomization may hold for its files to be printed one after the other unchanged
FLAT_KEYS = frozenset({"apiVersion", "kind", "resources"})
ROOT = "./"


class ManifestError(Exception):
    """A name that is not shipped, or a directory that cannot be printed as plain files."""


def shipped() -> Traversable:
    return files(__package__ or __name__.rpartition(".")[0]).joinpath(DIRECTORY)


def _walk(directory: Traversable, prefix: str) -> list[str]:
    names = []
    for entry in sorted(directory.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            names.extend(_walk(entry, f"{prefix}{entry.name}/"))
        elif entry.name.endswith(".yaml") and entry.name != KUSTOMIZATION:
            names.append(prefix + entry.name)
    if directory.joinpath(KUSTOMIZATION).is_file():
        names.insert(0, prefix or ROOT)
    return names


def names() -> list[str]:
    """Every shipped file, and every directory with a kustomization (``./`` is the whole install)."""
    return _walk(shipped(), "")


def _locate(relative: str) -> Traversable:
    node = shipped()
    for part in relative.split("/"):
        if part:
            node = node.joinpath(part)
    return node


def _normalise(name: str) -> str:
    path = posixpath.normpath(name.strip() or ".")
    if path.startswith("..") or path.startswith("/"):
        raise ManifestError(f"{name!r} is outside the shipped manifests")
    return "" if path == "." else path


def render(name: str) -> str:
    """The text of a shipped file, or of a directory's kustomization resources in order."""
    relative = _normalise(name)
    node = _locate(relative)
    if node.is_file() and relative.endswith(".yaml"):
        return node.read_text(encoding="utf-8")
    if node.is_dir() and node.joinpath(KUSTOMIZATION).is_file():
        return "".join(_document(text) for text in _flatten(relative, seen=()))
    raise ManifestError(f"no manifest named {name!r} (kueue-webhook manifests --list names them)")


def _document(text: str) -> str:
    text = text if text.endswith("\n") else text + "\n"
    return text if text.startswith("---") else "---\n" + text


def _flatten(relative: str, seen: tuple[str, ...]) -> list[str]:
    """The texts a resources-only kustomization stands for, its sub-directories expanded in place."""
    if relative in seen:
        raise ManifestError(f"{relative}/{KUSTOMIZATION} includes itself")
    where = f"{relative}/{KUSTOMIZATION}" if relative else KUSTOMIZATION
    kustomization = yaml.safe_load(_locate(where).read_text(encoding="utf-8")) or {}
    other = sorted(set(kustomization) - FLAT_KEYS)
    if other:
        raise ManifestError(
            f"{where} has {', '.join(other)}, which only kustomize applies: "
            f"kubectl apply -k on a checkout's manifests/{relative}"
        )
    texts = []
    for resource in kustomization.get("resources") or []:
        target = _normalise(posixpath.join(relative, str(resource)))
        node = _locate(target)
        if node.is_dir():
            texts.extend(_flatten(target, (*seen, relative)))
        elif node.is_file():
            texts.append(node.read_text(encoding="utf-8"))
        else:
            raise ManifestError(f"{where} lists {resource!r}, which is not shipped")
    return texts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--list", action="store_true", help="name every shipped file and directory")
    which.add_argument(
        "name", nargs="?", metavar="NAME", help="a file (crds/workloads.yaml) or directory (crds, ./)"
    )


def run(args: argparse.Namespace) -> int:
    if args.list:
        sys.stdout.write("".join(f"{name}\n" for name in names()))
        return 0
    try:
        sys.stdout.write(render(args.name))
    except ManifestError as exc:
        print(f"kueue-webhook manifests: {exc}", file=sys.stderr)
        return 2
    return 0
