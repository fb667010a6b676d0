"""Person ids for synthetic rows: the noisy person count (ledger, noise, sensitivity), size
apportioning, key matching, and profile ids (sizes, counts, locality, public data only).

Tolerances: (b) statistical ones use tests.support.tolerances (z = 4.89 standard errors, false
failure 1e-6); (a) a count difference of exactly 1 computed on doubles: abs=1e-9.
"""

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, load_taxi_sim
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms.base import assign_ids
from dp_arena.mechanisms.person_ids import (
    apportion,
    ids_from_public_profiles,
    match_by_key,
    noisy_person_count,
)
from dp_arena.metrics.challenge import hoc_score
from tests.support.tolerances import mean_se, sd_rel_se, statistical

PROFILE = ["pickup_community_area", "shift"]


@pytest.fixture(scope="module")
def taxi() -> Dataset:
    return load_taxi_sim(n_private=20000, n_public=20000, seed=2)


# ----- the noisy count ----------------------------------------------------------------------
def test_noisy_person_count_is_true_count_plus_the_charged_gaussian(taxi):
    ledger = Ledger(Budget(10.0, 1e-6), unit=taxi.ledger_unit)
    noisy = noisy_person_count(taxi, 3.5, Releaser(ledger, NumpySampler(np.random.default_rng(7))))
    true = taxi.private["taxi_id"].nunique()
    assert noisy == true + np.random.default_rng(7).normal(0.0, 3.5)
    [charge] = ledger.charges
    assert (charge.name, charge.kind, charge.sensitivity, charge.scale) == (
        "person count", "gaussian", 1.0, 3.5)


def test_noisy_person_count_noise_has_the_charged_scale(taxi):
    true = taxi.private["taxi_id"].nunique()
    rng = np.random.default_rng(0)
    draws = np.array([noisy_person_count(taxi, 10.0, Releaser(Ledger(Budget(1.0, 1e-6)),
                                                              NumpySampler(rng))) - true
                      for _ in range(2000)])
    # 2000 normal draws of sigma 10: the mean's standard error 10 / sqrt(2000) = 0.22, the
    # sd's relative one 1 / sqrt(4000) = 1.6%; z = 4.89 of each (false failure 1e-6; the
    # constants were 4 and 4.4 standard errors: 6e-5 and 1e-5)
    assert abs(draws.mean()) < statistical(mean_se(10.0, len(draws)))
    assert draws.std() == pytest.approx(10.0, rel=statistical(sd_rel_se(len(draws))))


def test_person_count_sensitivity_is_one_on_neighbours(taxi):
    """Removing one person changes the pre-noise count by exactly 1."""
    counts = []
    for drop in (None, taxi.private["taxi_id"].iloc[0]):
        private = taxi.private if drop is None else taxi.private[taxi.private["taxi_id"] != drop]
        data = Dataset("n", taxi.schema, private, taxi.public, "user", "taxi_id", 200)
        counts.append(noisy_person_count(data, 1.0, Releaser(
            Ledger(Budget(10.0, 1e-6)), NumpySampler(np.random.default_rng(3)))))
    assert counts[0] - counts[1] == pytest.approx(1.0, abs=1e-9)


def test_noisy_person_count_refuses_record_level_data(small_dataset):
    small_dataset.unit = "record"
    with pytest.raises(ConfigError, match="user-level"):
        noisy_person_count(small_dataset, 1.0, Releaser(Ledger(Budget(1.0, 1e-6))))


# ----- apportioning -------------------------------------------------------------------------
def test_apportion_is_proportional_when_it_can_be():
    assert apportion(np.array([1, 1, 2]), 8, None, np.random.default_rng(0)).tolist() == [2, 2, 4]
    assert apportion(np.array([3, 3, 3]), 3, 200, np.random.default_rng(0)).tolist() == [1, 1, 1]


def test_apportion_fills_to_the_bounds_and_sums_exactly():
    # [1, 1, 10] for 12 rows with cap 5: the big one is capped, 7 rows left for two persons
    sizes = apportion(np.array([1, 1, 10]), 12, 5, np.random.default_rng(0))
    assert sizes[2] == 5 and sorted(sizes[:2].tolist()) == [3, 4]
    # a tiny weight still gets its one row
    sizes = apportion(np.array([1e-6, 1.0]), 10, None, np.random.default_rng(0))
    assert sizes.tolist() == [1, 9]
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        cap = int(rng.integers(1, 20))
        total = int(rng.integers(n, n * cap + 1))
        s = apportion(rng.random(n) * 10 + 0.01, total, cap, rng)
        assert s.sum() == total and s.min() >= 1 and s.max() <= cap


def test_apportion_refuses_impossible_totals():
    with pytest.raises(ValueError, match="cannot split"):
        apportion(np.ones(3), 2, None, np.random.default_rng(0))
    with pytest.raises(ValueError, match="cannot split"):
        apportion(np.ones(3), 10, 3, np.random.default_rng(0))


# ----- matching -----------------------------------------------------------------------------
def test_match_by_key_pairs_equal_keys_as_often_as_possible():
    rows = np.array([0, 0, 1, 2, 1, 0])
    slots = np.array([1, 0, 1, 3, 1, 0])
    r, s = match_by_key(rows, slots, np.random.default_rng(0))
    assert (rows[r] == slots[s]).all()
    assert len(set(r)) == len(r) and len(set(s)) == len(s)
    # key 0: min(3, 2) = 2 pairs, key 1: min(2, 3) = 2, keys 2 and 3: none
    assert sorted(rows[r].tolist()) == [0, 0, 1, 1]


# ----- profile ids --------------------------------------------------------------------------
def test_profile_ids_give_the_requested_persons_and_respect_the_cap(taxi):
    rows = taxi.private.drop(columns="taxi_id")
    for people in (150.0, 917.4, 3000.0):
        ids = ids_from_public_profiles(rows, taxi, people, PROFILE, np.random.default_rng(0))
        sizes = pd.Series(ids).value_counts()
        assert len(ids) == len(rows) and len(sizes) == round(people)
        assert sizes.max() <= taxi.max_records_per_individual
        col = taxi.schema["taxi_id"]
        assert ids.min() >= col.min and ids.max() <= col.max
    # fewer persons than the cap allows: as few as the row count needs (20000 / 200)
    ids = ids_from_public_profiles(rows, taxi, 3.0, PROFILE, np.random.default_rng(0))
    assert pd.Series(ids).nunique() == 100
    assert pd.Series(ids).value_counts().max() == 200
    assert len(ids_from_public_profiles(rows.iloc[:0], taxi, 10.0, PROFILE,
                                        np.random.default_rng(0))) == 0


def test_profile_ids_read_no_private_data(taxi):
    rows = taxi.schema.decode(taxi.schema.encode(taxi.public.iloc[:3000]),
                              np.random.default_rng(1), reference=taxi.public)
    other = Dataset("x", taxi.schema, taxi.private.iloc[:10].copy(), taxi.public, "user",
                    "taxi_id", 200)
    a = ids_from_public_profiles(rows, taxi, 400.0, PROFILE, np.random.default_rng(5))
    b = ids_from_public_profiles(rows, other, 400.0, PROFILE, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


def test_profile_ids_keep_persons_local(taxi):
    """With the private rows and the true number of taxis, persons copying public profiles
    work far fewer (pickup, shift) cells than persons of random rows, as real taxis do, and
    the HOC score rises accordingly."""
    rows = taxi.private.drop(columns="taxi_id").reset_index(drop=True)
    true = taxi.private["taxi_id"].nunique()
    rng = np.random.default_rng(0)
    profiled = rows.assign(taxi_id=ids_from_public_profiles(rows, taxi, true, PROFILE, rng))
    random_sizes = rows.assign(taxi_id=assign_ids(len(rows), taxi, rng))

    def areas_per_trip(df):  # distinct pickup areas / trips, over taxis of 10+ trips
        per_taxi = df.groupby("taxi_id")
        ratio = per_taxi["pickup_community_area"].nunique() / per_taxi.size()
        return ratio[per_taxi.size() >= 10].mean()

    assert areas_per_trip(profiled) < 0.9 * areas_per_trip(random_sizes)
    assert hoc_score(taxi.private, profiled) > hoc_score(taxi.private, random_sizes) + 0.01


def test_profile_ids_without_public_data_split_rows_evenly(taxi):
    data = Dataset("x", taxi.schema, taxi.private, None, "user", "taxi_id", 200)
    rows = taxi.private.drop(columns="taxi_id").iloc[:1000]
    sizes = pd.Series(ids_from_public_profiles(rows, data, 300.0, PROFILE,
                                               np.random.default_rng(0))).value_counts()
    assert len(sizes) == 300 and set(sizes) == {3, 4}  # 1000 = 100 x 4 + 200 x 3
