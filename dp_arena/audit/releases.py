"""The audit's release view: the exact log-likelihood ratio of a run's noisy releases.

The black-box view (:mod:`dp_arena.audit.statistic`) reads the synthetic table; this view reads
what the mechanism released through :class:`~dp_arena.privacy.release.Releaser` (captured by its
observer, never logged) and stops the run there (``stop_after_releases``: estimation and
sampling are post-processing and are skipped).

One run (:func:`release_features`) on world ``b`` (D or D'):

1. **the run**: the mechanism runs on world ``b`` with fresh noise and post-processing
   generator ``rng = default_rng(s)`` for a fresh secret seed ``s``; the observer records every
   release: its kind, scale, noise-free answer ``m_b`` and released value ``y``;
2. **the replay**: the mechanism runs again, on the *other* world, with the same ``s`` and a
   :class:`ReplaySampler` that hands back the recorded ``y`` instead of drawing noise. Every
   choice a mechanism makes depends only on its public coins (``rng``) and on what it has
   released so far, so the replay asks exactly the queries the other world would have asked
   given this transcript, and its observer records their answers ``m_{1-b}``. A replay that
   asks something else (another kind, scale or shape: only possible when the mechanism's
   public coins depend on the data's size) is counted as diverged and dropped. Model fits
   between releases have identical inputs in the run and the replay; the replay reuses the
   run's results (:mod:`dp_arena.audit.memo`);
3. **the statistic**: ``T = log p_{D'}(transcript) - log p_D(transcript)``, a sum over releases:
   Gaussian ``sum_j ((y_j - m0_j)^2 - (y_j - m1_j)^2) / (2 sigma^2)``; Laplace
   ``sum_j (|y_j - m0_j| - |y_j - m1_j|) / b``; exponential mechanism with chosen index ``c``
   and temperature ``t``: ``log softmax(s1 / t)_c - log softmax(s0 / t)_c``; thresholded
   Laplace counts: below. By the Neyman-Pearson lemma a threshold on ``T`` is the most
   powerful test between the two worlds for the released transcript, so the audit is as tight
   as the neighbouring pair allows.

Thresholded releases (:meth:`~dp_arena.privacy.release.Releaser.laplace_above`, the prefix
tree): a release noises every cell of a histogram and keeps the cells at or above ``theta``.
Which cells are non-empty differs between the worlds, so records are matched by **cell**, not by
position: a cell is ``(family, child)``, whose meaning is public given the transcript so far
(family ``f`` is the ``f``-th kept node of the level before, ``child`` a location or group of
the public taxonomy), and the recorded family sizes must agree. The releaser draws everything,
including which empty cells passed (:mod:`dp_arena.privacy.thresholded`), so the replay hands
back the recorded kept cells and values whatever the other world's non-empty cells are. The
release's law is that of noising every cell independently (the empty-cell shortcut is exact),
so its log-likelihood ratio is a sum over the cells whose counts ``m0 != m1`` differ: a kept
cell with value ``y`` contributes ``(|y - m0| - |y - m1|) / b``, a suppressed one ``log
P(m1 + Lap(b) < theta) - log P(m0 + Lap(b) < theta)`` (the discrete Laplace's pmf and CDF under
the ``opendp`` sampler on integer counts). Every other cell has the same likelihood in both
worlds and cancels; so do the empty cells that passed in both worlds. Hence ``T`` is the exact
log-likelihood ratio of the transcript in this case too.

Knowing ``s`` is fair to the auditor: every mechanism here is DP for each fixed value of its
public coins (their noise is the releaser's, independent of ``s``), so a test that knows ``s``
still obeys the claimed bound.

Features per run: ``[T, T_gaussian, T_laplace, T_exponential]``, rounded to :data:`DECIMALS`
decimals. The rounding is a function of the release, so the test stays valid; without it the
test picks up the last bits of floating-point arithmetic (e.g. ``T`` at its largest value,
``sum_i Delta_i / b_i``, takes slightly different float values in the two worlds, because
``y = m + Lap(b)`` in floating point carries ``m`` in its low bits: Mironov 2012's attack on
textbook Laplace sampling). That is a real property of the ``numpy`` sampler (the ``opendp``
sampler is the floating-point-safe one), but not of the mechanism's analysis, which this view
measures; found when 50,000 simulated runs per world of six 1/6-DP Laplace releases "showed"
epsilon 2.0 for a 1-DP composition.
"""

from __future__ import annotations

import numpy as np

from dp_arena.data.datasets import Dataset
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Ledger
from dp_arena.privacy.noise import fresh_rng
from dp_arena.privacy.release import (
    ReleaseRecord,
    Releaser,
    ReleasesComplete,
    make_sampler,
)
from dp_arena.privacy.thresholded import cells_of, log_ratio

from .memo import PostProcessingMemo

#: Features of a run the replay could not follow (dropped by the driver).
DIVERGED = (np.nan, np.nan, np.nan, np.nan)
#: Decimals the statistic is rounded to (module docstring: floating-point residue).
DECIMALS = 9
FAMILIES = ("gaussian", "laplace", "exponential")


class Diverged(DPArenaError):
    """The replay asked a different question than the recorded run."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the replay diverged: {why}", "")


class ReplaySampler:
    """A sampler that returns recorded releases in order instead of drawing noise."""

    name = "replay"

    def __init__(self, records: list[ReleaseRecord]):
        self.records = list(records)
        self.position = 0

    def _next(self, kind: str, shape: tuple[int, ...] | None,
              thresholded: bool = False) -> ReleaseRecord:
        if self.position >= len(self.records):
            raise Diverged("more releases than the recorded run")
        rec = self.records[self.position]
        self.position += 1
        if rec.kind != kind or (rec.threshold is not None) != thresholded or (
                shape is not None and kind != "exponential" and rec.noisy.shape != shape):
            raise Diverged(f"release {self.position} is {kind} {shape}, recorded {rec.kind} "
                           f"{rec.noisy.shape}")
        return rec

    def gaussian_cost(self, values, sensitivity, sigma):
        return sensitivity

    def laplace_cost(self, values, sensitivity, scale):
        return sensitivity

    def gaussian(self, values, sensitivity, sigma):
        return self._next("gaussian", values.shape).noisy.copy()

    def laplace(self, values, sensitivity, scale):
        return self._next("laplace", values.shape).noisy.copy()

    def argmax_gumbel(self, scores, sensitivity, scale):
        rec = self._next("exponential", scores.shape)
        if rec.true.shape != scores.shape:
            raise Diverged("the exponential mechanism has another candidate set")
        return int(rec.noisy)

    def laplace_above(self, sizes, family, child, counts, sensitivity, scale, threshold, tail):
        """The recorded kept cells (by key: the same public cells in both worlds, whatever
        each world's non-empty cells are)."""
        rec = self._next("laplace", None, thresholded=True)
        if rec.threshold != threshold or rec.scale != scale or \
                not np.array_equal(rec.families, sizes):
            raise Diverged("a thresholded release over other cells or at another threshold")
        fam, ch = cells_of(rec.kept, rec.families)
        return fam, ch, rec.noisy.copy(), rec.discrete


def record_releases(mechanism, data: Dataset, rc, releaser: Releaser,
                    rng: np.random.Generator) -> None:
    """Run ``mechanism`` on ``data`` until its releases are complete."""
    try:
        mechanism.fit_sample(data, rc.budget, releaser, rng)
    except ReleasesComplete:
        pass


def release_log_ratio(rec: ReleaseRecord, m0: np.ndarray, m1: np.ndarray) -> float:
    """``log p_{D'}(y) - log p_D(y)`` of one release (module docstring, step 3)."""
    y, scale = rec.noisy, rec.scale
    if rec.kind == "gaussian":
        return float(np.sum((y - m0) ** 2 - (y - m1) ** 2) / (2.0 * scale**2))
    if rec.kind == "laplace":
        return float(np.sum(np.abs(y - m0) - np.abs(y - m1)) / scale)
    c = int(y)
    return float((m1[c] / scale - _logsumexp(m1 / scale))
                 - (m0[c] / scale - _logsumexp(m0 / scale)))


def _logsumexp(x: np.ndarray) -> float:
    """``log(sum(exp(x)))`` of a finite vector, shifted by its maximum as scipy's
    ``logsumexp`` is (the same arithmetic without its argument handling, which cost 20x the
    sum on the few candidates of a selection, thousands of times per audit)."""
    top = float(np.max(x))
    return top + float(np.log(np.sum(np.exp(x - top))))


def thresholded_log_ratio(rec: ReleaseRecord, on_d: ReleaseRecord,
                          on_prime: ReleaseRecord) -> float:
    """``log p_{D'} - log p_D`` of a thresholded release ``rec`` (its kept cells and values),
    with the true counts of the non-empty cells on D (``on_d``) and on D' (``on_prime``),
    matched by cell key (:func:`dp_arena.privacy.thresholded.log_ratio`)."""
    assert rec.kept is not None and rec.threshold is not None
    return log_ratio(rec.kept, rec.noisy, on_d.cells, on_d.true,  # type: ignore[arg-type]
                     on_prime.cells, on_prime.true, rec.scale,  # type: ignore[arg-type]
                     rec.threshold, rec.discrete)


def transcript_features(records: list[ReleaseRecord], other: list[ReleaseRecord],
                        world_is_prime: bool) -> np.ndarray:
    """``[T, T_gaussian, T_laplace, T_exponential]`` from a run's records and the replay's,
    each rounded to :data:`DECIMALS` decimals (module docstring)."""
    if len(other) != len(records):
        raise Diverged("the replay made another number of releases")
    parts = dict.fromkeys(FAMILIES, 0.0)
    for rec, twin in zip(records, other):
        if twin.kind != rec.kind or twin.scale != rec.scale:
            raise Diverged("a release of another kind or scale")
        on_d, on_prime = (twin, rec) if world_is_prime else (rec, twin)
        if rec.threshold is not None:
            parts[rec.kind] += thresholded_log_ratio(rec, on_d, on_prime)
            continue
        if twin.true.shape != rec.true.shape:
            raise Diverged("a release of another shape")
        parts[rec.kind] += release_log_ratio(rec, on_d.true, on_prime.true)
    return np.round(np.array([sum(parts.values()), *parts.values()]), DECIMALS)


def release_features(mechanism, data: Dataset, other: Dataset, rc,
                     world_is_prime: bool) -> np.ndarray:
    """One audit run in the release view (module docstring): features, or :data:`DIVERGED`."""
    seed = np.random.SeedSequence().entropy  # fresh public coins for this run
    noise = fresh_rng()
    records: list[ReleaseRecord] = []
    ledger = Ledger(rc.budget, rc.accountant, unit=data.ledger_unit)
    memo = PostProcessingMemo()
    with memo.record():
        record_releases(mechanism, data, rc, Releaser(ledger, make_sampler(rc.sampler, noise),
                                                      records.append, stop_after_releases=True),
                        np.random.default_rng(seed))
    twin: list[ReleaseRecord] = []
    replay = Releaser(Ledger(rc.budget, rc.accountant, unit=other.ledger_unit),
                      ReplaySampler(records), twin.append, stop_after_releases=True)
    try:
        with memo.serve():
            record_releases(mechanism, other, rc, replay, np.random.default_rng(seed))
        return transcript_features(records, twin, world_is_prime)
    except Diverged:
        return np.array(DIVERGED)
