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
