"""Fit the tables of ``dp_arena/data/taxi/sim_tables.py`` from the real Chicago taxi sample.

    .venv/bin/python benchmarks/fit_taxi_sim_tables.py [--out dp_arena/data/taxi/sim_tables.py]

Reads ``../shared/data/chicago-taxi-sample.csv`` (15,002 public City of Chicago trips,
2013-2016), maps it to Sprint 3 values (``calibrate_taxi_sim.real_to_sprint3``) and writes
aggregated, rounded tables: pickup x dropoff counts, day x hour counts, payment counts, tip
rates and tip shares, the recorded-zero miles share, median speed by hour, quantiles of miles,
seconds and fare by distance class (``dp_arena.data.taxi.geography.distance_class``) and the Gaussian-copula
correlations linking them (within-class normal scores); company classes per pickup zone and
8-hour block, the number of small companies, and the cash log-odds offsets by zone and
company class (a logistic regression; ``dp_arena/data/taxi/sim_mix.py``).
No trip-level row is written. Without ``--out`` the module is printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_taxi_sim import PAYMENT_CODE, real_sample_path  # noqa: E402

QUANTILE_LEVELS: tuple[float, ...] = (0.005, *np.round(np.arange(0.025, 0.976, 0.025), 3),
                                      0.995)


def area_code(values: pd.Series) -> np.ndarray:
    """Area code index 0..77 (0 = unknown)."""
    return values.fillna(0).astype(np.int64).to_numpy()


def pair_counts(raw: pd.DataFrame) -> dict[tuple[int, int], int]:
    """Trips per (pickup, dropoff) area code index."""
    pairs = pd.Series(list(zip(area_code(raw["pickup_community_area"]),
                               area_code(raw["dropoff_community_area"])))).value_counts()
    return {(int(p), int(d)): int(n) for (p, d), n in sorted(pairs.items())}


def day_hour_counts(raw: pd.DataFrame) -> list[list[int]]:
    """Trips per (day 0 = Monday .. 6, hour)."""
    day = (raw["trip_start_day"].astype(np.int64) + 5) % 7
    table = pd.crosstab(day, raw["trip_start_hour"]).reindex(index=range(7), columns=range(24),
                                                             fill_value=0)
    return table.to_numpy().astype(int).tolist()


def payment_counts(raw: pd.DataFrame) -> dict[int, int]:
    """Trips per schema payment code."""
    codes = raw["payment_type"].map(PAYMENT_CODE).fillna(-1).astype(np.int64)
    return {int(k): int(v) for k, v in sorted(codes.value_counts().items())}


def tip_rates(raw: pd.DataFrame) -> dict[int, float]:
    """Share of trips with whole-dollar tips > 0 per payment code."""
    codes = raw["payment_type"].map(PAYMENT_CODE).fillna(-1).astype(np.int64)
    rates = (np.rint(raw["tips"]) > 0).groupby(codes).mean()
    return {int(k): round(float(v), 3) for k, v in sorted(rates.items())}


def tip_share_quantiles(raw: pd.DataFrame) -> list[float]:
    """Quantiles of tips / fare over tipped trips with a fare of at least $3."""
    tipped = raw[(np.rint(raw["tips"]) > 0) & (raw["fare"] >= 3)]
    return [round(float(q), 3) for q in np.quantile(tipped["tips"] / tipped["fare"],
                                                    QUANTILE_LEVELS)]


def hourly_mph(raw: pd.DataFrame) -> list[float]:
    """Median speed (mph) by start hour over trips with > 0.5 mile and >= 60 s."""
    ok = raw[(raw["trip_miles"] > 0.5) & (raw["trip_seconds"] >= 60)]
    speed = ok["trip_miles"] / (ok["trip_seconds"] / 3600.0)
    by_hour = speed.groupby(ok["trip_start_hour"]).median().reindex(range(24))
    return [round(float(v), 1) for v in by_hour.interpolate().bfill().ffill()]


def miles_quantiles(raw: pd.DataFrame) -> dict[int, list[float]]:
    """Quantiles of recorded miles (> 0) per distance class of the trip's area pair."""
    from dp_arena.data.taxi.geography import distance_class

    cls = distance_class(area_code(raw["pickup_community_area"]),
                         area_code(raw["dropoff_community_area"]))
    miles = raw["trip_miles"].to_numpy()
    out = {}
    for c in np.unique(cls):
        values = miles[(cls == c) & (miles > 0)]
        out[int(c)] = [round(float(q), 2) for q in np.quantile(values, QUANTILE_LEVELS)]
    return out


def class_quantiles(raw: pd.DataFrame, column: str) -> dict[int, list[float]]:
    """Quantiles of a column's known values per distance class of the trip's area pair."""
    from dp_arena.data.taxi.geography import distance_class

    cls = distance_class(area_code(raw["pickup_community_area"]),
                         area_code(raw["dropoff_community_area"]))
    values = raw[column].to_numpy(dtype=float)
    out = {}
    for c in np.unique(cls):
        known = values[(cls == c) & np.isfinite(values)]
        out[int(c)] = [round(float(q), 2) for q in np.quantile(known, QUANTILE_LEVELS)]
    return out


def fare_copula(raw: pd.DataFrame) -> tuple[float, float, float]:
    """(a, b, residual sd) of the least-squares fit z_fare ~ a z_miles + b z_seconds of
    within-class normal scores (trips with recorded miles > 0 and known seconds)."""
    from dp_arena.data.taxi.geography import distance_class

    cls = distance_class(area_code(raw["pickup_community_area"]),
                         area_code(raw["dropoff_community_area"]))
    ok = (raw["trip_miles"].to_numpy() > 0) & np.isfinite(raw["trip_seconds"].to_numpy())
    scores = []
    for c in np.unique(cls[ok]):
        part = raw[ok & (cls == c)]
        scores.append(np.column_stack([normal_scores(part[k].to_numpy())
                                       for k in ("trip_miles", "trip_seconds", "fare")]))
    z = np.vstack(scores)
    coef, *_ = np.linalg.lstsq(z[:, :2], z[:, 2], rcond=None)
    resid = z[:, 2] - z[:, :2] @ coef
    return round(float(coef[0]), 3), round(float(coef[1]), 3), round(float(resid.std()), 3)


def normal_scores(values: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks of ``values`` (ties averaged)."""
    from scipy.stats import norm, rankdata

    return norm.ppf((rankdata(values) - 0.5) / len(values))


def miles_seconds_copula(raw: pd.DataFrame) -> float:
    """Correlation of the normal scores of miles and seconds within distance classes (trips
    with recorded miles > 0 and known seconds): the Gaussian copula linking the two draws."""
    from dp_arena.data.taxi.geography import distance_class

    cls = distance_class(area_code(raw["pickup_community_area"]),
                         area_code(raw["dropoff_community_area"]))
    ok = (raw["trip_miles"].to_numpy() > 0) & np.isfinite(raw["trip_seconds"].to_numpy())
    zm, zs = [], []
    for c in np.unique(cls[ok]):
        part = raw[ok & (cls == c)]
        zm.append(normal_scores(part["trip_miles"].to_numpy()))
        zs.append(normal_scores(part["trip_seconds"].to_numpy()))
    return round(float(np.corrcoef(np.concatenate(zm), np.concatenate(zs))[0, 1]), 3)


def company_classes(raw: pd.DataFrame) -> np.ndarray:
    """Company class per trip (``taxi_sim_mix``): 0 = no company recorded, 1..R = the named
    companies with at least ``MIN_NAMED_TRIPS`` trips by trips, R + 1 = the other (small)."""
    from dp_arena.data.taxi.sim_mix import MIN_NAMED_TRIPS

    names = raw["company"].astype("string").str.strip()
    names = names.mask(names == "")
    counts = names.value_counts()
    named = [n for n, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
             if c >= MIN_NAMED_TRIPS]
    lookup = {name: k for k, name in enumerate(named, start=1)}
    classes = names.map(lookup).fillna(len(named) + 1).to_numpy(dtype=np.int64)
    return np.where(names.isna().to_numpy(), 0, classes)


def zones_blocks(raw: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Pickup zone (``taxi_sim_mix.pickup_zone``) and 8-hour block of each trip."""
    from dp_arena.data.taxi.sim_mix import pickup_zone

    zone = pickup_zone(area_code(raw["pickup_community_area"]))
    return zone, raw["trip_start_hour"].to_numpy(dtype=np.int64) // 8


def company_counts(raw: pd.DataFrame) -> tuple[list[int], dict[tuple[int, int], list[int]]]:
    """(trips per company class city-wide, trips per class per (zone, block))."""
    from dp_arena.data.taxi.sim_mix import N_BLOCKS, ZONE_NAMES

    classes = company_classes(raw)
    n_classes = int(classes.max()) + 1
    zone, block = zones_blocks(raw)
    city = np.bincount(classes, minlength=n_classes).tolist()
    table = {}
    for z in range(len(ZONE_NAMES)):
        for b in range(N_BLOCKS):
            here = (zone == z) & (block == b)
            table[(z, b)] = np.bincount(classes[here], minlength=n_classes).tolist()
    return city, table


def small_company_codes(raw: pd.DataFrame) -> int:
    """Number K of equally likely small companies whose expected number of distinct ones
    among the sample's small-company trips, ``K (1 - (1 - 1/K)^m)``, is the number seen."""
    classes = company_classes(raw)
    small = classes == classes.max()
    m = int(small.sum())
    seen = int(raw.loc[small, "company"].nunique())
    k = seen
    while k < 1000 and k * (1 - (1 - 1 / k) ** m) < seen:
        k += 1
    return k


def logistic_fit(design: np.ndarray, y: np.ndarray, steps: int = 50) -> np.ndarray:
    """Maximum-likelihood logistic regression coefficients (Newton / IRLS)."""
    beta = np.zeros(design.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        hessian = design.T @ (design * (p * (1 - p))[:, None])
        beta += np.linalg.solve(hessian, design.T @ (y - p))
    return beta


def cash_offsets(raw: pd.DataFrame) -> tuple[list[float], list[float]]:
    """(zone offsets, company-class offsets) of a logistic regression of paying cash on
    pickup zone and company class (reference: zone 0, class 0; classes with fewer than
    ``MIN_CASH_CLASS_TRIPS`` trips share one offset)."""
    from dp_arena.data.taxi.sim_mix import MIN_CASH_CLASS_TRIPS, ZONE_NAMES

    classes = company_classes(raw)
    zone, _ = zones_blocks(raw)
    counts = np.bincount(classes)
    own = [c for c in range(1, len(counts)) if counts[c] >= MIN_CASH_CLASS_TRIPS]
    pooled = [c for c in range(1, len(counts)) if c not in own]
    columns = [np.ones(len(raw))]
    columns += [(zone == z).astype(float) for z in range(1, len(ZONE_NAMES))]
    columns += [(classes == c).astype(float) for c in own]
    columns += [np.isin(classes, pooled).astype(float)]
    y = (raw["payment_type"] == "Cash").to_numpy(dtype=float)
    beta = logistic_fit(np.column_stack(columns), y)
    zone_offsets = [0.0, *beta[1:len(ZONE_NAMES)]]
    by_class = dict(zip(own, beta[len(ZONE_NAMES):len(ZONE_NAMES) + len(own)]))
    class_offsets = [0.0] + [by_class.get(c, beta[-1]) for c in range(1, len(counts))]
    return ([round(float(v), 3) for v in zone_offsets],
            [round(float(v), 3) for v in class_offsets])


def shares(raw: pd.DataFrame) -> dict[str, float]:
    """Shares of recorded-zero miles and of unknown seconds."""
    return {
        "MILES_ZERO_SHARE": round(float((raw["trip_miles"] == 0).mean()), 4),
        "SECONDS_UNKNOWN_SHARE": round(float(raw["trip_seconds"].isna().mean()), 4),
    }


def wrap(text: str | list[str], indent: str = "    ", width: int = 96) -> str:
    """Tokens (or a text split at ', ') joined by ', ' in lines of at most ``width``."""
    tokens = text.split(", ") if isinstance(text, str) else text
    lines, line = [], indent
    for i, token in enumerate(tokens):
        piece = token if i == 0 else ", " + token
        if len(line) + len(piece) > width and line.strip():
            lines.append(line + ",")
            line = indent + token
        else:
            line += piece
    lines.append(line)
    return "\n".join(lines)


def render(raw: pd.DataFrame) -> str:
    """The text of the tables module."""
    mph = hourly_mph(raw)
    parts = [
        '"""Tables of the ``taxi_sim`` simulator, fitted from real Chicago taxi trips.\n\n'
        "GENERATED by ``benchmarks/fit_taxi_sim_tables.py`` from the 15,002 trips of\n"
        "``chicago-taxi-sample.csv`` (City of Chicago Taxi Trips open data, 2013-2016, as\n"
        "shipped in tensorflow/tfx, Apache-2.0): aggregated counts, shares, quantiles and fits,\n"
        "no trip-level rows. Do not edit by hand; rerun the script.\n"
        'Area codes are indices 0..77 (0 = unknown / outside the city), days 0 = Monday.\n"""\n',
        f"N_REAL_TRIPS = {len(raw)}\n",
        "#: Real trips per (pickup, dropoff) area code index.\n"
        "PAIR_COUNTS: dict[tuple[int, int], int] = {\n"
        + wrap([f"({p}, {d}): {n}" for (p, d), n in pair_counts(raw).items()]) + ",\n}\n",
        "#: Real trips per day of week (rows, 0 = Monday) and start hour (columns).\n"
        "DAY_HOUR_COUNTS: tuple[tuple[int, ...], ...] = (\n"
        + "\n".join(wrap(repr(tuple(r))[1:-1]).replace("    ", "    (", 1) + "),"
                    for r in day_hour_counts(raw)) + "\n)\n",
        f"#: Real trips per schema payment code.\nPAYMENT_COUNTS: dict[int, int] = "
        f"{payment_counts(raw)!r}\n",
        f"#: Share of trips with tips > 0 per payment code.\nTIP_RATE: dict[int, float] = "
        f"{tip_rates(raw)!r}\n",
        "#: Levels of the quantile tables below.\nQUANTILE_LEVELS: tuple[float, ...] = (\n"
        + wrap(", ".join(str(float(q)) for q in QUANTILE_LEVELS)) + ",\n)\n",
        "#: Quantiles of tips / fare over tipped trips.\n"
        "TIP_SHARE_QUANTILES: tuple[float, ...] = (\n"
        + wrap(", ".join(map(str, tip_share_quantiles(raw)))) + ",\n)\n",
        "#: Quantiles of recorded miles (> 0) per distance class (``dp_arena.data.taxi.geography.distance_class``).\n"
        "MILES_QUANTILES: dict[int, tuple[float, ...]] = {\n"
        + "".join(f"    {c}: (\n" + wrap(", ".join(map(str, q)), indent="        ") + ",\n    ),\n"
                  for c, q in miles_quantiles(raw).items()) + "}\n",
        *(f"#: Quantiles of known {column} per distance class.\n"
          f"{column.upper()}_QUANTILES: dict[int, tuple[float, ...]] = {{\n"
          + "".join(f"    {c}: (\n" + wrap(", ".join(map(str, q)), indent="        ")
                    + ",\n    ),\n" for c, q in class_quantiles(raw, column).items()) + "}\n"
          for column in ("trip_seconds", "fare")),
        "#: Fare normal score ~ a * miles score + b * seconds score, residual sd.\n"
        "FARE_COPULA_MILES, FARE_COPULA_SECONDS, FARE_COPULA_RESIDUAL = "
        f"{', '.join(map(str, fare_copula(raw)))}\n",
        "#: Correlation of miles and seconds normal scores within distance classes.\n"
        f"MILES_SECONDS_COPULA = {miles_seconds_copula(raw)}\n",
        "#: Median speed (mph) by start hour.\nHOURLY_MPH: tuple[float, ...] = (\n"
        + wrap(", ".join(map(str, mph))) + ",\n)\n",
        "".join(f"{k} = {v}\n" for k, v in shares(raw).items()),
        *company_tables(raw),
    ]
    return "\n".join(parts)


def company_tables(raw: pd.DataFrame) -> list[str]:
    """The text of the company and cash tables (``taxi_sim_mix``)."""
    city, table = company_counts(raw)
    zone_offsets, class_offsets = cash_offsets(raw)
    return [
        "#: Real trips per company class (0 = none recorded, 1..R named companies with at least\n"
        "#: 10 trips by trips, R + 1 = the small companies pooled), city-wide.\n"
        f"COMPANY_CLASS_TRIPS: tuple[int, ...] = {tuple(city)!r}\n",
        "#: Real trips per company class by (pickup zone, 8-hour block) (``taxi_sim_mix``).\n"
        "COMPANY_COUNTS_BY_ZONE_BLOCK: dict[tuple[int, int], tuple[int, ...]] = {\n"
        + "".join(f"    {k}: {tuple(v)!r},\n" for k, v in table.items()) + "}\n",
        "#: Equally likely small companies giving the sample's count of distinct ones.\n"
        f"N_SMALL_COMPANIES = {small_company_codes(raw)}\n",
        "#: Log-odds offsets of paying cash by pickup zone and by company class (logistic fit).\n"
        f"CASH_ZONE_OFFSETS: tuple[float, ...] = {tuple(zone_offsets)!r}\n"
        "CASH_CLASS_OFFSETS: tuple[float, ...] = (\n"
        + wrap(", ".join(map(str, class_offsets))) + ",\n)\n",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None, help="write the module here instead of printing")
    args = parser.parse_args(argv)
    text = render(pd.read_csv(real_sample_path()))
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
