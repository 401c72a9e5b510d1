"""kueuectl's command line is accepted word for word; usage errors are kubectl's (``error: ...``, exit 1)."""

from __future__ import annotations

import pytest

from kueue_webhook.kubectl_kueue import main
from kueue_webhook.kubectl_kueue.arguments import UsageError, parse, passthrough, resource_of


@pytest.mark.parametrize(
    ("word", "resource"),
    [
        ("workload", "workload"),
        ("workloads", "workload"),
        ("wl", "workload"),
        ("kwl", "workload"),
        ("kueueworkloads", "workload"),
        ("LQ", "localqueue"),
        ("localqueues", "localqueue"),
        ("cq", "clusterqueue"),
        ("rf", "resourceflavor"),
        ("flavors", "resourceflavor"),
        ("jobs", None),
    ],
)
def test_kueuectls_resource_names_aliases_and_plurals(word: str, resource: str | None) -> None:
    assert resource_of(word) == resource


def test_list_workloads_takes_kueuectls_filters_and_global_flags_anywhere() -> None:
    args = parse(
        ["-n", "team-a", "list", "kwl", "-q", "lq1", "-c", "cq1", "--status", "pending", "-l", "a=b"]
    )
    assert (args.command, args.resource, args.namespace) == ("list", "workload", "team-a")
    assert (args.localqueue, args.clusterqueue, args.selector) == ("lq1", "cq1", "a=b")
    assert args.status == frozenset({"pending"})
    late = parse(["list", "wl", "--namespace", "ns2", "--kubeconfig", "/k", "--context", "c", "-A"])
    assert (late.namespace, late.kubeconfig, late.context, late.all_namespaces) == ("ns2", "/k", "c", True)
    assert parse(["list", "wl", "--status", "ALL", "--status", "admitted"]).status == frozenset()
    assert parse(["list", "wl", "--status", "QuotaReserved"]).status == frozenset({"quotaReserved"})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["list", "wl", "--status", "running"],
            'invalid status value (running). Must be "all", "pending", "admitted" or "finished"',
        ),
        (["list", "cq", "--active", "true", "--active", "false"], "only one active flag can be provided"),
        (["list", "cq", "--active", "maybe"], "invalid argument 'maybe' for --active: must be true or false"),
        (
            ["stop", "lq", "q", "--dry-run", "later"],
            'invalid dry-run value (later). Must be "none", "server", or "client"',
        ),
        (
            ["list", "rf", "-o", "wide"],
            'unable to match a printer suitable for the output format "wide", allowed formats are: '
            "json,name,yaml",
        ),
        (
            ["why", "job/x", "-o", "name"],
            'unable to match a printer suitable for the output format "name", allowed formats are: json,yaml',
        ),
        (["create", "lq", "q"], 'required flag(s) "clusterqueue" not set'),
        (["delete", "wl"], "requires at least 1 arg(s), only received 0"),
        (["delete", "wl", "a", "--all"], "name cannot be provided when a selector is specified"),
        (["delete", "wl", "a", "-A"], "a resource cannot be retrieved by name across all namespaces"),
    ],
)
def test_kueuectls_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(argv)
    assert str(caught.value) == message


def test_usage_errors_exit_1_with_kubectls_error_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "wl", "--bogus"]) == 1
    assert capsys.readouterr().err == "error: unrecognized arguments: --bogus\n"
    assert main(["stop", "pods", "x"]) == 1
    assert capsys.readouterr().err.startswith("error: argument resource: invalid choice: 'pods'")


def test_stop_keeps_already_running_only_for_queues() -> None:
    assert parse(["stop", "cq", "research", "--keep-already-running"]).keep_already_running is True
    assert parse(["stop", "lq", "q"]).keep_already_running is False
    with pytest.raises(UsageError):
        parse(["stop", "wl", "w", "--keep-already-running"])
    assert not hasattr(parse(["resume", "cq", "research"]), "keep_already_running")


def test_get_describe_edit_patch_and_delete_of_queues_go_to_kubectl_with_the_type_in_full() -> None:
    assert passthrough(["get", "cq", "-o", "yaml"]) is not None
    assert passthrough(["-n", "x", "describe", "kwl", "job-a-1"]).args == (  # type: ignore[union-attr]
        "-n",
        "x",
        "describe",
        "workloads.kueue.x-k8s.io",
        "job-a-1",
    )
    assert passthrough(["get", "lq/team-a-gpu"]).args == ("get", "localqueues.kueue.x-k8s.io/team-a-gpu")  # type: ignore[union-attr]
    assert passthrough(["delete", "rf", "gpu"]).args == ("delete", "resourceflavors.kueue.x-k8s.io", "gpu")  # type: ignore[union-attr]
    # delete workload is kueuectl's own command (it deletes the Jobs); other commands are not passed through
    assert passthrough(["delete", "wl", "w"]) is None
    assert passthrough(["list", "wl"]) is None
    with pytest.raises(UsageError, match='unknown resource "pods" for "get"'):
        passthrough(["get", "pods"])
