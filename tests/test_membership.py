"""The membership metric on hand-built tables whose answer is known.

- A release of the training rows (``resample``) is caught: DCR AUROC 1, every member row copied,
  almost no held-out row; its TPR at FPR 0.01 beats the bound an epsilon of 1 implies.
- A release independent of the training rows (uniform over the domain, or a fresh draw of the
  population) is a null: members and non-members are exchangeable, so the AUROC is 0.5 within
  its null standard error sqrt((n0 + n1 + 1) / (12 n0 n1)) and the TPR at FPR 0.1 is 0.1 within
  the binomial error of the members' and the threshold's estimates.
- The statistics on hand-computed score lists; the randomised threshold's FPR is exact.
- The bootstrap intervals contain the estimates and shrink with more targets.
- Not applicable without a held-out part (or with too few held-out persons).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; (b) null scores within Z = 4 standard errors (false failure 6e-5 per assertion,
about ten per run of the module; seeded draws): the same Z sets the power checks' floor (a leak
must beat 0.5 + Z standard errors), so it is not raised to the suite's 4.89 here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import NotApplicable
from dp_arena.metrics import make_metric
from dp_arena.metrics.membership import (TOO_FEW, Membership, auroc, bootstrap_draws, score_counts,
                                tpr_at_fpr)
from tests.conftest import make_small_frame, make_small_schema

N_COLUMNS, N_CODES, N_GROUPS, SPREAD = 8, 10, 5, 5
NAMES = [f"a{i}" for i in range(N_COLUMNS)]
#: A z-score no deterministic draw of a true null exceeds in these tests (p ~ 6e-5 each).
Z = 4.0


# ----- tables -----------------------------------------------------------------------------
def schema() -> Schema:
    return Schema(tuple(Column(n, "categorical", values=tuple(range(N_CODES))) for n in NAMES))


def population(n: int, seed: int) -> pd.DataFrame:
    """A population with structure: a latent group shifts every column (values
    ``2 * group + U{0..SPREAD-1}`` mod 10), so rows cluster and the density attack has a
    population to compare with; 5 * 5^8 ~ 2e6 equally likely rows, so rows rarely repeat."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, N_GROUPS, size=n)
    return pd.DataFrame({name: (2 * group + rng.integers(0, SPREAD, size=n)) % N_CODES
                         for name in NAMES})


def uniform(n: int, seed: int) -> pd.DataFrame:
    """Rows drawn uniformly over the schema's domain."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({name: rng.integers(0, N_CODES, size=n) for name in NAMES})


def dataset(n_train: int, n_heldout: int, public: pd.DataFrame | None = None) -> Dataset:
    return Dataset("toy", schema(), population(n_train, 1), public=public,
                   heldout=population(n_heldout, 2))


def null_auc_se(n1: int, n0: int) -> float:
    """Standard error of the AUROC when members and non-members are exchangeable."""
    return math.sqrt((n0 + n1 + 1) / (12 * n0 * n1))


def null_tpr_se(fpr: float, n1: int, n0: int) -> float:
    """Standard error of the TPR at a fixed FPR under the null: the members' binomial error
    plus that of the threshold estimated from the non-members."""
    return math.sqrt(fpr * (1 - fpr) * (1 / n1 + 1 / n0))


# ----- the statistics on hand-computed cases ----------------------------------------------
def point(stat, members, nonmembers, *args) -> float:
    members, nonmembers = np.asarray(members, float), np.asarray(nonmembers, float)
    pos, neg = score_counts(members, nonmembers, np.arange(len(members))[None, :],
                            np.arange(len(nonmembers))[None, :])
    return float(stat(pos, neg, *args)[0])


def test_auroc_counts_wins_and_half_ties():
    # pairs (3,2) (3,0) (2,2) (2,0) (1,2) (1,0): wins 1 + 1 + 0.5 + 1 + 0 + 1 = 4.5 of 6
    assert point(auroc, [3, 2, 1], [2, 0]) == pytest.approx(0.75)
    assert point(auroc, [5, 6], [1, 2, 3]) == 1.0
    assert point(auroc, [1, 2], [5, 6]) == 0.0
    assert point(auroc, [4, 4], [4, 4, 4]) == 0.5


def test_tpr_at_fpr_by_hand():
    negatives = list(range(10))  # 0..9
    # FPR 0.1: exactly one negative (9) above the threshold 8, no randomisation:
    # positives above 8 are 9 and 8.5
    assert point(tpr_at_fpr, [9, 8.5, 5, 8], negatives, 0.1) == pytest.approx(0.5)
    # FPR 0.15: 9 above, and the negative at 8 counts with probability 0.5 (0.1 + 0.05):
    # the positive at 8 too, so TPR = (2 + 0.5) / 4
    assert point(tpr_at_fpr, [9, 8.5, 5, 8], negatives, 0.15) == pytest.approx(0.625)


@pytest.mark.parametrize("fpr", [0.01, 0.1, 0.25, 0.5])
def test_randomised_threshold_has_exactly_the_target_fpr(fpr):
    """Scored against themselves (heavy ties included), non-members are flagged at exactly
    the target rate: the randomisation makes a discrete score's FPR exact."""
    rng = np.random.default_rng(3)
    for scores in (rng.normal(size=500), rng.integers(0, 4, size=500).astype(float)):
        assert point(tpr_at_fpr, scores, scores, fpr) == pytest.approx(fpr)


def test_bootstrap_draws_start_with_the_identity():
    draws = bootstrap_draws(7, 5, np.random.default_rng(0))
    assert draws.shape == (6, 7)
    assert list(draws[0]) == list(range(7))
    assert draws.min() >= 0 and draws.max() < 7


# ----- the metric on releases whose answer is known ---------------------------------------
def test_registered_and_declares_lower_is_better():
    metric = make_metric("membership", {})
    assert isinstance(metric, Membership)
    assert Membership.lower_is_better and Membership.headline == "auc"
    assert Membership.public_outputs == frozenset()


def test_a_release_of_the_training_rows_is_caught():
    """n_train = 2000 = the non-member half of 4000 held-out rows, so every training row is a
    member and the release contains each of them exactly."""
    data = dataset(2000, 4000)
    result = Membership().score(data, data.private.copy())
    scores = result.scores
    assert persons(result) == (2000, 2000)
    assert not {"n_members", "n_nonmembers"} & set(scores), "counts of private persons"
    # members sit at distance 0; a non-member does only if it repeats a training row
    assert scores["auc_dcr"] > 0.99 and scores["auc"] >= scores["auc_dcr"]
    assert scores["copy_share_train"] == 1.0
    # a given held-out row equals one of 2000 training rows with probability <= 2000 / 2e6
    assert scores["copy_share_heldout"] < 0.01
    assert scores["copy_share_diff"] > 0.99
    # the density attack sees the synthetic mass piled on the members
    assert scores["auc_density"] > 0.5 + Z * null_auc_se(2000, 2000)
    # epsilon = 1 allows at most e * 0.01 + delta at FPR 0.01: this release is far above it
    assert scores["tpr_at_fpr_0.01_lo"] > math.e * 0.01 + 1e-5
    assert scores["tpr_at_fpr_0.1_lo"] > math.e * 0.1 + 1e-5


def test_near_copies_are_caught_by_both_attacks():
    """A known shift: every training row released with one attribute redrawn. No exact
    copies, but members sit at Hamming distance <= 1 and the synthetic density piles up
    around them."""
    data = dataset(2000, 4000)
    rng = np.random.default_rng(5)
    synthetic = data.private.copy()
    column = rng.integers(0, N_COLUMNS, size=len(synthetic))
    for i, name in enumerate(NAMES):
        hit = column == i
        synthetic.loc[hit, name] = rng.integers(0, N_CODES, size=int(hit.sum()))
    scores = Membership().score(data, synthetic).scores
    floor = 0.5 + Z * null_auc_se(2000, 2000)
    assert scores["auc_dcr"] > floor and scores["auc_density"] > floor
    assert scores["copy_share_train"] < 0.2  # only rows whose redrawn value came out equal


@pytest.mark.parametrize("release", ["uniform", "same population"])
def test_an_independent_release_is_a_null(release):
    """A release that never saw the training rows: members and non-members are exchangeable
    for both attacks, whatever the reference (the held-out half here)."""
    data = dataset(2000, 4000)
    synthetic = uniform(20_000, 9) if release == "uniform" else population(20_000, 9)
    scores = Membership().score(data, synthetic).scores
    n = 2000
    se = null_auc_se(n, n)
    for key in ("auc_dcr", "auc_density"):
        assert abs(scores[key] - 0.5) < Z * se, key
    # the larger of two AUROCs: above 0.5 by at most ~0.56 se in expectation
    assert abs(scores["auc"] - 0.5) < Z * se + 0.6 * se
    assert abs(scores["tpr_at_fpr_0.1"] - 0.1) < Z * null_tpr_se(0.1, n, n) + 0.6 * null_tpr_se(
        0.1, n, n)
    assert abs(scores["copy_share_train"] - scores["copy_share_heldout"]) < Z * math.sqrt(
        2 * max(scores["copy_share_train"], 1 / n) / n)


def test_an_independent_release_with_a_public_reference_is_a_null():
    """The reference is the public part (another draw of the population): no held-out row is
    set aside, so all 2000 held-out persons are non-members."""
    data = dataset(2000, 2000, public=population(5000, 3))
    result = Membership().score(data, uniform(20_000, 9))
    scores = result.scores
    assert persons(result)[1] == 2000
    assert abs(scores["auc_density"] - 0.5) < Z * null_auc_se(2000, 2000)
    assert abs(scores["auc_dcr"] - 0.5) < Z * null_auc_se(2000, 2000)


def test_intervals_contain_the_estimates_and_shrink_with_more_targets():
    data = dataset(3000, 6000)
    synthetic = population(20_000, 9)
    small = Membership(max_targets=200).score(data, synthetic).scores
    large = Membership(max_targets=2000).score(data, synthetic).scores
    keys = ["auc", "auc_dcr", "auc_density", "tpr_at_fpr_0.01", "tpr_at_fpr_0.1"]
    for scores in (small, large):
        for key in keys:
            assert scores[f"{key}_lo"] <= scores[key] <= scores[f"{key}_hi"], key
    # the width goes as 1 / sqrt(n): 10x the targets, ~0.32x the width
    for key in ("auc_dcr", "auc_density", "tpr_at_fpr_0.1"):
        width = {name: s[f"{key}_hi"] - s[f"{key}_lo"] for name, s in (("small", small),
                                                                      ("large", large))}
        assert width["large"] < 0.6 * width["small"], key


def test_results_are_seeded():
    data = dataset(1000, 2000)
    synthetic = population(5000, 9)
    first = Membership(seed=4).score(data, synthetic)
    again = Membership(seed=4).score(data, synthetic)
    assert first.scores == again.scores
    assert first.tables["membership_attacks"].equals(again.tables["membership_attacks"])
    assert set(first.tables["membership_attacks"]["attack"]) == {"dcr", "density"}


def test_user_level_targets_are_persons():
    """300 held-out persons, half of them the reference: 150 non-members and 150 members,
    whatever their number of rows."""
    small = make_small_schema()
    train = make_small_frame(3000, seed=1, n_people=600)
    heldout = make_small_frame(1500, seed=2, n_people=300, first_id=1001)
    data = Dataset("people", small, train, unit="user", id_column="pid",
                   max_records_per_individual=5, heldout=heldout)
    assert persons(Membership().score(data, make_small_frame(2000, seed=3))) == (150, 150)


def persons_table(n_persons: int, rows_each: int, first_id: int, seed: int) -> pd.DataFrame:
    """Persons with ``rows_each`` rows drawn uniformly over 3^8 = 6561 cells."""
    rng = np.random.default_rng(seed)
    n = n_persons * rows_each
    frame = pd.DataFrame({name: rng.integers(0, 3, size=n) for name in NAMES})
    frame.insert(0, "pid", np.repeat(np.arange(first_id, first_id + n_persons), rows_each))
    return frame


def test_several_rows_per_person_see_copying_that_one_row_cannot():
    """A release of the training rows (1000 persons x 4 rows) on a small domain: a held-out
    row has an exact copy by chance with probability 1 - (1 - 1/6561)^4000 = 0.46, so with
    one row per person the DCR attack flags members at FPR 0.1 only at about 0.1 / 0.46 =
    0.22; all four rows of a non-member have copies with probability 0.46^4 = 0.04 < 0.1, so
    with four rows every member is flagged."""
    sch = Schema((Column("pid", "id", min=0, max=10_000),
                  *(Column(n, "categorical", values=(0, 1, 2)) for n in NAMES)))
    data = Dataset("persons", sch, persons_table(1000, 4, 0, 1), unit="user", id_column="pid",
                   max_records_per_individual=4, heldout=persons_table(2000, 4, 5000, 2))
    one_result = Membership(rows_per_person=1).score(data, data.private.copy())
    four_result = Membership(rows_per_person=4).score(data, data.private.copy())
    assert persons(one_result)[0] == persons(four_result)[0] == 1000
    one, four = one_result.scores, four_result.scores
    chance = 1 - (1 - 1 / 6561) ** 4000  # a held-out row has an exact copy
    all_four = chance ** 4
    assert four["tpr_at_fpr_0.1"] == 1.0
    # members all sit at 0, tied with the non-members all of whose rows have copies
    assert abs(four["auc_dcr"] - (1 - all_four / 2)) < Z * math.sqrt(
        all_four * (1 - all_four) / 1000) / 2
    assert four["tpr_at_fpr_0.01_lo"] > math.e * 0.01 + 1e-5  # beats epsilon = 1's bound
    # one row: members at 0 tie with the non-members whose row has a copy
    assert abs(one["auc_dcr"] - (1 - chance / 2)) < Z * math.sqrt(
        chance * (1 - chance) / 1000) / 2
    assert one["tpr_at_fpr_0.1_hi"] < 0.5
    # a distinct held-out row is in the release with the same chance (~3000 distinct rows)
    assert abs(four["copy_share_heldout"] - chance) < Z * math.sqrt(chance * (1 - chance) / 2500)
    assert four["copy_share_train"] == 1.0


# ----- not applicable ---------------------------------------------------------------------
def test_not_applicable_without_a_heldout_part():
    data = Dataset("toy", schema(), population(500, 1))
    metric = Membership()
    assert not metric.applies_to(data)
    reason = metric.not_applicable_reason(data)
    assert reason is not None and "held-out" in reason
    with pytest.raises(NotApplicable):
        metric.score(data, population(500, 2))


def test_too_few_heldout_persons_is_said_by_the_owner_side_score_not_by_applicability():
    """Applicability is written (plan file, ``metrics_na`` tags), so it depends on public
    facts only: a held-out part of 49 persons applies like one of 50, and the run's one score
    (kept on the owner's side) says it was too small to attack."""
    small, enough = dataset(500, 49), dataset(500, 50)
    metric = Membership()
    assert metric.applies_to(small) and metric.applies_to(enough)
    assert metric.not_applicable_reason(small) is None
    assert metric.score(small, population(200, 3)).scores == {TOO_FEW: 1.0}
    assert TOO_FEW not in metric.score(enough, population(200, 3)).scores
    assert Membership(min_heldout=40).score(small, population(200, 3)).scores != {TOO_FEW: 1.0}


def persons(result) -> tuple[int, int]:
    """(members, non-members): counts of private persons, in the private table only."""
    table = result.tables["membership_attacks"]
    return int(table["n_members"].iloc[0]), int(table["n_nonmembers"].iloc[0])
