"""The webhook entry the leader keeps for declared kinds: a copy of the shipped integrations entry with the
declared resources as its rules, removed when nothing is declared, untouched when already right."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations.webhook_entries import declared_rules, with_declared_entry
from tests.crds.declared_kind import config_yaml

SHIPPED: list[dict[str, Any]] = [
    {"name": "mjob.kueue.x-k8s.io", "clientConfig": {"url": "https://h/mutate-batch-v1-job"}, "rules": []},
    {
        "name": "mintegrations.kueue.x-k8s.io",
        "clientConfig": {"url": "https://h/mutate", "caBundle": "Q0E="},
        "failurePolicy": "Fail",
        "namespaceSelector": {"matchLabels": {"team": "ml"}},
        "rules": [{"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"]}],
    },
]


def rules() -> list[dict[str, Any]]:
    config = parse_configuration(config_yaml())
    assert isinstance(config, Configuration)
    return declared_rules(config.integrations)


def test_the_entry_copies_the_integrations_entry_with_the_declared_resources_as_rules() -> None:
    updated = with_declared_entry(
        SHIPPED, entry="mdeclared.kueue.x-k8s.io", template="mintegrations.kueue.x-k8s.io", rules=rules()
    )
    assert isinstance(updated, list)
    assert [h["name"] for h in updated] == [
        "mjob.kueue.x-k8s.io",
        "mintegrations.kueue.x-k8s.io",
        "mdeclared.kueue.x-k8s.io",
    ]
    entry = updated[2]
    assert {k: v for k, v in entry.items() if k not in ("name", "rules")} == {
        k: v for k, v in SHIPPED[1].items() if k not in ("name", "rules")
    }
    assert entry["rules"] == [
        {
            "apiGroups": ["example.com"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["trainingruns"],
            "scope": "Namespaced",
        }
    ]
    # already right: nothing to write; nothing declared: the entry goes
    again = with_declared_entry(
        updated, entry="mdeclared.kueue.x-k8s.io", template="mintegrations.kueue.x-k8s.io", rules=rules()
    )
    assert again is None
    removed = with_declared_entry(
        updated, entry="mdeclared.kueue.x-k8s.io", template="mintegrations.kueue.x-k8s.io", rules=[]
    )
    assert removed == SHIPPED


def test_built_in_kinds_get_no_rule_and_a_missing_template_is_explained() -> None:
    config = parse_configuration("integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}")
    assert isinstance(config, Configuration)
    assert declared_rules(config.integrations) == []
    assert (
        with_declared_entry(
            SHIPPED, entry="mdeclared.kueue.x-k8s.io", template="mintegrations.kueue.x-k8s.io", rules=[]
        )
        is None
    )
    assert with_declared_entry(
        SHIPPED[:1], entry="mdeclared.kueue.x-k8s.io", template="mintegrations.kueue.x-k8s.io", rules=rules()
    ) == (
        "no webhook entry mintegrations.kueue.x-k8s.io to copy the client configuration of "
        "mdeclared.kueue.x-k8s.io from"
    )
