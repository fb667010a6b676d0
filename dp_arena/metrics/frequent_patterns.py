"""Top-k frequent sequential patterns (Chen et al., KDD 2012).

Definitions
-----------
- A **pattern** is a *contiguous* subsequence (a substring) of length ``1..max_pattern_length``
  of a location sequence (the shared sequence view, :mod:`dp_arena.data.taxi.sequences`). Contiguous,
  because the paper's prefix-based release makes prefixes and substrings the natural unit;
  gapped subsequences are not counted.
- The **support** of a pattern is the number of sequences that contain it at least once
  (each sequence counts once per pattern, however often the pattern occurs in it).
- ``F_k(D)``, the **top-k**, ranks patterns by support descending, then by length ascending,
  then by lexicographic order of their location codes (the order of the location alphabet).
  This total order breaks ties at the k-th place deterministically. Fewer than k patterns
  exist only in tiny data; then ``F_k`` holds all of them.
- Scores: ``true_positives = |F_k(D) & F_k(D~)|``, ``false_positives = |F_k(D~) - F_k(D)|``,
  ``false_drops = |F_k(D) - F_k(D~)|`` (equal to false positives when both sets have k
  members) and ``precision = true_positives / k``.

``max_pattern_length`` (default 5) bounds the patterns counted. A pattern's support never
exceeds that of its prefix, which is shorter and so ranks first; hence the top-k over all
lengths equals the top-k over lengths ``<= max_pattern_length`` whenever the latter contains no
pattern of the maximal length (a warning says when it does). ``max_pattern_length=None``
counts lengths 1, 2, ... until that holds for both datasets, i.e. the exact top-k. On MSNBC,
whose long runs of one category make long patterns frequent, the exact top-300 holds patterns
of up to 13 locations and the top-100 up to 9, so 5 is an approximation there (its top-100
shares 94 patterns with the exact one, its top-300 257); on simulated taxi data the top-300
holds patterns of at most 3 to 5 locations, so 5 is (nearly) exact.

Outputs: the scores and the ``top_k`` table (real top-k, real and synthetic support) are
computed on the private data and private (nothing is declared public: the synthetic table
itself is logged).

Counting is vectorised: every contiguous window of length ``L`` becomes one integer key in
base ``A + 1`` with digits ``code + 1`` (no digit is 0, so keys of different lengths never
collide, and ordering keys orders patterns by length, then lexicographically); ``(sequence,
key)`` pairs are deduplicated by sorting combined keys and the keys counted the same way.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sequences import (
    SequenceSpec,
    SequenceView,
    has_sequence_view,
    sequence_view,
)
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, Interval, OneOf

from .base import Metric, MetricResult

LOCATIONS = ("pickup", "dropoff", "pair")
INT64_LIMIT = 2**63 - 1


@dataclass(frozen=True)
class PatternSupport:
    """Every pattern seen and its support: ``keys`` sorted ascending, ``counts`` aligned."""

    keys: np.ndarray
    counts: np.ndarray
    base: int

    def support_of(self, keys: np.ndarray) -> np.ndarray:
        """Support of each of ``keys`` (0 for patterns never seen)."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(self.keys) == 0:
            return np.zeros(len(keys), dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[at] == keys, self.counts[at], 0).astype(np.int64)


# ----- keys -------------------------------------------------------------------------------
def pattern_base(n_locations: int) -> int:
    """The base of pattern keys: one digit ``code + 1`` per location, 0 unused."""
    return n_locations + 1


def max_encodable_length(n_locations: int) -> int:
    """The longest pattern whose key fits in an int64."""
    base, length = pattern_base(n_locations), 0
    while base ** (length + 1) <= INT64_LIMIT:
        length += 1
    return length


def encode_pattern(codes: tuple[int, ...] | list[int], n_locations: int) -> int:
    """The key of a pattern given as location codes."""
    base, key = pattern_base(n_locations), 0
    for c in codes:
        key = key * base + int(c) + 1
    return key


def decode_pattern(key: int, n_locations: int) -> tuple[int, ...]:
    """The location codes of a pattern key."""
    base, out = pattern_base(n_locations), []
    key = int(key)
    while key:
        key, digit = divmod(key, base)
        out.append(digit - 1)
    return tuple(reversed(out))


def pattern_lengths(keys: np.ndarray, n_locations: int) -> np.ndarray:
    """Length of every pattern key (keys of length ``L`` lie in ``[11..1, AA..A]`` in base
    ``A + 1``, disjoint ranges increasing with ``L``)."""
    base, shortest, first_keys = pattern_base(n_locations), 0, []
    while shortest <= INT64_LIMIT // base:
        shortest = shortest * base + 1  # the smallest key of the next length: 1...1
        first_keys.append(shortest)
    return np.searchsorted(np.asarray(first_keys, dtype=np.int64),
                           np.asarray(keys, dtype=np.int64), side="right").astype(np.int64)


def check_encodable(n_locations: int, max_length: int) -> None:
    """Raise a clear error when patterns of ``max_length`` do not fit a 64-bit key."""
    limit = max_encodable_length(n_locations)
    if max_length > limit:
        raise ConfigError(
            f"frequent_patterns: patterns of length {max_length} over {n_locations} "
            f"locations do not fit a 64-bit key (at most {limit})",
            f"set max_pattern_length to at most {limit}")


# ----- counting ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FlatSequences:
    """A view's sequences concatenated: ``codes``, the ``sequence`` of each entry and, per
    sequence, the offset ``end`` one past its last entry."""

    codes: np.ndarray
    sequence: np.ndarray
    end: np.ndarray
    n_sequences: int
    n_locations: int

    @classmethod
    def of(cls, view: SequenceView) -> "FlatSequences":
        return cls(view.flat_codes().astype(np.int64), view.sequence_of_cell(),
                   view.sequence_starts() + view.lengths, view.n_sequences, view.n_locations)


def window_keys(flat: FlatSequences, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys of all contiguous windows of ``length`` that lie inside one sequence, and the
    sequence of each."""
    base = pattern_base(flat.n_locations)
    n_windows = len(flat.codes) - length + 1
    if n_windows <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    sequence = flat.sequence[:n_windows]
    inside = np.arange(n_windows) + length <= flat.end[sequence]
    digits = flat.codes + 1
    keys = digits[:n_windows].copy()
    for offset in range(1, length):
        keys *= base
        keys += digits[offset:offset + n_windows]
    return keys[inside], sequence[inside]


def distinct_per_sequence(keys: np.ndarray, sequence: np.ndarray, key_bound: int,
                          n_sequences: int) -> np.ndarray:
    """``keys`` with repeats inside the same sequence removed (each sequence counts once).
    ``key_bound``: every key is below it."""
    if len(keys) == 0:
        return keys
    if n_sequences * key_bound <= INT64_LIMIT:
        pairs, _ = sorted_distinct(sequence * np.int64(key_bound) + keys)
        return pairs % np.int64(key_bound)
    order = np.lexsort((keys, sequence))
    k, s = keys[order], sequence[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (s[1:] != s[:-1])
    return k[first]


def supports_of_length(flat: FlatSequences, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys (ascending) and supports of the patterns of exactly ``length`` locations."""
    keys, sequence = window_keys(flat, length)
    bound = pattern_base(flat.n_locations) ** length
    return sorted_distinct(distinct_per_sequence(keys, sequence, bound, flat.n_sequences))


def pattern_support(view: SequenceView, max_length: int) -> PatternSupport:
    """Support of every contiguous pattern of length ``1..max_length`` in ``view``."""
    check_encodable(view.n_locations, max_length)
    flat = FlatSequences.of(view)
    parts = [supports_of_length(flat, length) for length in range(1, max_length + 1)]
    return join_supports(parts, pattern_base(view.n_locations))


def join_supports(parts: list[tuple[np.ndarray, np.ndarray]], base: int) -> PatternSupport:
    """One :class:`PatternSupport` from per-length parts given in increasing length (their key
    ranges are disjoint and increasing, so the concatenation stays sorted)."""
    if not parts:
        return PatternSupport(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), base)
    return PatternSupport(np.concatenate([k for k, _ in parts]),
                          np.concatenate([c for _, c in parts]), base)


def supports_until_exact(views: list[SequenceView], k: int,
                         ) -> tuple[list[PatternSupport], int, bool]:
    """Count patterns of length 1, 2, ... in every view until each view's top-k over the
    lengths counted holds no pattern of the last length (then it is the exact top-k over all
    lengths; see the module docstring), or the 64-bit key limit is reached. Returns the
    supports, the last length counted and whether the ranking is exact."""
    n_locations = views[0].n_locations
    base, limit = pattern_base(n_locations), max_encodable_length(n_locations)
    flats = [FlatSequences.of(v) for v in views]
    parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in views]
    supports: list[PatternSupport] = []
    for length in range(1, limit + 1):
        for flat, own in zip(flats, parts):
            own.append(supports_of_length(flat, length))
        supports = [join_supports(own, base) for own in parts]
        longest = [pattern_lengths(top_k_patterns(s, k), n_locations).max(initial=0)
                   for s in supports]
        if max(longest) < length:
            return supports, length, True
    return supports, limit, False


def sorted_distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values (ascending) and their multiplicities, by sort and run detection
    (faster than ``np.unique`` here: the inputs are nearly sorted by sequence)."""
    ordered = np.sort(np.asarray(values, dtype=np.int64))
    if len(ordered) == 0:
        return ordered, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.diff(np.append(starts, len(ordered)))
    return ordered[starts], counts.astype(np.int64)


def top_k_patterns(support: PatternSupport, k: int) -> np.ndarray:
    """Keys of the top-k patterns, best first: support descending, then key ascending (=
    length ascending, then lexicographic)."""
    order = np.lexsort((support.keys, -support.counts))
    return support.keys[order[:k]]


def compare_top_k(real_top: np.ndarray, synthetic_top: np.ndarray, k: int) -> dict[str, float]:
    """True positives, false positives, false drops and precision (= TP / k)."""
    real, fake = set(real_top.tolist()), set(synthetic_top.tolist())
    tp = len(real & fake)
    return {"true_positives": float(tp), "false_positives": float(len(fake - real)),
            "false_drops": float(len(real - fake)), "precision": tp / k}


def top_k_table(real_top: np.ndarray, real: PatternSupport, synthetic: PatternSupport,
                synthetic_top: np.ndarray, view: SequenceView) -> pd.DataFrame:
    """The real data's top-k with their support in both datasets."""
    codes = [decode_pattern(k, view.n_locations) for k in real_top]
    in_fake = set(synthetic_top.tolist())
    return pd.DataFrame({
        "rank": np.arange(1, len(real_top) + 1),
        "pattern": [" > ".join(str(x) for x in view.labels(c)) for c in codes],
        "length": [len(c) for c in codes],
        "real_support": real.support_of(real_top),
        "synthetic_support": synthetic.support_of(real_top),
        "in_synthetic_top_k": [k in in_fake for k in real_top.tolist()],
    })


# ----- the metric -------------------------------------------------------------------------
@dataclass
class FrequentPatterns(Metric):
    """Top-k frequent contiguous sequential patterns (see the module docstring).

    Settings: ``k`` (100; the paper uses 100..300), ``max_pattern_length`` (5: patterns of
    length 1..5 are counted; ``None``: as long as needed for the exact top-k of both datasets,
    up to the 64-bit key limit), ``location`` (``pickup`` | ``dropoff`` | ``pair``, taxi only).

    Outputs: scores (computed on the private data); table ``top_k`` is **private** (the real
    top-k and its ``real_support``).
    """

    name = "frequent_patterns"
    requires = "sequence data (taxi trips or site_<n> columns)"
    headline = "true_positives"
    lower_is_better = False
    other_direction = ("false_positives", "false_drops")

    k: int = 100
    max_pattern_length: int | None = 5
    location: str = "pickup"

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "k": [Interval(int, 1)], "max_pattern_length": [Interval(int, 1), None],
        "location": [OneOf(*LOCATIONS)]}

    @property
    def sequence_spec(self) -> SequenceSpec:
        return SequenceSpec(location=self.location)

    def applies_to(self, data: Dataset) -> bool:
        return has_sequence_view(data, self.sequence_spec)

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        if not self.applies_to(data):
            raise ConfigError("frequent_patterns needs sequence data "
                              "(taxi trips or site_<n> columns)",
                              "drop the metric for this dataset (~metrics.frequent_patterns)")
        real_view = sequence_view(data.private, self.sequence_spec, data.schema)
        fake_view = sequence_view(synthetic, self.sequence_spec, data.schema)
        real, fake = self.supports(real_view, fake_view)
        real_top, fake_top = top_k_patterns(real, self.k), top_k_patterns(fake, self.k)
        return MetricResult(
            scores=compare_top_k(real_top, fake_top, self.k),
            tables={"top_k": top_k_table(real_top, real, fake, fake_top, real_view)},
        )

    def supports(self, real_view: SequenceView,
                 fake_view: SequenceView) -> tuple[PatternSupport, PatternSupport]:
        """Pattern supports of both views up to ``max_pattern_length`` (or until exact), with
        a warning when the ranking may be cut short by the length bound."""
        if self.max_pattern_length is None:
            (real, fake), length, exact = supports_until_exact([real_view, fake_view], self.k)
            if not exact:
                warnings.warn(f"frequent_patterns: the top-{self.k} is not exact: patterns "
                              f"longer than {length} (the 64-bit key limit) are not counted",
                              stacklevel=3)
            return real, fake
        real = pattern_support(real_view, self.max_pattern_length)
        fake = pattern_support(fake_view, self.max_pattern_length)
        for what, support in (("real", real), ("synthetic", fake)):
            top = top_k_patterns(support, self.k)
            if pattern_lengths(top, real_view.n_locations).max(initial=0) >= \
                    self.max_pattern_length:
                warnings.warn(f"frequent_patterns: the {what} top-{self.k} holds patterns of the "
                              f"maximal length {self.max_pattern_length}; longer patterns may "
                              "tie into it: raise max_pattern_length (or set it to null) for "
                              "an exact ranking", stacklevel=3)
        return real, fake
