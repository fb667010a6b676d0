"""The audit's release view: the exact log-likelihood ratio of a run's noisy releases.

The black-box view (:mod:`harness.audit.statistic`) reads the synthetic table; this view reads
what the mechanism released through :class:`~harness.privacy.release.Releaser` (captured by its
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
   asks something else (another kind, another shape: only possible when the mechanism's
   public coins depend on the data's size) is counted as diverged and dropped;
3. **the statistic**: ``T = log p_{D'}(transcript) - log p_D(transcript)``, a sum over releases:
   Gaussian ``sum_j ((y_j - m0_j)^2 - (y_j - m1_j)^2) / (2 sigma^2)``; Laplace
   ``sum_j (|y_j - m0_j| - |y_j - m1_j|) / b``; exponential mechanism with chosen index ``c``
   and temperature ``t``: ``log softmax(s1 / t)_c - log softmax(s0 / t)_c``. By the
   Neyman-Pearson lemma a threshold on ``T`` is the most powerful test between the two worlds
   for the released transcript, so the audit is as tight as the neighbouring pair allows.

Features per run: ``[T, T_gaussian, T_laplace, T_exponential]``. Knowing ``s`` is fair to the
auditor: every mechanism here is DP for each fixed value of its public coins (their noise is
the releaser's, independent of ``s``). Releases the replay cannot reproduce (the prefix tree's
thresholded counts, :meth:`~harness.privacy.release.Releaser.laplace_above`, whose set of
non-empty cells differs between the worlds) end the run as diverged: that mechanism is
audited in the synthetic view.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from harness.data.datasets import Dataset
from harness.errors import DPArenaError
from harness.privacy.accounting import Ledger
from harness.privacy.noise import fresh_rng
from harness.privacy.release import (
    ReleaseRecord,
    Releaser,
    ReleasesComplete,
    make_sampler,
)

#: Features of a run the replay could not follow (dropped by the driver).
DIVERGED = (np.nan, np.nan, np.nan, np.nan)
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

    def _next(self, kind: str, shape: tuple[int, ...]) -> ReleaseRecord:
        if self.position >= len(self.records):
            raise Diverged("more releases than the recorded run")
        rec = self.records[self.position]
        self.position += 1
        if rec.kind != kind or (kind != "exponential" and rec.noisy.shape != shape):
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
    return float((m1[c] / scale - logsumexp(m1 / scale)) - (m0[c] / scale - logsumexp(m0 / scale)))


def transcript_features(records: list[ReleaseRecord], other: list[ReleaseRecord],
                        world_is_prime: bool) -> np.ndarray:
    """``[T, T_gaussian, T_laplace, T_exponential]`` from a run's records and the replay's."""
    if len(other) != len(records):
        raise Diverged("the replay made another number of releases")
    parts = dict.fromkeys(FAMILIES, 0.0)
    for rec, twin in zip(records, other):
        if twin.true.shape != rec.true.shape:
            raise Diverged("a release of another shape")
        m0, m1 = (twin.true, rec.true) if world_is_prime else (rec.true, twin.true)
        parts[rec.kind] += release_log_ratio(rec, m0, m1)
    return np.array([sum(parts.values()), *parts.values()])


def release_features(mechanism, data: Dataset, other: Dataset, rc,
                     world_is_prime: bool) -> np.ndarray:
    """One audit run in the release view (module docstring): features, or :data:`DIVERGED`."""
    seed = np.random.SeedSequence().entropy  # fresh public coins for this run
    noise = fresh_rng()
    records: list[ReleaseRecord] = []
    ledger = Ledger(rc.budget, rc.accountant, unit=data.ledger_unit)
    record_releases(mechanism, data, rc, Releaser(ledger, make_sampler(rc.sampler, noise),
                                                  records.append, stop_after_releases=True),
                    np.random.default_rng(seed))
    if any(r.threshold is not None for r in records):
        raise DPArenaError(f"audit.view=releases cannot replay {rc.mechanism}'s thresholded "
                           "releases (the set of non-empty cells differs between the worlds)",
                           "audit it with audit.view=synthetic")
    twin: list[ReleaseRecord] = []
    replay = Releaser(Ledger(rc.budget, rc.accountant, unit=other.ledger_unit),
                      ReplaySampler(records), twin.append, stop_after_releases=True)
    try:
        record_releases(mechanism, other, rc, replay, np.random.default_rng(seed))
        return transcript_features(records, twin, world_is_prime)
    except Diverged:
        return np.array(DIVERGED)
