"""The reference mechanisms, `independent`, and the shared mechanism helpers.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; (b) noise spreads and shares within z = 4.89 standard errors
(tests.support.tolerances, false failure 1e-6); the clipping shares within 0.045 = 4.1 binomial
standard errors of 2,000 draws (0.011; false failure 4e-5 per row, seeded); the ids' group
sizes see their comment.
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.base import assign_ids, clip_contributions
from dp_arena.mechanisms.independent import measure_one_way
from tests.conftest import make_small_frame
from tests.support.tolerances import binomial_se, mean_se, sd_rel_se, statistical


@pytest.mark.parametrize("delta, accountant, kind", [
    (1e-6, "gdp", "gaussian"), (1e-6, "zcdp", "gaussian"), (0.0, "gdp", "laplace")])
def test_independent_spends_exactly_its_budget(small_dataset, delta, accountant, kind):
    budget = Budget(2.0, delta)
    ledger = Ledger(budget, accountant)
    out = make_mechanism("independent", {}).fit_sample(small_dataset, budget, Releaser(ledger),
                                                       np.random.default_rng(0))
    assert small_dataset.schema.problems(out) == []
    assert [c.kind for c in ledger.charges] == [kind] * 3  # one release per attribute
    assert {c.sensitivity for c in ledger.charges} == {5.0}  # max 5 rows per person
    assert ledger.spent()[0] == pytest.approx(2.0, abs=1e-9)


def test_independent_row_count_is_noisy_not_private(small_dataset):
    # 1,000 persons (about 3 rows each): the clipped count (about 3,000) is well above the
    # 1,000-row floor, which a table of 200 persons x 5 rows sits on (and estimates below it
    # all land on it: the same size for every seed about once in 32)
    data = dataclasses.replace(small_dataset, private=make_small_frame(3000, 1, n_people=1000))
    sizes = {len(make_mechanism("independent", {}).fit_sample(
        data, Budget(1.0, 1e-6), Releaser(Ledger(Budget(1.0, 1e-6))), np.random.default_rng(s)))
        for s in range(5)}
    assert len(sizes) > 1  # different noise -> different counts
    clipped = len(clip_contributions(data.private, "pid", 5, np.random.default_rng(0)))
    assert clipped > 2000
    assert all(abs(n - clipped) < 0.2 * clipped for n in sizes)


def test_released_noise_has_the_charged_scale(small_dataset):
    """The noise actually added matches the scale recorded in the ledger."""
    codes = small_dataset.schema.encode(small_dataset.private)
    domain = small_dataset.schema.domain()
    true = np.bincount(codes["size"], minlength=4)
    budget = Budget(1.0, 1e-6)
    # the spread's relative standard error over n draws: a normal sample sd's 1 / sqrt(2n);
    # mean |Laplace(b)| / b is a mean of Exp(1) draws (sd 1): 1 / sqrt(n)
    for kind, spread, rel_se in (("gaussian", np.std, sd_rel_se),
                                 ("laplace", lambda x: np.mean(np.abs(x)),
                                  lambda n: mean_se(1.0, n))):
        noise, scale = [], None
        for seed in range(400):
            ledger = Ledger(budget)
            noisy = measure_one_way(codes, domain, 5.0, kind, budget, Releaser(
                ledger, NumpySampler(np.random.default_rng(seed))))
            noise.append(noisy["size"] - true)
            scale = ledger.charges[0].scale
        # Gaussian: std = sigma; Laplace: mean |noise| = b. 400 x 4 cells = 1600 draws: 1.8%
        # and 2.5% standard error; z = 4.89 of them (false failure 1e-6): 8.6% and 12.2%
        # (a constant 8% was 3.2 standard errors for Laplace, failing 1 time in 700)
        draws = np.concatenate(noise)
        assert spread(draws) == pytest.approx(scale, rel=statistical(rel_se(len(draws))))


def test_clip_contributions_keeps_at_most_bound_rows_per_person():
    df = pd.DataFrame({"pid": [1] * 10 + [2] * 3 + [3], "x": range(14)})
    out = clip_contributions(df, "pid", 4, np.random.default_rng(0))
    assert out.groupby("pid").size().to_dict() == {1: 4, 2: 3, 3: 1}
    assert set(out["x"]) <= set(df["x"])


def test_clipping_keeps_the_rows_pandas_cumcount_keeps_for_the_same_draws():
    """The NumPy occurrence rank is pandas' cumcount: the same permutation keeps the same rows
    (so seeded figures did not move), on a shuffled index too."""
    rng = np.random.default_rng(7)  # test data
    df = pd.DataFrame({"pid": rng.integers(0, 40, 500), "x": np.arange(500)})
    missing = df.assign(pid=df["pid"].where(df["x"] % 7 > 0))  # rows without a person: dropped
    for frame in (df, df.sample(frac=1.0, random_state=1), missing):
        order = np.random.default_rng(3).permutation(len(frame))
        shuffled = frame.iloc[order]
        rank = shuffled.groupby("pid", sort=False).cumcount().to_numpy()
        expected = shuffled[rank < 3].sort_index()
        got = clip_contributions(frame, "pid", 3, np.random.default_rng(3))
        pd.testing.assert_frame_equal(got, expected)


def test_clipping_keeps_each_row_of_a_large_person_equally_often():
    """A person of 10 rows clipped to 4: each row kept with probability 0.4 (2,000 draws:
    standard error 0.011)."""
    df = pd.DataFrame({"pid": [1] * 10 + [2], "x": range(11)})
    rng = np.random.default_rng(11)
    kept = np.zeros(11)
    for _ in range(2000):
        kept[clip_contributions(df, "pid", 4, rng)["x"].to_numpy()] += 1
    assert kept[10] == 2000 and np.all(np.abs(kept[:10] / 2000 - 0.4) < 0.045)


def test_assign_ids_follow_public_group_sizes(small_dataset):
    ids = assign_ids(5000, small_dataset, np.random.default_rng(0))
    col = small_dataset.schema["pid"]
    assert len(ids) == 5000 and ids.min() >= col.min and ids.max() <= col.max
    public_mean = small_dataset.public.groupby("pid").size().mean()
    # (b) ~330 persons whose sizes are drawn from the public pool (mean 15, sd 3.6): standard
    # error 0.2 (1.3%); rel=0.25 also admits the last person cut by the row limit: a check of
    # the law, 19 standard errors wide
    assert pd.Series(ids).value_counts().mean() == pytest.approx(public_mean, rel=0.25)


def test_reference_mechanisms(small_dataset):
    budget, rng = Budget(1.0, 1e-6), np.random.default_rng(0)
    priv = small_dataset.private
    res = make_mechanism("resample", {}).fit_sample(small_dataset, budget, Releaser(Ledger(budget)), rng)
    assert len(res) == len(priv)
    attrs = ["color", "size", "amount"]
    assert len(res[attrs].merge(priv[attrs].drop_duplicates(), how="inner")) == len(res)
    # user-level: whole persons are copied, so every synthetic person's rows are exactly some
    # private person's rows (as a multiset), and ids stay unique per copy.
    private_people = {tuple(sorted(map(tuple, g[attrs].to_numpy().tolist())))
                      for _, g in priv.groupby("pid")}
    cut = res["pid"].iloc[-1]  # the last person drawn may be cut by the row limit
    for pid, g in res.groupby("pid"):
        if pid == cut:
            continue
        assert tuple(sorted(map(tuple, g[attrs].to_numpy().tolist()))) in private_people
    assert res["pid"].between(1, 10_000).all()
    pub = make_mechanism("public_only", {}).fit_sample(small_dataset, budget, Releaser(Ledger(budget)), rng)
    pd.testing.assert_frame_equal(pub.sort_values(list(pub.columns)).reset_index(drop=True),
                                  small_dataset.public.sort_values(list(pub.columns))
                                  .reset_index(drop=True))
    uni = make_mechanism("uniform", {}).fit_sample(small_dataset, budget, Releaser(Ledger(budget)), rng)
    assert small_dataset.schema.problems(uni) == []
    shares = uni["size"].value_counts(normalize=True)
    # (b) 3,000 rows, each value 1/4: binomial standard error 0.0079; z = 4.89 of it (false
    # failure 1e-6): 0.039 (the constant 0.03 was 3.8 standard errors, 1.4e-4)
    assert np.allclose(shares.sort_index().to_numpy(), 0.25,
                       atol=statistical(binomial_se(0.25, len(uni))))


def test_public_only_without_public_data(small_dataset):
    small_dataset.public = None
    with pytest.raises(ConfigError, match="needs a public part"):
        make_mechanism("public_only", {}).fit_sample(small_dataset, Budget(1.0), Releaser(Ledger(Budget(1.0))),
                                                     np.random.default_rng(0))


def test_unknown_mechanism_and_setting():
    with pytest.raises(ConfigError, match="unknown mechanism 'nope'"):
        make_mechanism("nope", {})
    with pytest.raises(ConfigError, match=r"unknown setting mechanism\.k\b"):
        make_mechanism("independent", {"k": 3})
