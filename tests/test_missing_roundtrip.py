"""Missing values (``allow_missing``) and datetime columns through every tabular mechanism: the
output is schema-valid, a missing code comes back as NaN, and the share of missing values is
the data's (the private part's for DP mechanisms at a large epsilon and for ``resample``, the
public part's for ``public_only`` and rdt's public predictors, one code in ``size`` for ``uniform``). Mechanisms that do not
apply to record-level tabular data say so (``NotApplicable``) and are listed as n/a.

Tolerances: (b, d) each mechanism's missing share at epsilon 20 on a 3,000-row table
against the source's: the binomial part alone has standard error <= sqrt(0.25 / 3,000) =
0.0091, and abs=0.06 is 6.6 of those; the rest is the mechanism's fitting error, which no
formula here bounds (a margin held by the mechanisms measured, not derived: the table is
seeded, the releaser's noise fresh; 15 runs per mechanism put the worst margin at 47 noise
standard deviations or more, 2026-11-28).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema, encode_column
from dp_arena.errors import NotApplicable
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import MECHANISMS, make_mechanism

SCHEMA = Schema((
    Column("pay", "categorical", "str", values=("card", "cash"), allow_missing=True),
    Column("fare", "numeric", "float", min=0, max=100, bins=(5, 10, 20), allow_missing=True),
    Column("day", "datetime", "str", resolution="day", format="%Y-%m-%d", min="2016-03-01",
           max="2016-03-07", allow_missing=True),
    Column("hour", "datetime", "str", resolution="hour_of_day", format="%H:%M"),
    Column("n", "categorical", "int64", values=(1, 2, 3)),
))
#: share of missing values per column in the generated tables
MISSING = {"pay": 0.3, "fare": 0.2, "day": 0.1}
#: small, fast settings (the shipped ones otherwise)
SETTINGS = {"mst": {"iters": 100, "select_iters": 50},
            "aim": {"rounds": 3, "iters": 20, "final_iters": 50},
            "adaptive_grid": {"iters": 50},
            "rdt": {"private_attributes": ["pay", "fare"], "n_B": 200}}
#: third-party contestants run in their own environments (tests/test_external.py,
#: tests/test_contestants_*.py): every registered mechanism served by the contestant protocol
EXTERNAL = tuple(m for m, path in MECHANISMS.items() if path.split(":")[0] in (
    "dp_arena.mechanisms.external", "dp_arena.mechanisms.smartnoise_synth_more",
    "dp_arena.mechanisms.external_privbayes_dpmm"))
#: not for record-level tabular data: the taxi archetypes and location sequences
EXPECTED_NA = {"archetype", "prefix_tree"}


def table(n: int, seed: int, missing: dict[str, float]) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    day = (pd.Timestamp("2016-03-01") + pd.to_timedelta(rng.integers(0, 7, n), unit="D"))
    df = pd.DataFrame({
        "pay": rng.choice(["card", "cash"], n, p=[0.7, 0.3]).astype(object),
        "fare": np.round(rng.gamma(2.0, 6.0, n).clip(0, 100), 2),
        "day": day.strftime("%Y-%m-%d").astype(object),
        "hour": [f"{h:02d}:{m:02d}" for h, m in zip(rng.integers(0, 24, n),
                                                    rng.integers(0, 60, n))],
        "n": rng.choice([1, 2, 3], n, p=[0.6, 0.3, 0.1]),
    })
    for col, share in missing.items():
        df.loc[rng.random(n) < share, col] = np.nan
    return df


@pytest.fixture(scope="module")
def data() -> Dataset:
    private = table(3000, 1, MISSING)
    public = table(3000, 2, {"pay": 0.05, "fare": 0.5, "day": 0.25})
    assert SCHEMA.problems(private) == [] and SCHEMA.problems(public) == []
    return Dataset("roundtrip", SCHEMA, private, public, unit="record")


def tabular() -> list[str]:
    # test doubles (test_*) are registered by other test modules in the same worker
    return sorted(m for m in MECHANISMS if m not in EXTERNAL and not m.startswith("test_"))


def expected_missing_share(name: str, data: Dataset, col: str) -> float:
    if name == "uniform":
        return 1.0 / SCHEMA[col].size  # every code, the missing one too, equally likely
    # rdt (base=public) synthesizes its private attributes onto public rows: the others are
    # the public part's
    from_public = name == "public_only" or (
        name == "rdt" and col not in SETTINGS["rdt"]["private_attributes"])
    source = data.public if from_public else data.private
    return float(source[col].isna().mean())


@pytest.mark.slow
@pytest.mark.parametrize("name", tabular())
def test_missing_and_datetime_columns_round_trip(data, name):
    mechanism = make_mechanism(name, SETTINGS.get(name, {}))
    try:
        mechanism.check_applicable(data)
    except NotApplicable as exc:
        assert name in EXPECTED_NA, f"{name} is n/a on record-level tabular data: {exc}"
        return
    assert name not in EXPECTED_NA
    budget = Budget(20.0, 1e-6)
    out = mechanism.fit_sample(data, budget, Releaser(Ledger(budget)), np.random.default_rng(0))
    assert SCHEMA.problems(out) == []
    for col in MISSING:
        column = SCHEMA[col]
        codes = encode_column(column, out[col])
        # the missing code (the last one) is exactly where the output is NaN
        assert ((codes == column.size - 1) == out[col].isna().to_numpy()).all()
        share = float(out[col].isna().mean())
        assert share == pytest.approx(expected_missing_share(name, data, col), abs=0.06), col
    # datetime values come back in the column's format, at the column's resolution
    days = pd.to_datetime(out["day"].dropna(), format="%Y-%m-%d")
    assert days.between("2016-03-01", "2016-03-07").all()
    assert out["hour"].str.fullmatch(r"\d\d:\d\d").all()


def no_missing_table(n: int, seed: int) -> pd.DataFrame:
    """A table without a missing cell: a Yes/No target (93/7, as skewed as real ones get),
    text, integers and decimals."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "smoker": rng.choice(["Yes", "No"], n, p=[0.07, 0.93]),
        "region": rng.choice(["north", "south", "east", "west"], n),
        "age": rng.integers(18, 80, n),
        "income": np.round(rng.lognormal(10, 0.5, n), 2),
    })


@pytest.mark.parametrize("source", ["public", "dp"])
def test_a_yes_no_column_without_missing_values_stays_binary(tmp_path, source):
    """Proposal, loading and synthesis: no missing code is proposed where the data has no
    missing value, so the Yes/No target is a binary task (AUROC on the board) and the
    synthetic tables hold no missing cell."""
    from dp_arena.data.datasets import load_csv_dataset
    from dp_arena.data.proposal_file import write_proposal
    from dp_arena.data.propose import ProposalSettings, propose
    from dp_arena.metrics.ml_efficacy import task_of

    private, public = no_missing_table(4000, 1), no_missing_table(2000, 2)
    private.to_csv(tmp_path / "data.csv", index=False)
    sample = public if source == "public" else private
    proposal = propose(sample, ProposalSettings(source, epsilon=5.0 if source == "dp" else None))
    assert not [c.name for c in proposal.schema.columns if c.allow_missing]
    schema_path = write_proposal(proposal, tmp_path / "parameters.json")[0]
    data = load_csv_dataset(str(tmp_path / "data.csv"), str(schema_path), target="smoker")
    # nothing dropped (no cell is missing): the training and held-out parts hold every row
    held = len(data.heldout) if data.heldout is not None else 0
    assert len(data.private) + held == len(private) and data.load_report.rows_dropped == 0
    assert data.schema["smoker"].size == 2
    assert task_of(data.schema, "smoker").kind == "binary"
    for name in ("independent", "mst"):
        mechanism = make_mechanism(name, SETTINGS.get(name, {}))
        budget = Budget(5.0, 1e-6)
        out = mechanism.fit_sample(data, budget, Releaser(Ledger(budget)),
                                   np.random.default_rng(0))
        assert int(out.isna().sum().sum()) == 0, name
        assert set(out["smoker"]) <= {"Yes", "No"}


@pytest.mark.parametrize("source", ["public", "dp"])
def test_missing_values_in_the_data_get_a_missing_code(source):
    df = no_missing_table(4000, 3)
    df.loc[df.index % 4 == 0, "region"] = np.nan  # a quarter missing
    df["age"] = df["age"].astype(float)
    df.loc[df.index % 5 == 0, "age"] = np.nan
    from dp_arena.data.propose import ProposalSettings, propose

    proposal = propose(df, ProposalSettings(source, epsilon=5.0 if source == "dp" else None))
    allowed = {c.name for c in proposal.schema.columns if c.allow_missing}
    assert allowed == {"region", "age"}
