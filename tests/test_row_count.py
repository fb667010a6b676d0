"""The synthetic row count (dp_arena/mechanisms/row_count.py): a DP estimate when its noise is small
next to a public figure, else the public figure, within public bounds (once,
``independent`` at epsilon 1e-6 emitted 1,000,000 rows for a table of thousands).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; (b) noise spreads within z = 4.89 standard errors (tests.support.tolerances,
false failure 1e-6), the rest commented where they are.
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism, pgm
from dp_arena.mechanisms.archetype import taxis_or_public_total
from dp_arena.mechanisms.independent import mean_total_std, measure_one_way, noise_scale
from dp_arena.mechanisms.row_count import (
    DEFAULT_MAX_ROWS,
    FALLBACK_ROWS,
    MIN_ROWS,
    bounded_row_count,
    public_rows,
)
from tests.support.people import people
from tests.support.tolerances import mean_se, sd_rel_se, statistical


def test_the_public_figure_and_where_it_comes_from():
    assert public_rows(people(n_public=1500, max_records=2500), 1e-6) == (
        1500, "the public part's rows")
    assert public_rows(people(n_public=None, max_records=2500), 1e-6) == (
        2500, "the schema's max_records")
    assert public_rows(people(n_public=None), 1e-6) == (
        FALLBACK_ROWS, "no public figure: the fixed fallback")
    assert FALLBACK_ROWS == 10_000


def test_the_rule_by_hand():
    free = people(n_public=None)  # figure 10,000, bounds [1,000, 1,000,000]
    assert bounded_row_count(1234.4, free, 1.0, std=10.0) == 1234
    assert bounded_row_count(1234.4, free, 1.0, std=5000.0) == 1234  # std = half the figure
    assert bounded_row_count(1234.4, free, 1.0, std=5000.1) == FALLBACK_ROWS
    assert bounded_row_count(7_309_103, free, 1.0, std=2e6) == FALLBACK_ROWS
    assert bounded_row_count(-40.0, free, 1.0, std=1e7) == FALLBACK_ROWS
    assert bounded_row_count(float("nan"), free, 1.0, std=1.0) == FALLBACK_ROWS
    # a precise estimate is still bounded
    assert bounded_row_count(7_309_103, free, 1.0, std=1.0) == DEFAULT_MAX_ROWS
    assert bounded_row_count(12.0, free, 1.0, std=1.0) == MIN_ROWS
    # the public part is the figure; a cap below it still caps
    assert bounded_row_count(9e6, people(n_public=1500), 1.0, std=1e7) == 1500
    assert bounded_row_count(9e6, people(n_public=1500, max_records=1200), 1e-6,
                             std=1e7) == 1200


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_the_estimates_noise_is_what_independent_reports(kind):
    """Over 400 releases the mean of the noisy totals spreads as mean_total_std says. Its
    tolerances are z = 4.89 standard errors (false failure 1e-6): the mean's std / sqrt(400),
    and the sample std's relative sqrt((2 + kappa) / 1600), where kappa, the excess kurtosis
    of a sum of M independent Laplace draws, is 3 / M (0 for Gaussian noise): about 17% (the
    constants were 4 standard errors and 12% = 3.4 of them: 6e-5 and 7e-4)."""
    data = people()
    codes = data.schema.encode(data.private)
    domain = data.schema.domain()
    budget = Budget(0.05, 1e-6)
    totals = []
    for seed in range(400):
        release = Releaser(Ledger(budget), NumpySampler(np.random.default_rng(seed)))
        noisy = measure_one_way(codes, domain, 1.0, kind, budget, release)
        totals.append(np.mean([h.sum() for h in noisy.values()]))
    std = mean_total_std(domain, noise_scale(len(domain), 1.0, kind, budget, "gdp"), kind)
    kurtosis = 3.0 / sum(domain.values()) if kind == "laplace" else 0.0
    assert np.mean(totals) == pytest.approx(len(data.private),
                                            abs=statistical(mean_se(std, len(totals))))
    assert np.std(totals, ddof=1) == pytest.approx(
        std, rel=statistical(sd_rel_se(len(totals), kurtosis)))


def test_the_fitted_totals_noise_is_what_it_reports():
    """With the model fixed, the least-squares total is linear in the noisy answers: over 300
    fresh noise draws its spread matches fitted_total_and_std's."""
    rng = np.random.default_rng(0)
    domain = {"a": 3, "b": 4}
    codes = pd_codes(rng, domain, 5000)
    cliques, sigma = [("a",), ("b",), ("a", "b")], 40.0

    def measure(seed: int) -> list[pgm.Measurement]:
        noise = np.random.default_rng(seed)
        return [pgm.Measurement(c, pgm.histogram(codes, c, domain)
                                + noise.normal(0, sigma, size=int(np.prod([domain[x] for x in c]))),
                                sigma) for c in cliques]

    first = measure(0)
    model = pgm.estimate(domain, first, 200, pgm.initial_total(first, domain))
    std = pgm.fitted_total_and_std(model, first)[1]
    totals = [pgm.fitted_total_and_std(model, measure(seed))[0] for seed in range(1, 301)]
    # the total is linear in Gaussian noise: the sample sd of 300 draws has relative standard
    # error 1 / sqrt(600) = 4.1%; z = 4.89 of it (false failure 1e-6): 20% (the constant 15%
    # was 3.7 standard errors, 2e-4)
    assert np.std(totals, ddof=1) == pytest.approx(std, rel=statistical(sd_rel_se(len(totals))))
    assert 1 / np.sqrt(sum(1 / (sigma**2 * np.prod([domain[x] for x in c])) for c in cliques)
                       ) >= std  # never noisier than the uniform-shape bound


def pd_codes(rng, domain, n):
    import pandas as pd

    a = rng.integers(0, domain["a"], n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, domain["b"], n))
    return pd.DataFrame({"a": a, "b": b})


@pytest.mark.parametrize("public, expected", [(1500, 1500), (None, FALLBACK_ROWS)])
def test_independent_at_tiny_epsilon_emits_the_public_figure(public, expected):
    data = people(n_public=public)
    budget = Budget(1e-6, 1e-10)
    for seed in range(4):
        out = make_mechanism("independent", {}).fit_sample(
            data, budget, Releaser(Ledger(budget)), np.random.default_rng(seed))
        assert len(out) == expected
    # at epsilon 10 the estimate (noise std ~3 rows) is used: about the 3,000 private rows
    out = make_mechanism("independent", {}).fit_sample(
        data, Budget(10.0, 1e-10), Releaser(Ledger(Budget(10.0, 1e-10))),
        np.random.default_rng(0))
    # (b) the row count is the noisy estimate (sd ~3 rows at epsilon 10, see the comment above)
    # rounded: abs=30 is ~10 of its sds
    assert len(out) == pytest.approx(3000, abs=30)


def test_archetype_taxis_fall_back_to_the_public_total():
    public = np.array([30, 50, 20])
    noisy = np.array([4e9, 0.0, 1e9])
    # sigma sqrt(3) = 173 > 50 = half the public taxis: shares of the noisy counts, public total
    np.testing.assert_allclose(taxis_or_public_total(noisy, 100.0, public), [80, 0, 20])
    np.testing.assert_allclose(taxis_or_public_total(np.zeros(3), 100.0, public), public)
    small = np.array([31.0, 44.0, 27.0])  # sigma sqrt(3) = 8.7 <= 50: the noisy counts
    np.testing.assert_array_equal(taxis_or_public_total(small, 5.0, public), small)


def test_the_clip_ratio_and_the_synthetic_rows_by_hand():
    """A public part of 600 persons with 3 rows and 600 with 1 (2,400 rows): at a bound of 2
    rows a person, the weights keep 600 x 2 + 600 x 1 = 1,800, so the ratio is 2400/1800 = 4/3;
    an estimate of 1,500 bounded rows with noise 30 becomes 2,000 rows (noise 40, far below
    half the public figure of 2,400; inside [1000, the schema's max_records 100,000])."""
    from tests.conftest import make_small_frame, make_small_schema

    public = make_small_frame(2400, seed=3)
    public["pid"] = np.concatenate([np.repeat(np.arange(600), 3), np.arange(600, 1200)])
    users = Dataset("small", make_small_schema(), make_small_frame(3000, seed=1), public,
                    unit="user", id_column="pid", max_records_per_individual=5)
    # (a) a quotient of integer counts, correctly rounded (0.5 ulp = 1.1e-16 relative at 4/3):
    # rel=1e-15 allows ~9 such roundings
    assert pgm.clip_ratio(users, 2) == pytest.approx(4 / 3, rel=1e-15, abs=0)
    assert pgm.clip_ratio(users, 3) == 1.0  # the bound keeps every row
    assert pgm.synthetic_rows(1500.0, 30.0, users, 1.0, 4 / 3) == 2000
    # the ratio scales the noise too: 900 x 4/3 = 1200 is half the figure (still used) ...
    assert pgm.synthetic_rows(1500.0, 900.0, users, 1.0, 4 / 3) == 2000
    # ... and 901 x 4/3 is past it: the public figure (2,400 rows) instead
    assert pgm.synthetic_rows(1500.0, 901.0, users, 1.0, 4 / 3) == 2400
    records = people(n_private=3000, n_public=1500)
    assert pgm.clip_ratio(records, 1) == 1.0
