"""Printing (``-o``, NamePrinter lines, colour) and kubectl's namespace and error rules."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml

from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kubeconfig import KubeconfigError
from kueue_webhook.kubectl_kueue.output import colour_enabled, dump, name_line
from kueue_webhook.kubectl_kueue.session import context_namespace, describe_error
from kueue_webhook.kubectl_kueue.writes import stop_patch

WL = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w"}}


def test_name_lines_are_cli_runtimes_name_printer() -> None:
    assert name_line(WL) == "workload.kueue.x-k8s.io/w"
    assert name_line(WL, "stopped") == "workload.kueue.x-k8s.io/w stopped"
    assert name_line(WL, "created", "server") == "workload.kueue.x-k8s.io/w created (server dry run)"
    assert name_line({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}) == "pod/p"


def test_json_is_indented_by_4_and_yaml_sorted() -> None:
    assert dump({"b": 1, "a": [1]}, "json") == '{\n    "b": 1,\n    "a": [\n        1\n    ]\n}\n'
    assert yaml.safe_load(dump({"b": 1, "a": 2}, "yaml")) == {"a": 2, "b": 1}
    assert dump({"b": 1, "a": 2}, "yaml") == "a: 2\nb: 1\n"
    assert json.loads(dump(WL, "json")) == WL


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    assert colour_enabled(Terminal(), {}) is True
    assert colour_enabled(Terminal(), {"NO_COLOR": "1"}) is False
    assert colour_enabled(Terminal(), {"NO_COLOR": ""}) is True
    assert colour_enabled(io.StringIO(), {}) is False


def test_stop_and_resume_patch_kueuectls_fields() -> None:
    assert stop_patch("workload", stop=True) == {"spec": {"active": False}}
    assert stop_patch("workload", stop=False) == {"spec": {"active": True}}
    assert stop_patch("localqueue", stop=True) == {"spec": {"stopPolicy": "HoldAndDrain"}}
    assert stop_patch("clusterqueue", stop=True, keep_running=True) == {"spec": {"stopPolicy": "Hold"}}
    assert stop_patch("clusterqueue", stop=False) == {"spec": {"stopPolicy": "None"}}


def kubeconfig(path: Path, *contexts: tuple[str, str | None], current: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": n, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
                    for n, ns in contexts
                ],
                "current-context": current,
            }
        )
    )
    return path


def test_the_namespace_is_the_selected_contexts_as_kubectl_picks_it(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", ("one", "team-a"), ("two", None), current="one")
    second = kubeconfig(tmp_path / "b", ("three", "team-c"), current="three")
    no_sa = tmp_path / "no-service-account"
    assert context_namespace(str(first), None, {}, no_sa) == "team-a"
    assert context_namespace(str(first), "two", {}, no_sa) == "default"
    # KUBECONFIG files merged: the first current-context wins; a context of the second file can be chosen
    env = {"KUBECONFIG": f"{second}:{first}"}
    assert context_namespace(None, None, env, no_sa) == "team-c"
    assert context_namespace(None, "one", env, no_sa) == "team-a"
    assert context_namespace(None, None, {"HOME": str(tmp_path)}, no_sa) == "default"


def test_errors_read_as_kubectls() -> None:
    missing = ApiError(status=404, reason="NotFound", message='jobs.batch "x" not found')
    assert describe_error(missing) == 'Error from server (NotFound): jobs.batch "x" not found'
    forbidden = ApiError(
        status=403, reason="Forbidden", message='workloads.kueue.x-k8s.io is forbidden: User "a"'
    )
    assert describe_error(forbidden).startswith("Error from server (Forbidden): workloads.kueue.x-k8s.io")
    assert describe_error(KubeconfigError("/k: no context named 'x'")) == "error: /k: no context named 'x'"
