"""Schema proposals for a raw table: kinds, values, ranges and quantile bins, from one of three
sources, never silently from the private data.

Sources
-------
``public``
    A public sample (a different population, or a disjoint public half): read exactly, free.
``dp``
    The private table under (epsilon, delta)-DP, every draw through
    :class:`harness.privacy.release.Releaser` and charged to a
    :class:`harness.privacy.accounting.Ledger` (written beside the schema). See below.
``private``
    The private table read exactly: an explicit opt-in (``--from-private``), written into the
    schema file (``proposal.source = "private"``) so that runs using it are tagged and marked.

Algorithms (the ``dp`` source)
------------------------------
Privacy unit: one person = one row (record level), or, with an id column, at most
``max_rows_per_person`` rows per person (a person's extra rows are dropped at random before
anything is counted; ``bound`` below). Neighbouring tables differ by adding or removing one
person. Every column gets the same share ``epsilon / k`` (k columns), split 30/70 between:

1. **Type** (exponential mechanism, McSherry & Talwar 2007): candidates
   :data:`harness.data.infer.TYPES` (date formats, integer, number, text), score
   ``-(misfits + penalty * n_present)`` (:func:`harness.data.infer.type_scores`); one person
   changes it by at most ``1.5 * bound`` (the sensitivity charged).
2. **Values** of text, integer and date columns (stability-based thresholded histogram;
   Korolova et al. 2009, Bun, Nissim & Stemmer 2016, Wilson et al. 2020 for bounded user
   contributions; numbers: step 3): the keys present in the column (the text or integer
   value; for dates the year) get ``count + Laplace(b)``,
   ``b = bound / eps_values`` (L1 sensitivity ``bound``: a person's rows change the counts by at
   most ``bound`` in total); keys whose noisy count exceeds ``tau`` are kept, all others stay
   out (a key nobody has is never drawn). **Threshold**: a key present in one table and absent
   in its neighbour has count at most ``bound`` there; it is released only if
   ``bound + Lap(b) > tau``, probability ``exp(-(tau - bound) / b) / 2``; a person adds at most
   ``bound`` such keys, so with ``tau = bound + b * ln(bound / (2 delta_col))`` the release is
   ``(eps_values, delta_col)``-DP (Laplace part ``eps_values``-DP on the shared keys,
   ``delta_col`` for the keys only one table has). ``delta_col = delta / k``; the thresholds'
   deltas add up to ``delta``, the Laplace and exponential charges (pure DP) to at most
   ``epsilon`` (basic composition; the ledger's own sum).

3. **Numbers** (range and quantile bin edges; :func:`grid_column`): one Laplace histogram per
   number column over *every* cell of a fixed public log grid (:func:`grid_edges`: 0 and
   +-10^(j/5) for j = -15..45, 124 cells, chosen before any data is seen). Sensitivity: adding
   or removing one person changes at most ``bound`` cell counts by one each (L1 = ``bound``);
   Laplace scale ``bound / eps_values`` makes the release ``eps_values``-DP, pure (the domain is
   fixed and public: no cell exists in one neighbour only, so no threshold and no delta).
   Budget share: the column's values share, the same as every other column whose type needs
   a values release (70% of ``epsilon / k``, split evenly among them). The range (the cells
   where the noisy CDF passes 0.2% and 99.8%), the noise floor (a cell counts only above
   ``scale * ln(cells)``) and the edges (the ``i / bins`` quantiles of the noisy CDF) are
   post-processing. **Why not the exponential mechanism per edge** (Smith 2011): ``bins - 1``
   edges would each get ``eps_values / (bins - 1)``, and an exponential-mechanism quantile
   misses its rank by about ``(2 bound / eps_edge) ln(candidates)`` rows: at ``--epsilon 0.1``
   on the 11-column raw taxi table (10 values releases, ``eps_values = 0.007``, 9 edges) that
   is about 12,000 of its 15,002 rows, where the histogram's noise is ``b = 143`` rows per cell
   and every edge reads the one release. The histogram's limit: edges sit on grid cells, so a
   bin holds at least the largest cell's rows (fare on that table: 32.9%, the largest bin in
   each of 20 draws at epsilon 0.1).

Then post-processing only: text columns -> categorical (the kept values; the
``max_categories`` largest noisy counts when more); integer columns -> categorical when at
most ``max_categories`` values are kept, else numeric; numbers -> numeric; ranges are the kept
keys' extent (outside it, values are clipped when the data is loaded: ``out_of_domain``), and
the bin edges are quantiles (``i / bins``) of the noisy counts' CDF (step 3: one release
serves every edge). A column with no kept key is left out of
the schema and listed in ``proposal.dropped``.

Exact sources (``public``, ``private``) use the same type rule (the best score), every value
(text; integers up to ``max_categories``), exact min/max and exact quantile edges.

Proposals allow missing values in every column that has (or, for DP, may have) any, and set
``out_of_domain: "coerce"``: when the data is loaded, values the proposal did not see become
missing (categorical, datetime) or are clipped into range (numeric)
(:mod:`harness.data.conform`). Reports and messages name columns and counts of kept keys,
never a private value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from harness.data.datetimes import ABSOLUTE
from harness.data.infer import (SCORE_SENSITIVITY, TYPES, present, resolution_of, type_misfits,
                                type_scores)
from harness.data.schema import Column, RunSpec, Schema
from harness.errors import ConfigError, DPArenaError
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.release import Releaser

Source = Literal["public", "dp", "private"]
SOURCES = ("public", "dp", "private")
#: share of a column's epsilon spent choosing its type (the rest: its values)
TYPE_SHARE = 0.3
#: cells per decade of the public log grid numbers are counted on
CELLS_PER_DECADE = 5
ID_RANGE = (0, 2**31 - 1)


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


@dataclass(frozen=True)
class Proposal:
    schema: Schema
    source: Source
    report: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    ledger: dict[str, Any] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) of the proposal: 0 for public data, inf for the private opt-in."""
        if self.source == "public":
            return 0.0, 0.0
        if self.source == "private":
            return math.inf, 0.0
        assert self.ledger is not None
        return self.ledger["total"]["epsilon"], self.ledger["total"]["delta"]


# ----- keys -------------------------------------------------------------------------------
def grid_edges() -> np.ndarray:
    """The public grid numbers are counted on: 0 and +-10^(j/5) for 10^-3..10^9."""
    pos = 10.0 ** (np.arange(-3 * CELLS_PER_DECADE, 9 * CELLS_PER_DECADE + 1) / CELLS_PER_DECADE)
    return np.concatenate([-pos[::-1], [0.0], pos])


def column_keys(values: pd.Series, type_name: str) -> pd.Series:
    """One key per present value that parses as ``type_name`` (others dropped): the stripped
    text, the integer, the grid cell index (numbers) or the time unit (absolute dates)."""
    s = present(values).astype(str).str.strip()
    if type_name == "text":
        return s
    if type_name in ("integer", "number"):
        nums = pd.to_numeric(s, errors="coerce").dropna()
        nums = nums[np.isfinite(nums)]
        if type_name == "integer":
            return nums[nums == np.floor(nums)].astype(np.int64)
        return pd.Series(np.searchsorted(grid_edges(), nums.to_numpy(), side="right"),
                         index=nums.index)
    stamps = pd.to_datetime(s, format=type_name, errors="coerce").dropna()
    res = resolution_of(type_name)
    if res not in ABSOLUTE:
        return stamps.dt.hour
    unit = ABSOLUTE[res]  # type: ignore[index]
    return pd.Series(stamps.to_numpy(dtype="datetime64[ns]").astype(f"datetime64[{unit}]")
                     .astype(np.int64), index=stamps.index)


def key_bounds(type_name: str, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's value interval ``[lo, hi)``."""
    keys = np.asarray(keys)
    if type_name == "number":
        edges = np.concatenate([[-1e12], grid_edges(), [1e12]])
        return edges[keys], edges[keys + 1]
    return keys.astype(float), keys.astype(float) + 1.0


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


# ----- one column -------------------------------------------------------------------------
def column_from_keys(name: str, type_name: str, keys: np.ndarray, counts: np.ndarray,
                     settings: ProposalSettings, allow_missing: bool) -> Column:
    """The schema entry for a column of type ``type_name`` whose kept keys are ``keys`` with
    (exact or noisy) ``counts``; post-processing only."""
    res = resolution_of(type_name)
    if res is not None:
        if res not in ABSOLUTE:
            return Column(name, "datetime", "str", resolution=res, format=type_name,
                          allow_missing=allow_missing)
        unit = ABSOLUTE[res]
        lo, hi = (pd.Timestamp(np.datetime64(int(k), unit)).strftime(type_name)
                  for k in (keys.min(), keys.max()))
        return Column(name, "datetime", "str", resolution=res, format=type_name, min=lo,
                      max=hi, allow_missing=allow_missing)
    if type_name == "text" or (type_name == "integer" and len(keys) <= settings.max_categories):
        top = np.argsort(-counts, kind="stable")[: settings.max_categories]
        values = sorted(keys[top].tolist())
        dtype = "str" if type_name == "text" else "int64"
        return Column(name, "categorical", dtype, values=tuple(values),
                      allow_missing=allow_missing)
    lo, hi = key_bounds(type_name, keys)
    edges = quantile_edges(lo, hi, counts.astype(float), settings.bins)
    top = float(hi.max()) - (1.0 if type_name == "integer" else 0.0)
    return Column(name, "numeric", "int64" if type_name == "integer" else "float",
                  min=float(lo.min()), max=top, bins=tuple(edges) or None,
                  allow_missing=allow_missing)


def exact_column(name: str, values: pd.Series, settings: ProposalSettings) -> Column | None:
    """A column read exactly (public sample, or the private opt-in); None when empty."""
    s = present(values)
    if not len(s):
        return None
    scores = type_scores(type_misfits(values), len(s))
    type_name = TYPES[int(np.argmax(scores))]
    keys = column_keys(values, type_name)
    allow_missing = bool(len(s) < len(values) or len(keys) < len(s))
    if type_name == "number":  # exact quantiles of the values, not of grid cells
        nums = pd.to_numeric(s.astype(str).str.strip(), errors="coerce").dropna()
        lo, hi = float(nums.min()), float(nums.max())
        qs = np.quantile(nums, np.arange(1, settings.bins) / settings.bins)
        edges = tuple(sorted({float(q) for q in qs if lo < q < hi})) or None
        return Column(name, "numeric", "float", min=lo, max=hi, bins=edges,
                      allow_missing=allow_missing)
    counted = keys.value_counts()
    if type_name == "integer" and len(counted) > settings.max_categories:
        nums = keys.to_numpy(dtype=float)
        lo, hi = float(nums.min()), float(nums.max())
        qs = np.ceil(np.quantile(nums, np.arange(1, settings.bins) / settings.bins))
        edges = tuple(sorted({float(q) for q in qs if lo < q <= hi})) or None
        return Column(name, "numeric", "int64", min=lo, max=hi, bins=edges,
                      allow_missing=allow_missing)
    return column_from_keys(name, type_name, counted.index.to_numpy(),
                            counted.to_numpy(dtype=float), settings, allow_missing)


def threshold(epsilon: float, delta: float, bound: int) -> float:
    """``tau = bound + (bound / epsilon) * ln(bound / (2 delta))`` (module docstring)."""
    return bound + (bound / epsilon) * math.log(bound / (2.0 * delta))


def dp_type(name: str, values: pd.Series, releaser: Releaser, epsilon: float,
            bound: int) -> str:
    """The column's type, chosen by the exponential mechanism (module docstring, step 1)."""
    scores = type_scores(type_misfits(values), len(present(values)))
    chosen = releaser.exponential(f"{name}: type", scores, sensitivity=SCORE_SENSITIVITY * bound,
                                  epsilon=epsilon, note="candidates: " + ", ".join(TYPES))
    return TYPES[chosen]


def needs_values(type_name: str) -> bool:
    """Whether a column of this type needs a values release (cyclic date parts do not)."""
    res = resolution_of(type_name)
    return res is None or res in ABSOLUTE


def values_column(name: str, values: pd.Series, type_name: str, settings: ProposalSettings,
                  releaser: Releaser, eps_values: float, delta: float,
                  bound: int) -> tuple[Column | None, float, str]:
    """The values release of one column whose type is chosen (module docstring)."""
    if type_name == "number":
        return grid_column(name, values, settings, releaser, eps_values, bound)
    res = resolution_of(type_name)
    keys = column_keys(values, type_name)
    if res is not None:  # dates: count years (coarse keys pass the threshold more often)
        keys = pd.to_datetime(present(values).astype(str).str.strip(), format=type_name,
                              errors="coerce").dropna().dt.year
    counted = keys.value_counts()
    tau = threshold(eps_values, delta, bound)
    noisy = release_counts(releaser, f"{name}: values", counted.to_numpy(dtype=float),
                           bound, eps_values, tau)
    keep = noisy > tau
    if not keep.any():
        return None, tau, (f"{name}: {type_name}: no value passed the threshold {tau:.0f}; "
                           "left out (fix: a larger --epsilon, --public, or --drop it)")
    kept = counted.index.to_numpy()[keep]
    if res is not None:
        first, last = pd.Timestamp(int(kept.min()), 1, 1), pd.Timestamp(int(kept.max()), 12, 31, 23)
        col = Column(name, "datetime", "str", resolution=res, format=type_name,
                     min=first.strftime(type_name), max=last.strftime(type_name),
                     allow_missing=True)
    else:
        col = column_from_keys(name, type_name, kept, noisy[keep], settings, allow_missing=True)
    return col, tau, f"{name}: {col.kind} ({type_name}), {int(keep.sum())} key(s) above {tau:.0f}"


def grid_column(name: str, values: pd.Series, settings: ProposalSettings, releaser: Releaser,
                epsilon: float, bound: int) -> tuple[Column, float, str]:
    """A number column from a Laplace histogram over every cell of the public grid (a fixed
    domain: pure DP, no threshold): range = the cells where the noisy CDF passes 0.2% and
    99.8%, edges = its ``i / bins`` quantiles (cells under the noise floor count 0)."""
    n_cells = len(grid_edges()) + 1
    keys = column_keys(values, "number").to_numpy()
    counts = np.bincount(keys, minlength=n_cells).astype(float)
    scale = bound / epsilon
    noisy = releaser.laplace(f"{name}: grid histogram", counts, sensitivity=bound, scale=scale,
                             note=f"{n_cells} public log-grid cells")
    # a cell counts only above scale * ln(cells): then about half an empty cell passes in all
    # (Laplace tail exp(-t) / 2 per cell)
    noisy = np.where(noisy > scale * math.log(n_cells), noisy, 0.0)
    cells = np.arange(n_cells)
    lo, hi = key_bounds("number", cells)
    if noisy.sum() <= 0:
        return (Column(name, "numeric", "float", min=0.0, max=1.0, allow_missing=True), math.nan,
                f"{name}: numeric (number), no cell above noise; range [0, 1] (edit it)")
    cdf = np.cumsum(noisy) / noisy.sum()
    first = int(np.searchsorted(cdf, 0.002))
    last = min(int(np.searchsorted(cdf, 0.998)), n_cells - 1)
    inside = slice(first, last + 1)
    edges = quantile_edges(lo[inside], hi[inside], noisy[inside], settings.bins)
    col = Column(name, "numeric", "float", min=float(lo[first]), max=float(hi[last]),
                 bins=tuple(edges) or None, allow_missing=True)
    return col, math.nan, f"{name}: numeric (number), {len(edges) + 1} bins from a DP histogram"


def release_counts(releaser: Releaser, name: str, counts: np.ndarray, bound: int,
                   epsilon: float, tau: float) -> np.ndarray:
    """Noisy counts of the keys present (Laplace, L1 sensitivity ``bound``); nothing is
    released for an empty column (no key can pass)."""
    if not len(counts):
        return counts
    return releaser.laplace(name, counts, sensitivity=bound, scale=bound / epsilon,
                            note=f"thresholded at {tau:.6g}")


# ----- a table ----------------------------------------------------------------------------
def bounded_rows(df: pd.DataFrame, id_column: str | None, bound: int,
                 rng: np.random.Generator) -> pd.DataFrame:
    """At most ``bound`` rows per person (random), or the table itself at record level."""
    if id_column is None:
        return df
    order = df.sample(frac=1.0, random_state=rng.integers(2**32)).index
    shuffled = df.loc[order]
    return shuffled[shuffled.groupby(id_column).cumcount() < bound].sort_index()


def propose(df: pd.DataFrame, settings: ProposalSettings,
            releaser: Releaser | None = None) -> Proposal:
    """Propose a schema for ``df`` (the public sample for ``source=public``, else the private
    table) as the module docstring describes."""
    if settings.id_column is not None and settings.id_column not in df.columns:
        raise ConfigError(f"--id-column {settings.id_column!r} is not a column of the table",
                          f"use one of {list(map(str, df.columns))}")
    attrs = [c for c in df.columns if c != settings.id_column]
    if not attrs:
        raise ConfigError("the table has no columns to describe", "pass a CSV with a header row")
    bound = settings.max_rows_per_person if settings.id_column else 1
    columns: list[Column] = []
    report: list[str] = []
    dropped: list[str] = []
    thresholds: dict[str, float] = {}
    ledger_dict = None
    if settings.source == "dp":
        eps, delta = float(settings.epsilon), settings.delta  # type: ignore[arg-type]
        releaser = releaser or Releaser(Ledger(Budget(eps, 0.0),
                                               unit=ledger_unit(settings)))
        rows = bounded_rows(df, settings.id_column, bound, np.random.default_rng())
        eps = eps * (1 - 1e-9)  # aim a hair below the budget (float rounding of the shares)
        types = {str(n): dp_type(str(n), rows[n], releaser, TYPE_SHARE * eps / len(attrs), bound)
                 for n in attrs}
        needs = [n for n in attrs if needs_values(types[str(n)])]
        # adaptive: the values budget is split among the columns whose type needs a release
        share_eps = (1 - TYPE_SHARE) * eps / max(len(needs), 1)
        thresholded = [n for n in needs if types[str(n)] != "number"]
        share_delta = delta / max(len(thresholded), 1)
        for name in attrs:
            t = types[str(name)]
            if name in needs:
                col, tau, line = values_column(str(name), rows[name], t, settings, releaser,
                                               share_eps, share_delta, bound)
            else:
                col, tau, line = (column_from_keys(str(name), t, np.array([0]), np.array([1.0]),
                                                   settings, True), math.nan,
                                  f"{name}: {resolution_of(t)} (no values released)")
            report.append(line)
            thresholds[str(name)] = tau
            (columns.append(col) if col is not None else dropped.append(str(name)))
        spent_eps, _ = releaser.ledger.spent()
        used_delta = share_delta * sum(1 for t in thresholds.values() if not math.isnan(t))
        ledger_dict = {**releaser.ledger.to_dict(),
                       "thresholds": {k: v for k, v in thresholds.items() if not math.isnan(v)},
                       "threshold_delta_each": share_delta, "contribution_bound": bound,
                       "neighbouring": "add or remove one person",
                       "total": {"epsilon": spent_eps, "delta": used_delta,
                                 "composition": "basic: the charges' epsilons and the "
                                                "thresholds' deltas added"}}
    else:
        for name in attrs:
            col = exact_column(str(name), df[name], settings)
            if col is None:
                dropped.append(str(name))
                report.append(f"{name}: no values; left out")
                continue
            columns.append(col)
            report.append(f"{name}: {col.kind}" + (f" ({col.size} codes)"))
    if settings.id_column:
        columns.insert(0, Column(settings.id_column, "id", "int64", min=ID_RANGE[0],
                                 max=ID_RANGE[1]))
    if not [c for c in columns if c.kind != "id"]:
        raise DPArenaError("no column could be proposed (every column was left out)",
                           "use a larger --epsilon or a public sample (--public FILE)")
    runs = tuple(RunSpec(e, settings.run_delta, max_records_per_individual=bound
                         if settings.id_column else None) for e in settings.run_epsilons)
    return Proposal(Schema(tuple(columns), runs), settings.source, tuple(report),
                    tuple(dropped), ledger_dict, thresholds)


def ledger_unit(settings: ProposalSettings) -> str:
    return f"user:{settings.id_column}" if settings.id_column else "record"
