"""``membership``: empirical membership-inference risk (**empirical risk, not a DP guarantee**).

Who is attacked, the attacks, what is reported and how to read it, and the cost:
:class:`Membership`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import NotApplicable
from dp_arena.params import Constraint, Interval

from .base import MetricResult, SharedReference

#: The false-positive rates the TPR is reported at (score names ``tpr_at_fpr_<rate>``).
FPRS = (0.01, 0.1)
ATTACKS = ("dcr", "density")
#: Largest number of float32 cells (32 MB) of one chunk of the target x synthetic match matrix.
CHUNK_CELLS = 8_000_000
#: The one score of a run whose held-out part has fewer than ``min_heldout`` persons.
TOO_FEW = "too_few_heldout"


@dataclass(frozen=True)
class TooFewHeldout:
    """The reference when the held-out part is too small to attack (:class:`Membership`)."""


# ----- targets ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Persons:
    """Encoded rows of some persons: ``codes`` (rows x attributes) and, per row, the index
    ``0..count-1`` of the person it belongs to."""

    codes: np.ndarray
    person: np.ndarray
    count: int


@dataclass(frozen=True)
class Targets:
    """Members and non-members (the same number of persons), and the reference rows of the
    density attack (``reference_source``: ``public`` or ``heldout``)."""

    members: Persons
    nonmembers: Persons
    reference: np.ndarray
    reference_source: str


def shuffled_persons(frame: pd.DataFrame, id_column: str | None, rows_per_person: int,
                     rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Up to ``rows_per_person`` seeded rows of every person and each row's person rank in a
    seeded order of persons (``id_column`` None: every row is a person)."""
    shuffled = frame.iloc[rng.permutation(len(frame))]
    if id_column is None:
        return shuffled, np.arange(len(shuffled))
    _, first, inverse = np.unique(shuffled[id_column].to_numpy(), return_index=True,
                                  return_inverse=True)
    rank = np.argsort(np.argsort(first))[inverse]  # persons in order of first appearance
    keep = shuffled.groupby(id_column, sort=False).cumcount().to_numpy() < rows_per_person
    return shuffled[keep], rank[keep]


def persons_between(frame: pd.DataFrame, rank: np.ndarray, low: int, high: int,
                    encode: Callable[[pd.DataFrame], np.ndarray]) -> Persons:
    """The persons ranked ``low..high-1`` (re-indexed from 0) with their encoded rows."""
    chosen = (rank >= low) & (rank < high)
    return Persons(encode(frame[chosen]), rank[chosen] - low, high - low)


def ranked_count(rank: np.ndarray) -> int:
    """Number of persons ranked ``0..`` in ``rank``."""
    return int(rank.max()) + 1 if len(rank) else 0


def person_count(frame: pd.DataFrame, id_column: str | None) -> int:
    """Number of distinct persons of ``frame`` (rows at the record level)."""
    return len(frame) if id_column is None else int(frame[id_column].nunique())


def person_id_column(data: Dataset) -> str | None:
    """The column that names a person, or None when a row is a person."""
    return data.id_column if data.unit == "user" else None


def choose_targets(data: Dataset, max_targets: int, rows_per_person: int, max_reference: int,
                   rng: np.random.Generator) -> Targets:
    """Members, non-members and reference rows as codes (see :class:`Membership`)."""
    schema, ids = data.schema, person_id_column(data)

    def encode(frame: pd.DataFrame) -> np.ndarray:
        return schema.encode(frame).to_numpy(np.int64)

    heldout: pd.DataFrame = data.heldout  # type: ignore[assignment]  # checked by the caller
    held, held_rank = shuffled_persons(heldout, ids, rows_per_person, rng)
    n_held = ranked_count(held_rank)
    if data.public is not None:
        reference = subsample(encode(data.public), max_reference, rng)
        source, first = "public", 0
    else:
        first = n_held // 2  # the reference: the sampled rows of the first half of persons
        reference = subsample(encode(held[held_rank < first]), max_reference, rng)
        source = "heldout"
    train, train_rank = shuffled_persons(data.private, ids, rows_per_person, rng)
    n = min(max_targets, n_held - first, ranked_count(train_rank))
    return Targets(persons_between(train, train_rank, 0, n, encode),
                   persons_between(held, held_rank, first, first + n, encode),
                   reference, source)


def subsample(codes: np.ndarray, limit: int, rng: np.random.Generator) -> np.ndarray:
    """At most ``limit`` rows of ``codes``, a seeded sample without replacement."""
    if len(codes) <= limit:
        return codes
    return codes[np.sort(rng.choice(len(codes), size=limit, replace=False))]


# ----- nearest neighbours and kernel densities on codes -----------------------------------
def row_keys(codes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every row of codes (equal rows, equal keys; collisions ~2^-64)."""
    return pd.util.hash_pandas_object(pd.DataFrame(codes), index=False).to_numpy()


def distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``codes`` and how often each occurs."""
    _, first, counts = np.unique(row_keys(codes), return_index=True, return_counts=True)
    return codes[first], counts


def one_hot(codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Rows of codes as float32 indicator rows (one block of ``sizes[c]`` cells per column),
    so ``one_hot(a) @ one_hot(b).T`` counts, per pair of rows, the attributes they share."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = np.zeros((len(codes), int(sizes.sum())), dtype=np.float32)
    out[np.arange(len(codes))[:, None], codes + offsets] = 1.0
    return out


@dataclass(frozen=True)
class Neighbourhood:
    """Per target row: the most attributes shared with one row of a table (``d`` minus the
    Hamming distance to the closest row) and the log kernel density of the table at it."""

    max_matches: np.ndarray
    log_density: np.ndarray


def neighbourhood(targets: np.ndarray, table: np.ndarray, sizes: np.ndarray,
                  kernel_weight: float) -> Neighbourhood:
    """:class:`Neighbourhood` of every target row in ``table`` (codes of the same columns):
    ``log mean_j kernel_weight ** hamming(x, row_j)``, computed over the distinct rows of the
    table weighted by their counts, in chunks of targets, stably (shifted by the row maximum)."""
    rows, counts = distinct_rows(table)
    d, beta = targets.shape[1], -np.log(kernel_weight)
    right = one_hot(rows, sizes).T.copy()
    weights = (counts / counts.sum()).astype(np.float32)
    chunk = max(1, CHUNK_CELLS // max(1, len(rows)))
    best = np.empty(len(targets))
    log_density = np.empty(len(targets))
    for start in range(0, len(targets), chunk):
        matches = one_hot(targets[start:start + chunk], sizes) @ right
        top = matches.max(axis=1)
        matches -= top[:, None]
        matches *= np.float32(beta)
        np.exp(matches, out=matches)
        best[start:start + chunk] = top
        log_density[start:start + chunk] = beta * (top - d) + np.log(matches @ weights)
    return Neighbourhood(best, log_density)


def dcr_scores(targets: np.ndarray, synthetic_keys: np.ndarray,
               near: Neighbourhood) -> np.ndarray:
    """-Hamming distance to the closest synthetic row: 0 for an exact copy anywhere in the
    synthetic table (``synthetic_keys``: every synthetic row's key), else the distance to the
    closest row of the subsample ``near`` was computed on."""
    distance = targets.shape[1] - near.max_matches
    return -np.where(np.isin(row_keys(targets), synthetic_keys), 0.0, distance)


def person_means(row_scores: np.ndarray, persons: Persons) -> np.ndarray:
    """Every person's mean row score (a sum of log density ratios over a person's rows is
    the log-likelihood ratio of the person when rows are independent; the mean DCR is 0 only
    when every row has an exact copy)."""
    totals = np.bincount(persons.person, weights=row_scores, minlength=persons.count)
    return totals / np.bincount(persons.person, minlength=persons.count)


def copy_share(sample: np.ndarray, synthetic_keys: np.ndarray) -> float:
    """Share of the distinct rows of ``sample`` that occur exactly in the synthetic table."""
    keys = np.unique(row_keys(sample))
    return float(np.isin(keys, synthetic_keys).mean()) if len(keys) else float("nan")


# ----- AUROC and TPR at a fixed FPR from score counts, with a bootstrap -------------------
def score_counts(member_scores: np.ndarray, nonmember_scores: np.ndarray,
                 member_draws: np.ndarray, nonmember_draws: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """How many members and non-members have each distinct score (ascending), per draw:
    arrays ``(draws, distinct scores)``. A draw is a row of indices into the scores (the
    identity draw gives the point estimate)."""
    values, inverse = np.unique(np.concatenate([member_scores, nonmember_scores]),
                                return_inverse=True)
    size = len(values)
    member_codes, nonmember_codes = inverse[:len(member_scores)], inverse[len(member_scores):]
    return (draw_counts(member_codes, member_draws, size),
            draw_counts(nonmember_codes, nonmember_draws, size))


def draw_counts(codes: np.ndarray, draws: np.ndarray, size: int) -> np.ndarray:
    """Counts of each of ``size`` codes among ``codes[draw]`` for every row ``draw``."""
    flat = (codes[draws] + size * np.arange(len(draws))[:, None]).ravel()
    return np.bincount(flat, minlength=size * len(draws)).reshape(len(draws), size)


def auroc(positives: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """AUROC per row of score counts (ascending scores): P(positive > negative) plus half
    P(tie), the Mann-Whitney statistic with mid-ranks."""
    below = np.cumsum(negatives, axis=-1) - negatives
    wins = (positives * (below + 0.5 * negatives)).sum(axis=-1)
    return wins / (positives.sum(axis=-1) * negatives.sum(axis=-1))


def tpr_at_fpr(positives: np.ndarray, negatives: np.ndarray, fpr: float) -> np.ndarray:
    """TPR per row of score counts (ascending scores) of the test "score above the
    non-members' (1 - fpr) quantile", randomised at the threshold score so that its
    false-positive rate is exactly ``fpr`` (Neyman-Pearson)."""
    n_neg, n_pos = negatives.sum(axis=-1), positives.sum(axis=-1)
    neg_above = n_neg[:, None] - np.cumsum(negatives, axis=-1)
    pos_above = n_pos[:, None] - np.cumsum(positives, axis=-1)
    allowed = fpr * n_neg
    k = np.argmax(neg_above <= allowed[:, None] + 1e-9, axis=-1)  # first score above which
    rows = np.arange(len(k))                                      # at most fpr * n_neg remain
    at = negatives[rows, k]
    gamma = np.where(at > 0, (allowed - neg_above[rows, k]) / np.maximum(at, 1), 0.0)
    return (pos_above[rows, k] + np.clip(gamma, 0.0, 1.0) * positives[rows, k]) / n_pos


@dataclass(frozen=True)
class AttackStats:
    """One statistic of an attack (or the maximum over attacks): the point estimate and its
    bootstrap draws."""

    point: float
    draws: np.ndarray

    def interval(self) -> tuple[float, float]:
        """Percentile bootstrap 95% interval."""
        lo, hi = np.percentile(self.draws, [2.5, 97.5])
        return float(lo), float(hi)


def attack_stats(member_scores: np.ndarray, nonmember_scores: np.ndarray,
                 member_draws: np.ndarray, nonmember_draws: np.ndarray
                 ) -> dict[str, AttackStats]:
    """AUROC and TPR at each of :data:`FPRS` with their bootstrap draws (row 0 of the draws
    is the identity, the point estimate)."""
    pos, neg = score_counts(member_scores, nonmember_scores, member_draws, nonmember_draws)
    values = {"auc": auroc(pos, neg)}
    values.update({f"tpr_at_fpr_{fpr:g}": tpr_at_fpr(pos, neg, fpr) for fpr in FPRS})
    return {k: AttackStats(float(v[0]), v[1:]) for k, v in values.items()}


def bootstrap_draws(n: int, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """The identity followed by ``n_bootstrap`` resamples (with replacement) of ``n`` indices."""
    return np.vstack([np.arange(n)[None, :], rng.integers(0, n, size=(n_bootstrap, n))])


def maximum(stats: list[AttackStats]) -> AttackStats:
    """The larger of several attacks' statistic, point and draw by draw (same resamples)."""
    return AttackStats(max(s.point for s in stats), np.max([s.draws for s in stats], axis=0))


def with_interval(name: str, stat: AttackStats) -> dict[str, float]:
    lo, hi = stat.interval()
    return {name: stat.point, f"{name}_lo": lo, f"{name}_hi": hi}


# ----- the metric -------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackSetup:
    """The synthetic-independent side of the attacks: domain sizes, targets, their stacked
    rows (members first), the reference density at those rows and the bootstrap draws."""

    sizes: np.ndarray
    targets: Targets
    rows: np.ndarray
    near_reference: Neighbourhood
    member_draws: np.ndarray
    nonmember_draws: np.ndarray


@dataclass
class Membership(SharedReference):
    """Empirical membership-inference risk : empirical risk, not a
    DP guarantee. Settings: ``max_targets`` (2000 persons per side), ``rows_per_person`` (4,
    user level only: rows scored per person), ``max_synthetic`` (20000
    synthetic and reference rows for the neighbour searches and densities), ``n_bootstrap``
    (200), ``kernel_weight`` (0.25, the density kernel's factor per differing attribute),
    ``min_heldout`` (50 held-out persons, else not applicable), ``seed`` (0, public).

    Who is attacked
    ---------------
    - **Non-members**: held-out persons (``data.heldout``), which no mechanism saw. When the
      dataset has no public part, a seeded half of the held-out persons is set aside as the
      density attack's reference population and is *not* used as non-member targets.
    - **Members**: a seeded sample of training persons (``data.private``) of the same size.
      Both sides are capped at ``max_targets`` persons.
    - **Persons, not rows**: at the user level (``data.unit == "user"``) each target person is
      represented by up to ``rows_per_person`` of their rows (a seeded sample: public randomness)
      and scored by the mean of their rows' scores; at the record level a row is a person. User-
      level DP protects all of a person's rows at once, so the attack may use several: a person
      all of whose sampled rows have exact copies in the synthetic table is very likely a member
      even where single rows often coincide by chance (taxi trips do). The persons are drawn in a
      seeded order; a side's persons are the first ``n`` of that order.

    Rows are compared on their schema codes (:meth:`dp_arena.data.schema.Schema.encode`: numeric
    and datetime columns through their scoring bins), never on raw values; the id column is not
    an attribute and is ignored.

    The attacks (each sees the synthetic table, plus reference data where said)
    --------------------------------------------------------------------------
    1. **Distance to closest record (DCR)**: the Hamming distance (number of attributes whose
       codes differ; numeric columns count as different when they fall in different bins) from
       a target's row to its nearest synthetic row; score = -distance (closer: more likely a
       member). Exact copies (distance 0) are found over the *whole* synthetic table by row
       hashes; other distances over a seeded subsample of at most ``max_synthetic`` synthetic
       rows (an upper bound of the true distance). Nearest neighbours by one-hot matrix products:
       ``matches = onehot(targets) @ onehot(synthetic).T`` counts equal attributes per pair, in
       chunks, over the distinct synthetic rows.
    2. **Density ratio (DOMIAS, van Breugel et al. 2023)**: score = log p_syn(x) - log p_ref(x),
       where both densities are the same categorical kernel estimator on codes,
       ``p(x) = mean_j kernel_weight ** hamming(x, row_j)`` (each differing attribute multiplies
       a row's weight by ``kernel_weight``; an Aitchison-Aitken-style product kernel with one
       bandwidth), fitted on the synthetic subsample (p_syn) and on reference rows from the
       population that are not targets (p_ref): the dataset's public part when it has one
       (subsampled to ``max_synthetic`` rows), else the held-out reference half described above.
       A synthesizer that overfits its training rows puts more mass near them than the population
       does, which the ratio picks up even where the population is dense.

    What is reported
    ----------------
    Row scores are averaged over each person's sampled rows (for the density attack that is the
    person's log-likelihood ratio over their rows, divided by their number, when rows are
    independent; the mean DCR is 0 only when every sampled row has an exact copy). For each attack
    (member = positive): **AUROC** (Mann-Whitney with mid-ranks for ties) and the **TPR at FPR
    0.01 and 0.1**. The threshold is the non-member scores' quantile, randomised on ties
    (Neyman-Pearson: at the threshold score a target counts as positive with the probability that
    makes the false-positive rate exactly the target rate), so a discrete score such as a Hamming
    distance is neither favoured nor penalised at a fixed FPR. Each comes with a percentile
    **bootstrap 95% CI** (``n_bootstrap`` resamples of members and of non-members, with the
    metric's seed; both attacks are computed on the same resamples, so the CI of the maximum over
    attacks is the CI of a maximum, not a maximum of CIs).

    Scores (logged as ``membership/<name>``): ``auc`` (headline: the larger AUROC of the two
    attacks; **higher is worse** for privacy, so ``lower_is_better``), ``auc_dcr``,
    ``auc_density``, ``tpr_at_fpr_0.01`` and ``tpr_at_fpr_0.1`` (the larger of the two attacks'),
    each with ``_lo`` / ``_hi`` CI ends; ``copy_share_train``: the share of the member sample's
    distinct (sampled) rows that the synthetic table contains exactly (all attribute codes
    equal), ``copy_share_heldout``: the same share for the non-member sample, both samples cut to
    the same number of rows (normalised by the number of distinct rows compared, the two shares
    are comparable: a synthesizer that copies training rows shows a train share far above the
    held-out one, which only counts coincidences with the population), and ``copy_share_diff``,
    their difference. The private table ``membership_attacks`` holds every attack's numbers and
    the numbers of member and non-member persons.

    The bound a claimed budget implies, ``TPR <= e^epsilon * FPR + delta`` at every FPR, is
    computed by the board from a run's epsilon and delta and ``tpr_at_fpr_0.01_lo`` /
    ``tpr_at_fpr_0.1_lo``: a lower CI end above it is evidence against the claim.

    Reading the numbers
    -------------------
    These attacks are **empirical lower bounds on risk**: an AUROC near 0.5 says that *these*
    attacks failed on *these* targets, not that no attack succeeds. A row whose attack stays under
    the bound its budget implies has proved nothing about its privacy; only a row above it has
    learned something (the claim, or its implementation, is wrong).

    Cost
    ----
    Two chunked one-hot matrix products (targets against the synthetic subsample and against the
    reference) dominate: about targets x ``max_synthetic`` x (sum of domain sizes) operations each.
    Measured single-threaded (one BLAS thread, CPU time, a shared 2-core machine): 50,000 training,
    10,000 held-out and 50,000 synthetic rows of 15 categorical columns (216 codes in all), default
    settings: 0.6-0.9 s with the held-out reference, 1.0-1.4 s with a 50,000-row public reference;
    ``taxi_sim`` (user level, 412 held-out taxis x 4 rows, public reference): about 1.1 s.

    Privacy of the outputs
    ----------------------
    Nothing here is public (``public_outputs`` is empty): every score and the table are computed on
    private rows (training and held-out) without noise, like every other metric's scores; no
    ``Releaser`` is involved, and nothing is charged to a ledger. Because they read held-out
    persons (``reads_heldout``), the scores stay on the data owner's side
    (:mod:`dp_arena.run.heldout`: an owner-only file, not the tracking store, unless
    ``tracking.log_heldout_scores=true``): against a submitted table they are an oracle on
    held-out people. The numbers of members and non-members are counts of private persons (they
    equal ``max_targets`` unless the held-out part is smaller, so they would tell the size of
    the held-out part, hence of the table): they are in the private table only, never a score.
    The metric does not apply when the dataset has no held-out part (a public fact: the
    config). A held-out part of fewer than ``min_heldout`` persons is a fact of the private
    table, so it does not decide applicability (which the plan file and the ``metrics_na`` tags
    would show): the metric applies, and its one score, ``too_few_heldout`` = 1, replaces the
    attacks' on the owner's side.
    """

    max_targets: int = 2000
    rows_per_person: int = 4
    max_synthetic: int = 20_000
    n_bootstrap: int = 200
    kernel_weight: float = 0.25
    min_heldout: int = 50
    seed: int = 0
    name: ClassVar[str] = "membership"
    headline: ClassVar[str] = "auc"
    lower_is_better: ClassVar[bool] = True  # a stronger attack is more privacy risk
    #: The held-out copy share is the baseline the training share is compared with.
    other_direction: ClassVar[tuple[str, ...]] = ("copy_share_heldout",)
    public_outputs: ClassVar[frozenset[str]] = frozenset()  # every output uses private rows
    reads_heldout: ClassVar[bool] = True  # scores kept on the owner's side (dp_arena.run.heldout)
    requires: ClassVar[str] = "a held-out split of persons (data.heldout)"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "max_targets": [Interval(int, 10)], "rows_per_person": [Interval(int, 1)],
        "max_synthetic": [Interval(int, 100)],
        "n_bootstrap": [Interval(int, 10)],
        "kernel_weight": [Interval(float, 0, 1, closed="neither")],
        "min_heldout": [Interval(int, 2)], "seed": [Interval(int, 0)]}

    def applies_to(self, data: Dataset) -> bool:
        return data.heldout is not None  # public: the config holds persons out

    def not_applicable_reason(self, data: Dataset) -> str | None:
        if data.heldout is None:
            return (f"membership needs {self.requires}; dataset {data.name!r} holds out no "
                    "persons")
        return None

    def reference(self, data: Dataset) -> AttackSetup | TooFewHeldout:
        """The targets, the reference density at their rows and the bootstrap draws: all
        that does not depend on the synthetic table. Three seeded streams (targets,
        synthetic subsample, bootstrap) so that splitting the work changes no draw.
        :class:`TooFewHeldout` when the held-out part has fewer than ``min_heldout``
        persons."""
        reason = self.not_applicable_reason(data)
        if reason is not None:
            raise NotApplicable(reason, "hold out persons of the dataset (its held-out split) "
                                "or drop the metric with ~metrics.membership")
        if person_count(data.heldout, person_id_column(data)) < self.min_heldout:
            return TooFewHeldout()
        target_rng, _, bootstrap_rng = np.random.default_rng(self.seed).spawn(3)
        schema = data.schema
        sizes = np.array([schema.domain()[a] for a in schema.attributes])
        targets = choose_targets(data, self.max_targets, self.rows_per_person,
                                 self.max_synthetic, target_rng)
        rows = np.vstack([targets.members.codes, targets.nonmembers.codes])
        return AttackSetup(
            sizes, targets, rows,
            neighbourhood(rows, targets.reference, sizes, self.kernel_weight),
            bootstrap_draws(targets.members.count, self.n_bootstrap, bootstrap_rng),
            bootstrap_draws(targets.nonmembers.count, self.n_bootstrap, bootstrap_rng))

    def score_with(self, reference: AttackSetup | TooFewHeldout, data: Dataset,
                   synthetic: pd.DataFrame) -> MetricResult:
        if isinstance(reference, TooFewHeldout):
            return MetricResult(scores={TOO_FEW: 1.0})
        setup, targets = reference, reference.targets
        synthetic_rng = np.random.default_rng(self.seed).spawn(3)[1]
        all_synthetic = data.schema.encode(synthetic).to_numpy(np.int64)
        synthetic_keys = row_keys(all_synthetic)
        synth = subsample(all_synthetic, self.max_synthetic, synthetic_rng)
        near_syn = neighbourhood(setup.rows, synth, setup.sizes, self.kernel_weight)
        split = len(targets.members.codes)
        stats = {}
        for attack, row_scores in (
                ("dcr", dcr_scores(setup.rows, synthetic_keys, near_syn)),
                ("density", near_syn.log_density - setup.near_reference.log_density)):
            stats[attack] = attack_stats(person_means(row_scores[:split], targets.members),
                                         person_means(row_scores[split:], targets.nonmembers),
                                         setup.member_draws, setup.nonmember_draws)
        return MetricResult(scores=self.summary(stats, targets, synthetic_keys),
                            tables={"membership_attacks": attack_table(stats, targets)})

    def summary(self, stats: dict[str, dict[str, AttackStats]], targets: Targets,
                synthetic_keys: np.ndarray) -> dict[str, float]:
        out: dict[str, float] = {}
        out.update(with_interval("auc", maximum([stats[a]["auc"] for a in ATTACKS])))
        for attack in ATTACKS:
            out.update(with_interval(f"auc_{attack}", stats[attack]["auc"]))
        for fpr in FPRS:
            key = f"tpr_at_fpr_{fpr:g}"
            out.update(with_interval(key, maximum([stats[a][key] for a in ATTACKS])))
        size = min(len(targets.members.codes), len(targets.nonmembers.codes))  # equal samples
        train = copy_share(targets.members.codes[:size], synthetic_keys)
        heldout = copy_share(targets.nonmembers.codes[:size], synthetic_keys)
        out.update({"copy_share_train": train, "copy_share_heldout": heldout,
                    "copy_share_diff": train - heldout})
        return out


def attack_table(stats: dict[str, dict[str, AttackStats]], targets: Targets) -> pd.DataFrame:
    """One row per attack: every statistic with its CI (private: computed on private rows)."""
    rows = []
    for attack, by_stat in stats.items():
        row: dict[str, object] = {"attack": attack, "reference": (
            targets.reference_source if attack == "density" else ""),
            "n_members": targets.members.count, "n_nonmembers": targets.nonmembers.count}
        for key, stat in by_stat.items():
            row.update(with_interval(key, stat))
        rows.append(row)
    return pd.DataFrame(rows)
