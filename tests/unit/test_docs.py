"""The README and docs/ as a reader meets them: a short entry page, links that lead somewhere.

The README is the page everyone reads first, so it stays short (what it is, the two commands, install, a
walk-through, links) and everything else lives in docs/. A link to a moved section is the first thing a
reorganisation breaks, so every relative link and anchor is resolved here the way GitHub renders them.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from kueue_webhook import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(page: Path) -> str:
    """The page without its fenced code blocks (a link-like text in an example is not a link)."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub generates: lowercased, punctuation dropped, spaces become hyphens."""
    found = set()
    for line in prose(page).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_the_readme_is_an_entry_page_of_at_most_200_lines() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_quick_start_is_the_two_make_targets_and_both_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```\n", 2)[1]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    targets = re.findall(r"^([a-z]+):", (ROOT / "Makefile").read_text(), flags=re.MULTILINE)
    assert {"demo", "test"} <= set(targets)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_every_docs_page_is_reachable_from_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    linked = {target.partition("#")[0] for target in LINK.findall(index)}
    pages = {page.name for page in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages - linked == set()


#: ``kueue-webhook <subcommand> <flags>``; in ``helm install kueue-webhook charts/...`` it names a release
INVOCATION = re.compile(r"(?<!install )(?<!upgrade )(?<!uninstall )\bkueue-webhook ([a-z]+)([^#|]*)")


def documented_invocations() -> list[tuple[str, str, list[str]]]:
    """(page, subcommand, flags) of each ``kueue-webhook <subcommand> ...`` written as code in the docs."""
    found = []
    flag = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
    for page in PAGES:
        text = page.read_text()
        # a reference table's row: every flag in it belongs to the subcommand the row starts with
        for sub, row in re.findall(r"^\| `kueue-webhook ([a-z]+)[^`]*`(.*)$", text, re.MULTILINE):
            found.append((page.name, sub, flag.findall(row)))
        code = re.findall(r"`([^`\n]+)`", text) + re.findall(
            r"^```\n(.*?)^```", text, re.DOTALL | re.MULTILINE
        )
        for span in code:
            for line in span.splitlines():
                for sub, rest in INVOCATION.findall(line):
                    found.append((page.name, sub, flag.findall(rest)))
    return found


def test_every_documented_subcommand_and_flag_exists() -> None:
    """A renamed flag or subcommand must take its documentation along (the docs are what users copy)."""
    invocations = documented_invocations()
    assert {sub for _, sub, _ in invocations} >= {"serve", "simulate", "certs", "manifests", "version"}
    unknown = []
    for page, sub, flags in invocations:
        if sub == "version":
            continue
        if sub not in cli.SUBCOMMANDS:
            unknown.append(f"{page}: kueue-webhook {sub}")
            continue
        parser = argparse.ArgumentParser()
        importlib.import_module(cli.SUBCOMMANDS[sub][0]).add_arguments(parser)
        options = {option for action in parser._actions for option in action.option_strings}
        unknown += [f"{page}: kueue-webhook {sub} {flag}" for flag in flags if flag not in options]
    assert unknown == []
