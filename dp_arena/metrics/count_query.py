"""Count-query relative error (Chen et al., KDD 2012), for sequences and for tables.

Queries
-------
- **Location query** (sequence data): ``Q_L(D)`` = the number of sequences that visit *every*
  location in the set ``L`` (order and repetitions ignored). Sequences come from the shared
  sequence view (:mod:`dp_arena.data.taxi.sequences`): MSNBC rows, or a taxi's trips in time order mapped
  to pickup areas (``location`` setting: ``pickup``, ``dropoff`` or ``pair``).
- **Attribute query** (any table): the number of rows matching a conjunction of
  ``attribute = value`` predicates over distinct attributes, on the codes of
  :meth:`dp_arena.data.schema.Schema.encode` (numeric columns through their scoring bins).

Relative error
--------------
``|Q(D~) - Q(D)| / max(Q(D), s)`` with the sanity bound ``s = sanity_fraction * |D|``, where
``|D|`` is the number of sequences (location queries) or rows (attribute queries) of the real
data. By default ``Q(D~)`` is the raw count on the synthetic data, as in the paper; with
``rescale`` it is multiplied by ``|D| / |D~|`` first (useful when a mechanism releases a
different number of records).

Workloads (seeded: the same settings and seed give the same queries)
--------------------------------------------------------------------
Each query's size ``|L|`` is uniform on ``1..max_size``. Its items are distinct:

- ``uniform``: locations (or attributes, then one value per attribute) drawn uniformly from the
  schema's domain. Does not depend on any data, so every mechanism faces the same queries.
- ``public``: each query is anchored on a public record drawn uniformly at random: the query's
  locations are a uniform subset of the locations the anchor sequence visits (the anchor is
  drawn among public sequences that visit at least ``|L|`` distinct locations), or the query's
  attributes are a uniform subset of the attributes and its values the anchor row's values.
  Every query then has a non-zero answer on the public data, so most have one on the real data.
  Needs ``data.public``.

Reports: mean and median relative error overall and per query size, and per true-count decile
(queries ranked by their true count, ties by query index, cut into ten equal-sized groups).

Outputs and their privacy: the scores are computed on the private data. Every table and figure
is private: ``by_size`` (errors per query size), ``by_true_count_decile`` (true-count ranges
are exact private counts) and the figure ``relative_error_by_size`` all depend on the real
answers. No output is public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sequences import (
    SequenceSpec,
    has_sequence_view,
    pack_bits,
    sequence_view,
    unpack_bits,
    visit_bitmask,
    words_for,
)
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, Interval, OneOf

from .base import Metric, MetricResult

WORKLOADS = ("uniform", "public")
KINDS = ("auto", "location", "attribute")
LOCATIONS = ("pickup", "dropoff", "pair")
#: Superset-count tables are used for bit sets of at most this many bits (2**22 int64 = 32 MB).
MAX_TABLE_BITS = 22
#: Work budget (array cells) of one vectorised step; bounds temporary memory (~8 bytes/cell).
CELLS_PER_STEP = 1 << 22
PAD = -1
#: (true counts, synthetic counts, query sizes, |D|, |D~|) of one workload.
Answers = tuple[np.ndarray, np.ndarray, np.ndarray, int, int]


# ----- workloads --------------------------------------------------------------------------
@dataclass(frozen=True)
class LocationWorkload:
    """Location queries: row ``q`` of ``locations`` holds query ``q``'s location codes in its
    first ``sizes[q]`` entries and ``-1`` after them."""

    locations: np.ndarray
    sizes: np.ndarray

    @classmethod
    def from_lists(cls, queries: Sequence[Sequence[int]]) -> "LocationWorkload":
        sizes = np.array([len(q) for q in queries], dtype=np.int64)
        out = np.full((len(queries), max(1, int(sizes.max(initial=0)))), PAD, dtype=np.int64)
        for i, q in enumerate(queries):
            out[i, : len(q)] = q
        return cls(out, sizes)

    def __len__(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class AttributeWorkload:
    """Attribute queries: query ``q`` is the conjunction of ``column attributes[q, j] == code
    values[q, j]`` for ``j < sizes[q]`` (both ``-1`` after that)."""

    attributes: np.ndarray
    values: np.ndarray
    sizes: np.ndarray

    @classmethod
    def from_lists(cls, queries: Sequence[Sequence[tuple[int, int]]]) -> "AttributeWorkload":
        sizes = np.array([len(q) for q in queries], dtype=np.int64)
        width = max(1, int(sizes.max(initial=0)))
        attrs = np.full((len(queries), width), PAD, dtype=np.int64)
        vals = np.full((len(queries), width), PAD, dtype=np.int64)
        for i, q in enumerate(queries):
            for j, (a, v) in enumerate(q):
                attrs[i, j], vals[i, j] = a, v
        return cls(attrs, vals, sizes)

    def __len__(self) -> int:
        return len(self.sizes)


def draw_query_sizes(rng: np.random.Generator, n_queries: int, max_size: int) -> np.ndarray:
    """Query sizes, uniform on ``1..max_size``."""
    return rng.integers(1, max_size + 1, size=n_queries).astype(np.int64)


def make_location_workload(n_queries: int, max_size: int, n_locations: int, seed: int,
                           public_bitmask: np.ndarray | None = None) -> LocationWorkload:
    """Seeded location queries (see the module docstring).

    Uniform workload when ``public_bitmask`` is ``None``; else ``public_bitmask`` holds the
    visited-location bit sets of the public sequences (:func:`dp_arena.data.taxi.sequences.visit_bitmask`)
    that anchor the queries.
    """
    if not 1 <= max_size <= n_locations:
        raise ConfigError(f"count_query: max_size must be in 1..{n_locations} (the number of "
                          f"locations); got {max_size}", f"set max_size to at most {n_locations}")
    rng = np.random.default_rng(seed)
    sizes = draw_query_sizes(rng, n_queries, max_size)
    allowed = None
    if public_bitmask is not None:
        public_bitmask = np.asarray(public_bitmask, dtype=np.uint64)
        anchors = draw_anchor_sequences(rng, popcount(public_bitmask).sum(axis=1), sizes)
        allowed = public_bitmask[anchors]
    locations = random_distinct_items(rng, n_queries, n_locations, max_size, allowed)
    return LocationWorkload(mask_beyond_sizes(locations, sizes), sizes)


def make_attribute_workload(n_queries: int, max_size: int, domain_sizes: Sequence[int],
                            seed: int,
                            public_codes: np.ndarray | None = None) -> AttributeWorkload:
    """Seeded attribute-conjunction queries (see the module docstring).

    ``domain_sizes[a]`` is the number of codes of attribute ``a``. Uniform workload when
    ``public_codes`` is ``None``; else the rows of the ``n_public x n_attributes`` code matrix
    ``public_codes`` anchor the queries.
    """
    n_attributes = len(domain_sizes)
    if not 1 <= max_size <= n_attributes:
        raise ConfigError(f"count_query: max_size must be in 1..{n_attributes} (the number of "
                          f"attributes); got {max_size}",
                          f"set max_size to at most {n_attributes}")
    rng = np.random.default_rng(seed)
    sizes = draw_query_sizes(rng, n_queries, max_size)
    attributes = random_distinct_items(rng, n_queries, n_attributes, max_size)
    if public_codes is None:
        domain = np.asarray(domain_sizes, dtype=np.int64)
        values = np.floor(rng.random(attributes.shape) * domain[attributes]).astype(np.int64)
    else:
        if len(public_codes) == 0:
            raise ConfigError("count_query: the public data has no rows",
                              "use workload=uniform")
        anchors = rng.integers(0, len(public_codes), size=n_queries)
        values = np.asarray(public_codes)[anchors[:, None], attributes].astype(np.int64)
    return AttributeWorkload(mask_beyond_sizes(attributes, sizes),
                             mask_beyond_sizes(values, sizes), sizes)


def draw_anchor_sequences(rng: np.random.Generator, n_visited: np.ndarray,
                          sizes: np.ndarray) -> np.ndarray:
    """For each query size ``s``, a public sequence drawn uniformly among those that visit at
    least ``s`` distinct locations."""
    order = np.argsort(n_visited, kind="stable")
    sorted_counts = np.asarray(n_visited)[order]
    first = np.searchsorted(sorted_counts, sizes, side="left")
    eligible = len(order) - first
    if np.any(eligible == 0):
        most = int(sorted_counts[-1]) if len(sorted_counts) else 0
        raise ConfigError(
            f"count_query: workload=public needs public sequences that visit {int(sizes.max())} "
            f"distinct locations; the most any public sequence visits is {most}",
            f"lower max_size to at most {most}, or use workload=uniform")
    picks = first + np.floor(rng.random(len(sizes)) * eligible).astype(np.int64)
    return order[np.minimum(picks, len(order) - 1)]


def random_distinct_items(rng: np.random.Generator, n_rows: int, n_items: int, k: int,
                          allowed_bits: np.ndarray | None = None) -> np.ndarray:
    """``n_rows x k`` items drawn without replacement from ``0..n_items-1`` per row, in a
    uniformly random order (so any prefix is a uniform subset). With ``allowed_bits``
    (``n_rows x n_words`` uint64 bit sets), row ``i`` draws its allowed items first (callers
    make sure a row has enough of them for the prefix it uses). Random sort keys, processed in
    fixed-size chunks of rows, so the result depends only on the seed and the arguments."""
    out = np.empty((n_rows, k), dtype=np.int64)
    step = max(1, CELLS_PER_STEP // max(n_items, 1))
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        keys = rng.random((stop - start, n_items))
        if allowed_bits is not None:
            allowed = unpack_bits(allowed_bits[start:stop], n_items)
            keys[~allowed] += 2.0  # disallowed items sort after every allowed one
        if k < n_items:
            smallest = np.argpartition(keys, k - 1, axis=1)[:, :k]
        else:
            smallest = np.tile(np.arange(n_items), (stop - start, 1))
        by_key = np.argsort(np.take_along_axis(keys, smallest, axis=1), axis=1)
        out[start:stop] = np.take_along_axis(smallest, by_key, axis=1)
    return out


def mask_beyond_sizes(items: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``items`` with entries at positions ``>= sizes[row]`` set to ``-1``."""
    out = items.copy()
    out[np.arange(items.shape[1])[None, :] >= sizes[:, None]] = PAD
    return out


# ----- answering --------------------------------------------------------------------------
def answer_location_queries(bitmask: np.ndarray, queries: LocationWorkload) -> np.ndarray:
    """``Q_L`` for every query: the number of rows of ``bitmask`` (``n x n_words`` uint64 bit
    sets of visited locations, see :func:`dp_arena.data.taxi.sequences.visit_bitmask`) whose set contains
    every location of the query.

    Small alphabets (every set within 22 bits, e.g. MSNBC's 17 categories): a table of
    superset counts over the distinct sets, one lookup per query. Otherwise: one bit set over
    the sequences per queried location, and each query is the popcount of the AND of its
    locations' bit sets, for a block of queries at a time."""
    bitmask = np.asarray(bitmask, dtype=np.uint64)
    if bitmask.shape[0] == 0:
        return np.zeros(len(queries), dtype=np.int64)
    if bitmask.shape[1] == 1:
        masks, weights = distinct_rows_with_counts(bitmask)
        used_bits = int(np.bitwise_or.reduce(masks[:, 0])).bit_length()
        if used_bits <= MAX_TABLE_BITS:
            return lookup_superset_counts(superset_counts(masks[:, 0], weights, used_bits),
                                          used_bits, queries.locations)
    return count_by_location_bitsets(bitmask, queries.locations)


def distinct_rows_with_counts(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a 2-d array and how often each occurs."""
    if rows.shape[1] == 1:
        values, counts = np.unique(rows[:, 0], return_counts=True)
        return values[:, None], counts.astype(np.int64)
    values, counts = np.unique(rows, axis=0, return_counts=True)
    return values, counts.astype(np.int64)


def superset_counts(masks: np.ndarray, weights: np.ndarray, n_bits: int) -> np.ndarray:
    """``table[T]`` = total weight of the ``masks`` that contain every bit of ``T``, for all
    ``T < 2**n_bits`` (sum over supersets, one pass per bit)."""
    table = np.zeros(1 << n_bits, dtype=np.int64)
    np.add.at(table, masks.astype(np.int64), weights)  # masks need not be distinct
    for bit in range(n_bits):
        view = table.reshape(-1, 2, 1 << bit)
        view[:, 0, :] += view[:, 1, :]
    return table


def lookup_superset_counts(table: np.ndarray, n_bits: int, locations: np.ndarray) -> np.ndarray:
    """Answers from a :func:`superset_counts` table; a query holding a location at or beyond
    ``n_bits`` (visited by no sequence) counts 0."""
    used = locations >= 0
    fits = np.all(~used | (locations < n_bits), axis=1)
    shifts = np.where(used & (locations < n_bits), locations, 0).astype(np.uint64)
    bits = np.where(used, np.left_shift(np.uint64(1), shifts), np.uint64(0))
    query_masks = np.bitwise_or.reduce(bits, axis=1).astype(np.int64)
    return np.where(fits, table[np.where(fits, query_masks, 0)], 0).astype(np.int64)


def count_by_location_bitsets(bitmask: np.ndarray, locations: np.ndarray) -> np.ndarray:
    """For each query row of ``locations`` (codes, ``-1`` = unused), the number of rows of
    ``bitmask`` that have the bit of every query location."""
    wanted = np.unique(locations[locations >= 0])
    bitsets = location_bitsets(bitmask, wanted)
    members = np.where(locations >= 0, np.searchsorted(wanted, np.maximum(locations, 0)),
                       len(wanted))
    return count_conjunctions(bitsets, members)


def location_bitsets(bitmask: np.ndarray, locations: np.ndarray) -> np.ndarray:
    """Transpose: row ``i`` is the bit set over the sequences (rows of ``bitmask``) that visit
    ``locations[i]``; one more last row holds every sequence. Locations beyond the bit sets'
    width get an empty row. Works on bytes: eight locations per unpack/pack step."""
    n, n_words = bitmask.shape
    locations = np.asarray(locations, dtype=np.int64)
    out = np.zeros((len(locations) + 1, words_for(n)), dtype=np.uint64)
    out[-1] = pack_bits(np.ones((1, n), dtype=bool))[0]
    by_byte = np.ascontiguousarray(np.ascontiguousarray(bitmask, dtype="<u8").view(np.uint8).T)
    inside = np.flatnonzero(locations < 64 * n_words)
    byte_of = locations[inside] // 8
    byte_rows = np.unique(byte_of)
    step = max(1, CELLS_PER_STEP // max(8 * n, 1))
    for start in range(0, len(byte_rows), step):
        rows = byte_rows[start:start + step]
        bits = np.unpackbits(by_byte[rows], axis=0, bitorder="little")  # row 8i+b: bit b
        packed = pack_bits(bits.astype(bool))
        chosen = (byte_of >= rows[0]) & (byte_of <= rows[-1])
        picked = inside[chosen]
        out[picked] = packed[np.searchsorted(rows, byte_of[chosen]) * 8 + locations[picked] % 8]
    return out


def count_conjunctions(bitsets: np.ndarray, members: np.ndarray) -> np.ndarray:
    """For each row of ``members`` (indices into the rows of ``bitsets``), the number of bits
    set in the AND of those bit sets; a block of rows at a time."""
    out = np.zeros(len(members), dtype=np.int64)
    step = max(1, CELLS_PER_STEP // max(bitsets.shape[1], 1))
    for start in range(0, len(members), step):
        block = members[start:start + step]
        acc = bitsets[block[:, 0]].copy()
        for j in range(1, block.shape[1]):
            acc &= bitsets[block[:, j]]
        out[start:start + len(block)] = popcount(acc).sum(axis=1)
    return out


def popcount(words: np.ndarray) -> np.ndarray:
    """Number of set bits of every uint64 word."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).astype(np.int64)
    as_bytes = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
    counts = _BYTE_POPCOUNT[as_bytes].reshape(*words.shape, 8)
    return counts.sum(axis=-1, dtype=np.int64)


_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def answer_attribute_queries(codes: np.ndarray, queries: AttributeWorkload) -> np.ndarray:
    """For every query, the number of rows of ``codes`` (``n x n_attributes`` codes) that match
    all its ``attribute == value`` predicates. Uses an index of rows per (attribute, value):
    each query starts from its rarest predicate's rows and tests the others on those rows."""
    codes = np.asarray(codes)
    n_rows, n_attributes = codes.shape
    columns = np.ascontiguousarray(codes.T)
    index = [rows_by_value(columns[a]) for a in range(n_attributes)]
    out = np.zeros(len(queries), dtype=np.int64)
    for q in range(len(queries)):
        size = int(queries.sizes[q])
        attrs, vals = queries.attributes[q, :size], queries.values[q, :size]
        spans = [index[a].span(v) for a, v in zip(attrs, vals)]
        first = int(np.argmin([hi - lo for lo, hi in spans]))
        lo, hi = spans[first]
        if hi == lo:
            continue
        rows = index[attrs[first]].order[lo:hi]
        match = np.ones(len(rows), dtype=bool)
        for j in range(size):
            if j != first:
                match &= columns[attrs[j]][rows] == vals[j]
        out[q] = int(match.sum())
    return out


@dataclass(frozen=True)
class RowsByValue:
    """Rows of one column grouped by code: the rows with code ``v`` are
    ``order[starts[v]:starts[v + 1]]``, in increasing order."""

    order: np.ndarray
    starts: np.ndarray

    def span(self, value: int) -> tuple[int, int]:
        if not 0 <= value < len(self.starts) - 1:
            return 0, 0
        return int(self.starts[value]), int(self.starts[value + 1])


def rows_by_value(column: np.ndarray) -> RowsByValue:
    """Index of one column's rows by code (a stable radix sort for small codes)."""
    column = np.asarray(column)
    small = column.astype(np.uint16) if len(column) and 0 <= column.min() and \
        column.max() < 65536 else column
    order = np.argsort(small, kind="stable")
    counts = np.bincount(column, minlength=1) if len(column) else np.zeros(1, dtype=np.int64)
    return RowsByValue(order, np.concatenate([[0], np.cumsum(counts)]))


# ----- errors and summaries ---------------------------------------------------------------
def relative_errors(true: np.ndarray, noisy: np.ndarray, sanity_bound: float) -> np.ndarray:
    """``|noisy - true| / max(true, sanity_bound)`` element-wise."""
    true = np.asarray(true, dtype=float)
    noisy = np.asarray(noisy, dtype=float)
    return np.abs(noisy - true) / np.maximum(true, float(sanity_bound))


def rescaled_counts(counts: np.ndarray, n_synthetic: int, n_real: int) -> np.ndarray:
    """Counts on synthetic data scaled to the real data's size: ``counts * n_real /
    n_synthetic`` (all zero when the synthetic data is empty)."""
    counts = np.asarray(counts, dtype=float)
    if n_synthetic == 0:
        return np.zeros_like(counts)
    return counts * (n_real / n_synthetic)


def errors_by_size(sizes: np.ndarray, errors: np.ndarray) -> pd.DataFrame:
    """Per query size: number of queries, mean and median relative error."""
    frame = pd.DataFrame({"size": sizes, "error": errors})
    out = frame.groupby("size")["error"].agg(n="count", mean="mean", median="median")
    return out.reset_index()


def errors_by_true_count_decile(true: np.ndarray, errors: np.ndarray) -> pd.DataFrame:
    """Queries ranked by true count (ties by query index) and cut into ten equal-sized
    groups: per decile, the number of queries, the true-count range, mean and median error."""
    n = len(true)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(true, kind="stable")] = np.arange(n)
    decile = (rank * 10) // max(n, 1) + 1
    frame = pd.DataFrame({"decile": decile, "true": true, "error": errors})
    out = frame.groupby("decile").agg(n=("error", "count"), true_min=("true", "min"),
                                      true_max=("true", "max"), mean=("error", "mean"),
                                      median=("error", "median"))
    return out.reset_index()


def relative_error_figure(by_size: pd.DataFrame, title: str) -> Figure:
    """Mean and median relative error against query size."""
    fig = Figure(figsize=(5, 3.5))
    ax = fig.add_subplot()
    ax.plot(by_size["size"], by_size["mean"], marker="o", label="mean")
    ax.plot(by_size["size"], by_size["median"], marker="s", label="median")
    ax.set_xlabel("query size |L|")
    ax.set_ylabel("relative error")
    ax.set_title(title)
    ax.set_xticks(list(by_size["size"]))
    ax.legend()
    fig.tight_layout()
    return fig


# ----- the metric -------------------------------------------------------------------------
@dataclass
class CountQuery(Metric):
    """Relative error of random count queries (see the module docstring for definitions).

    Settings: ``n_queries`` (1000), ``max_size`` (6; the paper's panels use 3, 6, 9, 12;
    capped at the number of locations or attributes of the data),
    ``workload`` (``uniform`` | ``public``), ``sanity_fraction`` (0.001 of |D|), ``rescale``
    (False: raw synthetic counts, as in the paper), ``seed`` (0), ``kind`` (``auto``: location
    queries when the data has a sequence view, attribute queries otherwise), ``location``
    (``pickup`` | ``dropoff`` | ``pair``, taxi data only).
    """

    name = "count_query"
    requires = "sequence data (taxi trips or site_<n> columns) for kind=location"
    headline = "mean_relative_error"
    lower_is_better = True
    public_outputs = frozenset()  # every table/figure uses the real answers

    n_queries: int = 1000
    max_size: int = 6
    workload: str = "uniform"
    sanity_fraction: float = 0.001
    rescale: bool = False
    seed: int = 0
    kind: str = "auto"
    location: str = "pickup"

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "n_queries": [Interval(int, 1)], "max_size": [Interval(int, 1)],
        "workload": [OneOf(*WORKLOADS)],
        "sanity_fraction": [Interval(float, 0, closed="neither")], "rescale": [bool],
        "kind": [OneOf(*KINDS)], "location": [OneOf(*LOCATIONS)]}

    def applies_to(self, data: Dataset) -> bool:
        return self.kind != "location" or has_sequence_view(data, self.sequence_spec)

    @property
    def sequence_spec(self) -> SequenceSpec:
        return SequenceSpec(location=self.location)

    def query_kind(self, data: Dataset) -> str:
        """``location`` or ``attribute`` for this dataset (resolves ``kind=auto``)."""
        has_view = has_sequence_view(data, self.sequence_spec)
        if self.kind == "location" and not has_view:
            raise ConfigError("count_query: kind=location needs sequence data "
                              "(taxi trips or site_<n> columns)",
                              "use metrics.count_query.kind=attribute or kind=auto")
        if self.kind == "auto":
            return "location" if has_view else "attribute"
        return self.kind

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        kind = self.query_kind(data)
        if self.workload == "public" and data.public is None:
            raise ConfigError("count_query: workload=public needs a dataset with a public part",
                              "use metrics.count_query.workload=uniform, or give the dataset "
                              "public data (e.g. dataset.public_fraction=0.5)")
        if kind == "location":
            true, noisy, sizes, n_real, n_synthetic = self._location_answers(data, synthetic)
        else:
            true, noisy, sizes, n_real, n_synthetic = self._attribute_answers(data, synthetic)
        if self.rescale:
            noisy = rescaled_counts(noisy, n_synthetic, n_real)
        errors = relative_errors(true, noisy, self.sanity_fraction * n_real)
        by_size = errors_by_size(sizes, errors)
        scores = {"mean_relative_error": float(np.mean(errors)),
                  "median_relative_error": float(np.median(errors))}
        for row in by_size.itertuples(index=False):
            scores[f"mre_size_{int(row.size)}"] = float(row.mean)
        title = f"{kind} count queries ({self.workload} workload)"
        return MetricResult(
            scores=scores,
            tables={"by_size": by_size,
                    "by_true_count_decile": errors_by_true_count_decile(true, errors)},
            figures={"relative_error_by_size": relative_error_figure(by_size, title)},
        )

    # ----- the two query kinds ------------------------------------------------------------
    def _location_answers(self, data: Dataset, synthetic: pd.DataFrame) -> Answers:
        spec = self.sequence_spec
        real = sequence_view(data.private, spec, data.schema)
        fake = sequence_view(synthetic, spec, data.schema)
        public_bits = None
        if self.workload == "public":
            public_bits = visit_bitmask(sequence_view(data.public, spec, data.schema))
        queries = make_location_workload(self.n_queries, min(self.max_size, real.n_locations),
                                         real.n_locations,
                                         self.seed, public_bits)
        true = answer_location_queries(visit_bitmask(real), queries)
        noisy = answer_location_queries(visit_bitmask(fake), queries)
        return true, noisy, queries.sizes, real.n_sequences, fake.n_sequences

    def _attribute_answers(self, data: Dataset, synthetic: pd.DataFrame) -> Answers:
        schema = data.schema
        domain = [schema[a].size for a in schema.attributes]
        public_codes = None
        if self.workload == "public":
            public_codes = schema.encode(data.public).to_numpy()
        queries = make_attribute_workload(self.n_queries, min(self.max_size, len(domain)),
                                          domain, self.seed, public_codes)
        true = answer_attribute_queries(schema.encode(data.private).to_numpy(), queries)
        noisy = answer_attribute_queries(schema.encode(synthetic).to_numpy(), queries)
        return true, noisy, queries.sizes, len(data.private), len(synthetic)
