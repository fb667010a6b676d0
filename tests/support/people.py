"""Small census-like tables of persons (one row a person) and their datasets."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, RunSpec, Schema


def person_table(n: int, seed: int) -> pd.DataFrame:
    """A small census-like table, one row per person, where sex and race depend on the rest."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 7, size=n)
    education = np.minimum(9, rng.poisson(2 + age // 2))
    sex = (rng.random(n) < 0.3 + 0.06 * (education > 4)).astype(int)
    race = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 5, size=n))
    race = np.where((age > 4) & (rng.random(n) < 0.3), 3, race)
    hours = np.clip(rng.normal(30 + 4 * sex + education, 8), 0, 99).round()
    return pd.DataFrame({"age": age, "education": education, "sex": sex, "race": race,
                         "hours": hours.astype(np.int64)})


def person_schema() -> Schema:
    return Schema((
        Column("age", "categorical", values=tuple(range(7))),
        Column("education", "categorical", values=tuple(range(10))),
        Column("sex", "categorical", values=(0, 1)),
        Column("race", "categorical", values=tuple(range(5))),
        Column("hours", "numeric", min=0, max=99, bins=(20, 35, 40, 50)),
    ))


def people_data(seed: int) -> Dataset:
    return Dataset("people", person_schema(), person_table(3000, seed),
                   person_table(3000, seed + 1000))


def without_one_person(data: Dataset) -> Dataset:
    """The neighbouring dataset: every row of one person (the owner of the first row) gone."""
    private = data.private
    if data.unit == "user":
        keep = private[data.id_column] != private[data.id_column].iloc[0]
    else:
        keep = np.arange(len(private)) != 0
    return dataclasses.replace(data, private=private[keep].reset_index(drop=True))


def people(n_private: int = 3000, n_public: int | None = 1500,
           max_records: int | None = None) -> Dataset:
    """Record-level people: a private part, maybe a public part of another size, maybe a cap."""
    runs = (RunSpec(1e-6, 1e-6, max_records=max_records),) if max_records else ()
    schema = Schema(person_schema().columns, runs)
    public = person_table(n_public, 1000) if n_public else None
    return Dataset("people", schema, person_table(n_private, 0), public)
