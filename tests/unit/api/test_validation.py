"""Names, label keys and values, label selectors: apimachinery's rules in its exact words.

Every expected message below was read from a real kube-apiserver v1.36.2 (apimachinery v0.36, Kueue's
dependency), by ``kubectl create --dry-run=server`` of built-in objects whose validation calls the same
functions Kueue's webhooks call: a Deployment's ``spec.selector`` (``ValidateLabelSelector``), a ConfigMap's
labels and annotations (``ValidateLabels``, ``ValidateAnnotations``), a Namespace's and a Service's names
(``IsDNS1123Label``, ``IsDNS1123Subdomain``), and a ClusterQueue's ``spec.cohortName`` (the CRD schema).
They are spelled out in full here, so a change of wording anywhere shows as a failure.
"""

from __future__ import annotations

import pytest

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.selectors import LabelSelector, SelectorError, label_selector, parse_label_selector
from kueue_webhook.api.validation import (
    dns1123_label_problems,
    dns1123_subdomain_problems,
    label_key_problems,
    label_value_problems,
    schema_name_errors,
    validate_annotation_keys,
    validate_label_selector,
    validate_labels,
)

NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def texts(errors: list[FieldError]) -> list[str]:
    return [str(error) for error in errors]


# -- label keys (content.IsLabelKey, formerly IsQualifiedName) ------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["app", "kueue.x-k8s.io/queue-name", "nvidia.com/gpu", "A.b_c-1", "x" * 63, "a" * 253 + "/" + "n" * 63],
)
def test_valid_label_keys_have_no_problem(key: str) -> None:
    assert label_key_problems(key) == []


def test_a_label_key_name_part_with_a_forbidden_character() -> None:
    assert label_key_problems("bad key!") == [NAME_PART]


def test_a_label_key_name_part_must_start_and_end_alphanumeric() -> None:
    assert label_key_problems("example.com/-x-") == [NAME_PART]


def test_an_empty_label_key_fails_both_the_emptiness_and_the_format_rule() -> None:
    assert label_key_problems("") == ["name part must be non-empty", NAME_PART]
    assert label_key_problems("pre/") == ["name part must be non-empty", NAME_PART]


def test_a_label_key_name_part_is_at_most_63_bytes() -> None:
    assert label_key_problems("n" * 64) == ["name part must be no more than 63 bytes"]
    assert label_key_problems("é" * 32) == ["name part must be no more than 63 bytes", NAME_PART]


def test_a_label_key_prefix_must_be_a_non_empty_dns_subdomain_of_at_most_253_bytes() -> None:
    assert label_key_problems("/empty-prefix") == ["prefix part must be non-empty"]
    assert label_key_problems("Bad_Prefix/name") == [f"prefix part {SUBDOMAIN}"]
    assert label_key_problems("p" * 254 + "/x") == ["prefix part must be no more than 253 bytes"]


def test_a_label_key_with_two_slashes_is_one_problem_worded_as_a_label_key() -> None:
    assert label_key_problems("a/b/c") == [
        "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
        "and '/' (e.g. 'example.com/MyName')"
    ]


# -- label values (content.IsLabelValue) -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "a", "MyValue", "my_value", "12345", "v" * 63])
def test_valid_label_values_have_no_problem(value: str) -> None:
    assert label_value_problems(value) == []


def test_a_label_value_with_a_forbidden_character() -> None:
    assert label_value_problems("bad value!") == [LABEL_VALUE]
    assert label_value_problems("-bad-") == [LABEL_VALUE]


def test_a_label_value_is_at_most_63_bytes() -> None:
    assert label_value_problems("v" * 64) == ["must be no more than 63 bytes"]


def test_a_trailing_newline_is_not_a_valid_label_value() -> None:
    """Go's ``$`` does not match before a final newline; a Python ``$`` would."""
    assert label_value_problems("ok\n") == [LABEL_VALUE]
    assert label_key_problems("ok\n") == [NAME_PART]


# -- names (util/validation: "characters") ----------------------------------------------------------------


def test_dns1123_subdomain_names() -> None:
    assert dns1123_subdomain_problems("team-a.queue") == []
    assert dns1123_subdomain_problems("Bad_Name") == [SUBDOMAIN]
    assert dns1123_subdomain_problems("a" * 250 + ".com") == ["must be no more than 253 characters"]


def test_dns1123_label_names() -> None:
    assert dns1123_label_problems("team-a") == []
    assert dns1123_label_problems("Bad_NS") == [DNS_LABEL]
    assert dns1123_label_problems("team.a") == [DNS_LABEL]
    assert dns1123_label_problems("n" * 64) == ["must be no more than 63 characters"]


# -- maps: ValidateLabels, ValidateAnnotations -----------------------------------------------------------


def test_labels_are_reported_on_the_map_key_problems_then_value_problems() -> None:
    assert texts(validate_labels({"bad key!": "bad value!", "ok": "fine"}, "spec.nodeLabels")) == [
        f'spec.nodeLabels: Invalid value: "bad key!": {NAME_PART}',
        f'spec.nodeLabels: Invalid value: "bad value!": {LABEL_VALUE}',
    ]


def test_annotation_keys_are_checked_lower_cased_but_reported_as_written() -> None:
    assert validate_annotation_keys({"Example.COM/Key": "x"}, "metadata.annotations") == []
    assert texts(validate_annotation_keys({"Bad Key": "x"}, "metadata.annotations")) == [
        f'metadata.annotations: Invalid value: "Bad Key": {NAME_PART}'
    ]


def test_annotations_are_at_most_256_kib_in_all() -> None:
    assert texts(validate_annotation_keys({"a": "x" * (256 * 1024)}, "metadata.annotations")) == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]


# -- label selectors: ValidateLabelSelector with default options ------------------------------------------


def test_a_selector_with_a_bad_match_labels_key() -> None:
    assert texts(validate_label_selector({"matchLabels": {"bad key!": "x"}}, "spec.namespaceSelector")) == [
        f'spec.namespaceSelector.matchLabels: Invalid value: "bad key!": {NAME_PART}'
    ]


def test_a_selector_with_a_bad_match_labels_value() -> None:
    assert texts(validate_label_selector({"matchLabels": {"team": "a b"}}, "spec.namespaceSelector")) == [
        f'spec.namespaceSelector.matchLabels: Invalid value: "a b": {LABEL_VALUE}'
    ]


def test_an_unknown_operator_is_not_a_valid_selector_operator() -> None:
    selector = {"matchExpressions": [{"key": "x", "operator": "Bogus", "values": ["a"]}]}
    assert texts(validate_label_selector(selector, "s")) == [
        's.matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator'
    ]


def test_in_and_not_in_need_values() -> None:
    for operator in ("In", "NotIn"):
        selector = {"matchExpressions": [{"key": "y", "operator": operator}]}
        assert texts(validate_label_selector(selector, "s")) == [
            "s.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'"
        ]


def test_exists_and_does_not_exist_forbid_values() -> None:
    for operator in ("Exists", "DoesNotExist"):
        selector = {"matchExpressions": [{"key": "z", "operator": operator, "values": ["a"]}]}
        assert texts(validate_label_selector(selector, "s")) == [
            "s.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'"
        ]


def test_an_expression_reports_its_operator_then_its_key_then_each_value() -> None:
    selector = {
        "matchExpressions": [{"key": "bad key!", "operator": "NotIn", "values": ["ok", "bad value!"]}]
    }
    assert texts(validate_label_selector(selector, "s")) == [
        f's.matchExpressions[0].key: Invalid value: "bad key!": {NAME_PART}',
        f's.matchExpressions[0].values[1]: Invalid value: "bad value!": {LABEL_VALUE}',
    ]
    selector = {"matchExpressions": [{"key": "", "operator": "Maybe"}]}
    assert texts(validate_label_selector(selector, "s")) == [
        's.matchExpressions[0].operator: Invalid value: "Maybe": not a valid selector operator',
        's.matchExpressions[0].key: Invalid value: "": name part must be non-empty',
        f's.matchExpressions[0].key: Invalid value: "": {NAME_PART}',
    ]


def test_a_valid_selector_parses_and_matches() -> None:
    parsed = label_selector(
        {
            "matchLabels": {"team": "a"},
            "matchExpressions": [
                {"key": "tier", "operator": "NotIn", "values": ["batch"]},
                {"key": "kueue.x-k8s.io/enabled", "operator": "Exists"},
            ],
        },
        "spec.namespaceSelector",
    )
    assert isinstance(parsed, LabelSelector)
    assert parsed.matches({"team": "a", "kueue.x-k8s.io/enabled": ""})
    assert not parsed.matches({"team": "a", "tier": "batch", "kueue.x-k8s.io/enabled": ""})
    assert not parsed.matches({"team": "a"})


def test_a_selector_missing_a_required_field_fails_the_schema_first() -> None:
    """``key`` and ``operator`` are required by the schema, which kube-apiserver checks before any webhook:
    the webhook's rules are not reported then."""
    parsed = label_selector({"matchExpressions": [{"operator": "In"}]}, "s")
    assert texts(parsed) == ["s.matchExpressions[0].key: Required value"]  # type: ignore[arg-type]


def test_parse_label_selector_refuses_an_invalid_selector_with_every_problem() -> None:
    with pytest.raises(SelectorError) as refused:
        parse_label_selector({"matchLabels": {"bad key!": "bad value!"}}, "selector")
    assert texts(refused.value.errors) == [
        f'selector.matchLabels: Invalid value: "bad key!": {NAME_PART}',
        f'selector.matchLabels: Invalid value: "bad value!": {LABEL_VALUE}',
    ]


# -- references by name: the CRD schema's pattern and maxLength ------------------------------------------


def test_a_reference_is_checked_by_the_crd_schema_pattern_and_length() -> None:
    assert schema_name_errors("team-a", "spec.cohortName") == []
    assert texts(schema_name_errors("Bad_Cohort", "spec.cohortName")) == [
        'spec.cohortName: Invalid value: "Bad_Cohort": spec.cohortName in body should match '
        "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'"
    ]
    assert texts(schema_name_errors("c" * 254, "spec.cohortName")) == [
        "spec.cohortName: Too long: may not be more than 253 bytes"
    ]
