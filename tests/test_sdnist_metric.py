"""``metrics=sdnist``: SDNist's binning and k-marginal on hand-computed tables, and (when a
Python with ``sdnist`` is named in $DP_ARENA_SDNIST_PYTHON) identity with SDNist's own code on
the ACS excerpt."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.metrics import make_metric
from dp_arena.metrics.sdnist import (marginal_pairs, real_bins, synthetic_bins,
                                     unique_exact_match_share)

ORACLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sdnist_oracle.py"


def toy() -> tuple[Dataset, pd.DataFrame]:
    schema = Schema((Column("AGEP", "categorical", values=tuple(range(100))),
                     Column("SEX", "categorical", values=(1, 2)),
                     Column("MSP", "categorical", dtype="object",
                            values=("N", "1", "2", "3", "4", "5", "6"))))
    real = pd.DataFrame({"AGEP": [10, 20, 30, 40], "SEX": [1, 1, 2, 2],
                         "MSP": ["N", "1", "1", "6"]})
    synth = pd.DataFrame({"AGEP": [0, 15, 35, 40], "SEX": [1, 2, 2, 2],
                          "MSP": ["N", "N", "1", "6"]})
    return Dataset("acs_toy", schema, real), synth


def test_real_bins_rank_ties_averaged_and_n_apart():
    # ranks 1.5, 1.5, 3, 4.5, 4.5 of 5 -> pct .3 .3 .6 .9 .9 -> int(20 x) = 6 6 12 18 18
    assert real_bins(pd.Series([1, 1, 2, 3, 3])).tolist() == [6, 6, 12, 18, 18]
    # the top value's rank is 1: bin 19; N is -1 and not ranked
    assert real_bins(pd.Series(["N", "5", "7"])).tolist() == [-1, 10, 19]


def test_synthetic_bins_by_the_real_maxima():
    real = pd.Series([10, 20, 30, 40])
    binned = real_bins(real)
    assert binned.tolist() == [5, 10, 15, 19]  # bin 0 empty
    synth = pd.Series([0, 15, 35, 40, 99, "N"])
    # (0, 10] -> 5, (10, 20] -> 10, (20, 30] -> 15, above 30 -> 19; 0 is below the first
    # maximum with bin 0 empty: SDNist leaves it as it is
    assert synthetic_bins(synth, real, binned).tolist() == [0, 10, 19, 19, 19, -1]


def test_kmarginal_by_hand():
    data, synth = toy()
    # pairs (AGEP, MSP), (AGEP, SEX), (MSP, SEX): L1 = 1.5, 1.5, 0.5 (each of 4 rows is 0.25):
    # score = 500 * (2 - 3.5 / 3) = 1000 * (1 - mean TVD)
    scores = make_metric("sdnist", {}).score(data, synth).scores
    # a mean of three quarters-sums scaled by 1000: rounding far below 1e-9
    assert scores["kmarginal"] == pytest.approx(500 * (2 - 3.5 / 3), abs=1e-9)
    # one of the four unique real records, (40, 2, "6"), is in the synthetic table
    assert scores["unique_exact_match_pct"] == pytest.approx(25.0)
    assert "kmarginal_puma_min" not in scores  # no PUMA, no per-PUMA scores
    assert make_metric("sdnist", {}).score(data, data.private).scores["kmarginal"] == 1000.0


def test_pairs_leave_out_puma_and_indp():
    assert marginal_pairs(["SEX", "PUMA", "AGEP", "INDP", "EDU"]) == [
        ("AGEP", "EDU"), ("AGEP", "SEX"), ("EDU", "SEX")]
    assert marginal_pairs(["PUMA", "SEX"]) == [("SEX", "SEX")]


def test_unique_exact_match_counts_only_unique_real_records():
    real = pd.DataFrame({"a": [1, 1, 2, 3], "b": ["x", "x", "y", "z"]})
    synth = pd.DataFrame({"a": [1, 2, 2], "b": ["x", "y", "y"]})
    # (1, x) is not unique in the real table; of (2, y) and (3, z), one matches
    assert unique_exact_match_share(real, synth) == pytest.approx(50.0)


def test_directions():
    metric = make_metric("sdnist", {})
    assert not metric.ranks_lower("kmarginal") and not metric.ranks_lower("kmarginal_puma_min")
    assert metric.ranks_lower("unique_exact_match_pct")


@pytest.mark.realdata
@pytest.mark.parametrize("features", ["demographic", "all"])
def test_identity_with_sdnist(shared_data, tmp_path, features):
    """dp-arena's score equals SDNist's own computation on the same CSV (1e-9)."""
    python = os.environ.get("DP_ARENA_SDNIST_PYTHON")
    if not python:
        pytest.skip("set DP_ARENA_SDNIST_PYTHON to a Python with `pip install sdnist`")
    if not (shared_data / "acs-national2019.csv").is_file():
        pytest.skip("NIST's ACS excerpt is not in the shared data folder")
    from dp_arena.data.datasets import load_acs
    from dp_arena.mechanisms.reference import subsample

    data = load_acs(features, data_dir=str(shared_data))
    synth = subsample(data, 0.1, np.random.default_rng(3))
    path = tmp_path / "synth.csv"
    synth.to_csv(path, index=False, na_rep="N")
    ours = make_metric("sdnist", {}).score(data, synth).scores
    out = subprocess.run([python, str(ORACLE), str(shared_data / "acs-national2019.csv"),
                          str(path), str(shared_data / "acs-national2019.json"),
                          str(shared_data / "acs-data-dictionary.json"),
                          ",".join(data.schema.names)], capture_output=True, text=True,
                         check=True)
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    # the same sums in another order (pandas vs numpy): a few ulps of a score near 1000
    assert ours["kmarginal"] == pytest.approx(theirs["kmarginal"], abs=1e-9)
    assert round(ours["unique_exact_match_pct"], 2) == theirs["unique_exact_match_pct"]
    if features == "all":
        puma_tol = 1e-9  # as above: the same sums in another order
        assert ours["kmarginal_puma_min"] == pytest.approx(theirs["kmarginal_puma_min"],
                                                           abs=puma_tol)
