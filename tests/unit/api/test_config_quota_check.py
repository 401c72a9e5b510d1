"""``resources`` as Kueue's Configuration has it: ``excludeResourcePrefixes`` and ``quotaCheckStrategy``
(Kueue's rules and words, pkg/config/validation.go), ``transformations`` accepted with a warning."""

from __future__ import annotations

from tests.unit.api.test_config import parsed, rejected


def test_ignore_undeclared_is_read() -> None:
    config = parsed("resources: {quotaCheckStrategy: IgnoreUndeclared}")
    assert config.quota_check_strategy == "IgnoreUndeclared"
    assert parsed("{}").quota_check_strategy == "BlockUndeclared"


def test_an_unknown_strategy_is_refused_with_the_supported_ones() -> None:
    assert rejected("resources: {quotaCheckStrategy: Sometimes}") == (
        'resources.quotaCheckStrategy: Unsupported value: "Sometimes": supported values: "IgnoreUndeclared", '
        '"BlockUndeclared"',
    )


def test_excluded_prefixes_do_not_go_with_ignore_undeclared() -> None:
    assert rejected(
        "resources: {quotaCheckStrategy: IgnoreUndeclared, excludeResourcePrefixes: [example.com/]}"
    ) == (
        "resources.quotaCheckStrategy: excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
        "IgnoreUndeclared",
    )


def test_transformations_are_accepted_and_said_to_do_nothing() -> None:
    config = parsed("resources: {transformations: [{input: nvidia.com/mig-1g.5gb, strategy: Replace}]}")
    assert config.warnings == (
        "resources.transformations: accepted for compatibility with Kueue, has no effect here",
    )


def test_device_class_mappings_are_read_with_kueues_rules() -> None:
    config = parsed(
        "resources: {deviceClassMappings: [{name: example.com/gpus, deviceClassNames: [gpu.example.com, "
        "gpu2.example.com]}, {name: example.com/fpgas, deviceClassNames: [fpga.example.com]}]}"
    )
    assert config.device_class_mappings == (
        ("fpga.example.com", "example.com/fpgas"),
        ("gpu.example.com", "example.com/gpus"),
        ("gpu2.example.com", "example.com/gpus"),
    )
    assert config.warnings == ()
    assert rejected(
        "resources: {deviceClassMappings: [{name: a, deviceClassNames: [g]}, "
        "{name: b, deviceClassNames: [g]}, {name: b, deviceClassNames: []}]}"
    ) == (
        'resources.deviceClassMappings[1].deviceClassNames[0]: Invalid value: "g": device class already '
        "mapped to resource a",
        'resources.deviceClassMappings[2].name: Duplicate value: "b"',
        "resources.deviceClassMappings[2].deviceClassNames: Required value: at least one device class name "
        "is required",
    )
