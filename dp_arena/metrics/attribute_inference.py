"""``attribute_inference``: empirical attribute-inference (reconstruction) risk of a synthetic
table (**empirical risk, not a DP guarantee**).

An attacker who knows some quasi-identifiers of a person and holds the synthetic table guesses
the person's secret columns. Guesses about training persons (members) are compared with
guesses about held-out persons (controls), whom no mechanism saw: only what the synthetic
table gives away about members beyond the population counts as risk (Anonymeter's residual
risk). Who is attacked, the attackers, the numbers and their cost:
:class:`AttributeInference`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError, NotApplicable
from dp_arena.params import Constraint, Interval, OneOf

from .base import MetricResult, SharedReference
from .membership import (TOO_FEW, AttackStats, TooFewHeldout, bootstrap_draws, one_hot,
                         person_count, person_id_column, row_keys, shuffled_persons, subsample)

ATTACKERS = ("neighbour", "classifier")
#: Largest number of float32 cells (32 MB) of one chunk of the target x synthetic match matrix.
CHUNK_CELLS = 8_000_000


# ----- which columns --------------------------------------------------------------------
@dataclass(frozen=True)
class Columns:
    """The quasi-identifiers the attacker knows and the secrets it guesses (disjoint)."""

    quasi_identifiers: tuple[str, ...]
    secrets: tuple[str, ...]


#: Named column sets. ``crc_acs``: in the CRC red team's form, demographic quasi-identifiers
#: of NIST's ACS excerpt and three of its confidential columns (the set the CRC-style
#: measurement this preset reproduces used; not checked against the CRC's own problem files);
#: ``adult``: the same kind of demographics of UCI Adult and three columns a census respondent
#: would call private.
PRESETS: dict[str, Columns] = {
    "crc_acs": Columns(("AGEP", "SEX", "RAC1P", "MSP", "HOUSING_TYPE"),
                       ("EDU", "PINCP_DECILE", "OWN_RENT")),
    "adult": Columns(("age", "sex", "race", "marital-status", "relationship", "native-country",
                      "hours-per-week"),
                     ("income>50K", "education-num", "occupation")),
}


def preset_columns(preset: str, attributes: list[str]) -> Columns | None:
    """The preset ``preset`` names (``auto``: the first preset whose columns the table all
    has; ``none``: no preset), or None."""
    if preset == "none":
        return None
    if preset != "auto":
        return PRESETS[preset]
    for columns in PRESETS.values():
        if set(columns.quasi_identifiers + columns.secrets) <= set(attributes):
            return columns
    return None


def chosen_columns(quasi_identifiers: list[str] | None, secrets: list[str] | None,
                   preset: str, data: Dataset) -> Columns:
    """The columns attacked: the named ones; with none named, a preset (see
    :func:`preset_columns`); else the dataset's target (or its last attribute) as the secret.
    A side not named is every other attribute."""
    attributes = data.schema.attributes
    if quasi_identifiers is None and secrets is None:
        found = preset_columns(preset, attributes)
        if found is not None:
            return found
        secrets = [data.target if data.target in attributes else attributes[-1]]
    if secrets is None:
        secrets = [a for a in attributes if a not in quasi_identifiers]
    if quasi_identifiers is None:
        quasi_identifiers = [a for a in attributes if a not in secrets]
    unknown = [c for c in [*quasi_identifiers, *secrets] if c not in attributes]
    if unknown or set(quasi_identifiers) & set(secrets) or not quasi_identifiers or not secrets:
        raise ConfigError(
            f"metrics.attribute_inference needs disjoint, non-empty quasi_identifiers and "
            f"secrets among the dataset's columns {attributes} (unknown: {unknown})",
            "name columns of the dataset, e.g. metrics.attribute_inference.secrets=[sex]")
    return Columns(tuple(quasi_identifiers), tuple(secrets))


def score_key(column: str) -> str:
    """``column`` as a part of an MLflow metric name (other characters become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", column)


# ----- targets ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Targets:
    """Codes (rows x attributes, schema order) of one row of every member and control
    (equally many persons of each, members first in ``rows``)."""

    members: np.ndarray
    controls: np.ndarray

    @property
    def rows(self) -> np.ndarray:
        return np.vstack([self.members, self.controls])


def one_row_per_person(frame: pd.DataFrame, data: Dataset, n: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Codes of one seeded row of each of the first ``n`` persons in a seeded order."""
    rows, rank = shuffled_persons(frame, person_id_column(data), 1, rng)
    return data.schema.encode(rows[rank < n]).to_numpy(np.int64)


def choose_targets(data: Dataset, max_targets: int, rng: np.random.Generator) -> Targets:
    """Members (training persons) and controls (held-out persons), at most ``max_targets``
    each and equally many."""
    ids = person_id_column(data)
    heldout: pd.DataFrame = data.heldout  # type: ignore[assignment]  # checked by the caller
    n = min(max_targets, person_count(heldout, ids), person_count(data.private, ids))
    return Targets(one_row_per_person(data.private, data, n, rng),
                   one_row_per_person(heldout, data, n, rng))


# ----- the attackers: guesses of every secret for every target ----------------------------
@dataclass(frozen=True)
class SecretCounts:
    """The distinct quasi-identifier rows of a table (sorted by key) and, per secret, how
    often each secret code occurs with each of them (distinct rows x secret codes)."""

    keys: np.ndarray
    rows: np.ndarray
    counts: tuple[np.ndarray, ...]


def secret_counts(qi_codes: np.ndarray, secret_codes: np.ndarray,
                  secret_sizes: list[int]) -> SecretCounts:
    """:class:`SecretCounts` of a table given as its quasi-identifier and secret codes."""
    keys, first, inverse = np.unique(row_keys(qi_codes), return_index=True,
                                     return_inverse=True)
    counts = tuple(np.bincount(inverse * size + secret_codes[:, s], minlength=len(keys) * size)
                   .reshape(len(keys), size).astype(np.float32)
                   for s, size in enumerate(secret_sizes))
    return SecretCounts(keys, qi_codes[first], counts)


def exact_rows(table: SecretCounts, qi_codes: np.ndarray) -> np.ndarray:
    """Per target, the index of its quasi-identifier row among ``table``'s, -1 if absent."""
    keys = row_keys(qi_codes)
    at = np.minimum(np.searchsorted(table.keys, keys), len(table.keys) - 1)
    return np.where(table.keys[at] == keys, at, -1)


def nearest_votes(qi_codes: np.ndarray, table: SecretCounts, qi_sizes: np.ndarray
                  ) -> tuple[np.ndarray, ...]:
    """Per secret, the secret counts summed over the table rows closest to each target in
    Hamming distance on the quasi-identifiers (all rows at the smallest distance)."""
    right = one_hot(table.rows, qi_sizes).T.copy()
    chunk = max(1, CHUNK_CELLS // max(1, len(table.rows)))
    votes = [np.empty((len(qi_codes), c.shape[1]), np.float32) for c in table.counts]
    for start in range(0, len(qi_codes), chunk):
        matches = one_hot(qi_codes[start:start + chunk], qi_sizes) @ right
        closest = (matches == matches.max(axis=1, keepdims=True)).astype(np.float32)
        for out, counts in zip(votes, table.counts):
            out[start:start + chunk] = closest @ counts
    return tuple(votes)


def neighbour_guesses(qi_codes: np.ndarray, full: SecretCounts, sample: SecretCounts,
                      qi_sizes: np.ndarray) -> np.ndarray:
    """Guesses (targets x secrets) of the neighbour attacker: per secret the most frequent
    code (ties: the smallest) among the synthetic rows whose quasi-identifiers equal the
    target's; a target with no such row takes the mode over the nearest rows of ``sample``."""
    if not len(full.keys):  # an empty table: every guess is code 0
        return np.zeros((len(qi_codes), len(full.counts)), np.int64)
    at = exact_rows(full, qi_codes)
    missing = np.flatnonzero(at < 0)
    near = nearest_votes(qi_codes[missing], sample, qi_sizes) \
        if len(missing) and len(sample.rows) else None
    guesses = np.empty((len(qi_codes), len(full.counts)), np.int64)
    for s, counts in enumerate(full.counts):
        votes = counts[np.maximum(at, 0)]
        votes[missing] = near[s] if near is not None else 0.0
        guesses[:, s] = votes.argmax(axis=1)
    return guesses


def classifier_guesses(train_qi: np.ndarray, train_secrets: np.ndarray,
                       target_qi: np.ndarray, qi_sizes: np.ndarray,
                       secret_sizes: list[int]) -> np.ndarray:
    """Guesses (targets x secrets) of a categorical naive Bayes classifier trained, per secret,
    on the synthetic rows: the code c maximising log(n_c + 1) + sum_j log((n_j[x_j, c] + 1) /
    (n_c + size_j)), with n_c the rows holding secret code c and n_j[v, c] those also holding
    code v of quasi-identifier j (Laplace smoothing; ties: the smallest code)."""
    guesses = np.empty((len(target_qi), train_secrets.shape[1]), np.int64)
    for s, k in enumerate(secret_sizes):
        labels = train_secrets[:, s]  # an empty table: all counts 0, every guess code 0
        class_counts = np.bincount(labels, minlength=k).astype(np.float64)
        log_post = np.tile(np.log(class_counts + 1.0), (len(target_qi), 1))
        for j, size in enumerate(qi_sizes):
            joint = np.bincount(train_qi[:, j] * k + labels, minlength=int(size) * k)
            log_post += np.log((joint.reshape(int(size), k)[target_qi[:, j]] + 1.0)
                               / (class_counts + size))
        guesses[:, s] = log_post.argmax(axis=1)
    return guesses


# ----- residual risk with its bootstrap ---------------------------------------------------
def residual_risk(acc_members: np.ndarray, acc_controls: np.ndarray,
                  n_controls: int) -> np.ndarray:
    """(acc_members - acc_controls) / (1 - acc_controls), the denominator kept at least
    1 / n_controls (one control's share) so that a perfect control guess gives a finite
    value: 0 when members are guessed as well, negative when worse."""
    return (acc_members - acc_controls) / np.maximum(1 - acc_controls, 1 / n_controls)


@dataclass(frozen=True)
class SecretAttack:
    """One attacker (or the best of several) on one secret: the shares of members and of
    controls guessed right (row 0 the point, then the bootstrap draws) and the CRC-style
    rarity-weighted shares (points)."""

    members: np.ndarray
    controls: np.ndarray
    reconstruction_members: float
    reconstruction_controls: float
    n_controls: int

    @property
    def risk(self) -> AttackStats:
        """Residual risk of these shares, point and draws."""
        risk = residual_risk(self.members, self.controls, self.n_controls)
        return AttackStats(float(risk[0]), risk[1:])


def accuracy_draws(correct: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The share of correct guesses in every draw (row 0: the identity, the point)."""
    return correct[draws].mean(axis=1)


def rarity_weighted(correct: np.ndarray, truth: np.ndarray, frequency: np.ndarray) -> float:
    """Correct guesses weighted by 1 / frequency of the true value (the CRC red team's rarity
    weighting): sum w(y_i) [guess_i = y_i] / sum w(y_i), w(v) = 1 / frequency[v]."""
    weights = 1.0 / np.maximum(frequency[truth], 1)
    return float((weights * correct).sum() / weights.sum())


def secret_attack(member_correct: np.ndarray, control_correct: np.ndarray,
                  member_truth: np.ndarray, control_truth: np.ndarray,
                  frequency: np.ndarray, member_draws: np.ndarray,
                  control_draws: np.ndarray) -> SecretAttack:
    return SecretAttack(accuracy_draws(member_correct, member_draws),
                        accuracy_draws(control_correct, control_draws),
                        rarity_weighted(member_correct, member_truth, frequency),
                        rarity_weighted(control_correct, control_truth, frequency),
                        len(control_correct))


def best_of(attacks: list[SecretAttack]) -> SecretAttack:
    """The best of several attackers on each side, draw by draw (same resamples): the
    members' best share against the controls' best share, so the baseline is the best
    inference the synthetic table supports about people it never saw."""
    return SecretAttack(np.max([a.members for a in attacks], axis=0),
                        np.max([a.controls for a in attacks], axis=0),
                        max(a.reconstruction_members for a in attacks),
                        max(a.reconstruction_controls for a in attacks),
                        attacks[0].n_controls)


def mean(stats: list[AttackStats]) -> AttackStats:
    """The mean of several statistics, point and draw by draw (same resamples)."""
    return AttackStats(float(np.mean([s.point for s in stats])),
                       np.mean([s.draws for s in stats], axis=0))


def with_interval(name: str, stat: AttackStats) -> dict[str, float]:
    lo, hi = stat.interval()
    return {name: stat.point, f"{name}_lo": lo, f"{name}_hi": hi}


# ----- the metric -------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackSetup:
    """The synthetic-independent side: the columns (positions in the schema's attributes),
    domain sizes, targets, secret frequencies in the training part and bootstrap draws."""

    columns: Columns
    qi_index: np.ndarray
    secret_index: np.ndarray
    qi_sizes: np.ndarray
    targets: Targets
    frequencies: tuple[np.ndarray, ...]
    member_draws: np.ndarray
    control_draws: np.ndarray


def column_setup(schema: Schema, columns: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the quasi-identifiers and secrets among the attributes and the
    quasi-identifiers' domain sizes."""
    attributes, domain = schema.attributes, schema.domain()
    qi = np.array([attributes.index(c) for c in columns.quasi_identifiers])
    secrets = np.array([attributes.index(c) for c in columns.secrets])
    sizes = np.array([domain[c] for c in columns.quasi_identifiers])
    return qi, secrets, sizes


@dataclass
class AttributeInference(SharedReference):
    """Empirical attribute-inference risk: empirical risk, not a DP guarantee.

    Settings: ``quasi_identifiers`` and ``secrets`` (column names; None: see below),
    ``preset`` (``auto``, ``none`` or a name of :data:`PRESETS`), ``attackers`` (both of
    :data:`ATTACKERS`), ``max_targets`` (2000 persons per side), ``max_synthetic`` (20000:
    distinct quasi-identifier rows searched for nearest neighbours), ``n_bootstrap`` (200),
    ``min_heldout`` (50 held-out persons, else the one score ``too_few_heldout``), ``seed`` (0, public).

    Columns: named ones are used as named (a side left None is every other attribute). With
    neither named, the first preset whose columns the dataset all has (``preset=auto``:
    ``crc_acs`` on the ACS excerpt, ``adult`` on UCI Adult: demographics as
    quasi-identifiers), else the dataset's target (its last attribute when it has none) is the
    secret and every other attribute a quasi-identifier.

    Who is attacked: ``max_targets`` (or fewer: the smaller side's persons) members, a seeded
    sample of training persons (``data.private``), and as many controls, held-out persons
    (``data.heldout``); one seeded row per person (at the user level, one of their rows).

    The attackers (each sees the synthetic table and a target's quasi-identifiers; rows are
    compared on schema codes, numeric columns through their bins):

    1. ``neighbour``: per secret, the most frequent value (ties: the smallest code) among the
       synthetic rows whose quasi-identifiers all equal the target's (over the whole table);
       a target without such a row takes it among the rows at the smallest Hamming distance
       on the quasi-identifiers (over a seeded sample of at most ``max_synthetic`` distinct
       quasi-identifier rows). The attack of the CRC red team and of the issue's measurement,
       with a nearest-neighbour fallback for rows that match nothing.
    2. ``classifier``: per secret, a categorical naive Bayes model trained on the whole
       synthetic table (quasi-identifiers as features, Laplace smoothing,
       :func:`classifier_guesses`); it generalises where exact matches are sparse and
       neighbours are few. Gradient-boosted trees were tried and left out: scikit-learn's
       ``HistGradientBoostingClassifier`` (30 iterations, 5,000 rows) brought the metric to
       15-23 s of CPU per adult table for three secrets (one tree per class and iteration),
       far beyond the cost goal.

    What is reported, per secret ``s`` (logged as ``attribute_inference/<name>``; ``s`` with
    characters MLflow refuses as ``_``): ``acc_members_<s>``, the largest share of members
    whose secret an attacker guessed exactly, ``acc_controls_<s>`` the same for controls (the
    best attacker on each side, possibly different ones), and
    ``risk_<s>`` = (acc_members - acc_controls) / (1 - acc_controls), Anonymeter's residual
    risk with plain rates (the denominator kept at least 1 / controls): 1 when every member
    is guessed and the best guess about controls is no better than before, 0 when members are
    guessed no better than people the mechanism never saw, negative when worse. The baseline
    is the best attacker on the controls, not each attacker's own controls (Anonymeter's
    per-attack form, kept in the table): a memorising attacker (exact matches) can do worse on
    controls than a generalising one, and its own baseline would count as risk what anyone
    infers from the population; taking the maximum on both sides also leaves no net selection
    bias under the null. ``reconstruction_<s>`` and ``reconstruction_controls_<s>``: the CRC
    red team's form, the best attacker's correct guesses weighted by 1 / (count of the true
    value in the real training part), on members and on controls.
    Overall: ``risk`` (headline) is the largest per-secret risk, ``risk_mean`` the mean over
    secrets. The largest because a release that gives away one secret is not made safe by
    keeping the others; the mean is beside it to show breadth. Each risk has a percentile
    bootstrap 95% CI (``_lo`` / ``_hi``): ``n_bootstrap`` resamples of members and of
    controls, every attacker and secret scored on the same resamples (the best attacker taken
    draw by draw). ``risk``'s interval is that of the secret chosen on the point estimates:
    choosing the largest of k secrets biases the point upwards under the null (by about the
    mean of the largest of k standard normals, in standard errors: 0.85 for k = 3), which the
    interval does not correct; read a null against the per-secret intervals. ``risk_mean``'s
    interval is the mean draw by draw. Intervals cover the choice of targets for one release,
    not the release's own randomness (a mechanism's noise), which trials show. The private table ``attribute_inference_attacks`` holds
    every attacker's numbers with its own (per-attack) residual risk, and the best-of rows.

    Reading the numbers: like membership, an **empirical lower bound** on risk: a risk near
    0 says that *these* attacks gained nothing on *these* targets. ``resample`` (a copy) is
    the ceiling; ``uniform`` and ``independent`` should be 0 within their CI. No bound from
    a claimed epsilon is computed here: accuracy gains depend on the secret's base rates.

    Cost: the neighbour attack is a hash lookup plus a chunked one-hot product of the
    unmatched targets against at most ``max_synthetic`` distinct rows; the classifier counts
    each quasi-identifier's codes with each secret's (``benchmarks/bench_attribute_inference.py``
    prints the metric's time against a run's).

    Privacy of the outputs: every score and the table are computed on private rows (training
    and held-out, and the rarity weights on the training part) without noise, like the other
    metrics' scores; ``public_outputs`` is empty. The numbers of targets are counts of private
    persons, in the private table only. The not-applicable reason reveals one bit, no count.
    """

    quasi_identifiers: list[str] | None = None
    secrets: list[str] | None = None
    preset: str = "auto"
    attackers: list[str] = field(default_factory=lambda: list(ATTACKERS))
    max_targets: int = 2000
    max_synthetic: int = 20_000
    n_bootstrap: int = 200
    min_heldout: int = 50
    seed: int = 0
    name: ClassVar[str] = "attribute_inference"
    headline: ClassVar[str] = "risk"
    lower_is_better: ClassVar[bool] = True  # more inference is more privacy risk
    #: The controls' accuracy is the population baseline the members' is compared with.
    other_direction: ClassVar[tuple[str, ...]] = ("acc_controls_*", "reconstruction_controls_*")
    public_outputs: ClassVar[frozenset[str]] = frozenset()  # every output uses private rows
    reads_heldout: ClassVar[bool] = True  # scores kept on the owner's side (dp_arena.run.heldout)
    requires: ClassVar[str] = "a held-out split of persons (data.heldout)"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "preset": [OneOf("auto", "none", *PRESETS)],
        "max_targets": [Interval(int, 10)], "max_synthetic": [Interval(int, 100)],
        "n_bootstrap": [Interval(int, 10)], "min_heldout": [Interval(int, 2)],
        "seed": [Interval(int, 0)]}

    def __post_init__(self) -> None:
        super().__post_init__()
        wrong = [a for a in self.attackers if a not in ATTACKERS]
        if wrong or not self.attackers:
            raise ConfigError(f"metrics.attribute_inference.attackers must be some of "
                              f"{list(ATTACKERS)} (got {self.attackers})",
                              "e.g. metrics.attribute_inference.attackers=[neighbour]")

    def applies_to(self, data: Dataset) -> bool:
        return data.heldout is not None  # public: the config holds persons out

    def not_applicable_reason(self, data: Dataset) -> str | None:
        if data.heldout is None:
            return (f"attribute_inference needs {self.requires}; dataset {data.name!r} holds "
                    "out no persons")
        return None

    def reference(self, data: Dataset) -> AttackSetup | TooFewHeldout:
        """Columns, targets, secret frequencies and bootstrap draws (seeded streams: targets,
        synthetic samples, bootstrap). A held-out part of fewer than ``min_heldout`` persons is
        a fact of the private table, so it does not decide applicability (the plan file and
        ``metrics_na`` tags would show it): :class:`TooFewHeldout` instead, on the owner's
        side like every score here."""
        reason = self.not_applicable_reason(data)
        if reason is not None:
            raise NotApplicable(reason, "hold out persons of the dataset (its held-out split) "
                                "or drop the metric with ~metrics.attribute_inference")
        if person_count(data.heldout, person_id_column(data)) < self.min_heldout:
            return TooFewHeldout()
        columns = chosen_columns(self.quasi_identifiers, self.secrets, self.preset, data)
        qi, secrets, sizes = column_setup(data.schema, columns)
        target_rng, _, bootstrap_rng = np.random.default_rng(self.seed).spawn(3)
        targets = choose_targets(data, self.max_targets, target_rng)
        domain = data.schema.domain()
        training = data.schema.encode(data.private)
        frequencies = tuple(np.bincount(training[c].to_numpy(np.int64), minlength=domain[c])
                            for c in columns.secrets)
        n = len(targets.members)
        return AttackSetup(columns, qi, secrets, sizes, targets, frequencies,
                           bootstrap_draws(n, self.n_bootstrap, bootstrap_rng),
                           bootstrap_draws(n, self.n_bootstrap, bootstrap_rng))

    def guesses(self, setup: AttackSetup, synthetic_codes: np.ndarray) -> dict[str, np.ndarray]:
        """Every attacker's guesses (targets x secrets) of the stacked targets."""
        rng_neighbours = np.random.default_rng(self.seed).spawn(3)[1]
        target_qi = setup.targets.rows[:, setup.qi_index]
        syn_qi, syn_secrets = (synthetic_codes[:, setup.qi_index],
                               synthetic_codes[:, setup.secret_index])
        out = {}
        if "neighbour" in self.attackers:
            sizes = [len(f) for f in setup.frequencies]
            full = secret_counts(syn_qi, syn_secrets, sizes)
            keep = np.sort(subsample(np.arange(len(full.keys))[:, None], self.max_synthetic,
                                     rng_neighbours)[:, 0])
            sample = SecretCounts(full.keys[keep], full.rows[keep],
                                  tuple(c[keep] for c in full.counts))
            out["neighbour"] = neighbour_guesses(target_qi, full, sample, setup.qi_sizes)
        if "classifier" in self.attackers:
            out["classifier"] = classifier_guesses(
                syn_qi, syn_secrets, target_qi, setup.qi_sizes,
                [len(f) for f in setup.frequencies])
        return out

    def score_with(self, reference: AttackSetup | TooFewHeldout, data: Dataset,
                   synthetic: pd.DataFrame) -> MetricResult:
        if isinstance(reference, TooFewHeldout):
            return MetricResult(scores={TOO_FEW: 1.0})
        setup = reference
        codes = data.schema.encode(synthetic).to_numpy(np.int64)
        truth = setup.targets.rows[:, setup.secret_index]
        n = len(setup.targets.members)
        attacks: dict[str, dict[str, SecretAttack]] = {}
        for attacker, guessed in self.guesses(setup, codes).items():
            correct = guessed == truth
            attacks[attacker] = {
                secret: secret_attack(correct[:n, s], correct[n:, s], truth[:n, s],
                                      truth[n:, s], setup.frequencies[s], setup.member_draws,
                                      setup.control_draws)
                for s, secret in enumerate(setup.columns.secrets)}
        return MetricResult(scores=summary(attacks, setup.columns.secrets),
                            tables={"attribute_inference_attacks": attack_table(attacks, n)})


def summary(attacks: dict[str, dict[str, SecretAttack]],
            secrets: tuple[str, ...]) -> dict[str, float]:
    """Per secret the best attackers' numbers (:func:`best_of`) with the risk's interval;
    overall the secret of the largest risk (its interval) and the mean over secrets (draw by
    draw)."""
    out: dict[str, float] = {}
    per_secret = []
    for secret in secrets:
        best = best_of([attacks[a][secret] for a in attacks])
        per_secret.append(best.risk)
        key = score_key(secret)
        out.update(with_interval(f"risk_{key}", best.risk))
        out.update({f"acc_members_{key}": float(best.members[0]),
                    f"acc_controls_{key}": float(best.controls[0]),
                    f"reconstruction_{key}": best.reconstruction_members,
                    f"reconstruction_controls_{key}": best.reconstruction_controls})
    out.update(with_interval("risk", max(per_secret, key=lambda stat: stat.point)))
    out.update(with_interval("risk_mean", mean(per_secret)))
    return out


def attack_table(attacks: dict[str, dict[str, SecretAttack]], n_targets: int) -> pd.DataFrame:
    """One row per attacker and secret, each with its own residual risk (its controls as the
    baseline, Anonymeter's per-attack form), and the best-of row the scores report (private:
    computed on private rows)."""
    rows = []
    secrets = list(next(iter(attacks.values())))
    for attacker, by_secret in [*attacks.items(),
                                ("best", {s: best_of([attacks[a][s] for a in attacks])
                                          for s in secrets})]:
        for secret, attack in by_secret.items():
            rows.append({"attacker": attacker, "secret": secret, "n_members": n_targets,
                         "n_controls": n_targets, "acc_members": float(attack.members[0]),
                         "acc_controls": float(attack.controls[0]),
                         **with_interval("risk", attack.risk),
                         "reconstruction_members": attack.reconstruction_members,
                         "reconstruction_controls": attack.reconstruction_controls})
    return pd.DataFrame(rows)
