"""Privacy audits (``dp-arena-audit``, dp_arena/audit/): bounds against hand-computed values, the
canary and statistics on hand-made tables, fresh noise per run, resuming from the cache, the
board's audit columns, bad input refused before any work, and the self-test that can fail: a
mechanism that adds the noise of 4x the epsilon it charges is caught, ``independent`` is not.

Tolerances: (a) Clopper-Pearson bounds are scipy's inverse beta CDF (near machine
precision) against their closed forms at k = 0 and k = n - 1 (a power and a difference):
rel=1e-9 is far above both.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.audit.bounds import (ErrorCounts, attainable_eps_lb, claim_fnr, cp_upper,
                                  eps_from_rates, lower_bound)
from dp_arena.audit.canary import MIN_PERSONS, build_canary, canary_frame, with_canary
from dp_arena.audit.decision import audit_test, best_threshold, counts_for, fit_scorer
from dp_arena.audit.driver import AuditSettings
from dp_arena.audit.runs import WORLDS, World, audit_run, collect, load_cached
from dp_arena.audit.statistic import canary_cell_counts, distance_features, features
from dp_arena.data.datasets import PROJECT_ROOT, Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.report.audits import attach_audits, latest_audits
from dp_arena.run.config import parse_run_config

ENV = {**os.environ, "MLFLOW_TRACKING_URI": "", "PYTHONPATH": str(PROJECT_ROOT)}


def audit_cli(cwd: Path, *overrides: str) -> subprocess.CompletedProcess:
    """``dp-arena-audit`` in a subprocess (no time limit: a busy machine is slow, not wrong)."""
    return subprocess.run([sys.executable, "-m", "dp_arena.cli.audit", *overrides], cwd=cwd,
                          env=ENV, capture_output=True, text=True, check=False)


# ----- bounds -------------------------------------------------------------------------------
def test_clopper_pearson_upper_bound_matches_the_closed_form_at_zero_and_n():
    # k = 0: the exact one-sided upper bound solves (1 - p)^n = 1 - level
    assert cp_upper(0, 100, 0.975) == pytest.approx(1 - 0.025 ** (1 / 100), rel=1e-9)
    assert cp_upper(100, 100, 0.975) == 1.0
    # k = n - 1: the bound solves P(X <= n - 1 | p) = 1 - p^n = 0.025
    assert cp_upper(99, 100, 0.975) == pytest.approx(0.975 ** (1 / 100), rel=1e-9)
    assert cp_upper(5, 100, 0.975) > 0.05 > cp_upper(0, 100, 0.975)


def test_epsilon_bound_by_hand_and_symmetric():
    # FPR_u = 0.1, FNR_u = 0.5, delta 0: ln(0.5 / 0.1) = ln 5; swapped: ln(0.9 / 0.5)
    assert eps_from_rates(0.1, 0.5, 0.0) == pytest.approx(math.log(5))
    assert eps_from_rates(0.5, 0.1, 0.0) == pytest.approx(math.log(5))  # roles swapped
    assert eps_from_rates(0.1, 0.5, 0.2) == pytest.approx(math.log(0.3 / 0.1))
    assert eps_from_rates(0.6, 0.6, 0.0) == 0.0  # no test better than chance: floored at 0


def test_bound_splits_the_confidence_between_the_two_rates():
    b = lower_bound(ErrorCounts(fp=0, n0=1000, fn=0, n1=1000), delta=0.0, confidence=0.95)
    u = 1 - 0.025 ** (1 / 1000)  # each rate at 97.5% (Bonferroni)
    assert b.fpr_upper == pytest.approx(u) and b.fnr_upper == pytest.approx(u)
    assert b.eps_lb == pytest.approx(math.log((1 - u) / u))
    assert b.mu_lb > 0


# ----- the test -----------------------------------------------------------------------------
def test_a_perfectly_separating_statistic_gives_the_largest_bound_its_runs_allow():
    rng = np.random.default_rng(0)  # test data, not a mechanism's noise
    x0 = rng.normal(0, 1, size=(400, 3))
    x1 = rng.normal(0, 1, size=(400, 3))
    x1[:, 1] += 100  # one feature separates the worlds
    _test, counts, level = audit_test(x0, x1, delta=1e-5, confidence=0.95)
    assert (counts.fp, counts.fn, counts.n0, counts.n1) == (0, 0, 200, 200)
    assert level == pytest.approx(0.975)  # two tests (naive Bayes, LDA): Bonferroni


def test_a_threshold_is_chosen_by_its_own_rates_when_every_projected_bound_is_zero():
    """Selection runs that err 40% of the time at the best threshold: taken two standard
    deviations pessimistic and scaled to 450 evaluation runs, every threshold's bound is 0;
    the tie goes to the threshold these runs favour, not to the first candidate (which says
    D' for every run and can never show anything). Found in CI: a 4x leak (mu 0.95) audited
    with 300 runs per world scored 0.000 about once in 80 audits."""
    x0 = np.r_[np.zeros(90), np.ones(60)][:, None]
    x1 = np.r_[np.zeros(60), np.ones(90)][:, None]
    scorer = fit_scorer(x0, x1, "identity")
    test = best_threshold(scorer, x0, x1, 0.0, 0.975, evaluation=(450, 450))
    assert test.says_canary(np.array([[0.0], [1.0]])).tolist() == [False, True]  # 40% errors
    assert lower_bound(counts_for(test, x0, x1), 0.0, 0.975).mu_lb > 0


def test_naive_bayes_scores_are_the_smoothed_log_likelihood_ratios_by_hand():
    x0 = np.r_[np.zeros(50), np.ones(50)][:, None]
    x1 = np.r_[np.zeros(25), np.ones(75)][:, None]
    scorer = fit_scorer(x0, x1, "naive_bayes")
    scores = scorer.score(np.array([[0.0], [1.0]]))
    assert scores[0] == pytest.approx(math.log(25.5 / 50.5))  # add-1/2 smoothing, 2 bins
    assert scores[1] == pytest.approx(math.log(75.5 / 50.5))


def test_identical_worlds_give_no_bound():
    rng = np.random.default_rng(1)
    x0, x1 = rng.poisson(3, size=(2000, 4)), rng.poisson(3, size=(2000, 4))
    _test, counts, level = audit_test(x0.astype(float), x1.astype(float), 0.0, 0.95)
    assert lower_bound(counts, 0.0, level).eps_lb < 0.25  # chance: a small bound at most


def test_the_better_of_two_scorers_is_kept_at_a_bonferroni_share_of_the_confidence():
    """Nine small independent shifts (as independent's canary cells): a linear score pools
    them; the kept bound is the larger of the two tests at confidence 1 - 0.05 / 2, and never
    below what the single-scorer audit at that level would report for the same test."""
    rng = np.random.default_rng(2)  # test data, not a mechanism's noise
    x0 = rng.normal(0, 1, size=(6000, 9))
    x1 = rng.normal(0.12, 1, size=(6000, 9))
    test, counts, level = audit_test(x0, x1, 0.0, 0.95)
    assert level == pytest.approx(0.975)
    kept = lower_bound(counts, 0.0, level).eps_lb
    for kind in ("naive_bayes", "lda"):
        _t, alone, alone_level = audit_test(x0, x1, 0.0, 0.95, kind)
        assert alone_level == 0.95
        assert kept >= lower_bound(alone, 0.0, level).eps_lb - 1e-12


# ----- canary and statistics -----------------------------------------------------------------
@pytest.fixture
def record_data() -> Dataset:
    schema = Schema((Column("a", "categorical", values=("x", "y", "z"), dtype="str"),
                     Column("b", "numeric", min=0, max=30, bins=(10, 20))))
    private = pd.DataFrame({"a": ["x"] * 30 + ["y"] * 10, "b": [1] * 25 + [15] * 15})
    return Dataset("toy", schema, private)


def test_rare_cell_canary_takes_the_empty_cells_and_mode_copy_the_most_frequent(record_data):
    rare = build_canary(record_data, "rare_cell")
    assert rare.codes == {"a": 2, "b": 2} and rare.rows == 1  # "z" and the bin [20, 30]
    assert build_canary(record_data, "mode_copy").codes == {"a": 0, "b": 0}
    row = canary_frame(record_data, rare)
    assert row["a"].tolist() == ["z"] and 20 <= row["b"].iloc[0] <= 30
    assert len(with_canary(record_data, rare).private) == 41
    assert "z" not in rare.description  # the description names no value


def test_user_level_canary_has_the_most_rows_and_a_fresh_id(small_dataset):
    canary = build_canary(small_dataset, "rare_cell")
    assert canary.rows == small_dataset.max_records_per_individual == 5
    rows = canary_frame(small_dataset, canary)
    assert len(rows) == 5 and rows["pid"].nunique() == 1
    assert rows["pid"].iloc[0] not in set(small_dataset.private["pid"]) | set(
        small_dataset.public["pid"])


def test_a_dataset_with_too_few_persons_is_refused(record_data):
    tiny = Dataset("tiny", record_data.schema, record_data.private.head(MIN_PERSONS - 1))
    with pytest.raises(ConfigError, match="too small to audit"):
        build_canary(tiny, "rare_cell")


def test_statistics_by_hand():
    codes = pd.DataFrame({"a": [0, 2, 2, 1], "b": [1, 1, 0, 2], "c": [0, 0, 0, 0]})
    canary = {"a": 2, "b": 1, "c": 0}
    assert canary_cell_counts(codes, canary).tolist() == [2.0, 2.0, 4.0]
    # distances: row0 1, row1 0, row2 1, row3 2
    assert distance_features(codes, canary).tolist() == [1.0, 3.0, 4.0, 0.0]


# ----- runs: fresh noise, cache, resume ----------------------------------------------------
def toy_run_config() -> object:
    return parse_run_config({"dataset": {"name": "csv"}, "mechanism": {"name": "independent"},
                             "privacy": {"epsilon": 1.0, "delta": 1e-6},
                             "metrics": {"kmarginal": {}}, "limits": {"isolate": True}})


def test_every_audit_run_draws_fresh_noise(small_dataset):
    from dp_arena.mechanisms import make_mechanism

    rc = toy_run_config()
    canary = build_canary(small_dataset, "rare_cell")
    mech = make_mechanism("independent", {})
    a = [audit_run(mech, small_dataset, rc, canary.codes, "canary_cells") for _ in range(2)]
    assert not np.array_equal(a[0], a[1])  # same world, same settings: different releases


def test_collect_caches_runs_and_resumes_only_the_missing_ones(small_dataset, tmp_path):
    from dp_arena.mechanisms import make_mechanism

    rc = toy_run_config()
    canary = build_canary(small_dataset, "rare_cell")
    worlds = {WORLDS[0]: World(WORLDS[0], small_dataset),
              WORLDS[1]: World(WORLDS[1], with_canary(small_dataset, canary))}
    mech = make_mechanism("independent", {})
    lines: list[str] = []
    first = collect(mech, worlds, rc, canary.codes, "canary_cells", 12, tmp_path, jobs=2,
                    echo=lines.append)
    assert first[WORLDS[0]].shape == (12, 3) and first[WORLDS[1]].shape == (12, 3)
    assert len({tuple(r) for r in first[WORLDS[0]]}) > 1  # runs differ (fresh noise)
    assert any("24/24 runs" in line for line in lines)
    again = collect(mech, worlds, rc, canary.codes, "canary_cells", 16, tmp_path, jobs=2,
                    echo=lines.append)
    assert np.array_equal(again[WORLDS[0]][:12], first[WORLDS[0]])  # cached, not redone
    assert sum(1 for _ in (tmp_path / f"{WORLDS[0]}.jsonl").open()) == 16  # only 4 new
    assert len(load_cached(tmp_path, WORLDS[1])) == 16


def test_features_of_a_synthetic_table(small_dataset):
    canary = build_canary(small_dataset, "mode_copy")
    x = features(small_dataset.private, small_dataset.schema, canary.codes, "canary_cells")
    assert len(x) == 3 and (x > 0).all()


# ----- bad input: one clear error, before any work -----------------------------------------
def test_audit_settings_are_checked():
    with pytest.raises(ConfigError, match="audit.runs must be an integer >= 10"):
        AuditSettings.from_config({"runs": 9})
    with pytest.raises(ConfigError, match="audit.canary"):
        AuditSettings.from_config({"canary": "nobody"})


@pytest.mark.parametrize("overrides, message", [
    (("audit.runs=5",), "audit.runs must be an integer >= 10"),
    (("audit.runs=many",), "audit.runs must be an integer (got 'many')"),
    (("audit.runz=50",), "unknown setting audit.runz (did you mean audit.runs?)"),
    (("mechanism=uniform",), "non-private reference point"),
    (("mechanism=resample",), "non-private reference point"),
])
def test_bad_input_is_one_error_without_traceback(csv_dir, overrides, message):
    proc = audit_cli(csv_dir, "dataset=csv", "dataset.path=private.csv",
                     "dataset.schema=parameters.json", "privacy.delta=1e-6", *overrides)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count(message) == 1 and "Traceback" not in proc.stderr
    assert not (csv_dir / "audits").exists()  # refused before any run: nothing left behind


def test_removing_a_refused_audits_folder_keeps_what_it_did_not_write(tmp_path):
    """Hydra's files and an empty log go, then each folder left empty up to the working
    folder; a file Hydra did not write keeps its folder, and the working folder stays."""
    from dp_arena.cli.audit import HYDRA_FILES, remove_run_folder

    def hydra_folder(name: str) -> Path:
        out = tmp_path / "audits" / "2026-12-07" / name
        for f in HYDRA_FILES:
            (out / f).parent.mkdir(parents=True, exist_ok=True)
            (out / f).write_text("x")
        (out / "audit.log").write_text("")
        return out

    remove_run_folder(hydra_folder("23-40-52"), tmp_path)
    assert sorted(tmp_path.iterdir()) == []
    kept = hydra_folder("23-41-00")
    (kept / "notes.txt").write_text("mine")
    remove_run_folder(kept, tmp_path)
    assert sorted(p.name for p in kept.rglob("*")) == ["notes.txt"]
    day = tmp_path / "audits" / "2026-12-07"
    remove_run_folder(hydra_folder("."), day)  # hydra.run.dir=. : the working folder stays
    assert sorted(p.relative_to(day).as_posix() for p in day.rglob("*")) == [
        "23-41-00", "23-41-00/notes.txt"]


def test_a_dataset_too_small_for_a_canary_is_refused(csv_dir):
    tiny = pd.read_csv(csv_dir / "private.csv").head(5)
    tiny.to_csv(csv_dir / "tiny.csv", index=False)
    proc = audit_cli(csv_dir, "dataset=csv", "dataset.path=tiny.csv",
                     "dataset.schema=parameters.json", "privacy.delta=0", "privacy=pure")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "too small to audit" in proc.stderr and "Traceback" not in proc.stderr


# ----- the run cache: off by default --------------------------------------------------------
def test_the_run_cache_is_off_by_default_in_the_settings_and_the_config():
    """A canary audit's cached statistics average to the private data's exact counts over
    many runs, so nothing keeps them unless asked."""
    assert AuditSettings().keep_cache is False
    assert AuditSettings.from_config({}).keep_cache is False
    conf = (PROJECT_ROOT / "dp_arena" / "conf" / "audit" / "default.yaml").read_text()
    assert "keep_cache: false" in conf


def cached_files(cwd: Path) -> list[Path]:
    return sorted((cwd / "audits" / "cache").glob("*/*.jsonl"))


def test_a_default_canary_audit_leaves_no_cache_and_the_opt_in_keeps_it(csv_dir):
    """End to end with the configured private data and a canary (the pair whose cache is
    private): by default nothing is left on disk; with audit.keep_cache=true the cache is
    there (so the first check can fail: it looks where the cache is written)."""
    base = ("dataset=csv", "dataset.path=private.csv", "dataset.schema=parameters.json",
            "mechanism=independent", "privacy=pure", "privacy.delta=0", "privacy.epsilon=1",
            "audit.runs=10", "audit.jobs=1")
    proc = audit_cli(csv_dir, *base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cached_files(csv_dir) == []
    kept = audit_cli(csv_dir, *base, "audit.keep_cache=true")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert len(cached_files(csv_dir)) == 2  # one file per world


# ----- the board ---------------------------------------------------------------------------
def test_attach_audits_matches_rows_on_the_audit_key():
    board = pd.DataFrame({"mechanism": ["independent", "mst", "independent"],
                          "hyperparameters": ["-", "-", "-"], "epsilon": [1.0, 1.0, 10.0],
                          "delta": ["2.5e-05"] * 3, "dataset_id": ["d1"] * 3,
                          "accountant": ["gdp"] * 3, "mean": [1, 2, 3]})
    audits = pd.DataFrame({"dataset_id": ["d1", "d1", "d1"],
                           "mechanism": ["independent", "independent", "mst"],
                           "hyperparameters": ["-", "-", "-"], "epsilon": [1.0, 1.0, 1.0],
                           "delta": [2.5e-05, 2.5e-05, 2.5e-05],
                           "accountant": ["gdp"] * 3, "eps_lb": [0.1, 0.2, 1.5],
                           "audit_verdict": ["ok", "ok", "VIOLATION"],
                           "start_time": [1, 2, 3]})
    out = attach_audits(board, latest_audits(audits))
    assert out["eps_lb"].tolist()[:2] == [0.2, 1.5] and math.isnan(out["eps_lb"].iloc[2])
    assert out["audit_verdict"].tolist() == ["ok", "VIOLATION", ""]
    assert out["mean"].tolist() == [1, 2, 3]
    empty = attach_audits(board, audits.iloc[:0])
    assert empty["eps_lb"].isna().all() and (empty["audit_verdict"] == "").all()


@pytest.mark.parametrize("epsilon, delta", [(1 / 3, 1e-5), (0.1 + 0.2, 1 / 7), (1.0, 2.5e-5)])
def test_an_audit_lands_on_the_board_row_of_its_runs_at_any_epsilon(epsilon, delta):
    """The audit's tags and a run's tags format epsilon and delta with one function, so an
    audit at epsilon 1/3 (``%g`` would write 0.333333) joins the row of the runs it audited."""
    from types import SimpleNamespace

    from dp_arena.audit.driver import audit_tags
    from dp_arena.report.audits import audit_row
    from dp_arena.report.record import RunRecord

    run_tags = {"mechanism": "mst", "hyperparameters": "-", "epsilon": repr(epsilon),
                "delta": repr(delta), "accountant": "gdp", "dataset_id": "d1"}
    row = RunRecord.from_tags(RunRecord.from_tags(run_tags).to_tags()).board_fields()
    board = pd.DataFrame([{**row, "mean": 1.0}])
    rc = SimpleNamespace(mechanism="mst", accountant="gdp",
                         budget=SimpleNamespace(epsilon=epsilon, delta=delta))
    settings = SimpleNamespace(view="synthetic", neighbours="canary", statistic="dcr")
    tags = audit_tags(rc, "-", "d1", SimpleNamespace(name="t", ledger_unit="row"),
                      SimpleNamespace(description="c", strategy="s"), settings, "k", "ok")
    stored = SimpleNamespace(data=SimpleNamespace(tags=tags, metrics={"eps_lb": 0.25}),
                             info=SimpleNamespace(start_time=1, run_id="r"))
    out = attach_audits(board, latest_audits(pd.DataFrame([audit_row(stored)])))
    assert out["eps_lb"].tolist() == [0.25] and out["audit_verdict"].tolist() == ["ok"]


# The self-test that can fail (a 4x-leaky copy caught, independent passing) is in
# tests/test_audit_releases.py: the release view with worst-case neighbours does it with 300
# runs per world in seconds, where this black-box view needs thousands (docs/privacy.md gives its
# figures).


def test_power_yardstick_by_hand_and_its_invariants():
    """The bound an ideal test could show on a mechanism exactly at its claim: by hand at one
    point of the claim's trade-off curve; never above the claim, closer with more runs, and
    stricter (lower) for the mu-GDP curve that implies the same (epsilon, delta)."""
    from dp_arena.privacy.accounting import gdp_mu

    # epsilon ln 2, delta 0, 100 runs a world, one candidate FPR (1/100): FNR on the curve is
    # max(0, 1 - 2 * 0.01, 0.5 * 0.99) = 0.98 -> 98 false negatives
    assert claim_fnr(0.01, math.log(2), 0.0) == pytest.approx(0.98)
    level = 1 - 0.05 / 2
    by_hand = eps_from_rates(cp_upper(1, 100, level), cp_upper(98, 100, level), 0.0)
    assert attainable_eps_lb(math.log(2), 0.0, 100, 100, 0.95, points=1) == by_hand
    delta = 2.5e-5
    values = [attainable_eps_lb(1.0, delta, n, n, 0.95) for n in (100, 1_000, 10_000, 100_000)]
    assert values == sorted(values) and 0 < values[0] and values[-1] < 1.0
    assert values[-1] > 0.95
    mu = gdp_mu(1.0, delta)
    gaussian = [attainable_eps_lb(1.0, delta, n, n, 0.95, mu=mu) for n in (1_000, 10_000)]
    assert gaussian[0] < gaussian[1] and all(g < v for g, v in zip(gaussian, values[1:3]))
    # 10,000 evaluation runs a world (audit.runs=20000): the claim's mu-GDP curve caps what
    # any test can show at epsilon 1 near 0.42
    assert 0.35 < gaussian[1] < 0.5
