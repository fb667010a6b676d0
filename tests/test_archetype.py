"""The archetype (GooseDP) mechanism: ledger, sensitivity of the private step, valid output.

Tolerances: (c) the ledger spends epsilon to abs=1e-9 (the calibration's root-finding target,
test_budget_edges.assert_spends_the_budget) and delta to abs=1e-15 (delta 1e-6 is charged as
given: 1e-15 is ~4,700 ulps of it); (a) shares, mu^2 and rho sums and a recomputed average are
a few operations on doubles: rel=1e-12 is ~4,500 ulps, above their rounding and far below any
wrong formula.
"""

import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from dp_arena.data.datasets import PROJECT_ROOT, Dataset, load_taxi_sim
from dp_arena.data.taxi.sprint3 import DELTA
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import (
    Budget,
    Ledger,
    analytic_gaussian_sigma,
    gdp_epsilon,
    gdp_mu,
    zcdp_rho,
)
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.archetype import (
    average_trips,
    count_taxis_by_mode,
    fit_public_archetypes,
    modal_values,
    private_histograms,
    split_sigmas,
    taxi_trip_counts,
    tie_break_jitter,
)
from tests.seeding import seeded
from tests.support.docstrings import printed_table


@pytest.fixture(scope="module")
def taxi() -> Dataset:
    return load_taxi_sim(n_private=20_000, n_public=20_000, seed=1)


def run(data, eps, accountant="gdp", seed=0, **params):
    budget = Budget(eps, DELTA)
    ledger = Ledger(budget, accountant, unit=data.ledger_unit)
    out = make_mechanism("archetype", params).fit_sample(data, budget, seeded(ledger, seed),
                                                         np.random.default_rng(seed))
    return out, ledger


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_output_is_schema_valid(taxi, eps):
    out, _ = run(taxi, eps)
    assert taxi.schema.problems(out) == []
    assert list(out.columns) == taxi.schema.names
    assert (out["shift"] == out["trip_day_of_week"] * 3 + out["trip_hour_of_day"] // 8).all()
    # taxis get fresh ids drawn uniformly over the id range without looking at the private ids
    # (avoiding them would reveal them): overlaps are only as many as chance gives
    col = taxi.schema["taxi_id"]
    span = int(col.max) - int(col.min) + 1
    overlap = len(set(out["taxi_id"]) & set(taxi.private["taxi_id"]))
    expected = out["taxi_id"].nunique() * taxi.private["taxi_id"].nunique() / span
    assert overlap <= expected + 5 * expected**0.5 + 3
    n_taxis = taxi.private["taxi_id"].nunique()
    assert 0.7 * n_taxis < out["taxi_id"].nunique() < 1.3 * n_taxis


@pytest.mark.parametrize("accountant", ["gdp", "zcdp", "zcdp_bs"])
@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_ledger_two_gaussian_charges_compose_to_the_budget(taxi, eps, accountant):
    _, ledger = run(taxi, eps, accountant, k=4)
    assert [(c.kind, c.sensitivity, c.count) for c in ledger.charges] == \
        [("gaussian", 1.0, 1), ("gaussian", 1.0, 1)]
    spent_eps, spent_delta = ledger.spent()
    assert spent_eps == pytest.approx(eps, abs=1e-9)
    assert spent_delta == pytest.approx(DELTA, abs=1e-15)
    # the configured split of the accountant's additive budget (mu^2 / rho): 0.1 / 0.9
    share = [1 / c.scale**2 for c in ledger.charges]
    assert share[0] / sum(share) == pytest.approx(0.1, rel=1e-12, abs=0)


def test_split_sigmas_are_the_whole_budget_shared():
    b = Budget(1.0, DELTA)
    sa, sc = split_sigmas(b, "gdp", 0.25)
    assert 1 / sa**2 + 1 / sc**2 == pytest.approx(gdp_mu(1.0, DELTA) ** 2, rel=1e-12,
                                                          abs=0)
    assert sc / sa == pytest.approx(math.sqrt(0.25 / 0.75))
    sa, sc = split_sigmas(b, "zcdp", 0.5)
    assert 1 / (2 * sa**2) + 1 / (2 * sc**2) == pytest.approx(zcdp_rho(1.0, DELTA),
                                                                           rel=1e-12, abs=0)
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ConfigError, match="split"):
            split_sigmas(b, "gdp", bad)


def random_trips(rng, n_taxis=300, n_values=6):
    sizes = rng.integers(1, 15, size=n_taxis)
    ids = np.repeat(rng.choice(10**6, n_taxis, replace=False) + 10**6, sizes)
    # each taxi prefers one value, with plenty of ties among the small taxis
    pref = np.repeat(rng.integers(0, n_values, n_taxis), sizes)
    values = np.where(rng.random(len(ids)) < 0.5, pref, rng.integers(0, n_values, len(ids)))
    return ids, values


@pytest.mark.parametrize("seed", range(5))
def test_pre_noise_histogram_neighbours_differ_by_at_most_one(seed):
    rng = np.random.default_rng(seed)
    n_values, tie_seed = 6, int(rng.integers(2**62))
    ids, values = random_trips(rng, n_values=n_values)
    base = count_taxis_by_mode(ids, values, n_values, tie_seed)
    assert base.sum() == len(np.unique(ids)) and len(base) == n_values
    taxis = np.unique(ids)
    for victim in rng.choice(taxis, 20, replace=False):
        # remove one taxi: exactly one bin drops by one
        keep = ids != victim
        diff = base - count_taxis_by_mode(ids[keep], values[keep], n_values, tie_seed)
        assert np.abs(diff).sum() == 1 and np.sqrt((diff**2).sum()) == 1 and diff.min() == 0
        # add a new taxi with arbitrary trips: exactly one bin grows by one
        extra = rng.integers(0, n_values, rng.integers(1, 30))
        added = count_taxis_by_mode(np.r_[ids, np.full(len(extra), 42)], np.r_[values, extra],
                                    n_values, tie_seed)
        diff = added - base
        assert np.abs(diff).sum() == 1 and diff.max() == 1
        # change one taxi's trips: one taxi moves between two bins (L1 <= 2, L2 <= sqrt 2)
        changed = values.copy()
        changed[ids == victim] = rng.integers(0, n_values, (ids == victim).sum())
        diff = count_taxis_by_mode(ids, changed, n_values, tie_seed) - base
        assert np.abs(diff).sum() in (0, 2) and np.sqrt((diff**2).sum()) <= math.sqrt(2)


def test_private_histograms_have_sensitivity_one_per_histogram(taxi):
    model = fit_public_archetypes(taxi.public, "taxi_id", taxi.schema, 6,
                                  np.random.default_rng(0))
    base = private_histograms(taxi.private, model, "taxi_id", taxi.schema, seed=7)
    assert [len(h) for h in base] == [6, 101]
    assert all(h.sum() == taxi.private["taxi_id"].nunique() for h in base)
    for victim in taxi.private["taxi_id"].drop_duplicates().sample(5, random_state=0):
        fewer = taxi.private[taxi.private["taxi_id"] != victim]
        for h0, h1 in zip(base, private_histograms(fewer, model, "taxi_id", taxi.schema, 7)):
            assert np.abs(h0 - h1).sum() == 1


def test_modes_break_ties_at_random_among_the_tied_values_only():
    ids = np.array([1, 1, 1, 1, 2, 2, 2])
    values = np.array([0, 0, 3, 3, 1, 2, 2])  # taxi 1: tie 0 / 3; taxi 2: clear mode 2
    modes = {int(modal_values(ids, values, 5, s)[1][0]) for s in range(50)}
    assert modes == {0, 3}
    assert all(modal_values(ids, values, 5, s)[1][1] == 2 for s in range(50))
    j = tie_break_jitter(3, np.arange(10_000), np.zeros(10_000))
    assert 0 <= j.min() and j.max() < 1 and abs(j.mean() - 0.5) < 0.02


def test_output_depends_on_private_data_only_through_the_histograms(taxi):
    """Private tables with the same pre-noise histograms give identical output (same rng)."""
    def same(private_a, private_b):
        a, _ = run(Dataset("a", taxi.schema, private_a, taxi.public, "user", "taxi_id"), 1.0,
                   seed=5, k=4)
        b, _ = run(Dataset("b", taxi.schema, private_b, taxi.public, "user", "taxi_id"), 1.0,
                   seed=5, k=4)
        pd.testing.assert_frame_equal(a, b)

    # every column the histograms do not read changed, rows shuffled
    other = taxi.private.sample(frac=1.0, random_state=3).reset_index(drop=True)
    other[["fare", "tips", "trip_total", "trip_seconds", "trip_miles"]] = 7
    other["payment_type"] = -1
    same(taxi.private, other)
    # taxis relabelled (tie-free: one trip per taxi, so the modes cannot depend on the ids)
    single = taxi.private.drop_duplicates("taxi_id").reset_index(drop=True)
    relabelled = single.assign(taxi_id=np.random.default_rng(0).permutation(
        single["taxi_id"].to_numpy()) + 1)
    same(single, relabelled.iloc[::-1].reset_index(drop=True))


def test_row_cap_and_trip_count_modes(taxi):
    out, _ = run(taxi, 10.0, max_rows=5000)
    assert 0 < len(out) <= 5000
    out, _ = run(taxi, 10.0, max_rows=5000, cap_shrinks="trips")
    assert 0 < len(out) <= 5000
    # average (the default): every taxi of an archetype gets the same count, so at most k
    # distinct counts (the cap does not bind at 20k trips)
    average_out, _ = run(taxi, 10.0, k=5)
    assert taxi.schema.problems(average_out) == []
    assert average_out.groupby("taxi_id").size().nunique() <= 5
    public_out, _ = run(taxi, 10.0, trips_per_taxi="public", k=5)
    assert public_out.groupby("taxi_id").size().nunique() > 2 * 5


@pytest.fixture(scope="module")
def model(taxi):
    return fit_public_archetypes(taxi.public, "taxi_id", taxi.schema, 6,
                                 np.random.default_rng(2))


def test_every_taxi_of_an_archetype_gets_its_public_average(taxi, model):
    """The write-up (001 line 337): "we calculate the average number of trips per taxi in each
    archetype from the public data and assign this many trips to each taxi_id"."""
    public_counts = taxi.public.groupby("taxi_id").size()
    for a in range(model.k):
        if model.taxis[a]:  # the average recomputed from the public taxis of the archetype
            assert model.trips_per_taxi[a].sum() / model.taxis[a] == pytest.approx(
                model.mean_trips[a], rel=1e-12)
            assert set(model.trips_per_taxi[a]) <= set(public_counts)
    average = average_trips(model)
    assert (average == np.maximum(np.floor(model.mean_trips + 0.5), 1)).all()
    taxis = np.array([3, 0, 7, 1, 2, 5])
    arch, trips = taxi_trip_counts(model, taxis, None, "average", np.random.default_rng(0))
    assert np.bincount(arch, minlength=6).tolist() == taxis.tolist()
    assert (trips == average[arch]).all()


@pytest.mark.parametrize("mode", ["average", "public"])
def test_the_cap_shrinks_taxis_or_trips(model, mode):
    taxis = np.array([40, 0, 70, 10, 20, 50])
    rng = np.random.default_rng(1)
    _, full = taxi_trip_counts(model, taxis, None, mode, np.random.default_rng(1))
    cap = int(full.sum()) // 3
    # taxis (the write-up's reading): each archetype keeps floor(taxis * cap / total) taxis
    # (public draws: then taxis dropped while over the cap), each keeping a count it would
    # have had without the cap
    arch, trips = taxi_trip_counts(model, taxis, cap, mode, rng, "taxis")
    assert 0 < trips.sum() <= cap
    kept = np.bincount(arch, minlength=6)
    if mode == "average":
        assert kept.tolist() == np.floor(taxis * cap / full.sum()).astype(int).tolist()
        assert (trips == average_trips(model)[arch]).all()
    else:
        assert (kept <= np.floor(taxis * cap / full.sum())).all()
        for a in range(6):
            assert set(trips[arch == a]) <= set(model.trips_per_taxi[a])
    # trips: every taxi kept (unless rounded to 0), every count scaled by cap / total
    arch, trips = taxi_trip_counts(model, taxis, cap, mode, np.random.default_rng(1), "trips")
    assert 0 < trips.sum() <= cap and len(trips) <= taxis.sum()
    if mode == "average":
        scaled = average_trips(model)[arch] * cap / full.sum()
        assert (np.abs(trips - scaled) < 1).all()
    with pytest.raises(ConfigError, match="cap_shrinks"):
        taxi_trip_counts(model, taxis, cap, mode, rng, "both")
    with pytest.raises(ConfigError, match="trips_per_taxi"):
        taxi_trip_counts(model, taxis, cap, "mean", rng)


def test_docstring_sigma_table_is_what_the_code_computes():
    """Every figure of the module docstring's sigma table recomputed, to its printed digits:
    the ranked split under gdp, zcdp (CKS) and zcdp_bs (Bun-Steinke); the write-up's eps/delta
    split with the analytic Gaussian (and the gdp epsilon of the pair); its classic Gaussian
    with epsilon clamped below 1 (001 line 182)."""
    import dp_arena.mechanisms.archetype as module

    def classic(eps, delta):
        return math.sqrt(2 * math.log(1.25 / delta)) / min(eps, 0.999999999)

    rows = printed_table(module.__doc__, "epsilon    gdp")
    assert [r[0] for r in rows] == ["1", "10"]
    for eps_text, *cells in rows:
        eps = float(eps_text)
        budget = Budget(eps, DELTA)
        expected = [*split_sigmas(budget, "gdp", 0.1), *split_sigmas(budget, "zcdp", 0.1),
                    *split_sigmas(budget, "zcdp_bs", 0.1)]
        sa = analytic_gaussian_sigma(0.1 * eps, 0.1 * DELTA, 1.0)
        sc = analytic_gaussian_sigma(0.9 * eps, 0.9 * DELTA, 1.0)
        expected += [sa, sc, gdp_epsilon(math.sqrt(sa**-2 + sc**-2), DELTA),
                     classic(0.1 * eps, 0.1 * DELTA), classic(0.9 * eps, 0.9 * DELTA)]
        printed = re.findall(r"\d+\.\d+", " ".join(cells))
        assert len(printed) == len(expected) == 11
        for text, value in zip(printed, expected):
            digits = len(text.split(".")[1])
            assert f"{value:.{digits}f}" == text, (eps, text, value)


def test_config_file_builds_the_mechanism_and_bad_settings_fail(taxi):
    conf = yaml.safe_load((PROJECT_ROOT / "dp_arena/conf/mechanism/archetype.yaml").read_text())
    assert conf.pop("name") == "archetype"
    mech = make_mechanism("archetype", conf)
    assert (mech.k, mech.split, mech.max_rows) == (10, 0.1, 2_000_000)
    assert (mech.trips_per_taxi, mech.cap_shrinks) == ("average", "taxis")  # the write-up
    for bad, match in (({"k": 0}, "k"), ({"split": 1.0}, "split"),
                       ({"gmm_covariance": "x"}, "covariance"),
                       ({"trips_per_taxi": "x"}, "trips_per_taxi"),
                       ({"trips_per_taxi": "mean"}, "trips_per_taxi"),
                       ({"cap_shrinks": "x"}, "cap_shrinks")):
        with pytest.raises(ConfigError, match=match):
            run(taxi, 1.0, **bad)
    with pytest.raises(ConfigError, match="delta"):
        make_mechanism("archetype", {}).fit_sample(taxi, Budget(1.0, 0.0), Releaser(Ledger(Budget(1.0))),
                                                   np.random.default_rng(0))
    no_public = Dataset(taxi.name, taxi.schema, taxi.private, None, "user", "taxi_id")
    with pytest.raises(ConfigError, match="public"):
        run(no_public, 1.0)


def test_public_trips_preset_changes_only_the_trip_counts():
    """``mechanism=archetype_public_trips`` is archetype's shipped settings with
    ``trips_per_taxi=public`` (its board label: ``archetype[public_trips]``)."""
    from hydra import compose, initialize_config_dir

    import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
    from dp_arena.mechanisms.options import hyperparameter_label, mechanism_conf

    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "dp_arena" / "conf"), version_base=None):
        params = dict(compose("config", overrides=["mechanism=archetype_public_trips"]).mechanism)
    assert params.pop("name") == "archetype"
    assert params == {**mechanism_conf("archetype"), "trips_per_taxi": "public"}
    assert mechanism_conf("archetype")["trips_per_taxi"] == "average"
    assert hyperparameter_label("archetype", params, "public_trips") == "[public_trips]"


def test_one_run_through_the_runner(tracking_uri):
    from dp_arena.run.runner import run_one

    out = run_one({
        "dataset": {"name": "taxi_sim", "n_private": 5000, "n_public": 5000, "seed": 0},
        "mechanism": {"name": "archetype", "k": 4},
        "privacy": {"epsilon": 1.0, "delta": DELTA, "accountant": "gdp"},
        "metrics": {"kmarginal": {"k": 2}},
        "trial": 0, "seed": 0,
        "tracking": {"uri": tracking_uri, "experiment": "test"},
    })
    assert out.status == "FINISHED" and out.scores


# The write-up's own calibration (``calibration: writeup``, ``mechanism=archetype_writeup``).
#: Hand-computed from 001 lines 43 and 182 at delta 2.5e-5, split 0.1, to two decimals:
#: sqrt(2 ln(1.25 / 2.5e-6)) = sqrt(2 x 13.1224) = 5.1229 -> / 0.1 = 51.23 (epsilon 1) and
#: / 0.999999999 = 5.12 (epsilon 10, part 1.0 clamped); sqrt(2 ln(1.25 / 2.25e-5)) =
#: sqrt(2 x 10.9252) = 4.6744 -> / 0.9 = 5.19 (epsilon 1), / 0.999999999 = 4.67 (epsilon 10,
#: part 9 clamped).
WRITEUP_SIGMAS = {1.0: (51.23, 5.19), 10.0: (5.12, 4.67)}


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_writeup_calibration_is_the_writeups_formula(eps):
    sa, sc = split_sigmas(Budget(eps, DELTA), "gdp", 0.1, "writeup")
    assert (round(sa, 2), round(sc, 2)) == WRITEUP_SIGMAS[eps]
    # the same for every accountant (it ignores the run's accounting), never below the tight one
    assert split_sigmas(Budget(eps, DELTA), "zcdp", 0.1, "writeup") == (sa, sc)
    ta, tc = split_sigmas(Budget(eps, DELTA), "gdp", 0.1)
    assert sa > ta and sc > tc
    with pytest.raises(ConfigError, match="calibration"):
        split_sigmas(Budget(eps, DELTA), "gdp", 0.1, "classic")


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_writeup_calibration_charges_its_sigmas_within_the_budget(taxi, eps):
    _, ledger = run(taxi, eps, k=4, calibration="writeup")
    assert [round(c.scale, 2) for c in ledger.charges] == list(WRITEUP_SIGMAS[eps])
    spent_eps, _ = ledger.spent()
    assert spent_eps < eps


def test_writeup_preset_changes_only_the_calibration():
    from hydra import compose, initialize_config_dir

    import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
    from dp_arena.mechanisms.options import hyperparameter_label, mechanism_conf

    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "dp_arena" / "conf"), version_base=None):
        params = dict(compose("config", overrides=["mechanism=archetype_writeup"]).mechanism)
    assert params.pop("name") == "archetype"
    assert params == {**mechanism_conf("archetype"), "calibration": "writeup"}
    assert mechanism_conf("archetype")["calibration"] == "tight"
    assert hyperparameter_label("archetype", params, "writeup") == "[writeup]"
