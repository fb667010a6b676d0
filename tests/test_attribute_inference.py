"""The attribute-inference metric on hand-built tables whose answer is known.

- The residual risk, the rarity weighting, the neighbour and naive Bayes guesses on
  hand-computed cases.
- A synthetic copy of the training rows whose quasi-identifiers single every person out reveals
  each member's secret: risk exactly 1 (controls' quasi-identifiers never occur in it).
- A copy whose secret column is redrawn at random reveals nothing: risk 0 within Z standard
  errors, and its interval holds 0.
- Controls as predictable as members (the secret a function of the quasi-identifiers, every
  combination in the synthetic table): risk exactly 0 though the table copies the members.
- Columns: named, preset, default; refused when unknown or overlapping; not applicable without a
  held-out part; scores declare their direction.
- Through the real runner (slow): adult with a held-out split, resample at epsilon 1 is caught.

Tolerances: (a) pytest.approx compares hand-computed arithmetic at its default (1e-6 relative):
far above the rounding of a few operations, far below any wrong formula; (b) a null risk within
Z = 4 standard errors of 0 (p ~ 6e-5 per assertion; seeded draws), the standard error that of
a difference of two independent binomial shares over (1 - p): sqrt(2 p (1 - p) / n) / (1 - p)
with p the chance accuracy 1 / K of a uniform secret over K codes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError, NotApplicable
from dp_arena.metrics import make_metric, metric_class
from dp_arena.metrics.attribute_inference import (
    AttributeInference, SecretCounts, chosen_columns, classifier_guesses, neighbour_guesses,
    rarity_weighted, residual_risk, score_key, secret_counts)

Z = 4.0
QI_CODES, SECRET_CODES = 100, 4
N = 600  # training and held-out persons


def schema(secret_codes: int = SECRET_CODES) -> Schema:
    return Schema((Column("q1", "categorical", values=tuple(range(QI_CODES))),
                   Column("q2", "categorical", values=tuple(range(QI_CODES))),
                   Column("s", "categorical", values=tuple(range(secret_codes))),
                   Column("t", "categorical", values=(0, 1))))


def distinct_qi_rows(n: int, offset: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows of distinct (q1, q2); q1 even for offset 0 and odd for offset 1, so the
    two tables never share a combination."""
    cells = rng.choice((QI_CODES // 2) * QI_CODES, size=n, replace=False)
    return pd.DataFrame({"q1": 2 * (cells // QI_CODES) + offset, "q2": cells % QI_CODES})


def with_secrets(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    return frame.assign(s=rng.integers(0, SECRET_CODES, len(frame)),
                        t=rng.integers(0, 2, len(frame)))


def unique_people(seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset("toy", schema(), with_secrets(distinct_qi_rows(N, 0, rng), rng),
                   heldout=with_secrets(distinct_qi_rows(N, 1, rng), rng))


def metric(**settings) -> AttributeInference:
    base = {"quasi_identifiers": ["q1", "q2"], "secrets": ["s", "t"], "n_bootstrap": 100}
    return make_metric("attribute_inference", {**base, **settings})


def null_se(p: float, n: int) -> float:
    """Standard error of the residual risk when members and controls are guessed right with
    the same probability ``p``, ``n`` of each."""
    return math.sqrt(2 * p * (1 - p) / n) / (1 - p)


# ----- hand-computed pieces ---------------------------------------------------------------
def test_residual_risk_by_hand():
    assert residual_risk(np.array([0.8]), np.array([0.5]), 100)[0] == pytest.approx(0.6)
    assert residual_risk(np.array([0.5]), np.array([0.5]), 100)[0] == 0.0
    assert residual_risk(np.array([0.4]), np.array([0.5]), 100)[0] == pytest.approx(-0.2)
    # perfect controls: the denominator is one control's share, so equal shares give 0
    assert residual_risk(np.array([1.0]), np.array([1.0]), 50)[0] == 0.0
    assert residual_risk(np.array([0.98]), np.array([1.0]), 50)[0] == pytest.approx(-1.0)


def test_rarity_weighting_by_hand():
    frequency = np.array([3, 1])  # code 0 three times, code 1 once in the training part
    truth, correct = np.array([0, 0, 1]), np.array([True, False, True])
    # weights 1/3, 1/3, 1: (1/3 + 1) / (1/3 + 1/3 + 1)
    assert rarity_weighted(correct, truth, frequency) == pytest.approx((4 / 3) / (5 / 3))


def test_neighbour_guesses_take_the_mode_of_exact_matches_else_of_the_nearest_rows():
    qi = np.array([[0, 0], [0, 0], [0, 0], [1, 1], [2, 2], [2, 3]])
    secret = np.array([[1], [1], [0], [2], [0], [2]])
    table = secret_counts(qi, secret, [3])
    targets = np.array([[0, 0],   # exact: 1, 1, 0 -> 1
                        [1, 1],   # exact: 2
                        [2, 4],   # nearest (q1 shared): (2, 2) and (2, 3) -> 0, 2: tie -> 0
                        [3, 3],   # nearest (q2 shared): (2, 3) -> 2
                        [1, 0]])  # nearest: (1, 1) -> 2 and (0, 0) x 3 -> 1, 1, 0: mode 1
    sizes = np.array([4, 5])
    guesses = neighbour_guesses(targets, table, table, sizes)
    assert guesses[:, 0].tolist() == [1, 2, 0, 2, 1]


def test_naive_bayes_guesses_by_hand():
    # secret = q1 exactly; q2 carries nothing: the model follows q1
    qi = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1]])
    secret = qi[:, :1].copy()
    guesses = classifier_guesses(qi, secret, np.array([[0, 1], [1, 0]]), np.array([2, 2]), [2])
    assert guesses[:, 0].tolist() == [0, 1]
    # one row of code 1 and three of code 0 with the same quasi-identifiers: the prior decides
    # (log 4 + log(4/5) vs log 2 + log(2/3))
    qi = np.zeros((4, 1), np.int64)
    guesses = classifier_guesses(qi, np.array([[0], [0], [0], [1]]), np.zeros((1, 1), np.int64),
                                 np.array([1]), [2])
    assert guesses[0, 0] == 0


def test_score_keys_keep_what_mlflow_accepts():
    assert score_key("income>50K") == "income_50K" and score_key("education-num") == "education-num"


# ----- hand-built releases ----------------------------------------------------------------
def test_a_copy_that_singles_every_member_out_has_risk_one():
    data = unique_people()
    result = metric().score(data, data.private.copy())
    for secret in ("s", "t"):
        assert result.scores[f"acc_members_{secret}"] == 1.0
        assert result.scores[f"risk_{secret}"] == 1.0
    assert result.scores["risk"] == 1.0 and result.scores["risk_mean"] == 1.0
    # a copy reveals every rare value too: the rarity-weighted accuracy is 1
    assert result.scores["reconstruction_s"] == 1.0


def test_a_copy_with_the_secret_redrawn_reveals_nothing():
    data = unique_people()
    rng = np.random.default_rng(5)
    release = with_secrets(data.private[["q1", "q2"]], rng)
    result = metric().score(data, release)
    for secret, codes in (("s", SECRET_CODES), ("t", 2)):
        risk = result.scores[f"risk_{secret}"]
        assert abs(risk) <= Z * null_se(1 / codes, N)
        assert result.scores[f"risk_{secret}_lo"] <= 0.0 <= result.scores[f"risk_{secret}_hi"]


def test_controls_as_predictable_as_members_give_risk_zero():
    rng = np.random.default_rng(2)

    def people(n: int) -> pd.DataFrame:
        q1, q2 = rng.integers(0, 5, n), rng.integers(0, 4, n)
        return pd.DataFrame({"q1": q1, "q2": q2, "s": (q1 + q2) % SECRET_CODES,
                             "t": rng.integers(0, 2, n)})

    data = Dataset("toy", schema(), people(N), heldout=people(N))
    result = metric(secrets=["s"], quasi_identifiers=["q1", "q2"]).score(data, data.private)
    assert result.scores["acc_members_s"] == result.scores["acc_controls_s"] == 1.0
    assert result.scores["risk_s"] == 0.0 == result.scores["risk"]


def test_a_half_copy_has_the_risk_its_shares_imply():
    """Half the members' rows copied, the other half's secret redrawn: members are guessed
    right with p_m = 1/2 + 1/2 * 1/K, controls (no shared quasi-identifiers) with about 1/K,
    so the risk is (p_m - 1/K) / (1 - 1/K) = 1/2 for any K."""
    data = unique_people()
    release = pd.concat([data.private.iloc[:N // 2],
                         with_secrets(data.private[["q1", "q2"]].iloc[N // 2:],
                                      np.random.default_rng(1))])
    result = metric().score(data, release)
    for secret, codes in (("s", SECRET_CODES), ("t", 2)):
        chance, hit = 1 / codes, 0.5 + 0.5 / codes
        se = math.sqrt((hit * (1 - hit) + chance * (1 - chance)) / N) / (1 - chance)
        assert result.scores[f"risk_{secret}"] == pytest.approx(0.5, abs=Z * se)


def test_an_empty_release_guesses_code_zero_for_everyone():
    data = unique_people()
    result = metric().score(data, data.private.iloc[:0])
    share = (data.private["s"] == 0).mean()
    assert result.scores["acc_members_s"] == pytest.approx(share)
    assert result.scores["acc_controls_s"] == pytest.approx((data.heldout["s"] == 0).mean())


def test_the_interval_holds_the_estimate_and_results_are_seeded():
    data = unique_people()
    release = pd.concat([data.private.iloc[:N // 2],
                         with_secrets(data.private[["q1", "q2"]].iloc[N // 2:],
                                      np.random.default_rng(1))])
    first, again = metric().score(data, release), metric().score(data, release)
    assert first.scores == again.scores
    for name in ("risk", "risk_mean", "risk_s", "risk_t"):
        assert first.scores[f"{name}_lo"] <= first.scores[name] <= first.scores[f"{name}_hi"]
    table = first.tables["attribute_inference_attacks"]
    assert set(table["attacker"]) == {"neighbour", "classifier", "best"}
    assert set(table["secret"]) == {"s", "t"}


def test_user_level_targets_are_one_row_per_person():
    rng = np.random.default_rng(3)
    rows = with_secrets(distinct_qi_rows(2 * N, 0, rng), rng).assign(
        pid=np.repeat(np.arange(N), 2))
    held = with_secrets(distinct_qi_rows(2 * N, 1, rng), rng).assign(
        pid=np.repeat(np.arange(N, 2 * N), 2))
    user_schema = Schema((*schema().columns, Column("pid", "id", min=0, max=2 * N)))
    data = Dataset("toy", user_schema, rows, unit="user", id_column="pid", heldout=held)
    m = metric(max_targets=N)
    setup = m.reference(data)
    assert len(setup.targets.members) == N == len(setup.targets.controls)
    assert m.score_with(setup, data, rows).scores["risk_s"] == 1.0


# ----- columns, applicability, direction --------------------------------------------------
def test_columns_named_preset_and_default():
    data = unique_people()
    named = chosen_columns(["q1"], None, "auto", data)
    assert named.quasi_identifiers == ("q1",) and named.secrets == ("q2", "s", "t")
    assert chosen_columns(None, None, "auto", data).secrets == ("t",)  # last attribute
    data.target = "s"
    default = chosen_columns(None, None, "auto", data)
    assert default.secrets == ("s",) and default.quasi_identifiers == ("q1", "q2", "t")
    acs = Schema(tuple(Column(c, "categorical", values=(0, 1)) for c in (
        "PUMA", "AGEP", "SEX", "RAC1P", "MSP", "HOUSING_TYPE", "EDU", "PINCP_DECILE",
        "OWN_RENT")))
    acs_data = Dataset("acs", acs, pd.DataFrame({c: [0] for c in acs.attributes}))
    crc = chosen_columns(None, None, "auto", acs_data)
    assert crc.quasi_identifiers == ("AGEP", "SEX", "RAC1P", "MSP", "HOUSING_TYPE")
    assert crc.secrets == ("EDU", "PINCP_DECILE", "OWN_RENT")
    assert chosen_columns(None, None, "none", acs_data).secrets == ("OWN_RENT",)


@pytest.mark.parametrize("qis, secrets", [(["q1"], ["q1"]), (["nope"], ["s"]), ([], ["s"])])
def test_bad_columns_are_refused(qis, secrets):
    with pytest.raises(ConfigError, match="quasi_identifiers"):
        metric(quasi_identifiers=qis, secrets=secrets).reference(unique_people())


def test_unknown_attacker_and_preset_are_refused():
    with pytest.raises(ConfigError, match="attackers"):
        metric(attackers=["oracle"])
    with pytest.raises(ConfigError, match="preset"):
        metric(preset="nist")


def test_not_applicable_without_a_heldout_part():
    data = unique_people()
    data.heldout = None
    m = metric()
    assert "holds out no persons" in m.not_applicable_reason(data)
    with pytest.raises(NotApplicable):
        m.score(data, data.private)


def test_too_few_heldout_persons_is_a_score_on_the_owners_side_not_a_reason():
    """How many persons are held out is a fact of the private table: the metric applies
    whenever persons are held out (the config says so), and a part below ``min_heldout``
    gives the one owner-side score ``too_few_heldout``."""
    data = unique_people()
    m = metric(min_heldout=len(data.heldout) + 1)
    assert m.applies_to(data) and m.not_applicable_reason(data) is None
    assert m.score(data, data.private).scores == {"too_few_heldout": 1.0}
    assert AttributeInference.reads_heldout


def test_registered_and_declares_its_directions():
    cls = metric_class("attribute_inference")
    assert cls is AttributeInference and cls.headline == "risk"
    assert cls.ranks_lower("risk") and cls.ranks_lower("risk_income_50K")
    assert cls.ranks_lower("acc_members_s") and cls.ranks_lower("reconstruction_s")
    assert not cls.ranks_lower("acc_controls_s")
    assert not cls.ranks_lower("reconstruction_controls_s")


def test_secret_counts_sum_to_the_rows():
    qi = np.array([[0, 1], [0, 1], [1, 1]])
    counts = secret_counts(qi, np.array([[0], [1], [1]]), [2])
    assert isinstance(counts, SecretCounts) and counts.counts[0].sum() == 3
    assert len(counts.keys) == 2


# ----- through the real runner ------------------------------------------------------------
def adult_run(tracking_uri: str, mechanism: str) -> dict[str, float]:
    from mlflow import MlflowClient

    from dp_arena.run.runner import run_one

    out = run_one({
        "dataset": {"name": "adult", "max_rows": 6000, "holdout_fraction": 0.25},
        "mechanism": {"name": mechanism},
        "privacy": {"epsilon": 1.0, "delta": 1e-6, "accountant": "gdp"},
        "metrics": {"attribute_inference": {"max_targets": 800, "n_bootstrap": 100}},
        "trial": 0, "seed": 0, "limits": {"threads": 1},
        "tracking": {"uri": tracking_uri, "experiment": "test", "log_private_synthetic": False,
                     "log_heldout_scores": True}})  # held-out scores: the owner's opt-in
    assert out.status == "FINISHED"
    return MlflowClient(tracking_uri).get_run(out.run_id).data.metrics


@pytest.mark.slow
def test_adult_resample_is_caught_and_uniform_is_not(shared_data, tracking_uri):
    """adult's preset (three secrets), one trial at epsilon 1 through the runner: a copy
    (resample) has risk >= 0.15 on at least two secrets and every lower CI end above 0;
    uniform's risks are 0 within Z standard errors read off their intervals (half-width /
    1.96)."""
    secrets = ("income_50K", "education-num", "occupation")
    copied = adult_run(tracking_uri, "resample")
    assert sum(copied[f"attribute_inference/risk_{s}"] >= 0.15 for s in secrets) >= 2
    assert all(copied[f"attribute_inference/risk_{s}_lo"] > 0 for s in secrets)
    null = adult_run(tracking_uri, "uniform")
    for s in secrets:
        name = f"attribute_inference/risk_{s}"
        se = (null[f"{name}_hi"] - null[f"{name}_lo"]) / (2 * 1.96)
        assert abs(null[name]) <= Z * se
