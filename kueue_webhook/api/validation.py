"""Names, label keys and values, label selectors: apimachinery's rules in apimachinery's exact words.

Kueue checks these with k8s.io/apimachinery, and kubectl prints the same sentences for every built-in object,
so a user compares our refusals with those. Every such rule lives here once; ``objects``, the admission
webhooks and the configuration call it. The wording is apimachinery v0.36's (Kueue's dependency), checked
against kube-apiserver v1.36 (see ``tests/unit/api/test_validation.py``). Two generations of helpers coexist
there and differ in one word: ``util/validation`` (``IsDNS1123Subdomain``, ``IsDNS1123Label``: names)
measures in "characters", the newer ``api/validate/content`` (``IsLabelKey``, ``IsLabelValue``: label keys,
annotation keys, label values, and the DNS prefix of a key) in "bytes". Lengths are bytes either way, as Go's
``len`` counts them.

Label selectors follow ``metav1validation.ValidateLabelSelector`` with default options (Kueue's
ClusterQueue ``namespaceSelector``, its configuration's ``managedJobsNamespaceSelector``): ``matchLabels``
as ``ValidateLabels``; each ``matchExpressions`` entry: its operator (``In``/``NotIn`` need values,
``Exists``/``DoesNotExist`` forbid them, anything else is "not a valid selector operator"), then its key as
a label key, then each value as a label value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.errors import FieldError

__all__ = [
    "DNS1123_SUBDOMAIN_PATTERN",
    "dns1035_label_problems",
    "dns1123_label_problems",
    "dns1123_subdomain_problems",
    "label_key_problems",
    "label_value_problems",
    "schema_name_errors",
    "string_map",
    "validate_annotation_keys",
    "validate_annotations_field",
    "validate_label_name",
    "validate_label_selector",
    "validate_labels",
    "validate_labels_field",
]

_DNS1123_LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FORMAT = rf"{_DNS1123_LABEL_FORMAT}(\.{_DNS1123_LABEL_FORMAT})*"
#: how Kueue's CRDs constrain a reference to another object by name (with ``maxLength: 253``)
DNS1123_SUBDOMAIN_PATTERN = f"^{_DNS1123_SUBDOMAIN_FORMAT}$"
_LABEL_KEY_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FORMAT = f"({_LABEL_KEY_NAME_FORMAT})?"

# matched whole (``fullmatch``): Go's ``$`` never matches before a trailing newline, Python's does
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FORMAT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FORMAT)
_LABEL_KEY_NAME = re.compile(_LABEL_KEY_NAME_FORMAT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FORMAT)

_DNS1123_LABEL_MAX = 63
_DNS1123_SUBDOMAIN_MAX = 253
_LABEL_KEY_NAME_MAX = 63
_LABEL_VALUE_MAX = 63
_ANNOTATIONS_MAX_BYTES = 256 * 1024

_DNS1123_LABEL_WORDS = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character"
)
_DNS1035_LABEL_WORDS = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_WORDS = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
_LABEL_KEY_WORDS = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)
_LABEL_VALUE_WORDS = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)


def _regex_error(words: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the rule, the examples (each followed by ", ", joined by " or "), the
    regex."""
    quoted = " or ".join(f"'{example}', " for example in examples)
    return f"{words} (e.g. {quoted}regex used for validation is '{fmt}')"


def _too_long(limit: int, unit: str) -> str:
    """``MaxLenError``: "characters" in ``util/validation``, "bytes" in ``api/validate/content``."""
    return f"must be no more than {limit} {unit}"


def _size(value: str) -> int:
    return len(value.encode())


@dataclass(frozen=True, slots=True)
class _Syntax:
    """One of apimachinery's string rules: a most length (in bytes, as Go's ``len`` counts) and a regex,
    with the words and examples its ``RegexError`` prints."""

    limit: int
    regex: re.Pattern[str]
    words: str
    examples: tuple[str, ...]

    def regex_error(self) -> str:
        return _regex_error(self.words, self.regex.pattern, *self.examples)

    def problems(self, value: str, unit: str) -> list[str]:
        """Too long (in ``unit``'s word), then not matching: each as its own sentence."""
        problems: list[str] = []
        if _size(value) > self.limit:
            problems.append(_too_long(self.limit, unit))
        if not self.regex.fullmatch(value):
            problems.append(self.regex_error())
        return problems


_SUBDOMAIN = _Syntax(_DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_WORDS, ("example.com",))
_LABEL = _Syntax(_DNS1123_LABEL_MAX, _DNS1123_LABEL, _DNS1123_LABEL_WORDS, ("my-name", "123-abc"))
_LABEL_1035 = _Syntax(
    _DNS1123_LABEL_MAX, re.compile("[a-z]([-a-z0-9]*[a-z0-9])?"), _DNS1035_LABEL_WORDS, ("my-name", "abc-123")
)
_KEY_NAME = _Syntax(_LABEL_KEY_NAME_MAX, _LABEL_KEY_NAME, _LABEL_KEY_WORDS, ("MyName", "my.name", "123-abc"))
_VALUE = _Syntax(_LABEL_VALUE_MAX, _LABEL_VALUE, _LABEL_VALUE_WORDS, ("MyValue", "my_value", "12345"))


# -- single values: the problems as sentences, for callers that phrase the error themselves ---------------


def dns1123_subdomain_problems(value: str) -> list[str]:
    """``util/validation.IsDNS1123Subdomain``: object names, references by name."""
    return _SUBDOMAIN.problems(value, "characters")


def dns1123_label_problems(value: str) -> list[str]:
    """``util/validation.IsDNS1123Label``: namespace names."""
    return _LABEL.problems(value, "characters")


def dns1035_label_problems(value: str) -> list[str]:
    """``util/validation.IsDNS1035Label``: Service names."""
    return _LABEL_1035.problems(value, "characters")


def _key_prefix_problems(prefix: str) -> list[str]:
    """``content.IsDNS1123Subdomain`` on the prefix of a label key (its length in bytes)."""
    if not prefix:
        return ["prefix part must be non-empty"]
    return [f"prefix part {problem}" for problem in _SUBDOMAIN.problems(prefix, "bytes")]


def label_key_problems(value: str) -> list[str]:
    """``content.IsLabelKey`` (formerly ``IsQualifiedName``): label and annotation keys, taint and
    toleration keys, resource names. An optional DNS-subdomain prefix and '/', then a name of at most 63."""
    prefix, slash, name = value.partition("/")
    if not slash:
        prefix, name = "", value
    elif "/" in name:
        return [
            f"a valid label key {_KEY_NAME.regex_error()} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems = _key_prefix_problems(prefix) if slash else []
    if not name:
        problems.append("name part must be non-empty")
    return problems + [f"name part {problem}" for problem in _KEY_NAME.problems(name, "bytes")]


def label_value_problems(value: str) -> list[str]:
    """``content.IsLabelValue``: label values, taint values. Empty is a valid value."""
    return _VALUE.problems(value, "bytes")


# -- fields: ``field.ErrorList`` as apimachinery's validators return it -----------------------------------


def validate_label_name(key: str, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName``: one ``Invalid value`` per problem, on ``path``."""
    return [FieldError.invalid(path, key, problem) for problem in label_key_problems(key)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabels``: every bad key and value, reported on the map itself."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors += validate_label_name(key, path)
        errors += [FieldError.invalid(path, value, problem) for problem in label_value_problems(value)]
    return errors


def validate_annotation_keys(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """``apimachinery/pkg/api/validation.ValidateAnnotations``: keys checked lower-cased (reported as
    written), and 256 KiB of keys and values in all."""
    errors: list[FieldError] = []
    for key in annotations:
        errors += [FieldError.invalid(path, key, problem) for problem in label_key_problems(key.lower())]
    if sum(_size(k) + _size(v) for k, v in annotations.items()) > _ANNOTATIONS_MAX_BYTES:
        errors.append(FieldError.too_long(path, _ANNOTATIONS_MAX_BYTES))
    return errors


def string_map(raw: Any, path: str, errors: list[FieldError]) -> dict[str, str]:
    """A ``map[string]string`` field (labels, annotations, a nodeSelector) as the schema takes it: absent is
    empty; anything but a map of strings is an error on the field, and read as empty."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        errors.append(FieldError.invalid(path, None, "must be a map of strings to strings"))
        return {}
    return {str(k): v for k, v in raw.items()}


def validate_labels_field(raw: Any, path: str) -> list[FieldError]:
    """``ValidateLabels`` on a map field as written (a pod template's labels, a nodeSelector): its shape's
    error if any, else every bad key and value, reported on the map."""
    errors: list[FieldError] = []
    labels = string_map(raw, path, errors)
    return errors or validate_labels(labels, path)


def validate_annotations_field(raw: Any, path: str) -> list[FieldError]:
    """``ValidateAnnotations`` on a map field as written: its shape's error if any, else the key rules and
    the size limit."""
    errors: list[FieldError] = []
    annotations = string_map(raw, path, errors)
    return errors or validate_annotation_keys(annotations, path)


def validate_label_selector(selector: Mapping[str, Any], path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelSelector`` with default options, on a selector whose shape the schema
    has already accepted (``matchLabels`` a map of strings; each expression with a string ``key`` and
    ``operator`` and a list of string ``values``)."""
    errors = validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{index}]"
        operator, values = expression.get("operator"), expression.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError.required(
                        f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError.forbidden(
                        f"{where}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(FieldError.invalid(f"{where}.operator", operator, "not a valid selector operator"))
        errors += validate_label_name(expression.get("key", ""), f"{where}.key")
        for value_index, value in enumerate(values):
            errors += [
                FieldError.invalid(f"{where}.values[{value_index}]", value, problem)
                for problem in label_value_problems(value)
            ]
    return errors


# -- the CRD schema's rule on references by name ----------------------------------------------------------


def schema_name_errors(value: str, path: str) -> list[FieldError]:
    """A reference to another object by name, as Kueue's CRDs constrain it (``pattern`` a DNS-1123
    subdomain, ``maxLength: 253``) and kube-apiserver words a schema failure."""
    errors: list[FieldError] = []
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(
            FieldError.invalid(path, value, f"{path} in body should match '{DNS1123_SUBDOMAIN_PATTERN}'")
        )
    if _size(value) > _DNS1123_SUBDOMAIN_MAX:
        errors.append(FieldError.too_long(path, _DNS1123_SUBDOMAIN_MAX))
    return errors
