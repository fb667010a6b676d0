"""The per-worker dataset memo (dp_arena/data/cache.py): one load per dataset config and file
version, a reload for anything that changed, a bounded size, and the switch to turn it off."""

from __future__ import annotations

import json
import os
import time

import pandas as pd
import pytest

from dp_arena.data import cache
from dp_arena.data.cache import DatasetMemo, cached_load, source_files
from dp_arena.data.datasets import load_dataset

SMALL_TAXI = {"name": "taxi_sim", "n_private": 1000, "n_public": 1000, "n_heldout": 0}


class SpyLoader:
    """load_dataset, counting its calls."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, cfg):
        self.calls.append(dict(cfg))
        return load_dataset(cfg)


def write_csv(tmp_path, rows: list[tuple[int, str]], age: float = 60.0):
    """A CSV + domain schema, their mtimes set ``age`` seconds in the past (not racy)."""
    data, schema = tmp_path / "d.csv", tmp_path / "domain.json"
    pd.DataFrame(rows, columns=["a", "b"]).to_csv(data, index=False)
    schema.write_text(json.dumps({"a": 3, "b": 2}))
    past = time.time() - age
    for path in (data, schema):
        os.utime(path, (past, past))
    return {"name": "csv", "path": str(data), "schema": str(schema), "holdout_fraction": 0.0}


def csv_rows(n: int) -> list[tuple[int, int]]:
    return [(i % 3, i % 2) for i in range(n)]


def test_two_loads_of_one_config_return_the_same_object_loading_once():
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    first = memo.get(SMALL_TAXI)
    second = memo.get(dict(reversed(list(SMALL_TAXI.items()))))  # key order does not matter
    assert second is first
    assert len(spy.calls) == 1


def test_a_different_setting_loads_again():
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    a = memo.get(SMALL_TAXI)
    b = memo.get({**SMALL_TAXI, "seed": 1})
    assert b is not a
    assert len(spy.calls) == 2
    assert memo.get(SMALL_TAXI) is a  # both remembered
    assert len(spy.calls) == 2


def test_an_edited_csv_is_loaded_again(tmp_path):
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    cfg = write_csv(tmp_path, csv_rows(20), age=120)
    first = memo.get(cfg)
    assert memo.get(cfg) is first and len(spy.calls) == 1
    write_csv(tmp_path, csv_rows(30), age=60)  # new content, new mtime
    edited = memo.get(cfg)
    assert len(spy.calls) == 2
    assert len(edited.private) == 30 and len(first.private) == 20


def test_a_same_size_rewrite_with_a_new_mtime_is_loaded_again(tmp_path):
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    cfg = write_csv(tmp_path, [(0, 0), (1, 1)], age=120)
    first = memo.get(cfg)
    write_csv(tmp_path, [(2, 0), (1, 1)], age=60)  # same bytes count, other content
    second = memo.get(cfg)
    assert len(spy.calls) == 2
    assert second.private["a"].tolist() == [2, 1] != first.private["a"].tolist()


def test_a_file_written_just_now_is_loaded_but_not_remembered(tmp_path):
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    cfg = write_csv(tmp_path, csv_rows(10), age=0)
    memo.get(cfg)
    memo.get(cfg)
    assert len(spy.calls) == 2 and not memo.entries


def test_the_memo_is_bounded_and_drops_the_least_recently_used():
    spy = SpyLoader()
    memo = DatasetMemo(size=2, loader=spy)
    a = memo.get(SMALL_TAXI)
    memo.get({**SMALL_TAXI, "seed": 1})
    assert memo.get(SMALL_TAXI) is a  # a is now the most recent
    memo.get({**SMALL_TAXI, "seed": 2})  # drops seed=1
    assert len(memo.entries) == 2 and len(spy.calls) == 3
    assert memo.get(SMALL_TAXI) is a and len(spy.calls) == 3
    memo.get({**SMALL_TAXI, "seed": 1})
    assert len(spy.calls) == 4


def test_a_table_changed_in_place_is_loaded_again():
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    first = memo.get(SMALL_TAXI)
    first.private.iloc[0, 1] = first.private.iloc[1, 1] if first.private.iloc[0, 1] != \
        first.private.iloc[1, 1] else first.private.iloc[2, 1]
    second = memo.get(SMALL_TAXI)
    assert second is not first and len(spy.calls) == 2
    assert second.private.equals(load_dataset(SMALL_TAXI).private)


def test_the_switch_turns_the_memo_off(monkeypatch):
    spy = SpyLoader()
    memo = DatasetMemo(loader=spy)
    monkeypatch.setenv(cache.CACHE_ENV, "0")
    a, b = cached_load(SMALL_TAXI, memo), cached_load(SMALL_TAXI, memo)
    assert a is not b and len(spy.calls) == 2 and not memo.entries
    monkeypatch.setenv(cache.CACHE_ENV, "1")
    assert cached_load(SMALL_TAXI, memo) is cached_load(SMALL_TAXI, memo)
    assert len(spy.calls) == 3


def test_the_files_a_load_reads(tmp_path, monkeypatch):
    cfg = write_csv(tmp_path, csv_rows(5))
    assert source_files(cfg) == ((tmp_path / "d.csv").resolve(),
                                 (tmp_path / "domain.json").resolve())
    assert source_files(SMALL_TAXI) == ()
    monkeypatch.setenv("DP_ARENA_DATA", str(tmp_path))
    assert source_files({"name": "adult"}) == (tmp_path / "adult.zip",
                                               tmp_path / "adult-domain.json")
    monkeypatch.setenv("DP_ARENA_DATA", str(tmp_path / "absent"))
    assert source_files({"name": "adult"}) == ()


def test_a_failed_load_is_not_remembered(tmp_path):
    memo = DatasetMemo()
    with pytest.raises(Exception, match="file not found"):
        memo.get({"name": "csv", "path": str(tmp_path / "none.csv"),
                  "schema": str(tmp_path / "none.json")})
    assert not memo.entries


def test_older_datasets_are_kept_only_within_the_memory_bound():
    spy = SpyLoader()
    first = DatasetMemo(loader=spy).get(SMALL_TAXI)
    mb = cache.dataset_mb(first)
    # hand count: the tables' shallow memory, index included
    assert mb == pytest.approx(sum(p.memory_usage(index=True).sum()
                                   for p in (first.private, first.public)) / 2**20)
    memo = DatasetMemo(loader=spy, older_mb=1.5 * mb)  # room for one older dataset, not two
    a = memo.get(SMALL_TAXI)
    memo.get({**SMALL_TAXI, "seed": 1})
    memo.get({**SMALL_TAXI, "seed": 2})  # two older ones would pass the bound: a goes
    assert len(memo.entries) == 2
    calls = len(spy.calls)
    assert memo.get(SMALL_TAXI) is not a and len(spy.calls) == calls + 1
    tiny = DatasetMemo(loader=spy, older_mb=0.0)  # the dataset in use is always kept
    b = tiny.get(SMALL_TAXI)
    assert tiny.get(SMALL_TAXI) is b and len(tiny.entries) == 1
