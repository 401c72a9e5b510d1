"""``kueue_build_info``: one series of value 1 under Kueue's label names, saying which build runs."""

from __future__ import annotations

import platform

import pytest

from kueue_webhook import __version__
from kueue_webhook.control.output.metrics import Metrics


def build_series(metrics: Metrics) -> list[str]:
    return [
        line for line in metrics.exposition().decode().splitlines() if line.startswith("kueue_build_info{")
    ]


def test_one_series_names_the_version_the_runtime_and_the_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUEUE_WEBHOOK_GIT_COMMIT", raising=False)
    monkeypatch.delenv("KUEUE_WEBHOOK_BUILD_DATE", raising=False)
    (line,) = build_series(Metrics())
    assert f'git_version="v{__version__}"' in line
    assert 'git_commit="unknown"' in line and 'build_date="unknown"' in line
    assert f'go_version="python{platform.python_version()}"' in line
    assert f'platform="{platform.system().lower()}/' in line
    assert line.endswith(" 1.0")


def test_the_image_build_names_its_commit_and_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUEUE_WEBHOOK_GIT_COMMIT", "91a6056")
    monkeypatch.setenv("KUEUE_WEBHOOK_BUILD_DATE", "2026-11-28T07:40:00Z")
    (line,) = build_series(Metrics())
    assert 'git_commit="91a6056"' in line and 'build_date="2026-11-28T07:40:00Z"' in line


def test_the_series_stays_when_the_replica_loses_its_lease() -> None:
    metrics = Metrics()
    metrics.forget_role("leader")
    assert len(build_series(metrics)) == 1
