"""The quota ledger: nominal quota, borrowing and lending limits, hierarchical cohorts (Kueue's model)."""

from __future__ import annotations

from kueue_webhook.api.objects import Cohort
from kueue_webhook.core.ledger import Ledger, admitted_usage

from .builders import cluster_queue, cohort

G = 10**9
CPU = ("default", "cpu")


def ledger_with(*queues: tuple[str, str, object], cohorts: tuple[Cohort, ...] = ()) -> Ledger:
    """``(name, cohort, quota)`` per ClusterQueue, quota as in builders."""
    ledger = Ledger()
    for item in cohorts:
        ledger.set_cohort(item.name, parent=item.parent_name, groups=item.resource_groups)
    for name, cohort_name, quota in queues:
        spec = cluster_queue(
            name, {"default": {"cpu": quota}}, **({"cohortName": cohort_name} if cohort_name else {})
        )
        ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
    return ledger


def test_a_queue_without_cohort_has_exactly_its_nominal_quota() -> None:
    ledger = ledger_with(("a", "", 4))
    assert ledger.available("a", CPU) == 4 * G
    ledger.charge("a", {CPU: 3 * G})
    assert ledger.available("a", CPU) == 1 * G
    assert ledger.potential_available("a", CPU) == 4 * G


def test_cohort_members_borrow_unused_quota_without_a_borrowing_limit() -> None:
    ledger = ledger_with(("a", "c", 4), ("b", "c", 4))
    assert ledger.available("a", CPU) == 8 * G
    ledger.charge("b", {CPU: 3 * G})
    assert ledger.available("a", CPU) == 5 * G
    assert ledger.borrowing_height("a", CPU, 5 * G) == 1
    assert ledger.borrowing_height("a", CPU, 4 * G) == 0


def test_borrowing_limit_caps_what_a_queue_takes_beyond_its_nominal() -> None:
    ledger = ledger_with(("a", "c", {"nominalQuota": 4, "borrowingLimit": 1}), ("b", "c", 4))
    assert ledger.available("a", CPU) == 5 * G
    assert ledger.potential_available("a", CPU) == 5 * G
    ledger.charge("a", {CPU: 5 * G})
    assert ledger.available("a", CPU) == 0
    assert ledger.available("b", CPU) == 3 * G  # b keeps its nominal minus what a borrowed


def test_lending_limit_keeps_the_rest_private() -> None:
    ledger = ledger_with(("a", "c", 4), ("b", "c", {"nominalQuota": 4, "lendingLimit": 1}))
    assert ledger.available("a", CPU) == 5 * G  # only 1 of b's 4 is lent
    ledger.charge("a", {CPU: 5 * G})
    assert ledger.available("b", CPU) == 3 * G  # b's private 3 stay available to b
    ledger.charge("b", {CPU: 3 * G})
    assert ledger.available("b", CPU) == 0


def test_usage_within_the_private_part_does_not_reach_the_cohort() -> None:
    ledger = ledger_with(("a", "c", {"nominalQuota": 4, "lendingLimit": 1}), ("b", "c", 4))
    ledger.charge("a", {CPU: 3 * G})
    assert ledger.cohorts["c"].usage.get(CPU, 0) == 0
    ledger.charge("a", {CPU: 2 * G})
    assert ledger.cohorts["c"].usage[CPU] == 2 * G


def test_hierarchical_cohorts_share_a_parents_own_quota() -> None:
    root = cohort("root", {"default": {"cpu": 10}})
    team = cohort("team", {"default": {"cpu": 0}}, parent="root")
    ledger = ledger_with(("a", "team", 2), ("b", "root", 2), cohorts=(root, team))
    assert ledger.available("a", CPU) == 14 * G  # 2 own + 10 of root + 2 of b
    ledger.charge("b", {CPU: 12 * G})
    assert ledger.available("a", CPU) == 2 * G


def test_releasing_everything_returns_every_node_to_zero() -> None:
    ledger = ledger_with(("a", "c", {"nominalQuota": 4, "lendingLimit": 2}), ("b", "c", 4))
    charges = [("a", 3), ("b", 6), ("a", 2)]
    for name, amount in charges:
        ledger.charge(name, {CPU: amount * G})
    for name, amount in reversed(charges):
        ledger.release(name, {CPU: amount * G})
    assert all(
        v == 0 for node in (*ledger.queues.values(), *ledger.cohorts.values()) for v in node.usage.values()
    )


def test_quota_changes_keep_usage_and_recompute_the_tree() -> None:
    ledger = ledger_with(("a", "c", 4), ("b", "c", 4))
    ledger.charge("a", {CPU: 6 * G})
    spec = cluster_queue("b", {"default": {"cpu": 10}}, cohortName="c")
    ledger.set_cluster_queue("b", cohort="c", groups=spec.resource_groups)
    assert ledger.available("b", CPU) == 8 * G
    ledger.delete_cluster_queue("b")
    assert ledger.available("a", CPU) == -2 * G  # a now over its quota: nothing more fits
    assert "c" in ledger.cohorts


def test_an_implicit_cohort_disappears_with_its_last_member() -> None:
    ledger = ledger_with(("a", "c", 4))
    ledger.delete_cluster_queue("a")
    assert "c" not in ledger.cohorts


def test_a_cohort_cycle_is_refused_instead_of_looping() -> None:
    ledger = Ledger()
    ledger.set_cohort("x", parent="y", groups=())
    ledger.set_cohort("y", parent="x", groups=())
    assert ledger.cohorts["y"].parent is None


def test_borrowing_level_is_the_height_of_the_nearest_cohort_that_holds_the_request() -> None:
    """Kueue's FindHeightOfLowestSubtreeThatFits: the height counts down to the deepest ClusterQueue, so a
    ClusterQueue right under the root borrows at the root's height (2 here), not one level up."""
    root = cohort("root", {"default": {"cpu": 4}})
    team = cohort("team", {"default": {"cpu": 4}}, parent="root")
    ledger = ledger_with(("in-team", "team", 1), ("top", "root", 1), cohorts=(root, team))
    assert ledger.borrowing_height("in-team", CPU, 1 * G) == 0  # within its own quota
    assert ledger.borrowing_height("in-team", CPU, 5 * G) == 1  # team's subtree (4 + 1) holds it
    assert ledger.borrowing_height("in-team", CPU, 6 * G) == 2  # only the root's does
    assert ledger.borrowing_height("top", CPU, 2 * G) == 2  # borrowing from the root, one level up
    assert ledger.borrowing_height("top", CPU, 50 * G) == 2  # held nowhere: the root's height


def test_borrowing_level_follows_the_tree_when_a_sub_cohort_comes_and_goes() -> None:
    """The heights the ledger keeps are those of the tree as it is now: a ClusterQueue borrowing from its
    root ranks at height 1 while the root holds only ClusterQueues, 2 once a sub-cohort with a
    ClusterQueue hangs below it, and 1 again when that sub-cohort's last member leaves."""
    root = cohort("root", {"default": {"cpu": 4}})
    ledger = ledger_with(("top", "root", 1), cohorts=(root,))
    assert ledger.borrowing_height("top", CPU, 2 * G) == 1
    team = cluster_queue("in-team", {"default": {"cpu": 1}}, cohortName="team")
    ledger.set_cohort("team", parent="root", groups=())
    ledger.set_cluster_queue("in-team", cohort="team", groups=team.resource_groups)
    assert ledger.borrowing_height("top", CPU, 2 * G) == 2
    ledger.delete_cluster_queue("in-team")
    ledger.delete_cohort("team")
    assert ledger.borrowing_height("top", CPU, 2 * G) == 1


def test_room_claimed_for_waiting_preemptors_is_taken_but_not_admitted_usage_at_any_level() -> None:
    """A claim takes room like usage (nobody else gets it), but what a node has admitted, the measure of
    borrowing that reclaim goes by, leaves it out, up through a sub-cohort from behind a lending limit;
    the count survives the tree being rebuilt, and a claim given back leaves no trace."""
    root = cohort("root", {"default": {"cpu": 10}})
    team = cohort("team", {"default": {"cpu": 0}}, parent="root")
    a_quota = {"nominalQuota": 4, "lendingLimit": 1}  # 3 private
    ledger = ledger_with(("a", "team", a_quota), ("b", "root", 2), cohorts=(root, team))
    ledger.charge("a", {CPU: 5 * G})
    ledger.charge_claim("a", {CPU: 2 * G})
    a, team_node, root_node = ledger.queues["a"], ledger.cohorts["team"], ledger.cohorts["root"]
    assert ledger.available("b", CPU) == 13 * G - 4 * G  # 10 + 1 lent by a + 2, less what climbed
    assert (a.usage[CPU], admitted_usage(a, CPU)) == (7 * G, 5 * G)
    # what a's 3 private cpu do not hold climbs: 4 with the claim, 2 without it
    assert (team_node.usage[CPU], admitted_usage(team_node, CPU)) == (4 * G, 2 * G)
    assert (root_node.usage[CPU], admitted_usage(root_node, CPU)) == (4 * G, 2 * G)
    ledger.set_cluster_queue(
        "b", cohort="root", groups=cluster_queue("b", {"default": {"cpu": 3}}).resource_groups
    )
    assert admitted_usage(root_node, CPU) == 2 * G  # the tree rebuilt: the claim still counted apart
    ledger.release_claim("a", {CPU: 2 * G})
    assert (a.claimed, a.claims_below, team_node.claims_below, root_node.claims_below) == ({}, 0, 0, 0)
    assert admitted_usage(root_node, CPU) == root_node.usage[CPU] == 2 * G


def test_a_claim_given_back_after_its_cluster_queue_was_made_anew_counts_nothing_there() -> None:
    ledger = ledger_with(("a", "c", 4), ("b", "c", 4))
    ledger.charge_claim("a", {CPU: 2 * G})
    ledger.delete_cluster_queue("a")
    assert ledger.cohorts["c"].claims_below == 0  # the tree recounted without it
    ledger.set_cluster_queue(
        "a", cohort="c", groups=cluster_queue("a", {"default": {"cpu": 4}}).resource_groups
    )
    ledger.release_claim("a", {CPU: 2 * G})
    a = ledger.queues["a"]
    assert (a.claimed, a.claims_below, ledger.cohorts["c"].claims_below) == ({}, 0, 0)
