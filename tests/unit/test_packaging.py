"""What ``pip install`` gives: one version everywhere, and the manifests printed from the package.

The version is written once, as the package's ``__version__``; pyproject reads it from there, and what
cannot read it (the image tag in the Deployment and in the install commands) is checked against it here.
``kueue-webhook manifests`` reads the package's files through importlib.resources, so it is run here against
a zip of them as well, which is how a zipped install presents them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import io
import json
import re
import shutil
import subprocess
import tomllib
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from kueue_webhook import __version__, cli, manifests

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = manifests.__package__ or ""
#: an image reference to this project's image, with its tag
IMAGE = re.compile(r"\bkueue-webhook:(\d[\w.+-]*)")


def command(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["manifests", *argv])
    return code, out.getvalue(), err.getvalue()


def objects(text: str) -> list[dict[str, object]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_pyproject_takes_its_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    source = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, _, attribute = source.rpartition(".")
    assert getattr(importlib.import_module(module), attribute) == __version__


def test_the_installed_distribution_has_the_package_version() -> None:
    assert importlib.metadata.version("kueue-webhook") == __version__


def test_every_image_tag_written_in_the_repository_is_the_package_version() -> None:
    places = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "manifests").rglob("*")]
    places += [p for p in (ROOT / "charts").rglob("*") if p.is_file()] if (ROOT / "charts").exists() else []
    tags = {
        (str(path.relative_to(ROOT)), tag)
        for path in places
        if path.is_file()
        for tag in IMAGE.findall(path.read_text(errors="replace"))
    }
    assert {path for path, _ in tags} >= {"manifests/controller/deployment.yaml", "README.md"}
    assert {(path, tag) for path, tag in tags if tag != __version__} == set()


def test_the_package_says_it_is_typed() -> None:
    assert (ROOT / PACKAGE / "py.typed").is_file()


def test_list_names_the_crds_the_install_and_the_examples() -> None:
    code, out, _ = command("--list")
    listed = out.splitlines()
    assert code == 0
    assert {"./", "crds/", "controller/", "roles/", "crds/workloads.yaml", "examples/seed.yaml"} <= set(
        listed
    )
    in_checkout = {
        str(p.relative_to(ROOT / "manifests"))
        for p in (ROOT / "manifests").rglob("*.yaml")
        if p.name != "kustomization.yaml"
    }
    assert {name for name in listed if not name.endswith("/")} == in_checkout


def test_a_file_is_printed_as_shipped() -> None:
    code, out, _ = command("examples/seed.yaml")
    assert code == 0
    assert out == (ROOT / "manifests" / "examples" / "seed.yaml").read_text()


def test_a_directory_prints_the_files_its_kustomization_lists_in_order() -> None:
    code, out, _ = command("crds")
    assert code == 0
    files = yaml.safe_load((ROOT / "manifests" / "crds" / "kustomization.yaml").read_text())["resources"]
    expected = [doc for name in files for doc in objects((ROOT / "manifests" / "crds" / name).read_text())]
    assert objects(out) == expected
    assert len(expected) == 10


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_the_whole_install_is_what_kustomize_builds() -> None:
    code, out, _ = command("./")
    built = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "manifests")], check=True, capture_output=True, text=True
    ).stdout

    def key(doc: dict[str, object]) -> str:
        return json.dumps(doc, sort_keys=True)  # aliases expanded, as kustomize writes them

    assert code == 0
    assert sorted(map(key, objects(out))) == sorted(map(key, objects(built)))


def test_a_kustomization_with_patches_is_refused_with_the_command_to_use() -> None:
    code, out, err = command("controller/local")
    assert (code, out) == (2, "")
    assert "has patches" in err and "kubectl apply -k" in err


@pytest.mark.parametrize("name", ["nope.yaml", "../pyproject.toml", "/etc/passwd", "image/Dockerfile"])
def test_a_name_that_is_not_shipped_is_refused(name: str) -> None:
    code, out, err = command(name)
    assert (code, out) == (2, "")
    assert err.startswith("kueue-webhook manifests: ")


def test_list_and_a_name_together_are_bad_usage() -> None:
    with pytest.raises(SystemExit) as exited, redirect_stderr(io.StringIO()):
        cli.main(["manifests", "--list", "crds"])
    assert exited.value.code == 2


def test_the_manifests_read_from_a_zipped_package_as_from_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "package.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in (ROOT / "manifests").rglob("*.yaml"):
            zipped.write(path, f"{manifests.DIRECTORY}/{path.relative_to(ROOT / 'manifests')}")
    from_files = (manifests.names(), manifests.render("./"))
    with zipfile.ZipFile(archive) as zipped:
        monkeypatch.setattr(manifests, "shipped", lambda: zipfile.Path(zipped, f"{manifests.DIRECTORY}/"))
        assert (manifests.names(), manifests.render("./")) == from_files
