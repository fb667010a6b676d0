"""The taxi simulator's year-to-year drift (``dp_arena.data.taxi.drift``) and the Sprint 3
presets' sizes.

Invariants: drift 0 makes every year the same distribution (exact, no sampling), so a drawn
public year is as far from the scoring year as a redraw of the scoring year; the distance
between the years' distributions grows with the drift size; the random walks of one world
share their steps; a hand-computed expected number of empty groups. Sampled checks use fixed
seeds and compare two draws of the same size, so the noise floor is measured, not assumed.

Tolerances: rel/rtol=1e-12 and abs=1e-12 compare one closed form computed two ways (exp of
a product, a matrix product of exact values): a few ulps; abs=0.0015 on the 2019 shares, whose
constants are written to 3 decimals (half a unit of the 3rd decimal, 0.0005, for each of the
up to three rounded terms the share adds up).
"""

import math

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from dp_arena.data.datasets import PROJECT_ROOT, load_taxi_sim
from dp_arena.data.taxi import drift as D
from dp_arena.data.taxi.sim import (
    World,
    area_hour_weights,
    pair_distribution,
    simulate_trips,
    simulate_years,
    year_params,
)
from dp_arena.errors import ConfigError

N = 30_000


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    pa = pd.Series(a).value_counts(normalize=True)
    pb = pd.Series(b).value_counts(normalize=True)
    return 0.5 * float(pa.sub(pb, fill_value=0.0).abs().sum())


def pairs(df: pd.DataFrame) -> np.ndarray:
    return df["pickup_community_area"].to_numpy() * 100 + df["dropoff_community_area"].to_numpy()


def test_drift_zero_makes_every_year_the_same_distribution():
    world = World(drift=0.0, seed=123)
    base = year_params("2016", world)
    for year in ("public", "base"):
        params = year_params(year, world)
        assert params.cash_share == base.cash_share
        assert params.airport_share == base.airport_share
        assert params.downtown_share == base.downtown_share
        assert (params.trips_median, params.fare_factor, params.tip_share_factor,
                params.card_tip_rate) == (base.trips_median, 1.0, 1.0, base.card_tip_rate)
        assert all(g == 1.0 for g in params.company_growth.values())
        np.testing.assert_array_equal(pair_distribution(year, world),
                                      pair_distribution("2016", world))
        np.testing.assert_array_equal(area_hour_weights(year, world),
                                      area_hour_weights("2016", world))


@pytest.mark.parametrize("column", ["pairs", "payment_type", "fare"])
def test_drift_zero_public_year_is_a_same_year_redraw(column):
    """At drift 0 the public year's distance to the scoring year is sampling noise: within
    1.5x the distance between two independent draws of the scoring year of the same size
    (both are differences of two same-distribution samples; 1.5 allows the spread of one
    such TVD around its mean at 30,000 trips, measured below at drift 1 to be ~10x larger)."""
    private, public = simulate_years(N, N, seed=3, drift=0.0)
    redraw = simulate_trips(N, np.random.default_rng(99), "2016", World(0.0, 0))
    get = pairs if column == "pairs" else (lambda df: df[column].to_numpy())
    noise = tvd(get(private), get(redraw))
    assert tvd(get(private), get(public)) < 1.5 * noise
    drifted_private, drifted_public = simulate_years(N, N, seed=3, drift=1.0)
    assert tvd(get(drifted_private), get(drifted_public)) > 2 * noise


def distribution_tvd(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def test_years_move_apart_as_the_drift_grows():
    """Noise-free: the TVD between the public and 2016 pickup x dropoff distributions, and the
    gap in every trend share, grow strictly with the drift size."""
    sizes = (0.0, 0.5, 1.0, 2.0)
    gaps = [distribution_tvd(pair_distribution("public", World(d, 5)),
                             pair_distribution("2016", World(d, 5))) for d in sizes]
    assert gaps[0] == 0.0 and all(a < b for a, b in zip(gaps, gaps[1:]))
    for name in ("cash_share", "airport_share", "downtown_share", "fare_factor",
                 "trips_median"):
        diff = [abs(getattr(year_params("public", World(d, 5)), name)
                    - getattr(year_params("2016", World(d, 5)), name)) for d in sizes]
        assert diff[0] == 0.0 and all(a < b for a, b in zip(diff, diff[1:])), name


def test_trend_shares_are_the_sample_lines_three_years_apart():
    """Public (2019) minus 2016 = three years of each slope; the fare factor is the log slope
    times the years from the base (hand-computed: exp(0.0213 * (2019 - 2014.128)))."""
    public, scoring = year_params("public"), year_params("2016")
    for name, slope in D.SHARE_SLOPES.items():
        gap = getattr(public, f"{name}_share") - getattr(scoring, f"{name}_share")
        assert gap == pytest.approx(3 * slope, abs=1e-12)
    assert public.fare_factor == pytest.approx(math.exp(0.0213 * 4.872), rel=1e-12)
    assert year_params("base").fare_factor == 1.0
    from dp_arena.data.taxi.sim import PUBLIC_YEAR_TRENDS  # the 2019 line values, 3 decimals

    for name, value in PUBLIC_YEAR_TRENDS.items():
        assert getattr(public, f"{name}_share") == pytest.approx(value, abs=0.0015)


def test_random_walks_share_their_steps_and_scale_with_drift():
    """Hand-recomputed: the walk's increments are default_rng(seed)'s standard normals in the
    order (area, pair, hour) per step of WALK_YEARS, scaled by drift * size * sqrt(years)."""
    seed, drift = 11, 0.7
    rng = np.random.default_rng(seed)
    steps = [(rng.standard_normal(78), rng.standard_normal((4, 4)),
              rng.standard_normal((4, 24))) for _ in range(3)]
    years = np.diff(D.WALK_YEARS)
    area_sd = np.asarray(D.AREA_LOG_SD)[D.zone_of_code(np.arange(78))]
    for k, year in enumerate(("2016", "public", "2020")):
        f = D.fields(year, drift, seed)
        expected_pair = sum(drift * D.PAIR_LOG_SD * math.sqrt(years[j]) * steps[j][1]
                            for j in range(k + 1))
        expected_area = sum(drift * math.sqrt(years[j]) * area_sd * steps[j][0]
                            for j in range(k + 1))
        np.testing.assert_allclose(f.pair, expected_pair, rtol=1e-12, atol=0)
        np.testing.assert_allclose(f.area, expected_area, rtol=1e-12, atol=0)
    assert not D.fields("base", drift, seed).pair.any()


def test_hour_multiplier_keeps_each_zones_total():
    f = D.fields("public", 1.0, 2)
    profile = np.full(24, 1 / 24)
    m = D.hour_multiplier(f, profile)
    np.testing.assert_allclose(m @ profile, np.ones(4), rtol=1e-12)


def test_expected_empty_groups_hand_computed():
    # two areas of share 1/2, one shift: each group empty with (1 - 1/2)^n
    assert D.expected_empty_groups(np.array([0.5, 0.5]), np.array([1.0]), 1) == \
        pytest.approx(1.0)
    assert D.expected_empty_groups(np.array([0.5, 0.5]), np.array([1.0]), 3) == \
        pytest.approx(2 * 0.125)
    # 0.9 / 0.1 areas x 0.5 / 0.5 shifts, n = 2: 2 (1 - 0.45)^2 + 2 (1 - 0.05)^2
    assert D.expected_empty_groups(np.array([0.9, 0.1]), np.array([0.5, 0.5]), 2) == \
        pytest.approx(2 * 0.55 ** 2 + 2 * 0.95 ** 2)


def test_bad_drift_is_refused_and_a_drifted_dataset_is_named_apart():
    for bad in (-0.5, 6, "x", True):
        with pytest.raises(ConfigError, match="drift"):
            simulate_years(2000, 2000, seed=0, drift=bad)
    data = load_taxi_sim(n_private=2000, n_public=2000, n_heldout=0, drift=0.5)
    assert data.name == "taxi_sim_drift0.5"
    assert load_taxi_sim(n_private=2000, n_public=2000, n_heldout=0).name == "taxi_sim"


def composed(competition: str) -> dict:
    import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas

    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "dp_arena" / "conf"),
                               version_base=None):
        return compose("config", overrides=[f"competition={competition}"])


@pytest.mark.parametrize("competition, n_private, n_public", [
    ("sprint3", 3_600_000, 3_600_000), ("sprint3_1m", 1_000_000, 1_000_000),
    ("sprint3_full", 3_600_000, 14_800_000)])
def test_sprint3_presets_sizes(competition, n_private, n_public):
    cfg = composed(competition)
    assert (cfg.dataset.n_private, cfg.dataset.n_public) == (n_private, n_public)
    assert cfg.dataset.drift == 1.0
    assert "archetype_writeup" in cfg.competition.mechanisms
    assert list(cfg.competition.epsilons) == [1.0, 10.0] and cfg.competition.trials == 3
