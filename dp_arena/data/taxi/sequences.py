"""Sequence views of a dataset: one location sequence per person.

A *sequence view* turns a table into one ordered sequence of locations per person. It is
shared by the sequence metrics (count queries over locations, frequent sequential patterns)
and by sequence mechanisms (the noisy prefix tree of Chen et al., KDD 2012).

Two layouts are understood:

- **Columns** (MSNBC style): each row is one person's sequence, spread over columns
  ``site_0 .. site_15`` (in the numeric order of their suffix, whatever the frame's column
  order). ``end_value`` (0) ends the sequence; anything after the first ``end_value`` is
  ignored. A row whose first cell is ``end_value`` is an empty sequence.
- **Trips** (taxi style): a person (``taxi_id``) owns many rows (trips). Their sequence is the
  trips in time order: sorted by ``trip_day_of_week``, then ``trip_hour_of_day``, then the
  original row order (trips in the same hour keep the order they have in the frame; the day
  and hour columns are used when present). Each trip is mapped to a location: its pickup area
  (default), its dropoff area, or the ``pair`` (pickup, dropoff).

Locations are stored as codes ``0..A-1``, indices into ``alphabet`` (the location labels).
With a schema, the alphabet is the schema's domain (so two views of the same schema, e.g. real
and synthetic data, share codes); without one it is the sorted set of observed values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dp_arena.data.schema import Schema, encode_column
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.params import build_dataclass

if TYPE_CHECKING:  # pragma: no cover
    from dp_arena.data.datasets import Dataset

#: Fill value of the padded code matrix for positions after a sequence has ended.
FILL = -1
SITE_COLUMN = re.compile(r"^site_(\d+)$")
TRIP_LOCATIONS = ("pickup", "dropoff", "pair")
SEQUENCE_KINDS = ("auto", "columns", "trips")
PICKUP_COLUMN = "pickup_community_area"
DROPOFF_COLUMN = "dropoff_community_area"
DAY_COLUMN = "trip_day_of_week"
HOUR_COLUMN = "trip_hour_of_day"
#: Refuse to build a padded matrix larger than this many cells (int32: 4 bytes each).
MAX_PADDED_CELLS = 400_000_000

LocationKind = Literal["pickup", "dropoff", "pair"]


@dataclass(frozen=True, eq=False)
class SequenceView:
    """One location sequence per person.

    ``codes[i, j]`` is the code (index into ``alphabet``) of person ``i``'s ``j``-th location
    for ``j < lengths[i]`` and ``fill`` (-1) afterwards. ``ids[i]`` is the person's id (the
    row label for column-style data, the ``taxi_id`` for trips).
    """

    codes: np.ndarray
    lengths: np.ndarray
    alphabet: list[Any]
    ids: np.ndarray
    fill: int = FILL

    @property
    def n_sequences(self) -> int:
        return int(self.codes.shape[0])

    @property
    def max_len(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_locations(self) -> int:
        return len(self.alphabet)

    def flat_codes(self) -> np.ndarray:
        """All locations of all sequences, one after the other (sequence 0 first)."""
        return self.codes[self.codes != self.fill]

    def sequence_of_cell(self) -> np.ndarray:
        """For each entry of :meth:`flat_codes`, the index of its sequence."""
        return np.repeat(np.arange(self.n_sequences), self.lengths)

    def sequence_starts(self) -> np.ndarray:
        """Offset of each sequence's first location in :meth:`flat_codes`."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def labels(self, codes: Iterable[int]) -> list[Any]:
        """Location labels of ``codes``."""
        return [self.alphabet[int(c)] for c in codes]

    def to_lists(self) -> list[list[Any]]:
        """The sequences as lists of location labels (for tests and small data)."""
        return [self.labels(row[:n]) for row, n in zip(self.codes, self.lengths)]


@dataclass(frozen=True)
class SequenceSpec:
    """How to read sequences from a table (the ``sequence`` part of a config).

    ``kind``: ``auto`` (trips when the frame has ``id_column`` and the pickup column, columns
    when it has ``site_<n>`` columns), ``columns`` or ``trips``. ``location`` (trips only):
    ``pickup``, ``dropoff`` or ``pair``. ``columns`` (columns only): the sequence columns in
    order (default: every ``site_<n>`` column by ``n``). ``end_value``: the value that ends a
    column-style sequence.
    """

    kind: str = "auto"
    location: str = "pickup"
    columns: tuple[str, ...] | None = None
    end_value: int = 0
    id_column: str = "taxi_id"

    def __post_init__(self) -> None:
        if self.kind not in SEQUENCE_KINDS:
            raise ConfigError(f"sequence kind must be one of {SEQUENCE_KINDS} (got {self.kind!r})",
                              "use kind=auto, kind=columns or kind=trips")
        if self.location not in TRIP_LOCATIONS:
            raise ConfigError(
                f"sequence location must be one of {TRIP_LOCATIONS} (got {self.location!r})",
                "use location=pickup, location=dropoff or location=pair")
        if self.columns is not None:
            object.__setattr__(self, "columns", tuple(self.columns))


# ----- detection --------------------------------------------------------------------------
def site_columns(columns: Iterable[str]) -> list[str]:
    """The ``site_<n>`` columns among ``columns``, ordered by ``n`` (not lexicographically)."""
    found = [(int(m.group(1)), c) for c in columns if (m := SITE_COLUMN.match(str(c)))]
    return [c for _, c in sorted(found)]


def detect_sequence_kind(columns: Iterable[str], id_column: str = "taxi_id") -> str | None:
    """``trips`` when the columns hold ``id_column`` and the pickup area, ``columns`` when they
    hold ``site_<n>`` columns, else ``None`` (the data has no sequence view)."""
    cols = [str(c) for c in columns]
    if id_column in cols and PICKUP_COLUMN in cols:
        return "trips"
    if site_columns(cols):
        return "columns"
    return None


def has_sequence_view(data: Dataset | pd.DataFrame | Schema,
                      spec: SequenceSpec | Mapping[str, Any] | None = None) -> bool:
    """Whether :func:`sequence_view` can read sequences from ``data``."""
    spec = as_spec(spec)
    if spec.kind == "columns" and spec.columns:
        return True
    kind = detect_sequence_kind(_column_names(data), spec.id_column)
    return kind is not None and spec.kind in ("auto", kind)


def as_spec(spec: SequenceSpec | Mapping[str, Any] | None) -> SequenceSpec:
    """A :class:`SequenceSpec` from a spec, a config mapping, or ``None`` (defaults)."""
    if spec is None:
        return SequenceSpec()
    if isinstance(spec, SequenceSpec):
        return spec
    return build_dataclass(SequenceSpec, dict(spec), "sequence spec")


# ----- constructors -----------------------------------------------------------------------
def sequences_from_columns(df: pd.DataFrame, columns: Sequence[str], end_value: Any = 0,
                           alphabet: Sequence[Any] | None = None) -> SequenceView:
    """MSNBC-style view: row ``i`` is person ``i``'s sequence ``df[columns]``, read left to
    right up to (not including) the first ``end_value``.

    ``alphabet`` lists the location labels (code = position); default: the sorted set of
    values seen before the end marker. A value outside ``alphabet`` raises an error.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DPArenaError(f"sequence columns missing from the data: {missing}",
                           "pass the names of existing columns")
    values = df[list(columns)].to_numpy()
    is_end = values == end_value
    first_end = is_end.argmax(axis=1)
    lengths = np.where(is_end.any(axis=1), first_end, values.shape[1]).astype(np.int64)
    alive = np.arange(values.shape[1])[None, :] < lengths[:, None]
    if alphabet is None:
        alphabet = sorted(pd.unique(values[alive]).tolist())
    max_len = int(lengths.max()) if len(lengths) else 0
    _check_padded_size(len(df), max_len)
    codes = np.full(values.shape, FILL, dtype=np.int32)
    codes[alive] = codes_in_alphabet(values[alive], alphabet, "sequence columns")
    return SequenceView(np.ascontiguousarray(codes[:, :max_len]), lengths, list(alphabet),
                        df.index.to_numpy())


def sequences_from_trips(df: pd.DataFrame, id_column: str = "taxi_id",
                         location: LocationKind = "pickup",
                         schema: Schema | None = None) -> SequenceView:
    """Taxi-style view: each person's trips in time order, mapped to locations.

    Order: by ``trip_day_of_week``, then ``trip_hour_of_day``, then original row order (the
    day/hour columns are used when the frame has them). Persons are ordered by id. Location:
    ``pickup`` / ``dropoff`` community area, or ``pair`` = (pickup, dropoff), whose code is
    ``pickup_code * n_dropoff + dropoff_code``. The alphabet comes from ``schema`` (default: the
    Sprint 3 taxi schema), so views of real and synthetic data share codes.
    """
    if schema is None:
        from dp_arena.data.taxi.sprint3 import taxi_schema

        schema = taxi_schema()
    if location not in TRIP_LOCATIONS:
        raise ConfigError(f"sequence location must be one of {TRIP_LOCATIONS} (got {location!r})",
                          "use location=pickup, location=dropoff or location=pair")
    if id_column not in df.columns:
        raise DPArenaError(f"trip data has no id column {id_column!r}",
                           "name the person's id column (e.g. taxi_id)")
    locations, alphabet = trip_location_codes(df, location, schema)
    n = len(df)
    person, person_ids = pd.factorize(df[id_column], sort=True)
    order = trip_order(df, id_column)
    person_sorted = person[order]
    lengths = np.bincount(person_sorted, minlength=len(person_ids)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    position = np.arange(n) - starts[person_sorted]
    max_len = int(lengths.max()) if n else 0
    _check_padded_size(len(person_ids), max_len)
    codes = np.full((len(person_ids), max_len), FILL, dtype=np.int32)
    codes[person_sorted, position] = locations[order]
    return SequenceView(codes, lengths, alphabet, np.asarray(person_ids))


def trip_order(df: pd.DataFrame, id_column: str = "taxi_id") -> np.ndarray:
    """Row positions of ``df`` in the shared trip order: by person id, then
    ``trip_day_of_week``, ``trip_hour_of_day`` (when present), then original row position."""
    person = pd.factorize(df[id_column], sort=True)[0]
    keys = [np.arange(len(df))]
    keys += [df[c].to_numpy() for c in (HOUR_COLUMN, DAY_COLUMN) if c in df.columns]
    return np.lexsort([*keys, person])


def sequences_from_lists(sequences: Sequence[Sequence[Any]],
                         alphabet: Sequence[Any] | None = None) -> SequenceView:
    """A view of explicit sequences of location labels (ids ``0..n-1``); default alphabet:
    the sorted set of labels used."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    flat = [x for s in sequences for x in s]
    if alphabet is None:
        alphabet = sorted(set(flat))
    max_len = int(lengths.max()) if len(lengths) else 0
    codes = np.full((len(sequences), max_len), FILL, dtype=np.int32)
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    codes[mask] = codes_in_alphabet(_object_array(flat), alphabet, "sequences")
    return SequenceView(codes, lengths, list(alphabet), np.arange(len(sequences)))


def sequence_view(data: Dataset | pd.DataFrame,
                  spec: SequenceSpec | Mapping[str, Any] | None = None,
                  schema: Schema | None = None) -> SequenceView:
    """The sequence view of a dataset's private part or of a frame, as ``spec`` says.

    With a :class:`~dp_arena.data.datasets.Dataset`, its private part and schema are used; with
    a frame, pass ``schema`` so the alphabet is the schema's domain (shared with other views).
    """
    spec = as_spec(spec)
    frame = data if isinstance(data, pd.DataFrame) else data.private
    if schema is None and not isinstance(data, pd.DataFrame):
        schema = data.schema
    kind = spec.kind
    if kind == "auto" or (kind == "columns" and not spec.columns):
        detected = detect_sequence_kind(frame.columns, spec.id_column)
        if kind == "auto":
            kind = detected
        if kind is None or (spec.kind == "columns" and detected != "columns"):
            raise ConfigError(
                "the data has no sequence view (no taxi id + pickup area, no site_<n> columns)",
                "use a dataset with sequences, or set the sequence kind and columns explicitly")
    if kind == "trips":
        location: LocationKind = spec.location  # type: ignore[assignment]
        return sequences_from_trips(frame, spec.id_column, location, schema)
    columns = list(spec.columns) if spec.columns else site_columns(frame.columns)
    alphabet = column_alphabet(schema, columns, spec.end_value) if schema is not None else None
    return sequences_from_columns(frame, columns, spec.end_value, alphabet)


# ----- location helpers -------------------------------------------------------------------
def trip_location_codes(df: pd.DataFrame, location: str,
                        schema: Schema) -> tuple[np.ndarray, list[Any]]:
    """Location code of every trip and the alphabet (see :func:`sequences_from_trips`)."""
    pickup, dropoff = schema[PICKUP_COLUMN], schema[DROPOFF_COLUMN]
    if location == "pickup":
        return encode_column(pickup, df[PICKUP_COLUMN]), list(pickup.values or ())
    if location == "dropoff":
        return encode_column(dropoff, df[DROPOFF_COLUMN]), list(dropoff.values or ())
    p = encode_column(pickup, df[PICKUP_COLUMN])
    d = encode_column(dropoff, df[DROPOFF_COLUMN])
    alphabet = [(a, b) for a in (pickup.values or ()) for b in (dropoff.values or ())]
    return p * dropoff.size + d, alphabet


def column_alphabet(schema: Schema, columns: Sequence[str], end_value: Any) -> list[Any] | None:
    """The union of the schema's categorical values over ``columns``, minus ``end_value``
    (sorted); ``None`` when a column is not categorical in the schema."""
    values: set[Any] = set()
    for name in columns:
        try:
            col = schema[name]
        except KeyError:
            return None
        if col.kind != "categorical" or col.values is None:
            return None
        values.update(col.values)
    values.discard(end_value)
    return sorted(values)


def codes_in_alphabet(values: np.ndarray, alphabet: Sequence[Any], what: str) -> np.ndarray:
    """Index of every value in ``alphabet`` (int32); raise if a value is not in it."""
    values = np.asarray(values)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int32)
    table = _small_int_lookup(alphabet)
    if table is not None and values.dtype.kind in "iu":
        lo, lut = table
        shifted = values.astype(np.int64) - lo
        inside = (shifted >= 0) & (shifted < len(lut))
        codes = np.full(len(values), -1, dtype=np.int64)
        codes[inside] = lut[shifted[inside]]
    else:
        index = pd.Index(_object_array(alphabet), dtype=object)
        codes = index.get_indexer(values if values.dtype == object else _object_array(values))
    if np.any(codes < 0):
        bad = pd.unique(values[codes < 0])[:5]
        raise DPArenaError(f"{what}: values outside the location alphabet, e.g. {list(bad)}",
                           "check the data against its schema")
    return codes.astype(np.int32)


# ----- location sets ----------------------------------------------------------------------
def visit_bitmask(view: SequenceView) -> np.ndarray:
    """Bit sets of visited locations: ``n_sequences x ceil(A / 64)`` uint64; bit ``l % 64`` of
    word ``l // 64`` is set when the sequence visits location code ``l``. Built from the
    sequences' cells (no dense ``n x A`` matrix)."""
    n_words = words_for(view.n_locations)
    flat = view.flat_codes().astype(np.int64)
    cell = view.sequence_of_cell() * n_words + flat // 64
    bit = np.left_shift(np.uint64(1), (flat % 64).astype(np.uint64))
    out = np.zeros(view.n_sequences * n_words, dtype=np.uint64)
    if len(flat):
        if n_words > 1:  # cells are sorted by sequence; sort by word inside each sequence
            order = np.argsort(cell, kind="stable")
            cell, bit = cell[order], bit[order]
        starts = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]]))
        out[cell[starts]] = np.bitwise_or.reduceat(bit, starts)
    return out.reshape(view.n_sequences, n_words)


def visited_matrix(view: SequenceView) -> np.ndarray:
    """Boolean ``n_sequences x n_locations`` matrix: whether sequence i visits location j
    (dense: for small data; :func:`visit_bitmask` is the compact form)."""
    return unpack_bits(visit_bitmask(view), view.n_locations)


def words_for(n_bits: int) -> int:
    """Number of 64-bit words that hold ``n_bits`` bits (at least 1)."""
    return max(1, -(-n_bits // 64))


def pack_bits(matrix: np.ndarray) -> np.ndarray:
    """Pack a boolean ``n x A`` matrix into ``n x ceil(A / 64)`` uint64 words (column ``l`` ->
    bit ``l % 64`` of word ``l // 64``)."""
    n, width = matrix.shape
    n_words = words_for(width)
    packed = np.packbits(matrix, axis=1, bitorder="little")
    padded = np.zeros((n, n_words * 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view("<u8").astype(np.uint64, copy=False).reshape(n, n_words)


def unpack_bits(bitmask: np.ndarray, width: int) -> np.ndarray:
    """The boolean ``n x width`` matrix of a ``n x n_words`` uint64 bit-set matrix (the inverse
    of :func:`pack_bits`)."""
    as_bytes = np.ascontiguousarray(bitmask, dtype="<u8").view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, count=width, bitorder="little").astype(bool)


# ----- internals --------------------------------------------------------------------------
def _column_names(data: Any) -> list[str]:
    if isinstance(data, pd.DataFrame):
        return [str(c) for c in data.columns]
    if isinstance(data, Schema):
        return data.names
    return data.schema.names


def _object_array(items: Sequence[Any]) -> np.ndarray:
    """A 1-d object array of ``items`` (tuples stay single elements)."""
    return np.fromiter(items, dtype=object, count=len(items))


def _small_int_lookup(alphabet: Sequence[Any]) -> tuple[int, np.ndarray] | None:
    """(offset, table) mapping ``value - offset`` to its code, for small integer alphabets."""
    if not alphabet or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                               for a in alphabet):
        return None
    lo, hi = int(min(alphabet)), int(max(alphabet))
    if hi - lo > 1_000_000:
        return None
    lut = np.full(hi - lo + 1, -1, dtype=np.int64)
    lut[np.asarray(alphabet, dtype=np.int64) - lo] = np.arange(len(alphabet))
    return lo, lut


def _check_padded_size(n_sequences: int, max_len: int) -> None:
    if n_sequences * max_len > MAX_PADDED_CELLS:
        raise DPArenaError(
            f"the sequence view would need a {n_sequences} x {max_len} matrix "
            f"(more than {MAX_PADDED_CELLS:,} cells): some person has {max_len} records",
            "bound each person's records (e.g. the challenge's 200 trips per taxi)")
