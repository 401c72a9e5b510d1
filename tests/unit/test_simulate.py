"""``kueue-webhook simulate``: the seed demo, JSON output, input errors, options."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kueue_webhook.cli import main
from kueue_webhook.simulate import parse_duration

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "manifests" / "examples" / "seed.yaml"
CPU_MEMORY = ROOT / "manifests" / "examples" / "cpu-memory.yaml"


def test_seed_shows_thirty_two_admitted_and_the_thirty_third_pending(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(SEED)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("job-train-")]
    assert len(rows) == 33
    assert sum(1 for row in rows if "research" in row and "True" in row) == 32
    assert (
        "team-a/job-train-33-153ec (position 1): WaitingForQuota: couldn't assign flavors to pod set main: "
        "insufficient unused quota for nvidia.com/gpu in flavor gpu-nodes, 2 more needed"
    ) in out
    assert "admitted 32   pending 1" in out
    assert "64 / 64" in out


def test_seed_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-o", "json", str(SEED)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sum(1 for w in report["workloads"] if w["admitted"]) == 32
    (queue,) = report["clusterQueues"]
    assert (queue["admitted"], queue["pending"]) == (32, 1)
    assert queue["usage"] == [
        {"flavor": "gpu-nodes", "resource": "nvidia.com/gpu", "used": "64", "nominal": "64", "percent": 100.0}
    ]
    assert queue["status"]["flavorsUsage"][0]["resources"][0]["total"] == "64"


def test_seed_later_the_last_job_runs_once_others_finish(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-o", "json", "--at", "31m", str(SEED)]) == 0
    report = json.loads(capsys.readouterr().out)
    last = next(w for w in report["workloads"] if w["name"].startswith("job-train-33-"))
    assert last["admitted"] and not last["finished"]
    (queue,) = report["clusterQueues"]
    assert queue["waitSeconds"]["max"] == pytest.approx(30 * 60 - 320)


def test_cpu_memory_example_admits_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-o", "json", str(CPU_MEMORY)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [w["admitted"] for w in report["workloads"]] == [True, True]
    usage = {u["resource"]: u["used"] for u in report["clusterQueues"][0]["usage"]}
    assert usage == {"cpu": "3", "memory": "6Gi"}


def test_invalid_manifest_names_the_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
        "spec: {queueingStrategy: Sometimes}\n"
    )
    assert main(["simulate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: document 2 (ClusterQueue/cq): spec.queueingStrategy: Unsupported value" in err


def test_bad_simulation_annotation_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SEED.read_text().replace('arrival: "0s"', 'arrival: "soon"', 1)
    path = tmp_path / "seed.yaml"
    path.write_text(text)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "document 5 (Job/train-01): metadata.annotations[simulate.kueue-webhook/arrival]" in err


def test_missing_file_and_broken_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "absent.yaml")]) == 2
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [unclosed\n")
    assert main(["simulate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "absent.yaml" in err and "not valid YAML" in err


def test_plot_without_matplotlib_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["simulate", "--plot", "usage.png", str(SEED)]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_plot_draws_one_panel_per_cluster_queue(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    one, two = tmp_path / "seed.png", tmp_path / "preemption.png"
    assert main(["simulate", "--plot", str(one), str(SEED)]) == 0
    assert main(["simulate", "--plot", str(two), str(SEED.parent / "preemption.yaml")]) == 0
    (width_one, height_one), (width_two, height_two) = _png_size(one), _png_size(two)
    assert width_one == width_two
    assert height_two > 1.5 * height_one  # the preemption example has two ClusterQueues, the seed one


def test_help_documents_the_simulation_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert "simulate.kueue-webhook/arrival" in out and "simulate.kueue-webhook/runtime" in out


def test_no_progress_bar_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SEED)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("2m", 120), ("1h30m", 5400), ("500ms", 0.5), ("1.5h", 5400), ("45", 45), (12, 12)],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "-3s", "1x"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_exact_instants_and_one_second_steps_agree_on_the_seed(capsys: pytest.CaptureFixture[str]) -> None:
    reports = []
    for resolution in ("0", "1s"):
        assert main(["simulate", "-o", "json", "--resolution", resolution, str(SEED)]) == 0
        report = json.loads(capsys.readouterr().out)
        reports.append([(w["name"], w["admitted"], w.get("pending")) for w in report["workloads"]])
    assert reports[0] == reports[1]


def test_bad_resolution_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--resolution", "often", str(SEED)]) == 2
    assert "--resolution" in capsys.readouterr().err


def test_progress_bar_draws_on_one_line() -> None:
    from io import StringIO

    from kueue_webhook.simulate.cli import _Progress

    stream = StringIO()
    progress = _Progress(stream)
    progress(500, 1000)
    progress(1000, 1000)
    assert stream.getvalue() == (
        "\rreplaying [###############---------------] 500/1000 jobs"
        "\rreplaying [##############################] 1000/1000 jobs\n"
    )


def test_usage_timeline_follows_admissions_and_finishes() -> None:
    from kueue_webhook.simulate import load_scenario, replay

    result = replay(load_scenario([SEED]), record_timeline=True)
    gpus = [
        usage.get(("gpu-nodes", "nvidia.com/gpu"), 0) // 10**9 for _, usage in result.timeline["research"]
    ]
    assert max(gpus) == 64
    assert gpus[:2] == [0, 2] and gpus[-1] == 0  # empty, the first Job at once, all released at the end
