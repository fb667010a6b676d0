"""Schema proposals for a raw table: kinds, values, ranges and quantile bins, from one of three
sources, never silently from the private data, with public hints free of budget.

Sources
-------
``public``
    A public sample (a different population, or a disjoint public half): read exactly, free.
``dp``
    The private table under (epsilon, delta)-DP, every draw through
    :class:`dp_arena.privacy.release.Releaser` and charged to a
    :class:`dp_arena.privacy.accounting.Ledger` (written beside the schema). See below.
``private``
    The private table read exactly: an explicit opt-in (``--from-private``), written into the
    schema file (``proposal.source = "private"``) so that runs using it are tagged and marked.

Hints (:mod:`dp_arena.data.hints`) are public facts the user states: a column with a complete
hint is taken from it and spends nothing; a partial hint (its kind or date format) skips the
type choice. Every source honours them.

Algorithms (the ``dp`` source)
------------------------------
Privacy unit: one person = one row (record level), or, with an id column, at most
``max_rows_per_person`` rows per person (a person's extra rows are dropped at random before
anything is counted; ``bound`` below). Neighbouring tables differ by adding or removing one
person, who changes at most ``bound`` rows.

**Budget split** (fixed before any data is read, except where said): the columns without a
complete hint share ``epsilon`` in proportion to their weights (default 1 each; ``--weight``
or a hint's ``weight``). Within a column, :data:`TYPE_SHARE` of its share goes to the type
release (none when the kind is hinted), the rest to its values release. The values shares of
the columns whose chosen type needs no values release (time-of-day parts) are given to the
other columns in proportion to their weights: the types are DP outputs, so this adaptive
split is post-processing of released values followed by releases whose budgets add up to at
most ``epsilon`` (basic composition; the ledger's own sum).

1. **Type** (one Laplace histogram per column over a fixed public set of cells: the value
   classes of :data:`dp_arena.data.infer.CLASSES` plus "missing"). Each row falls in exactly
   one cell, so a person changes the histogram by at most ``bound`` in L1: Laplace scale
   ``bound / eps_type`` is ``eps_type``-DP, pure (the domain is fixed and public, every cell
   is released). The type is :func:`dp_arena.data.infer.choose_type` of the noisy class counts
   (the most specific type that at least 99% of the noisy mass fits): post-processing. A text
   column is typed as a date only if 99% of its noisy mass parses as that date: at the Laplace
   scale of a small share, noise of the size of most of a column's rows has probability about
   ``exp(-n / scale)``.
2. **Text values** (stability-based thresholded histogram; Korolova et al. 2009, Bun, Nissim &
   Stemmer 2016, Wilson et al. 2020 for bounded user contributions): the keys present get
   ``count + Laplace(b)``, ``b = bound / eps_values`` (L1 sensitivity ``bound``); keys whose
   noisy count exceeds ``tau = bound + b * ln(bound / (2 delta_col))`` are kept, all others stay
   out, so the release is ``(eps_values, delta_col)``-DP (:func:`threshold`); ``delta_col`` is
   ``delta`` split evenly among the text columns (the thresholds' deltas add up to ``delta``).
3. **Numbers, integers and dates** (:mod:`dp_arena.data.dp_numbers`): a DP range and quantile
   bin edges on a public axis, pure DP with the column's whole values share: numbers and
   integers on the public log axis, dates as days since 1970 on a public linear axis
   (1900-2100). An integer column whose inner DP range (the fine leaves holding its 0.1% and
   99.9% quantiles) holds at most ``max_categories`` integers becomes categorical over every
   integer of it (the range is released: the domain is public), else numeric with integer
   edges; dates become ``datetime`` columns at their
   format's resolution with ``bins`` (:mod:`dp_arena.data.datetimes`).

Then post-processing only. A column with no kept key or no range is left out of the schema
(``proposal.dropped``) with the fix: a hint, a public sample or more epsilon.

Exact sources (``public``, ``private``) use the same type rule on exact class counts, every
text value (the ``max_categories`` most frequent), exact ranges and exact quantile edges; a
public sample's integer columns of small range get every integer of the range.

**Missing values** are allowed (a missing code) only where the data has them: for DP, when the
type histogram's noisy count of rows the type leaves without a code (missing, or of a class it
does not parse) passes the noise floor of that sum (:func:`dp_arena.data.dp_type.without_code`;
a hinted type releases a two-cell present/missing histogram with the type share instead), and
for a text column also when a Laplace count of the
rows its kept values leave out (missing or under the threshold; :data:`OUTSIDE_SHARE` of its
values share) passes that floor; for exact sources, when the sample has missing values (or, for
text, more values than ``max_categories``); a hint's ``allow_missing`` overrides either. So a
Yes/No column without missing values stays binary and no mechanism invents a missing cell.
Private rows missing where the schema allows none are dropped when the data is loaded, counted
and refused above ``dataset.max_loss`` with the fix (a hint ``{allow_missing: true}``).

Proposals set ``out_of_domain: "coerce"``: when the data is loaded, values the proposal did
not see become missing (categorical, datetime) or are clipped into range (numeric), counted
before any run (:mod:`dp_arena.data.conform`). The report names columns, their budget shares
and what each column keeps (from the noisy counts for DP), never a private value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from dp_arena.data.datetimes import ABSOLUTE, ISO8601, parse, strftime_pattern
from dp_arena.data.dp_numbers import NumericRange, dp_numeric_range, linear_axis, log_axis
from dp_arena.data.dp_type import dp_missing, dp_type, has_missing
from dp_arena.data.exact_numbers import exact_numeric_range
from dp_arena.data.hints import ColumnHint, hints_of
from dp_arena.data.identifiers import identifier_notes
from dp_arena.data.infer import CLASSES, choose_type, present, resolution_of, value_classes
from dp_arena.data.overlap import sample_fingerprint
from dp_arena.data.schema import Column, RunSpec, Schema
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser

Source = Literal["public", "dp", "private"]
SOURCES = ("public", "dp", "private")
#: share of a column's epsilon spent on its type histogram (the rest: its values)
TYPE_SHARE = 0.1
ID_RANGE = (0, 2**31 - 1)
#: calendar years a DP date range is widened by on each side (:func:`calendar_years`)
DATE_MARGIN_YEARS = 1
#: the public axis of dates, in days since 1970-01-01: 1900-01-01 .. 2100-12-31
DAY_AXIS = (-25_567.0, 47_482.0)
#: a column keeping less than this share of its present values (noisy) is flagged in the report
KEPT_WARNING = 0.95
#: a column whose largest code holds more than this share is flagged in the report
ONE_CODE_WARNING = 0.9
#: share of a text column's values epsilon spent on the count of rows its kept values leave
#: out (:func:`dp_outside`; only when its type release found no missing value)
OUTSIDE_SHARE = 0.1


@dataclass(frozen=True)
class ProposalSettings:
    source: Source
    epsilon: float | None = None
    delta: float = 1e-6
    bins: int = 10
    max_categories: int = 100
    id_column: str | None = None
    max_rows_per_person: int = 1
    run_epsilons: tuple[float, ...] = (1.0, 10.0)
    run_delta: float = 1e-6
    #: public hints ``{column: mapping or ColumnHint}`` (:mod:`dp_arena.data.hints`)
    hints: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"unknown proposal source {self.source!r}", f"use one of {SOURCES}")
        if self.source == "dp":
            if self.epsilon is None or not self.epsilon > 0 or not math.isfinite(self.epsilon):
                raise ConfigError("a DP proposal needs --epsilon > 0", "e.g. --epsilon 0.1")
            if not 0 < self.delta < 1:
                raise ConfigError(f"--delta must be in (0, 1) (got {self.delta:g}): the "
                                  "thresholded histogram of values needs delta > 0",
                                  "use a delta well below 1/(number of persons), e.g. 1e-6")
        if self.bins < 2 or self.max_categories < 1 or self.max_rows_per_person < 1:
            raise ConfigError("--bins must be >= 2, --max-categories and "
                              "--max-rows-per-person >= 1", "use e.g. --bins 10")
        object.__setattr__(self, "hints", hints_of(self.hints))

    @property
    def column_hints(self) -> dict[str, ColumnHint]:
        return self.hints  # type: ignore[return-value]


@dataclass(frozen=True)
class ColumnReport:
    """What the proposal did with one column (public, or post-processing of DP releases)."""

    name: str
    origin: str                      # "hint", "dp", "public" or "private"
    type_name: str | None = None
    epsilon: float = 0.0
    delta: float = 0.0
    kept_share: float | None = None  # share of present values inside the schema (noisy for DP)
    largest_share: float | None = None
    note: str = ""

    def line(self, column: Column | None) -> str:
        what = "left out" if column is None else f"{column.kind} ({column_size(column)})"
        parts = [f"{self.name}: {what}", f"from {self.origin}"]
        if self.type_name:
            parts[0] += f" [{self.type_name}]"
        if self.origin == "dp":
            parts.append(f"eps {self.epsilon:.3g}" + (f", delta {self.delta:.2g}"
                                                      if self.delta else ""))
        if self.kept_share is not None:
            parts.append(f"keeps ~{self.kept_share:.0%} of values")
        if self.largest_share is not None:
            parts.append(f"largest code ~{self.largest_share:.0%}")
        text = "; ".join(parts)
        return text + (f"; {self.note}" if self.note else "")

    @property
    def weak(self) -> bool:
        """Keeps little, or a range's bins hold most values in one (not text: that is data)."""
        return ((self.kept_share is not None and self.kept_share < KEPT_WARNING)
                or (self.type_name != "text" and self.largest_share is not None
                    and self.largest_share > ONE_CODE_WARNING))


def column_size(col: Column) -> str:
    if col.kind == "id":
        return "id"
    return f"{col.present_size} codes"


@dataclass(frozen=True)
class Proposal:
    schema: Schema
    source: Source
    report: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    ledger: dict[str, Any] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    columns: tuple[ColumnReport, ...] = ()
    #: keyed digests of the public sample's rows (``source="public"`` only; in memory, never
    #: written): ``run_competition`` refuses a private frame that holds the sample
    #: (:mod:`dp_arena.data.overlap`)
    sample_digests: frozenset[str] | None = field(default=None, repr=False, compare=False)

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) of the proposal: 0 for public data, inf for the private opt-in."""
        if self.source == "public":
            return 0.0, 0.0
        if self.source == "private":
            return math.inf, 0.0
        assert self.ledger is not None
        return self.ledger["total"]["epsilon"], self.ledger["total"]["delta"]

    def origins(self) -> dict[str, str]:
        """Where each column came from (``hint``, ``dp``, ``public``, ``private``)."""
        return {c.name: c.origin for c in self.columns}


# ----- public helpers ------------------------------------------------------------------------
def quantile_edges(lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, bins: int) -> list[float]:
    """Interior bin edges at the ``i / bins`` quantiles of a (noisy) histogram over sorted
    key intervals: each edge is the upper end of the key where the CDF reaches the quantile."""
    order = np.argsort(lo)
    lo, hi, w = lo[order], hi[order], np.clip(counts[order], 0, None)
    if w.sum() <= 0:
        return []
    cdf = np.cumsum(w) / w.sum()
    cuts = sorted({float(hi[min(int(np.searchsorted(cdf, i / bins)), len(hi) - 1)])
                   for i in range(1, bins)})
    return [c for c in cuts if lo[0] < c < hi[-1]]


def threshold(epsilon: float, delta: float, bound: int) -> float:
    """``tau = bound + (bound / epsilon) * ln(bound / (2 delta))`` (module docstring)."""
    return bound + (bound / epsilon) * math.log(bound / (2.0 * delta))


def is_date(type_name: str) -> bool:
    return resolution_of(type_name) is not None


def needs_values(type_name: str) -> bool:
    """Whether a column of this type needs a values release (cyclic date parts do not)."""
    res = resolution_of(type_name)
    return res is None or res in ABSOLUTE


def text_of(values: pd.Series) -> pd.Series:
    """The present values as stripped text."""
    return present(values).astype(str).str.strip()


def numbers_of(values: pd.Series) -> np.ndarray:
    """The present values that are finite numbers."""
    nums = pd.to_numeric(text_of(values), errors="coerce").to_numpy(dtype=float)
    return nums[np.isfinite(nums)]


def days_of(values: pd.Series, type_name: str) -> np.ndarray:
    """The present values that parse as dates of ``type_name``, in (fractional) days since
    1970-01-01."""
    stamps = parse(text_of(values), type_name).dropna()
    ns = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return ns / 86_400e9


def date_text(days: float, resolution: str, fmt: str) -> str:
    """A day number as a date string, floored to ``resolution``, in the column's writing
    format."""
    stamp = pd.Timestamp(np.datetime64(int(math.floor(days * 86_400)), "s"))
    if resolution in ("year", "month"):
        stamp = stamp.to_period(resolution[0].upper()).to_timestamp()
    else:
        stamp = stamp.floor({"day": "D", "hour": "h", "minute": "min"}[resolution])
    return stamp.strftime(strftime_pattern(fmt, resolution))


def calendar_years(lo: float, hi: float) -> tuple[float, float]:
    """A range of whole 365.25-day cells of the public date axis (which drift up to a day
    from January 1) snapped to the calendar years they stand for and widened by
    :data:`DATE_MARGIN_YEARS` on each side: from January 1 of the year before the one holding
    ``lo + 1`` to the last minute of the year after the one holding ``hi - 1`` (in days since
    1970; post-processing of a released range). The margin costs no code (the bins are the
    released quantiles) and keeps an end year whose few rows fell under the noise floor (the
    raw taxi table's 833 trips of 2016 at ``--epsilon 0.1``, in one proposal of 20)."""
    first = pd.Timestamp(np.datetime64(int(math.floor(lo + 1)), "D")).year - DATE_MARGIN_YEARS
    last = pd.Timestamp(np.datetime64(int(math.floor(hi - 1)), "D")).year + DATE_MARGIN_YEARS
    days = lambda stamp: stamp.value / 86_400e9  # noqa: E731
    return days(pd.Timestamp(first, 1, 1)), days(pd.Timestamp(last, 12, 31, 23, 59))


def date_column(name: str, type_name: str, rng: NumericRange, allow_missing: bool,
                exact: bool = False) -> Column:
    """A datetime column at the type's resolution from a range and edges in days."""
    res = resolution_of(type_name)
    assert res is not None
    if res not in ABSOLUTE:
        return Column(name, "datetime", "str", resolution=res, format=type_name,
                      allow_missing=allow_missing)
    ends = (rng.min, rng.max) if exact else calendar_years(rng.min, rng.max)
    lo, hi = (date_text(d, res, type_name) for d in ends)
    probe = Column(name, "datetime", "str", resolution=res, format=type_name, min=lo, max=hi,
                   allow_missing=allow_missing)
    cuts = unique_units(probe, [date_text(e, res, type_name) for e in rng.edges])
    return Column(name, "datetime", "str", resolution=res, format=type_name, min=lo, max=hi,
                  bins=tuple(cuts) or None, allow_missing=allow_missing)


def unique_units(col: Column, cuts: list[str]) -> list[str]:
    """Cut points that fall strictly inside ``(min, max)`` at the column's resolution, one
    per unit (edges closer than a unit merge)."""
    from dp_arena.data.datetimes import absolute_units, bound_of

    if not cuts:
        return []
    units = absolute_units(col, parse(pd.Series(cuts), col.format))
    lo, hi = absolute_units(col, pd.Series([bound_of(col, "min"), bound_of(col, "max")]))
    out, seen = [], set()
    for cut, unit in zip(cuts, units):
        if lo < unit < hi and unit not in seen:
            seen.add(unit)
            out.append(cut)
    return out


def number_column(name: str, type_name: str, rng: NumericRange, settings: ProposalSettings,
                  allow_missing: bool, fill_integers: bool, exact: bool = False) -> Column:
    """A numeric column (or, for integers of a small range, a categorical of every integer
    of the range) from a range and edges."""
    if type_name == "integer":
        lo, hi = math.floor(rng.min), math.ceil(rng.max)
        if fill_integers and rng.inner is not None:
            # exact: [min, max]; DP: the integers of the [a, b) leaves holding the extreme
            # quantiles
            first = math.floor(rng.inner[0])
            last = (math.floor(rng.inner[1]) if exact else
                    max(first, math.ceil(rng.inner[1]) - (rng.inner[1] > rng.inner[0])))
            if last - first + 1 <= settings.max_categories:
                return Column(name, "categorical", "int64",
                              values=tuple(range(first, last + 1)), allow_missing=allow_missing)
        edges = sorted({float(math.ceil(e)) for e in rng.edges if lo < math.ceil(e) <= hi})
        return Column(name, "numeric", "int64", min=float(lo), max=float(hi),
                      bins=tuple(edges) or None, allow_missing=allow_missing)
    edges = tuple(e for e in rng.edges if rng.min < e < rng.max)
    return Column(name, "numeric", "float", min=float(rng.min), max=float(rng.max),
                  bins=edges or None, allow_missing=allow_missing)


def hinted_type(hint: ColumnHint | None) -> str | None:
    """The type a partial hint fixes (None: choose it)."""
    if hint is None or hint.kind is None:
        return None
    if hint.kind == "categorical":
        return "text"
    if hint.kind == "numeric":
        return "number"
    if hint.format and resolution_of(hint.format) is not None:
        return hint.format
    return hint.format or ISO8601


def with_hint(col: Column, hint: ColumnHint | None) -> Column:
    """``col`` with the facts a partial hint states (format, resolution, allow_missing)."""
    if hint is None:
        return col
    changes: dict[str, Any] = {}
    if hint.allow_missing is not None and col.kind != "id":
        changes["allow_missing"] = hint.allow_missing
    if col.kind == "datetime" and hint.resolution and hint.resolution != col.resolution:
        changes.update(resolution=hint.resolution, bins=None)
        if hint.resolution not in ABSOLUTE:
            changes.update(min=None, max=None)
    if not changes:
        return col
    return replace(col, **changes)


# ----- exact proposals (public sample, private opt-in) ----------------------------------------
def exact_type(values: pd.Series) -> str:
    """The type the exact class counts choose."""
    classes = value_classes(values)
    return choose_type(np.bincount(classes, minlength=len(CLASSES)).astype(float))


def exact_column(name: str, values: pd.Series, settings: ProposalSettings,
                 hint: ColumnHint | None = None) -> tuple[Column | None, ColumnReport]:
    """A column read exactly (public sample, or the private opt-in); None when empty."""
    origin = "public" if settings.source == "public" else "private"
    s = present(values)
    if not len(s):
        return None, ColumnReport(name, origin, note="no values; left out (fix: a hint)")
    type_name = hinted_type(hint) or exact_type(values)
    # missing values where the sample (public, or the private opt-in) has them, or a hint says
    allow_missing = bool(len(s) < len(values))
    if is_date(type_name):
        days = days_of(values, type_name)
        if not len(days):
            return None, ColumnReport(name, origin, type_name, note="no value parses as "
                                      f"{type_name}; left out (fix: a hint with its format)")
        col = date_column(name, type_name, exact_numeric_range(days, settings.bins),
                          allow_missing or len(days) < len(s), exact=True)
    elif type_name in ("integer", "number"):
        nums = numbers_of(values)
        integral = type_name == "integer"
        if integral and origin == "private":
            distinct = np.unique(nums)
            if len(distinct) <= settings.max_categories:
                col = Column(name, "categorical", "int64",
                             values=tuple(int(v) for v in distinct),
                             allow_missing=allow_missing or len(nums) < len(s))
                return with_hint(col, hint), exact_report(name, origin, type_name, col, values)
        col = number_column(name, type_name, exact_numeric_range(nums, settings.bins),
                            settings, allow_missing or len(nums) < len(s),
                            fill_integers=integral, exact=True)
    else:
        counted = text_of(values).value_counts()
        top = counted.index[: settings.max_categories]
        allow_missing = allow_missing or len(counted) > len(top)
        col = Column(name, "categorical", "str", values=tuple(sorted(map(str, top))),
                     allow_missing=allow_missing)
    col = with_hint(col, hint)
    return col, exact_report(name, origin, type_name, col, values)


def exact_report(name: str, origin: str, type_name: str, col: Column,
                 values: pd.Series) -> ColumnReport:
    """Kept share and largest code of a column read exactly (of the sample it was read from:
    for a public sample, public facts)."""
    from dp_arena.data.conform import conform_column
    from dp_arena.data.schema import encode_column

    n = len(present(values))
    fitted, loss = conform_column(col, values)
    kept = 1.0 - loss.lost / n if n else None
    largest = None
    if col.kind != "id" and len(fitted.dropna()):
        codes = encode_column(col, fitted.dropna())
        largest = float(np.bincount(codes).max() / len(codes))
    return ColumnReport(name, origin, type_name, kept_share=kept, largest_share=largest)


# ----- DP proposals ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Shares:
    """The budget split (module docstring, "Budget split")."""

    column: dict[str, float]     # each proposed column's whole share

    @classmethod
    def of(cls, names: list[str], hints: dict[str, ColumnHint], epsilon: float) -> "Shares":
        weights = {n: hints[n].weight if n in hints else 1.0 for n in names}
        total = sum(weights.values())
        return cls({n: epsilon * w / total for n, w in weights.items()})


def dp_text_column(name: str, values: pd.Series, settings: ProposalSettings,
                   releaser: Releaser, epsilon: float, delta: float, bound: int,
                   present_noisy: float | None, allow_missing: bool = True
                   ) -> tuple[Column | None, float, ColumnReport]:
    """The thresholded histogram of a text column's values (module docstring, step 2), with
    :data:`OUTSIDE_SHARE` of ``epsilon`` spent on the count of rows it leaves without a code
    (:func:`dp_outside`) when the type release found no missing value."""
    counted = text_of(values).value_counts()
    if not allow_missing:
        epsilon, eps_outside = epsilon * (1 - OUTSIDE_SHARE), epsilon * OUTSIDE_SHARE
    tau = threshold(epsilon, delta, bound)
    report = ColumnReport(name, "dp", "text", epsilon, delta)
    # an empty column is released like any other (no key, the same charge and note): its
    # emptiness is a fact of the private table, which only a charged release may tell
    noisy = releaser.laplace(f"{name}: values", counted.to_numpy(dtype=float),
                             sensitivity=bound, scale=bound / epsilon,
                             note=f"thresholded at {tau:.6g}")
    keep = noisy > tau
    if not keep.any():
        return None, tau, replace_note(
            report, f"no value passed the threshold {tau:.0f} (an identifier's distinct values "
                    "never do); left out (fix: a hint listing its values, --public, a larger "
                    "--epsilon or --weight)")
    kept_noisy = noisy[keep]
    order = np.argsort(-kept_noisy, kind="stable")[: settings.max_categories]
    values_kept = sorted(counted.index.to_numpy()[keep][order].tolist())
    if not allow_missing:
        allow_missing = dp_outside(name, values, values_kept, releaser, eps_outside, bound)
    col = Column(name, "categorical", "str", values=tuple(values_kept),
                 allow_missing=allow_missing)
    mass = float(kept_noisy[order].sum())
    kept_share = min(1.0, mass / present_noisy) if present_noisy and present_noisy > 0 else None
    largest = float(kept_noisy[order].max() / mass) if mass > 0 else None
    return col, tau, ColumnReport(name, "dp", "text", epsilon, delta, kept_share, largest,
                                  f"{len(values_kept)} value(s) above {tau:.0f}")


def dp_outside(name: str, values: pd.Series, kept: list[str], releaser: Releaser,
               epsilon: float, bound: int) -> bool:
    """Whether a text column needs a missing code for the rows its kept values leave out
    (missing, or a value under the threshold): one Laplace count of those rows (L1
    sensitivity ``bound``), then :func:`dp_arena.data.dp_type.has_missing`."""
    text = values.astype(object).where(values.notna()).astype(str).str.strip()
    outside = float(len(values) - text[values.notna()].isin(kept).sum())
    noisy = releaser.laplace(f"{name}: outside", np.array([outside]), sensitivity=bound,
                             scale=bound / epsilon, note="rows missing or outside the kept values")
    return has_missing(float(noisy[0]), bound / epsilon)


def replace_note(report: ColumnReport, note: str) -> ColumnReport:
    return replace(report, note=note)


def dp_range_column(name: str, values: pd.Series, type_name: str, settings: ProposalSettings,
                    releaser: Releaser, epsilon: float, bound: int, allow_missing: bool = True
                    ) -> tuple[Column | None, ColumnReport]:
    """A number, integer or date column from a DP range and edges (module docstring, 3)."""
    if is_date(type_name):
        data, axis = days_of(values, type_name), linear_axis(*DAY_AXIS, 365.25, 1.0)
    else:
        data, axis = numbers_of(values), log_axis()
    found = dp_numeric_range(data, axis, settings.bins, epsilon, bound, releaser,
                             f"{name}: range")
    report = ColumnReport(name, "dp", type_name, epsilon)
    if found is None:
        return None, replace_note(report, "no range found above the noise; left out (fix: a "
                                          "hint with its min and max, --public, or more epsilon)")
    if is_date(type_name):
        col = date_column(name, type_name, found, allow_missing=allow_missing)
    else:
        col = number_column(name, type_name, found, settings, allow_missing,
                            fill_integers=True)
    largest = found.largest_bin_share if col.kind != "categorical" else None
    return col, ColumnReport(name, "dp", type_name, epsilon, 0.0, None, largest)


def bounded_rows(df: pd.DataFrame, id_column: str | None, bound: int,
                 rng: np.random.Generator) -> pd.DataFrame:
    """At most ``bound`` rows per person (random), or the table itself at record level."""
    if id_column is None:
        return df
    order = df.sample(frac=1.0, random_state=rng.integers(2**32)).index
    shuffled = df.loc[order]
    return shuffled[shuffled.groupby(id_column).cumcount() < bound].sort_index()


@dataclass(frozen=True)
class DPResult:
    columns: dict[str, Column | None]
    reports: dict[str, ColumnReport]
    thresholds: dict[str, float]
    delta_each: float


def dp_columns(rows: pd.DataFrame, names: list[str], settings: ProposalSettings,
               releaser: Releaser, epsilon: float, bound: int) -> DPResult:
    """Every proposed (not completely hinted) column by DP (module docstring)."""
    hints = settings.column_hints
    shares = Shares.of(names, hints, epsilon)
    types: dict[str, str] = {}
    present_noisy: dict[str, float | None] = {}
    values_share: dict[str, float] = {}
    missing: dict[str, bool] = {}
    for name in names:
        fixed = hinted_type(hints.get(name))
        eps_type = TYPE_SHARE * shares.column[name]
        values_share[name] = shares.column[name] - eps_type
        if fixed is None:
            types[name], present_noisy[name], missing[name] = dp_type(
                name, rows[name], releaser, eps_type, bound)
            continue
        types[name], present_noisy[name] = fixed, None
        stated = hints[name].allow_missing if name in hints else None
        if stated is None:  # the hint fixes the type, not whether values are missing
            missing[name] = dp_missing(name, rows[name], releaser, eps_type, bound)
        else:
            missing[name], values_share[name] = stated, shares.column[name]
    needing = [n for n in names if needs_values(types[n])]
    pool = sum(values_share.values())
    weight = {n: hints[n].weight if n in hints else 1.0 for n in needing}
    eps_values = {n: pool * weight[n] / sum(weight.values()) for n in needing}
    texts = [n for n in needing if types[n] in ("text",)]
    delta_each = settings.delta / max(len(texts), 1)
    columns: dict[str, Column | None] = {}
    reports: dict[str, ColumnReport] = {}
    thresholds: dict[str, float] = {}
    for name in names:
        t = types[name]
        spent_type = shares.column[name] - values_share[name]
        if name not in eps_values:
            col = with_hint(Column(name, "datetime", "str", resolution=resolution_of(t),
                                   format=t, allow_missing=missing[name]), hints.get(name))
            columns[name] = col
            reports[name] = ColumnReport(name, "dp", t, spent_type, note="no values released "
                                         "(a cyclic part: its codes are public)")
            continue
        if t == "text":
            col, tau, rep = dp_text_column(name, rows[name], settings, releaser,
                                           eps_values[name], delta_each, bound,
                                           present_noisy[name], missing[name])
            thresholds[name] = tau
        else:
            col, rep = dp_range_column(name, rows[name], t, settings, releaser,
                                       eps_values[name], bound, missing[name])
        rep = replace(rep, epsilon=spent_type + eps_values[name])
        columns[name] = with_hint(col, hints.get(name)) if col is not None else None
        reports[name] = rep
    return DPResult(columns, reports, thresholds, delta_each)


# ----- a table ----------------------------------------------------------------------------
def propose(df: pd.DataFrame, settings: ProposalSettings,
            releaser: Releaser | None = None) -> Proposal:
    """Propose a schema for ``df`` (the public sample for ``source=public``, else the private
    table) as the module docstring describes."""
    if settings.id_column is not None and settings.id_column not in df.columns:
        raise ConfigError(f"--id-column {settings.id_column!r} is not a column of the table",
                          f"use one of {list(map(str, df.columns))}")
    attrs = [str(c) for c in df.columns if c != settings.id_column]
    if not attrs:
        raise ConfigError("the table has no columns to describe", "pass a CSV with a header row")
    hints = settings.column_hints
    unknown = sorted(set(hints) - set(attrs))
    if unknown:
        raise ConfigError(f"hints name columns {unknown} that the table does not have",
                          f"use names from its header: {attrs[:30]}")
    bound = settings.max_rows_per_person if settings.id_column else 1
    complete = {n: hints[n].column(n) for n in attrs if n in hints and hints[n].complete}
    columns: dict[str, Column | None] = dict(complete)
    reports = {n: ColumnReport(n, "hint", note="spends nothing") for n in complete}
    ids = identifier_notes(df, attrs, settings.source != "dp", set(hints))  # left out, said
    reports.update({n: ColumnReport(n, "public" if settings.source == "dp" else
                                    settings.source, note=note) for n, note in ids.items()})
    proposed = [n for n in attrs if n not in complete and n not in ids]
    ledger_dict = None
    thresholds: dict[str, float] = {}
    if settings.source == "dp":
        eps = float(settings.epsilon)  # type: ignore[arg-type]
        releaser = releaser or Releaser(Ledger(Budget(eps, 0.0), unit=ledger_unit(settings)))
        if proposed:
            rows = bounded_rows(df, settings.id_column, bound, np.random.default_rng())
            # aim a hair below the budget (float rounding of the shares)
            result = dp_columns(rows, proposed, settings, releaser, eps * (1 - 1e-9), bound)
            columns.update(result.columns)
            reports.update({n: replace(r, epsilon=column_spend(releaser.ledger, n))
                            for n, r in result.reports.items()})
            thresholds = result.thresholds
            delta_each = result.delta_each
        else:
            delta_each = 0.0
        spent_eps, _ = releaser.ledger.spent()
        used_delta = delta_each * len(thresholds)
        ledger_dict = {**releaser.ledger.to_dict(), "thresholds": thresholds,
                       "threshold_delta_each": delta_each, "contribution_bound": bound,
                       "neighbouring": "add or remove one person",
                       "hinted_columns": sorted(complete),
                       "total": {"epsilon": spent_eps, "delta": used_delta,
                                 "composition": "basic: the charges' epsilons and the "
                                                "thresholds' deltas added"}}
    else:
        for name in proposed:
            columns[name], reports[name] = exact_column(name, df[name], settings,
                                                        hints.get(name))
    kept = [columns[n] for n in attrs if columns.get(n) is not None]
    dropped = tuple(n for n in attrs if columns.get(n) is None)
    if settings.id_column:
        kept.insert(0, Column(settings.id_column, "id", "int64", min=ID_RANGE[0],
                              max=ID_RANGE[1]))
    if not [c for c in kept if c.kind != "id"]:  # type: ignore[union-attr]
        raise DPArenaError("no column could be proposed (every column was left out)",
                           "use a larger --epsilon, a public sample (--public FILE) or hints "
                           "(--hint COLUMN={...})")
    runs = tuple(RunSpec(e, settings.run_delta, max_records_per_individual=bound
                         if settings.id_column else None) for e in settings.run_epsilons)
    ordered = tuple(reports[n] for n in attrs)
    lines = tuple(r.line(columns.get(r.name)) + (" [weak: fix with a hint, --public or more "
                                                  "epsilon]" if r.weak else "")
                  for r in ordered)
    schema = Schema(tuple(kept), runs)
    digests = sample_fingerprint(df, [n for n in schema.names if n in df.columns]) \
        if settings.source == "public" else None
    return Proposal(schema, settings.source, lines, dropped,  # type: ignore[arg-type]
                    ledger_dict, thresholds, ordered, sample_digests=digests)


def column_spend(ledger: Ledger, name: str) -> float:
    """The epsilon the ledger was charged for one column's releases (pure DP: added)."""
    return sum(c.pure_epsilon * c.count for c in ledger.charges
               if c.name.startswith(f"{name}: "))


def ledger_unit(settings: ProposalSettings) -> str:
    return f"user:{settings.id_column}" if settings.id_column else "record"
