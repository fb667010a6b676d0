"""Fit a raw table to a proposed schema, count what it cost, and read the schema's provenance.

A proposed schema (:mod:`dp_arena.data.propose`) saw a public sample or a DP view of the data,
so the private table may hold values it left out. Its ``parameters.json`` carries a
``proposal`` block (``source``: ``public`` / ``dp`` / ``private``; the spend; the ledger file;
``out_of_domain: "coerce"``) which :func:`conform_counted` applies when the data is loaded, row
by row (a per-row map, so it changes no sensitivity):

- categorical / datetime: a value outside the domain (or not parsing) becomes missing;
- numeric: a non-number becomes missing, a number is clipped into ``[min, max]`` (rounded for
  integer columns);
- a missing value in a column without ``allow_missing``: the row is dropped.

**Counts** (:class:`LoadReport`, per column a :class:`ColumnLoss`): how many present values
were set missing (and how many of those did not parse at all), clipped, or rounded; how many
cells were empty in the file; how many rows were dropped, and per column how many of those were
missing in it. A column *loses* its set-missing, clipped and rounded values; :func:`over_limit`
says which columns lose more than ``max_loss`` of their present values (default
:data:`MAX_LOSS`, 5%: a DP schema cannot keep a value few people hold, e.g. 3% of the raw
taxi table's company names at ``--epsilon 1``) and whether more than ``max_loss`` of the rows
were dropped;
:func:`loss_refusal` turns that into one :class:`DPArenaError` with the counts and each
column's fix (a public hint of its kind, format, range or categories; more categories; its date
format; ``dataset.drop``; or ``dataset.max_loss`` to accept the loss knowingly), and
:func:`loss_report_lines` is the report the sweep prints before any run
(:func:`dp_arena.sweep.plan.plan_sweep`).

**Privacy of the counts: exact, on the operator's console only.** The counts are exact
statistics of the private table. They are shown only to the operator, who runs the harness on
the data owner's side and may see the private table anyway, as :meth:`Schema.validate`'s errors
already count bad values to the operator; they are labelled as such in every message ("exact
counts of the private table, shown to you only; not logged"). They are never written to the
sweep's plan file (``plan.json``), MLflow, an artifact or the board: a refusal is raised while
the sweep is planned, and an invalid job's message is printed, never stored
(:func:`dp_arena.sweep.plan.plan_for` exits before the plan is written). DP counts were the
alternative; they would spend budget on every load and still need the exact count to decide a
refusal, and the operator is the one person the exact count is not a secret from. Not even one
bit per column is written: which columns changed (:attr:`LoadReport.notes`) is set by a single
outlier or rare-category row, so it is said on the console with the private warnings
(:mod:`dp_arena.data.guards`), and the ``schema_quality`` tag (:func:`schema_quality`) says only
what the schema file holds (public or DP).

**Schema identity**: :func:`schema_digest` is a keyed digest (HMAC under the local secret,
:func:`dp_arena.privacy.secret.keyed_digest`) of the schema's canonical JSON, the run tag
``schema_digest`` by which a board notices runs on different schemas of one table. Keyed for
every schema: a schema read from the private file (``--from-private``) is itself private, and
one rule for all keeps the tags comparable.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from dp_arena.data.datetimes import datetime_problems, parse
from dp_arena.data.infer import present
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import DPArenaError

SOURCES = ("public", "dp", "private")
PRIVATE_NOTE = "schema from private data (not DP)"


@dataclass(frozen=True)
class SchemaSource:
    """Where a schema came from (the ``proposal`` block of its parameters.json)."""

    source: str
    epsilon: float = 0.0
    delta: float = 0.0
    ledger: str | None = None
    out_of_domain: str = "refuse"
    #: ``proposal.columns``: per column where it came from, its codes and what it keeps
    columns: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    @property
    def tag(self) -> str:
        return {"private": "private (not DP)", "dp": "dp", "public": "public"}[self.source]


def read_source(path: str | Path) -> SchemaSource | None:
    """The ``proposal`` block of a parameters.json (None when the schema was hand-written).
    A schema without a block whose columns were registered by ``--from-private``
    (:mod:`dp_arena.data.provenance`: a keyed digest of each column's content, kept when the
    block is deleted) is still ``private``."""
    from dp_arena.data.provenance import marked_columns_of_file

    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None  # Schema.load reports these
    block = raw.get("proposal") if isinstance(raw, dict) else None
    if block is None:
        return SchemaSource("private", math.inf) if marked_columns_of_file(path) else None
    if not isinstance(block, dict) or block.get("source") not in SOURCES:
        raise DPArenaError(f"{path}: the 'proposal' block is invalid (source must be one of "
                           f"{list(SOURCES)})", "re-run dp-arena-schema, or delete the block")
    eps = float(block.get("epsilon_spent", math.inf if block["source"] == "private" else 0.0))
    columns = block.get("columns")
    quality = tuple((str(name), tuple(sorted(entry.items())))
                    for name, entry in columns.items() if isinstance(entry, dict)) \
        if isinstance(columns, dict) else ()
    return SchemaSource(block["source"], eps, float(block.get("delta_spent", 0.0)),
                        block.get("ledger"), block.get("out_of_domain", "refuse"), quality)


#: a proposed column that keeps less than this share of its values is named in the summary
WEAK_KEEP = 0.95
#: a proposed column whose largest code holds more than this share is named in the summary
WEAK_LARGEST = 0.9


def schema_quality(source: SchemaSource | None) -> str:
    """One line on what a proposed schema keeps, for the board (tag ``schema_quality``): its
    source and spend and the columns that keep little (from ``proposal.columns``: public-sample
    facts or post-processing of the DP proposal's releases; a from-private schema's shares are
    not written). Never what loading changed: which columns held values outside the schema is
    a fact of the private table that no charged release covers (one outlier row sets it), so
    it stays on the owner's console (:func:`loss_report_lines`). "" for a hand-written
    schema."""
    if source is None:
        return ""
    head = {"dp": f"DP proposal (eps {source.epsilon:.3g})", "public": "public sample",
            "private": "read from the private file (not DP)"}[source.source]
    weak = []
    for name, items in source.columns:
        entry = dict(items)
        keeps, largest = entry.get("keeps"), entry.get("largest")
        if isinstance(keeps, (int, float)) and keeps < WEAK_KEEP:
            weak.append(f"{name} keeps ~{keeps:.0%}")
        elif isinstance(largest, (int, float)) and largest > WEAK_LARGEST:
            weak.append(f"{name} has ~{largest:.0%} in one code")
    parts = [f"{len(source.columns)} column(s) from a {head}" if source.columns else head]
    if weak:
        parts.append("weak: " + ", ".join(weak))
    return "; ".join(parts)


#: a categorical column losing more than this share of its values to values outside its
#: categories is most likely an identifier: its first fix is ``dataset.drop``
MOSTLY_OUTSIDE = 0.5
#: Default largest share of a column's present values (or of the rows) loading may lose
#: before the sweep refuses (``dataset.max_loss``).
MAX_LOSS = 0.05
#: Said with every count of the private table (module docstring).
COUNTS_LABEL = "exact counts of the private table, shown to you only; not logged"


@dataclass(frozen=True)
class ColumnLoss:
    """What fitting one column to its schema entry cost (exact counts of the private table).

    ``present``: non-missing values in the file; ``empty``: missing cells in the file;
    ``set_missing``: present values set missing (not in the domain, outside the date range, or
    not parsing), of which ``unparsed`` did not parse as the column's type at all; ``clipped``:
    numbers clipped into ``[min, max]``; ``rounded``: non-integers rounded in an integer
    column; ``dropped_rows``: rows dropped while missing in this column (a row may count in
    several columns)."""

    name: str
    kind: str
    present: int = 0
    empty: int = 0
    set_missing: int = 0
    unparsed: int = 0
    clipped: int = 0
    rounded: int = 0
    dropped_rows: int = 0

    @property
    def lost(self) -> int:
        """Present values that did not load as they were: set missing, clipped or rounded."""
        return self.set_missing + self.clipped + self.rounded

    @property
    def share(self) -> float:
        """``lost`` over ``present`` (0 for a column without present values)."""
        return self.lost / self.present if self.present else 0.0


@dataclass(frozen=True)
class LoadReport:
    """What fitting a table to a proposed schema cost: per column a :class:`ColumnLoss`, the
    rows read and dropped (exact counts: console only, see the module docstring)."""

    columns: tuple[ColumnLoss, ...] = ()
    rows_in: int = 0
    rows_dropped: int = 0

    @property
    def row_share(self) -> float:
        return self.rows_dropped / self.rows_in if self.rows_in else 0.0

    @property
    def notes(self) -> tuple[str, ...]:
        """One bit per column: which columns changed, which dropped rows; never a count or a
        value. Still facts of the private table (one outlier row sets a bit): for the owner's
        console only, never written (module docstring)."""
        notes = [f"{c.name}: values outside the proposed schema "
                 + ("set missing" if c.kind != "numeric" else "clipped or set missing")
                 for c in self.columns if c.lost]
        dropping = [c.name for c in self.columns if c.dropped_rows]
        if dropping:
            notes.append("rows dropped: missing where the schema allows none (columns "
                         + ", ".join(dropping) + ")")
        return tuple(notes)


def conform(df: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``df`` fitted to ``schema`` and a note per column changed (:func:`conform_counted`
    without its counts: :attr:`LoadReport.notes`)."""
    fitted, report = conform_counted(df, schema)
    return fitted, report.notes


def conform_counted(df: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, LoadReport]:
    """``df`` fitted to ``schema`` (module docstring) and what it cost, counted."""
    out = df.copy()
    losses: dict[str, ColumnLoss] = {}
    for col in schema.columns:
        if col.name not in out or col.kind == "id":
            continue
        out[col.name], losses[col.name] = conform_column(col, out[col.name])
    required = [c.name for c in schema.columns if not c.allow_missing and c.name in out]
    missing = out[required].isna()
    gone = missing.any(axis=1)
    for name in required:
        if name in losses:
            dropped = int(missing[name].sum())
            losses[name] = replace(losses[name], dropped_rows=dropped)
    if gone.any():
        out = out[~gone].reset_index(drop=True)
    return out, LoadReport(tuple(losses.values()), len(df), int(gone.sum()))


def conform_column(col: Column, values: pd.Series) -> tuple[pd.Series, ColumnLoss]:
    """One column fitted to its schema entry, and what that cost."""
    was = present(values).index
    s = values.where(values.notna() & values.index.isin(was))
    given = s.notna()
    unparsed = clipped = rounded = 0
    if col.kind == "categorical":
        domain = list(col.values)  # type: ignore[arg-type]
        if col.dtype == "str":
            s = s.astype(object).where(s.isna(), s.astype(str).str.strip())
            ok = s.isin(domain)
        else:
            nums = pd.to_numeric(s, errors="coerce")
            ok = nums.isin([float(v) for v in domain])
            unparsed = int((nums.isna() & given).sum())
            s = nums
        fitted = s.where(ok)
    elif col.kind == "numeric":
        nums = pd.to_numeric(s, errors="coerce")
        unparsed = int((nums.isna() & given).sum())
        lo, hi = float(col.min), float(col.max)  # type: ignore[arg-type]
        clipped = int(((nums < lo) | (nums > hi)).sum())
        fitted = nums.clip(lo, hi)
        if col.is_integer:
            inside = nums.between(lo, hi)
            rounded = int((inside & (nums != nums.round())).sum())
            fitted = fitted.round()
    else:
        stamps = parse(s, col.format)
        fitted = s.where(stamps.notna())
        unparsed = int((stamps.isna() & given).sum())
        keep = fitted.dropna()
        if col.min is not None and col.max is not None and len(keep) \
                and datetime_problems(col, keep):
            lo, hi = parse(pd.Series([col.min, col.max]), col.format)
            fitted = fitted.where((stamps >= lo) & (stamps < hi + unit_step(col)))
    loss = ColumnLoss(col.name, col.kind, present=len(was), empty=len(values) - len(was),
                      set_missing=int((fitted.isna() & given).sum()), unparsed=unparsed,
                      clipped=clipped, rounded=rounded)
    return fitted, loss


# ----- the loss, judged and said --------------------------------------------------------------
def over_limit(report: LoadReport, max_loss: float = MAX_LOSS) -> tuple[list[ColumnLoss], bool]:
    """The columns that lose more than ``max_loss`` of their present values, and whether more
    than ``max_loss`` of the rows were dropped."""
    return ([c for c in report.columns if c.share > max_loss],
            report.row_share > max_loss)


def loss_refusal(report: LoadReport | None, max_loss: float = MAX_LOSS,
                 dataset: str = "dataset") -> DPArenaError | None:
    """The refusal when loading lost more than ``max_loss`` (:func:`over_limit`): one error
    with the counts of every column over the limit and its fix; None when within it."""
    if report is None:
        return None
    columns, rows = over_limit(report, max_loss)
    if not columns and not rows:
        return None
    lines = [f"loading {dataset!r} into its proposed schema loses more than {max_loss:.2%} "
             f"(dataset.max_loss) ({COUNTS_LABEL}):"]
    culprits = list(columns)
    if rows:
        lines.append(f"{report.rows_dropped:,} of {report.rows_in:,} rows "
                     f"({report.row_share:.1%}) dropped: missing where the schema allows none "
                     "(" + ", ".join(f"{c.name}: {c.dropped_rows:,}" for c in report.columns
                                     if c.dropped_rows) + ")")
        culprits += [c for c in report.columns if c.dropped_rows and c not in culprits]
    lines += [f"{column_loss_text(c)}; fix: {column_fix(c)}" for c in culprits]
    names = ",".join(c.name for c in culprits)
    return DPArenaError("\n".join(lines),
                        f"fix each column as said (then propose the schema again), or leave "
                        f"them out with dataset.drop=[{names}], or accept the loss knowingly "
                        f"with dataset.max_loss=<share> (now {max_loss:g})")


def column_loss_text(c: ColumnLoss) -> str:
    """What one column lost, counted (private: console only)."""
    parts = []
    if c.set_missing:
        how = f"{c.unparsed:,} did not parse" if c.unparsed else ""
        if c.set_missing > c.unparsed:
            outside = ("outside its range" if c.kind == "datetime"
                       else "not among its categories")
            how += f"{', ' if how else ''}{c.set_missing - c.unparsed:,} {outside}"
        parts.append(f"{c.set_missing:,} set missing ({how})")
    if c.clipped:
        parts.append(f"{c.clipped:,} clipped into its range")
    if c.rounded:
        parts.append(f"{c.rounded:,} non-integers rounded")
    if c.dropped_rows:
        parts.append(f"{c.dropped_rows:,} rows dropped as missing here"
                     + (f" ({c.empty:,} empty in the file)" if c.empty else ""))
    lost = f"{c.lost:,} of {c.present:,} present values ({c.share:.1%}) lost: " if c.lost else ""
    return f"- {c.name} ({c.kind}): {lost}" + "; ".join(parts)


def column_fix(c: ColumnLoss) -> str:
    """What would keep the column's values (public advice: names the column and its kind)."""
    hint = f"dp-arena-schema DATA --hint '{c.name}="
    fixes = []
    if c.kind == "categorical" and c.set_missing - c.unparsed > MOSTLY_OUTSIDE * c.present:
        # most values outside a hundred categories: an identifier, which no category count keeps
        fixes.append(f"leave it out, dataset.drop=[{c.name}] (most of its values are outside "
                     "its categories, as an identifier's are)")
    if c.kind == "datetime" and c.unparsed:
        fixes.append(f"its date format as a public hint ({hint}{{kind: datetime, format: "
                     "mixed}' for several formats, or the one it is written in), or the "
                     "schema's 'format'")
    elif c.kind == "numeric" and c.unparsed:
        fixes.append(f"its kind as a public hint ({hint}{{kind: categorical}}' for text)")
    elif c.kind == "categorical" and c.unparsed:
        fixes.append(f"its kind and values as a public hint ({hint}{{kind: categorical, "
                     "values: [...]}')")
    if c.kind == "categorical" and c.set_missing > c.unparsed:
        fixes.append("more categories (dp-arena-schema --max-categories N), or its "
                     f"categories as a public hint ({hint}{{kind: categorical, values: "
                     "[...]}')")
    if c.kind == "datetime" and c.set_missing > c.unparsed:
        fixes.append(f"its date range as a public hint ({hint}{{kind: datetime, min: ..., "
                     "max: ...}')")
    if c.clipped:
        fixes.append(f"its range as a public hint ({hint}{{kind: numeric, min: ..., "
                     "max: ...}')")
    if c.rounded:
        fixes.append("a float dtype ('dtype': 'float' in the schema), or a public sample that "
                     "shows its fractions")
    if c.dropped_rows and c.empty:
        fixes.append("let it be missing ('allow_missing': true in the schema, or "
                     f"{hint}{{allow_missing: true}}')")
    return "; or ".join(fixes) or f"dataset.drop=[{c.name}]"


def loss_report_lines(report: LoadReport | None, dataset: str) -> list[str]:
    """What loading cost, for the console before any run (private counts, labelled)."""
    if report is None:
        return []
    lost = [c for c in report.columns if c.lost or c.dropped_rows]
    if not lost and not report.rows_dropped:
        return [f"dataset {dataset!r}: fitted to its proposed schema: no value set missing, "
                "clipped or rounded, no row dropped"]
    return [f"dataset {dataset!r}: what fitting it to its proposed schema cost ({COUNTS_LABEL}):",
            *[f"  {column_loss_text(c)}" for c in lost],
            f"  rows: {report.rows_dropped:,} of {report.rows_in:,} dropped "
            f"({report.row_share:.1%})"]


def schema_digest(schema: Schema) -> str:
    """The ``schema_digest`` tag: 16 hex digits of a keyed digest of the schema's canonical
    JSON (module docstring)."""
    from dp_arena.privacy.secret import keyed_digest

    canonical = json.dumps(schema.to_parameters()["schema"], sort_keys=True,
                           separators=(",", ":"), default=str)
    return keyed_digest(hashlib.sha256(canonical.encode()).digest(), "schema-digest")[:16]


def unit_step(col: Column) -> pd.Timedelta:
    unit = {"year": "366D", "month": "31D", "day": "1D", "hour": "1h", "minute": "1min"}
    return pd.Timedelta(unit.get(col.resolution or "", "0D"))


def proposal_block(source: str, spent: tuple[float, float], ledger: str | None) -> dict[str, Any]:
    """The ``proposal`` block a proposal writes into its parameters.json."""
    block: dict[str, Any] = {"source": source, "out_of_domain": "coerce"}
    if source == "dp":
        block.update(epsilon_spent=spent[0], delta_spent=spent[1], ledger=ledger)
    elif source == "private":
        block["note"] = (f"{PRIVATE_NOTE}: values and ranges were read exactly from the "
                         "private file (--from-private); runs using it are tagged and marked")
    else:
        block["note"] = "proposed from a public sample: no privacy cost"
    return block




def schema_tags(source: SchemaSource | None) -> dict[str, str]:
    """Run tags saying where the schema came from and which epsilon the run reports."""
    if source is None:
        return {}
    tags = {"schema_source": source.source}
    if source.source == "dp":
        tags["epsilon_reported"] = (
            f"epsilon_spent: the mechanism's; schema_epsilon={source.epsilon:.6g}, "
            f"schema_delta={source.delta:.3g}: the schema proposal's; epsilon_total, "
            "delta_total: both added (basic sequential composition)")
    elif source.source == "private":
        tags["schema_note"] = PRIVATE_NOTE
        tags["epsilon_reported"] = ("epsilon_spent: the mechanism's only; the schema was read "
                                    "from the private data (epsilon_total = inf)")
    return tags


def schema_numbers(source: SchemaSource | None, epsilon: float,
                   delta: float) -> dict[str, float]:
    """The schema's spend and the run's total (schema + mechanism, basic composition)."""
    if source is None or source.source == "public":
        return {}
    return {"schema_epsilon": source.epsilon, "schema_delta": source.delta,
            "epsilon_total": epsilon + source.epsilon, "delta_total": delta + source.delta}
