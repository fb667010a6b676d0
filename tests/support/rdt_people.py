"""The random-decision-tree tests' people: sex and race depend on job and the rest."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dp_arena.data.schema import Column, Schema


def people_schema() -> Schema:
    return Schema((
        Column("age", "numeric", min=0, max=99, bins=(30, 50, 70)),
        Column("job", "categorical", values=("a", "b", "c"), dtype="str"),
        Column("hours", "categorical", values=tuple(range(30))),
        Column("sex", "categorical", values=(0, 1)),
        Column("race", "categorical", values=(0, 1, 2)),
    ))


def people(n: int, seed: int, sex_from_job: bool = True) -> pd.DataFrame:
    """Sex follows job (job a: mostly 0, c: mostly 1); race follows sex."""
    rng = np.random.default_rng(seed)
    job = rng.choice(3, size=n, p=[0.4, 0.35, 0.25])
    p_one = np.array([0.1, 0.5, 0.9])[job] if sex_from_job else np.full(n, 0.5)
    sex = (rng.random(n) < p_one).astype(int)
    race = np.where(sex == 1, rng.choice(3, size=n, p=[0.8, 0.15, 0.05]),
                    rng.choice(3, size=n, p=[0.3, 0.3, 0.4]))
    return pd.DataFrame({
        "age": rng.integers(0, 100, size=n),
        "job": np.array(["a", "b", "c"])[job],
        "hours": np.minimum(rng.geometric(0.3, size=n) - 1, 29),
        "sex": sex, "race": race,
    })
