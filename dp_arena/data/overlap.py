"""Refusing a "public" sample that is the private table, or (nearly) a subset of it.

A schema proposed from a public sample is free (:mod:`dp_arena.data.propose`); a "public" file
that is really the private file (``--public raw.csv`` with the private ``raw.csv``), a sample of
its rows, or the private frame handed to ``ProposalSettings("public")`` would make a schema read
exactly from private data look free, and mechanisms given it as ``dataset.public_path`` would
read private rows as public. Here such a sample is recognised and refused with one message.

Algorithms
----------
1. **Normalisation** (:func:`cell_hashes`, :func:`canonical_cells`): both tables go through
   the same map before comparing, on the columns they share (in the private table's order):
   text is stripped; a cell that is a number (a number column as pandas read it, or text such
   as ``" 7"``, ``"7.0"``, ``"1e3"``) is compared by its float value, so a column pandas read
   as integers in one file and as floats or text in the other still matches; missing cells
   (NaN, None, empty after stripping) are one marker. Each cell becomes an unkeyed 64-bit hash
   (``pandas.util.hash_array``), a row the vector of its cells' hashes. (Integers beyond 2^53
   are compared as floats: two that differ only beyond float precision compare equal.)
2. **Keyed row digests** (:func:`row_digests`): HMAC-SHA256 of each row's cell hashes, truncated
   to 64 bits, under a key that readers of anything the harness writes do not have: a fresh
   random key per comparison (``dp-arena-schema --public``, ``load_csv_dataset`` with a
   ``public_path``: both tables are digested in one call), or a key derived from the local
   secret (:func:`dp_arena.privacy.secret.keyed_digest`) for a :class:`Proposal`'s remembered
   sample (compared later, in the same process, by ``run_competition``). Digests live in memory
   only: nothing private, and no digest, is written anywhere or put in a message. Two distinct
   rows share a digest with probability about ``n^2 / 2^65`` (1e-8 for a million rows).
3. **The rule** (:func:`overlap_kind`). ``P``: the public sample's digests (with repeats),
   ``D``: the private table's. A random table of few distinct rows shares most rows with any
   other sample of its population (a disjoint random half of a table of 16 binary columns
   shares almost every row with the other half), so the overlap is compared with what ``D``'s
   own repeats predict:

   - ``r`` = the share of ``D``'s rows whose row occurs again in ``D`` (its duplicate rate,
     a leave-one-out estimate of the chance that a new row of the same population is already
     in ``D``; add-one smoothed, ``(repeated + 1) / (|D| + 2)``, so never 0 or 1); a sample
     independent of ``D`` brings about ``m = |P| (1 - r)`` rows that are not in ``D``, the
     number missing being Binomial(|P|, 1 - r);
   - **subset**: refused when at most ``0.2 m`` of ``P``'s rows are missing from ``D`` (at least
     80% of the new rows the duplicate rate predicts are rows of ``D`` after all: "nearly a
     subset") *and* an independent sample would miss so few with probability
     ``P(Binomial(|P|, 1 - r) <= missing) <= exp(-20)`` (the bound on a false refusal, up to the
     error of ``r``; for a table of distinct rows a 20-row subset is already far below it, for
     the low-cardinality half above the prediction is met and nothing is said);
   - **identical**: ``P`` and ``D`` are the same rows in the same order (the same file, read
     twice) and an independent sample drawn from ``D``'s row frequencies would reproduce them
     row by row with probability ``prod p(row) <= exp(-20)`` (so a constant table, or a
     handful of rows of one binary column, is not refused: its copy says nothing more).

   **False negatives** (said nothing, documented): for a table whose rows mostly repeat (e.g.
   the low-cardinality table above) a subset, or a shuffled copy, misses about as few rows as
   an independent sample and passes (only the same rows in the same order are refused); a sample
   of which more than 20% of the predicted new rows come from elsewhere passes (it is "most of
   it" only beyond that); a sample whose columns were edited (rounded, recoded) no longer
   matches. **False positives**: a public population concentrated on ``D``'s most common
   rows far more than ``D`` itself (e.g. a sample of nothing but ``D``'s modal row) can exceed
   the prediction; the fix in the message says how to proceed.

A :func:`sample_fingerprint` (what a Proposal remembers) has no row order: a private frame
holding its rows is decided by the subset rule, and called "the same rows" when the two are
the same multiset of rows. Messages say "the same rows" or "most rows of ... are rows of
DATA" and never a count, a value or a share of private rows.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from scipy.stats import binom

from dp_arena.errors import DPArenaError
from dp_arena.privacy.secret import keyed_digest

OverlapKind = Literal["identical", "subset"]
#: the purpose the local-secret row key is derived under (domain separation)
ROW_PURPOSE = "overlap: public sample row digests"
#: share of the predicted-new rows that, found in the private table, makes a "subset"
NEARLY_SUBSET = 0.8
#: log-probability below which an overlap is not a coincidence (an independent sample
#: overlaps this much with chance at most e^-20 = 2e-9)
MAX_LOG_CHANCE = -20.0
#: a number as text (optional sign, digits, decimal point, exponent; surrounding spaces)
NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
#: the hash of a missing cell (any fixed 64-bit value)
MISSING_HASH = np.uint64(0x9E3779B97F4A7C15)
#: rows digested at a time
BLOCK_ROWS = 100_000


# ----- normalisation ------------------------------------------------------------------------
def cell_hashes(values: pd.Series) -> np.ndarray:
    """One column's cells normalised (module docstring, step 1) and hashed (unkeyed 64-bit
    ``pandas.util.hash_array``: the row digest above it is keyed): numbers by their float
    value, other text by its stripped form, missing cells by one marker."""
    n = len(values)
    missing = values.isna().to_numpy(dtype=bool, copy=True)
    if is_numeric_dtype(values.dtype) and not is_bool_dtype(values.dtype):
        floats = values.to_numpy(dtype=float, na_value=np.nan)
        hashes = np.zeros(n, dtype=np.uint64)
    else:
        text = (values.fillna("") if isinstance(values.dtype, pd.StringDtype) else
                values.astype(object).where(~missing, "").astype(str)).str.strip()
        missing |= (text == "").to_numpy(dtype=bool)
        floats = np.full(n, np.nan)
        number = text.str.fullmatch(NUMBER).to_numpy(dtype=bool, na_value=False)
        floats[number] = pd.to_numeric(text[number], errors="coerce").to_numpy(dtype=float)
        hashes = pd.util.hash_array(text.to_numpy(dtype=object))
    numeric = ~np.isnan(floats) & ~missing
    hashes[numeric] = pd.util.hash_array(floats[numeric] + 0.0)  # -0.0 -> 0.0
    hashes[missing] = MISSING_HASH
    return hashes


def canonical_cells(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The rows of ``frame[columns]`` as an ``(n, k)`` array of cell hashes (step 1)."""
    return np.column_stack([cell_hashes(frame[c]) for c in columns]) if len(columns) \
        else np.zeros((len(frame), 0), dtype=np.uint64)


def shared_columns(public: pd.DataFrame, private: pd.DataFrame) -> list[str]:
    """The columns both tables have, in the private table's order."""
    return [c for c in private.columns if c in public.columns]


# ----- digests ------------------------------------------------------------------------------
def fresh_key() -> bytes:
    """A random key for one comparison (never stored)."""
    return secrets.token_bytes(32)


def local_row_key() -> bytes:
    """The row key derived from the local secret (for digests compared later in the process)."""
    return bytes.fromhex(keyed_digest(b"", ROW_PURPOSE))


def row_digests(frame: pd.DataFrame, columns: Sequence[str], key: bytes) -> np.ndarray:
    """64-bit HMAC-SHA256 digests (``uint64``) of the normalised rows, in row order (in
    blocks of :data:`BLOCK_ROWS` rows: the cell hashes take 8 bytes per cell of a block)."""
    out = np.zeros(len(frame), dtype=np.uint64)
    if not len(columns):
        return out
    width = 8 * len(columns)
    for start in range(0, len(frame), BLOCK_ROWS):
        cells = np.ascontiguousarray(canonical_cells(frame.iloc[start:start + BLOCK_ROWS],
                                                     columns))
        buf = memoryview(cells).cast("B")
        out[start:start + len(cells)] = np.fromiter(
            (int.from_bytes(hmac.digest(key, buf[i:i + width], "sha256")[:8], "little")
             for i in range(0, len(buf), width)), dtype=np.uint64, count=len(cells))
    return out


def sample_fingerprint(frame: pd.DataFrame, columns: Sequence[str],
                       key: bytes | None = None) -> frozenset[str]:
    """A sample's rows as a set of ``"<digest>x<count>"`` strings (one per distinct row, its
    repeats counted), under the local-secret row key unless ``key``: what a
    :class:`~dp_arena.data.propose.Proposal` remembers of its public sample (in memory only)."""
    digests = row_digests(frame, columns, local_row_key() if key is None else key)
    values, counts = np.unique(digests, return_counts=True)
    return frozenset(f"{int(v):016x}x{int(c)}" for v, c in zip(values, counts))


def fingerprint_digests(fingerprint: frozenset[str]) -> np.ndarray:
    """The digests (with repeats) a :func:`sample_fingerprint` holds."""
    pairs = [entry.split("x") for entry in fingerprint]
    values = np.array([int(v, 16) for v, _ in pairs], dtype=np.uint64)
    return np.repeat(values, [int(c) for _, c in pairs])


# ----- the rule -----------------------------------------------------------------------------
def new_row_chance(digests: np.ndarray) -> float:
    """``q = 1 - r``: the chance that a new row of the table's population is not already in it,
    from the table's own repeats, ``r = (rows whose row occurs again + 1) / (rows + 2)`` (the
    leave-one-out duplicate rate, add-one smoothed: never exactly 0 or 1)."""
    _, counts = np.unique(digests, return_counts=True)
    repeated = float(counts[counts > 1].sum())
    return 1.0 - (repeated + 1.0) / (len(digests) + 2.0)


def copy_log_chance(digests: np.ndarray) -> float:
    """``sum log p(row)`` under the table's own row frequencies: the log-probability that an
    independent sample of as many rows reproduces it row by row."""
    _, inverse, counts = np.unique(digests, return_inverse=True, return_counts=True)
    return float(np.log(counts[inverse] / len(digests)).sum())


def overlap_kind(public: np.ndarray, private: np.ndarray) -> OverlapKind | None:
    """``"identical"``, ``"subset"`` or None, by the rule of the module docstring."""
    if not len(public) or not len(private):
        return None
    if len(public) == len(private) and np.array_equal(public, private) \
            and copy_log_chance(private) <= MAX_LOG_CHANCE:
        return "identical"
    q = new_row_chance(private)
    missing = int((~np.isin(public, private)).sum())
    if missing > (1.0 - NEARLY_SUBSET) * len(public) * q:
        return None
    return "subset" if binom.logcdf(missing, len(public), q) <= MAX_LOG_CHANCE else None


def overlap_problem(kind: OverlapKind, what_public: str, what_private: str) -> str:
    """The refusal's problem sentence (no count, no value)."""
    head = (f"{what_public} holds the same rows as {what_private}" if kind == "identical" else
            f"most rows of {what_public} are rows of {what_private} (far more than the "
            f"repeats within {what_private} explain): it is a sample of the private data")
    return head + ", so what is read from it would be private data labelled public"


def refuse_overlap(public: pd.DataFrame, private: pd.DataFrame, what_public: str,
                   what_private: str, fix: str) -> None:
    """Raise one :class:`DPArenaError` when ``public`` is ``private`` or (nearly) a subset of
    it (module docstring), compared on their shared columns under a fresh random key."""
    columns = shared_columns(public, private)
    if not columns:
        return
    key = fresh_key()
    kind = overlap_kind(row_digests(public, columns, key), row_digests(private, columns, key))
    if kind is not None:
        raise DPArenaError(overlap_problem(kind, what_public, what_private), fix)


def refuse_remembered_sample(fingerprint: frozenset[str] | None, private: pd.DataFrame,
                             columns: Sequence[str], what_public: str, what_private: str,
                             fix: str) -> None:
    """As :func:`refuse_overlap` for a sample known only by its :func:`sample_fingerprint`
    (local-secret key); nothing to compare when the fingerprint or a column is absent."""
    if not fingerprint or not columns or any(c not in private.columns for c in columns):
        return
    sample = fingerprint_digests(fingerprint)
    table = row_digests(private, columns, local_row_key())
    kind = overlap_kind(sample, table)
    if kind == "subset" and np.array_equal(np.sort(sample), np.sort(table)):
        kind = "identical"  # the same rows (a fingerprint has no order)
    if kind is not None:
        raise DPArenaError(overlap_problem(kind, what_public, what_private), fix)
