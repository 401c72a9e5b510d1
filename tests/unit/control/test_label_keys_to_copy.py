"""``integrations.labelKeysToCopy`` (Kueue's): the labels of a queued object that its Workload gets when it
is made; those the object does not have are left out, and later changes of the object's labels are not
copied (the Workload keeps what it was made with)."""

from __future__ import annotations

from kueue_webhook.api.config import Configuration, ConfigurationErrors, parse_configuration
from kueue_webhook.control.jobs.job_plan import CreateWorkload, plan_job
from tests.unit.control.plans import flavor_lookup, job


def test_the_named_labels_the_job_has_are_copied_to_its_new_workload() -> None:
    labelled = job()
    labelled["metadata"]["labels"].update({"team": "vision", "cost-center": "42", "other": "x"})
    step = plan_job(labelled, None, flavors=flavor_lookup, label_keys=("team", "cost-center", "absent"))
    assert isinstance(step, CreateWorkload)
    labels = step.body["metadata"]["labels"]
    assert (labels["team"], labels["cost-center"]) == ("vision", "42")
    assert "other" not in labels and "absent" not in labels
    assert labels["kueue.x-k8s.io/job-uid"] == "job-uid"  # Kueue's own label stays


def test_the_keys_are_read_from_the_configuration_and_checked() -> None:
    config = parse_configuration("integrations: {labelKeysToCopy: [team, example.com/cost-center]}")
    assert isinstance(config, Configuration)
    assert config.integrations.label_keys_to_copy == ("team", "example.com/cost-center")
    refused = parse_configuration("integrations: {labelKeysToCopy: ['bad key!']}")
    assert isinstance(refused, ConfigurationErrors)
    assert refused.errors[0].startswith(
        "integrations.labelKeysToCopy[0]: 'bad key!': name part must consist of"
    )
