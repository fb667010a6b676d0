"""The held-out split of privacy units: reproducible, disjoint, whole
persons; a marker planted in held-out rows never reaches a mechanism, a tuning step or a
schema proposal; the ledger's persons are the training persons; taxi_sim's private table is
unchanged by its simulated held-out taxis; the target column."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.data.datasets import (
    Dataset,
    count_persons,
    load_csv_dataset,
    load_shared_dataset,
    load_taxi_sim,
    with_public_split,
)
from dp_arena.data.holdout import (
    HOLDOUT_STREAM,
    holdout_mask,
    split_holdout,
    with_fresh_ids,
)
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import MECHANISMS
from dp_arena.mechanisms.base import Mechanism
from dp_arena.mechanisms.reference import Uniform
from tests.conftest import make_small_frame

#: the marker planted in held-out rows: an in-domain ``amount`` no generated row holds
#: (make_small_frame's amounts are at most 3 * 20 + 14 = 74)
MARKER = 99


# ----- a spy mechanism: records what it receives ---------------------------------------------
@dataclass
class Spy(Mechanism):
    """Appends what it received (row count, person ids, marker rows, whether a held-out part
    came along) as one JSON line to ``record_path``, then releases uniform data."""

    record_path: str = ""
    tag: int = 0  # a hyperparameter for dp_select to choose
    name: ClassVar[str] = "test_holdout_spy"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        seen = {"rows": len(data.private),
                "ids": sorted(int(i) for i in data.private["pid"].unique()),
                "markers": int((data.private["amount"] == MARKER).sum()),
                "public_markers": int((data.public["amount"] == MARKER).sum())
                if data.public is not None else 0,
                "heldout": data.heldout is not None}
        with open(self.record_path, "a") as fh:
            fh.write(json.dumps(seen) + "\n")
        return Uniform().fit_sample(data, budget, release, rng)


MECHANISMS.update({"test_holdout_spy": "tests.test_holdout:Spy"})


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----- the split itself -------------------------------------------------------------------------
def rows_as_sorted_records(df: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, df.astype(str).to_numpy()))


@pytest.mark.parametrize("id_column", [None, "pid"])
def test_the_split_is_reproducible_disjoint_and_covers_every_person(id_column):
    table = make_small_frame(3000, seed=1)
    a = holdout_mask(table, 0.3, 5, id_column)
    assert np.array_equal(a, holdout_mask(table, 0.3, 5, id_column))
    assert not np.array_equal(a, holdout_mask(table, 0.3, 6, id_column))
    training, heldout = split_holdout(table, 0.3, 5, id_column)
    # every row lands on exactly one side: the two parts are the table, as a multiset
    assert len(training) + len(heldout) == len(table)
    assert rows_as_sorted_records(pd.concat([training, heldout])) == \
        rows_as_sorted_records(table)
    if id_column is None:
        assert len(heldout) == round(0.3 * len(table))
    else:
        persons = table["pid"].nunique()
        assert heldout["pid"].nunique() == round(0.3 * persons)
        assert training["pid"].nunique() + heldout["pid"].nunique() == persons


def test_a_user_level_split_keeps_whole_persons():
    table = make_small_frame(3000, seed=2)
    training, heldout = split_holdout(table, 0.25, 0, "pid")
    assert not set(training["pid"]) & set(heldout["pid"])
    # each held-out person brings all their rows
    counts = table["pid"].value_counts()
    held_counts = heldout["pid"].value_counts()
    assert held_counts.to_dict() == counts[held_counts.index].to_dict()


def test_the_user_level_split_depends_on_the_ids_not_on_the_row_order():
    table = make_small_frame(3000, seed=3)
    shuffled = table.sample(frac=1.0, random_state=9).reset_index(drop=True)
    held = set(split_holdout(table, 0.3, 1, "pid")[1]["pid"])
    assert held == set(split_holdout(shuffled, 0.3, 1, "pid")[1]["pid"])


def test_the_holdout_stream_is_not_the_public_splits():
    # same seed, same fraction: the holdout does not pick the rows the public split picks
    table = make_small_frame(2000, seed=4)
    rng = np.random.default_rng(0)
    public_rows = set(rng.choice(len(table), 600, replace=False))
    held_rows = set(np.flatnonzero(holdout_mask(table, 0.3, 0)))
    assert held_rows != public_rows
    expected = np.zeros(len(table), dtype=bool)
    expected[np.random.default_rng([HOLDOUT_STREAM, 0]).choice(len(table), 600,
                                                                replace=False)] = True
    assert np.array_equal(holdout_mask(table, 0.3, 0), expected)


@pytest.mark.parametrize("fraction", [1.0, -0.1, 1.5, "0.2", True])
def test_a_fraction_outside_zero_to_one_is_refused(fraction):
    with pytest.raises(ConfigError, match="holdout_fraction"):
        holdout_mask(make_small_frame(100, 0), fraction, 0)


def test_a_split_that_empties_one_side_is_refused_without_a_count():
    table = make_small_frame(10, seed=0)
    with pytest.raises(ConfigError) as info:
        holdout_mask(table, 0.99, 0)  # round(9.9) = 10 of 10 rows
    assert "10" not in str(info.value)


def test_fraction_zero_holds_out_nothing():
    table = make_small_frame(100, seed=0)
    training, heldout = split_holdout(table, 0.0, 0)
    assert heldout is None and training is table


# ----- the dataset: training view, public split, loaders -------------------------------------
def test_training_view_drops_only_the_heldout_part(small_dataset):
    held = make_small_frame(50, seed=7, first_id=9001)
    ds = Dataset(small_dataset.name, small_dataset.schema, small_dataset.private,
                 small_dataset.public, "user", "pid", 5, heldout=held, target="size")
    view = ds.training_view()
    assert view.heldout is None and ds.heldout is held  # the original keeps it
    assert view.private is ds.private and view.public is ds.public
    assert (view.target, view.unit, view.ledger_unit) == ("size", "user", "user:pid")
    assert view.content_digest() == ds.content_digest()


def test_the_public_split_carries_the_heldout_part_and_the_target(small_dataset):
    held = make_small_frame(50, seed=7, first_id=9001)
    ds = Dataset("t", small_dataset.schema, small_dataset.private, None, "user", "pid", 5,
                 heldout=held, target="color")
    split = with_public_split(ds, 0.4, 1)
    assert split.heldout is held and split.target == "color"
    assert not set(split.public["pid"]) & set(held["pid"])


def record_schema() -> Schema:
    """The small schema without its id column: record-level."""
    return Schema((Column("color", "categorical", values=("red", "green", "blue", "purple"),
                          dtype="str"),
                   Column("size", "categorical", values=(0, 1, 2, 3)),
                   Column("amount", "numeric", min=-1, max=100, bins=(0, 10, 50))))


def planted_csv(folder: Path, fraction: float, seed: int, id_column: str | None,
                schema: Schema) -> tuple[pd.DataFrame, np.ndarray]:
    """private.csv with MARKER in the ``amount`` of the rows the holdout takes, and the
    schema; returns the raw table and the held-out mask."""
    raw = make_small_frame(3000, seed=1)
    if id_column is None:
        raw = raw.drop(columns=["pid"])
    mask = holdout_mask(raw, fraction, seed, id_column)  # planting changes no id
    raw.loc[mask, "amount"] = MARKER
    raw.to_csv(folder / "private.csv", index=False)
    schema.save(folder / "parameters.json")
    return raw, mask


def test_the_csv_loader_holds_out_the_marked_rows_before_the_public_split(tmp_path):
    raw, mask = planted_csv(tmp_path, 0.25, 7, None, record_schema())
    ds = load_csv_dataset(str(tmp_path / "private.csv"), str(tmp_path / "parameters.json"),
                          holdout_fraction=0.25, split_seed=7, public_fraction=0.3)
    assert ds.unit == "record" and ds.heldout is not None
    assert len(ds.heldout) == mask.sum() and (ds.heldout["amount"] == MARKER).all()
    assert not (ds.private["amount"] == MARKER).any()
    assert not (ds.public["amount"] == MARKER).any()  # the public part is training rows
    assert len(ds.private) + len(ds.public) + len(ds.heldout) == len(raw)


def test_without_a_holdout_the_csv_loads_as_before(tmp_path):
    planted_csv(tmp_path, 0.25, 7, None, record_schema())
    ds = load_csv_dataset(str(tmp_path / "private.csv"), str(tmp_path / "parameters.json"),
                          holdout_fraction=0.0, target="none")
    assert ds.heldout is None and ds.target is None
    assert len(ds.private) == 3000


def test_the_csv_target_is_checked_against_the_schema(tmp_path, small_schema):
    planted_csv(tmp_path, 0.2, 0, "pid", small_schema)
    paths = (str(tmp_path / "private.csv"), str(tmp_path / "parameters.json"))
    assert load_csv_dataset(*paths, target="size").target == "size"
    with pytest.raises(ConfigError, match="'income' is not a column") as info:
        load_csv_dataset(*paths, target="income")
    assert "color" in info.value.fix
    with pytest.raises(ConfigError, match="person id"):
        load_csv_dataset(*paths, target="pid")


def test_the_shared_datasets_name_their_targets(shared_data):
    adult = load_shared_dataset("adult", max_rows=2000, holdout_fraction=0.2)
    assert adult.target == "income>50K" and adult.target in adult.schema.names
    assert len(adult.heldout) == 400 and len(adult.private) == 1600
    assert load_shared_dataset("titanic").target == "Survived"
    assert load_shared_dataset("nltcs", max_rows=100).target is None
    assert load_shared_dataset("adult", max_rows=100, target=None).target is None


def test_the_shared_holdout_comes_after_max_rows_and_before_the_public_split(shared_data):
    plain = load_shared_dataset("adult", max_rows=3000, split_seed=4)
    ds = load_shared_dataset("adult", max_rows=3000, split_seed=4, holdout_fraction=0.2,
                             public_fraction=0.5)
    assert len(ds.heldout) == 600 and len(ds.public) == 1200 and len(ds.private) == 1200
    assert rows_as_sorted_records(pd.concat([ds.private, ds.public, ds.heldout])) == \
        rows_as_sorted_records(plain.private)


# ----- the run: the mechanism, tuning and the ledger see the training persons ---------------
def spy_config(tmp_path: Path, uri: str, **extra) -> dict:
    cfg = {
        "dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                    "schema": str(tmp_path / "parameters.json"),
                    "public_path": str(tmp_path / "public.csv"),
                    "holdout_fraction": 0.3, "split_seed": 3},
        "mechanism": {"name": "test_holdout_spy", "record_path": str(tmp_path / "seen.jsonl")},
        "privacy": {"epsilon": 1.0, "delta": 1e-6, "accountant": "gdp"},
        "metrics": {"kmarginal": {"k": 2}},
        "trial": 0, "seed": 0, "plugins": ["tests.test_holdout"],
        "tracking": {"uri": uri, "experiment": "test", "log_private_synthetic": False},
    }
    cfg.update(extra)
    return cfg


@pytest.fixture
def planted_user_csv(tmp_path, small_schema):
    raw, mask = planted_csv(tmp_path, 0.3, 3, "pid", small_schema)
    make_small_frame(3000, 2, first_id=5001).to_csv(tmp_path / "public.csv", index=False)
    training_ids = sorted(int(i) for i in raw.loc[~mask, "pid"].unique())
    return tmp_path, raw, mask, training_ids


def test_a_mechanism_never_receives_the_heldout_persons(planted_user_csv, tracking_uri):
    from dp_arena.run.runner import run_one

    tmp_path, raw, mask, training_ids = planted_user_csv
    persons, held = raw["pid"].nunique(), raw.loc[mask, "pid"].nunique()
    # a delta the check refuses for all persons and accepts for the training persons only
    delta = 1.0 / (persons - held / 2)
    out = run_one(spy_config(tmp_path, tracking_uri,
                             privacy={"epsilon": 1.0, "delta": delta, "accountant": "gdp"}))
    assert out.status == "FINISHED"
    [seen] = records(tmp_path / "seen.jsonl")
    assert seen["markers"] == 0 and seen["public_markers"] == 0 and not seen["heldout"]
    assert seen["ids"] == training_ids and seen["rows"] == int((~mask).sum())
    # the scores saw the held-out part (the marker is in it): the dataset the metrics read
    data = load_csv_dataset(**{k: v for k, v in spy_config(tmp_path, "")["dataset"].items()
                               if k != "name"})
    assert (data.heldout["amount"] == MARKER).all() and len(data.heldout) == mask.sum()
    assert count_persons(data.training_view()) == len(training_ids) == persons - held


def test_dp_select_tuning_never_receives_the_heldout_persons(planted_user_csv, tracking_uri):
    from dp_arena.run.runner import run_one

    tmp_path, raw, mask, training_ids = planted_user_csv
    public_ids = set(pd.read_csv(tmp_path / "public.csv")["pid"])
    out = run_one(spy_config(tmp_path, tracking_uri, tuning={
        "mode": "dp_select", "space": {"mechanism.tag": "choice(1,2)"}, "select_share": 0.2}))
    assert out.status == "FINISHED"
    seen = records(tmp_path / "seen.jsonl")
    assert len(seen) == 3  # two candidates on the public view, then the chosen one
    held_ids = set(raw.loc[mask, "pid"])
    for s in seen:
        assert s["markers"] == 0 and s["public_markers"] == 0 and not s["heldout"]
        assert not set(s["ids"]) & held_ids
    assert [s["ids"] for s in seen if not set(s["ids"]) <= public_ids] == [training_ids]


# ----- the schema proposal sees the training rows only -----------------------------------------
def test_the_schema_proposal_never_receives_the_heldout_rows(planted_user_csv, monkeypatch):
    import dp_arena.cli.schema as cli

    tmp_path, raw, mask, training_ids = planted_user_csv
    raw.loc[mask, "amount"] = 0  # in the proposal's domain: held-out rows survive loading
    raw.loc[mask & (raw["size"] == 0), "color"] = "purple"  # only held-out rows hold it
    raw.to_csv(tmp_path / "private.csv", index=False)
    received = []
    real = cli.propose
    monkeypatch.setattr(cli, "propose", lambda df, settings: received.append(df) or
                        real(df, settings))
    out = tmp_path / "proposed.json"
    code = cli.main([str(tmp_path / "private.csv"), "--out", str(out), "--from-private",
                     "--id-column", "pid", "--max-rows-per-person", "5",
                     "--holdout-fraction", "0.3", "--split-seed", "3"])
    assert code == 0
    [df] = received
    assert (raw["color"] == "purple").any() and not (df["color"] == "purple").any()
    assert sorted(int(i) for i in df["pid"].unique()) == training_ids
    params = json.loads(out.read_text())
    assert params["proposal"]["holdout"] == {"fraction": 0.3, "split_seed": 3,
                                             "unit": "user:pid"}
    assert "purple" not in json.dumps(params)  # the from-private schema lists seen values
    # a run with the proposal's split loads; any other split is refused with both settings
    ds = load_csv_dataset(str(tmp_path / "private.csv"), str(out), holdout_fraction=0.3,
                          split_seed=3)
    assert sorted(int(i) for i in ds.private["pid"].unique()) == training_ids
    assert set(ds.heldout["pid"]) <= set(raw.loc[mask, "pid"]) and len(ds.heldout) > 0
    for fraction, seed in ((0.0, 0), (0.2, 3), (0.3, 4)):
        with pytest.raises(ConfigError, match="proposed from the private file") as info:
            load_csv_dataset(str(tmp_path / "private.csv"), str(out),
                             holdout_fraction=fraction, split_seed=seed)
        assert "--holdout-fraction" in info.value.fix


def test_a_schema_proposed_without_a_holdout_refuses_a_run_with_one(planted_user_csv):
    from dp_arena.cli.schema import main

    tmp_path, *_ = planted_user_csv
    out = tmp_path / "whole.json"
    assert main([str(tmp_path / "private.csv"), "--out", str(out), "--from-private",
                 "--id-column", "pid", "--max-rows-per-person", "5",
                 "--holdout-fraction", "0"]) == 0
    assert "holdout" not in json.loads(out.read_text())["proposal"]
    # unset, the run takes the proposal's split: none, said with how to get one
    ds = load_csv_dataset(str(tmp_path / "private.csv"), str(out))
    assert ds.heldout is None and "--holdout-fraction" in " ".join(ds.setup_notes)
    with pytest.raises(ConfigError, match="no holdout"):
        load_csv_dataset(str(tmp_path / "private.csv"), str(out), holdout_fraction=0.3)


# ----- taxi_sim: simulated held-out taxis -------------------------------------------------------
def test_taxi_sim_private_table_is_unchanged_by_its_heldout_taxis():
    from dp_arena.data.taxi.sim import simulate_years

    without = load_taxi_sim(n_private=5000, n_public=1000, seed=3, n_heldout=0)
    with_held = load_taxi_sim(n_private=5000, n_public=1000, seed=3, n_heldout=2000)
    assert without.heldout is None and len(with_held.heldout) == 2000
    assert with_held.content_digest() == without.content_digest()
    private, public = simulate_years(5000, 1000, 3)
    pd.testing.assert_frame_equal(with_held.private, private)
    pd.testing.assert_frame_equal(with_held.public, public)


def test_taxi_sim_heldout_taxis_are_new_taxis_of_the_scoring_year():
    from dp_arena.data.taxi.sim import year_params
    from dp_arena.data.taxi.sprint3 import MAX_TRIPS_PER_TAXI

    ds = load_taxi_sim(n_private=5000, n_public=1000, seed=1, n_heldout=3000)
    held, private = ds.heldout, ds.private
    assert not set(held["taxi_id"]) & set(private["taxi_id"]) & set(ds.public["taxi_id"]) \
        and not set(held["taxi_id"]) & set(private["taxi_id"])
    lo, hi = year_params("2016").id_range
    assert held["taxi_id"].between(lo, hi).all()
    assert held["taxi_id"].value_counts().max() <= MAX_TRIPS_PER_TAXI
    assert ds.schema.problems(held) == []
    again = load_taxi_sim(n_private=5000, n_public=1000, seed=1, n_heldout=3000)
    pd.testing.assert_frame_equal(again.heldout, held)
    assert ds.target == "payment_type"


def test_taxi_sim_default_has_heldout_taxis_and_refuses_a_bad_count():
    from dp_arena.data.datasets import DEFAULT_N_HELDOUT

    assert DEFAULT_N_HELDOUT == 10_000
    for bad in (-1, 2.5, True):
        with pytest.raises(ConfigError, match="n_heldout"):
            load_taxi_sim(n_private=1000, n_public=1000, n_heldout=bad)


def test_fresh_ids_avoid_the_taken_ones_and_keep_persons_whole():
    table = pd.DataFrame({"id": [7, 7, 8, 9, 9, 9], "x": range(6)})
    out = with_fresh_ids(table, "id", (1, 6), np.array([1, 2, 3]), np.random.default_rng(0))
    assert set(out["id"]) == {4, 5, 6}  # three persons, the three free ids
    assert out.groupby("id")["x"].apply(tuple).sort_values().tolist() == \
        [(0, 1), (2,), (3, 4, 5)]
    with pytest.raises(ConfigError, match="id range"):
        with_fresh_ids(table, "id", (1, 5), np.array([1, 2, 3]), np.random.default_rng(0))
