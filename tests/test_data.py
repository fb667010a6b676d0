import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import (
    Dataset,
    load_dataset,
    load_shared_dataset,
    load_taxi_sim,
    shared_data_dir,
    with_public_split,
)
from dp_arena.errors import ConfigError, DPArenaError


def test_public_split_is_disjoint_by_person_and_seeded(small_dataset):
    small_dataset.public = None
    a = with_public_split(small_dataset, 0.3, seed=1)
    b = with_public_split(small_dataset, 0.3, seed=1)
    pd.testing.assert_frame_equal(a.public, b.public)
    assert not set(a.public["pid"]) & set(a.private["pid"])  # whole persons move
    assert len(a.public) + len(a.private) == len(small_dataset.private)
    n_people = small_dataset.private["pid"].nunique()
    assert a.public["pid"].nunique() == round(0.3 * n_people)
    c = with_public_split(small_dataset, 0.3, seed=2)
    assert set(c.public["pid"]) != set(a.public["pid"])


def test_public_split_rejects_bad_fractions(small_dataset):
    small_dataset.public = None
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ConfigError, match="public_fraction"):
            with_public_split(small_dataset, bad, 0)


def test_user_level_needs_an_id_column(small_schema):
    with pytest.raises(ConfigError, match="needs an id column"):
        Dataset("x", small_schema, pd.DataFrame(), unit="user", id_column=None)


def test_unknown_dataset_name():
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        load_dataset({"name": "nope"})


def test_missing_shared_folder_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_ARENA_DATA", str(tmp_path / "absent"))
    with pytest.raises(DPArenaError, match="shared data folder not found") as err:
        shared_data_dir()
    assert "DP_ARENA_DATA" in str(err.value)


def test_taxi_sim_dataset_is_user_level_with_both_years():
    ds = load_taxi_sim(n_private=5000, n_public=5000, seed=3)
    assert ds.unit == "user" and ds.id_column == "taxi_id"
    assert ds.max_records_per_individual == 200 and len(ds.private) == 5000
    assert ds.schema.problems(ds.private) == [] and ds.schema.problems(ds.public) == []
    again = load_taxi_sim(n_private=5000, n_public=5000, seed=3)
    assert ds.content_digest() == again.content_digest()
    with pytest.raises(ConfigError, match="n_private"):
        load_taxi_sim(n_private=10)


@pytest.mark.realdata
@pytest.mark.parametrize("name, rows, cols", [("titanic", 1304, 9), ("adult", 48842, 14),
                                               ("nltcs", 21574, 16)])
def test_shared_datasets_load_and_validate(shared_data, name, rows, cols):
    ds = load_shared_dataset(name)
    assert ds.private.shape == (rows, cols) and ds.unit == "record" and ds.public is None
    assert ds.schema.problems(ds.private) == []
    split = load_shared_dataset(name, public_fraction=0.5, split_seed=0)
    assert len(split.private) + len(split.public) == rows
    codes = ds.schema.encode(ds.private)
    assert np.array_equal(codes.to_numpy(), ds.private.to_numpy())  # already codes 0..n-1


def test_persons_are_rows_or_distinct_ids():
    """count_persons (the private part) and persons_in (any part): rows for record-level
    data, distinct ids for user-level data, counted by hand."""
    from dp_arena.data.datasets import count_persons, persons_in
    from tests.conftest import make_small_frame, make_small_schema

    frame = make_small_frame(10, seed=0)
    frame["pid"] = [1, 1, 1, 2, 2, 3, 4, 4, 4, 4]
    public = frame.iloc[:5]
    users = Dataset("small", make_small_schema(), frame, public, unit="user", id_column="pid",
                    max_records_per_individual=5)
    assert count_persons(users) == 4
    assert persons_in(public, users) == 2
    records = Dataset("small", make_small_schema(), frame, public)
    assert count_persons(records) == 10
    assert persons_in(public, records) == 5
