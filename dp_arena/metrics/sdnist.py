"""``sdnist``: NIST SDNist's k-marginal score and unique-exact-match share, computed as SDNist
v2.4 (PyPI ``sdnist``; the rule of v2.3 that scored the CRC archive) computes them, so a row
lands on the field's published scale. Written for the ACS excerpt (``dataset=acs``).

Steps, each after the SDNist file it follows:

1. ``N`` is a value of its own (``report/dataset/transform.py``); PUMA and INDP never enter
   a marginal (``metrics/kmarginal.py``).
2. AGEP, POVPIP, PINCP, PWGTP, WGTP: the real values' percentile rank (ties averaged) in 20
   bins, ``int(20 * rank)`` (POVPIP's 501 ranked with the rest: SDNist's exception for it
   compares with the string '501', which never matches once its validation has cast the
   column to numbers); a synthetic value goes to the bin whose
   real maximum first reaches it, above the last one to the last bin, below the first maximum
   when bin 0 is empty left as it is; ``N`` is -1 (``percentile_rank_target``,
   ``percentile_rank_synthetic``, ``add_bin_for_NA`` in ``report/dataset/binning.py``).
3. DENSITY: SDNist's log-scale bins (``bin_density``, same file).
4. Every pair of the remaining features (sorted), with PUMA prepended when present (SDNist's
   ``group_features``): marginal densities, ``score = 500 * (2 - mean L1)`` = 1000 x (1 - mean
   TVD); per PUMA, the densities' L1 inside the PUMA, capped at its real share and scaled by it
   (``KMarginal._compute_score_grouped``): ``puma_min`` is the worst PUMA.
5. Unique exact matches: the share of real records unique in the real table that appear in
   the synthetic one (``metrics/unique_exact_matches.py``), in percent; lower is better.

Outputs: scores only (all private: functions of the real table).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset

from .base import Metric, MetricResult

#: SDNist's percentile-ranked columns (``numeric_features`` in report/dataset/__init__.py)
RANKED = ("AGEP", "POVPIP", "PINCP", "PWGTP", "WGTP")
#: columns SDNist's KMarginal leaves out of its pairs
NOT_PAIRED = ("PUMA", "INDP")
GROUP = "PUMA"
N_BINS = 20
NA_BIN = -1


def is_na(values: pd.Series) -> np.ndarray:
    """NIST's ``N``: the string, or NaN in a numeric column."""
    return (values.isna() | (values.astype(str) == "N")).to_numpy()


def as_ints(values: pd.Series) -> np.ndarray:
    """Present values as SDNist reads them (``pd.to_numeric(...).astype(int)``: truncated)."""
    return pd.to_numeric(values).to_numpy().astype(np.int64)


def real_bins(real: pd.Series) -> np.ndarray:
    """Bins of the real values (step 2, target side), as an object array (N: -1)."""
    out = np.full(len(real), NA_BIN, dtype=object)
    kept = ~is_na(real)
    pct = pd.Series(as_ints(real[kept])).rank(pct=True).to_numpy()
    out[kept] = np.where(pct < 1, np.floor(N_BINS * pct), N_BINS - 1).astype(np.int64)
    return out


def synthetic_bins(synth: pd.Series, real: pd.Series, binned_real: np.ndarray) -> np.ndarray:
    """Bins of synthetic values by the real bins' maxima (step 2, synthetic side)."""
    out = np.full(len(synth), NA_BIN, dtype=object)
    present = ~is_na(synth)
    values = as_ints(synth[present])
    labels = values.astype(object)
    real_present = ~is_na(real)
    real_values = np.zeros(len(real), dtype=np.int64)
    real_values[real_present] = as_ints(real[real_present])
    bins = sorted(set(binned_real.tolist()))
    last, high = bins[-1], 0
    for b in bins:
        if b == NA_BIN:
            continue
        low, top = high, real_values[binned_real == b].max()
        if b == 0:
            high = top
            labels[values <= high] = b
        elif b != last:
            high = top
            labels[(values > low) & (values <= high)] = b
        else:
            labels[values > low] = b
    out[present] = labels
    return out


def density_bins(values: pd.Series, max_density: float) -> np.ndarray:
    """SDNist's log-scale DENSITY bins (step 3)."""
    n_max = max_density + 500
    edges = [0, 150] + list(np.logspace(1, np.log10(n_max), num=N_BINS + 1)[8:])
    v = values.astype(float).clip(lower=0).to_numpy().copy()
    v[v > n_max] = n_max - 100
    return pd.cut(v, bins=edges, labels=False).astype(np.int64)


def sdnist_view(real: pd.DataFrame, synth: pd.DataFrame,
                max_density: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables as SDNist's k-marginal reads them (steps 1-3): one label per cell, equal
    labels exactly where SDNist's are."""
    r_out, s_out = {}, {}
    for col in sorted(real.columns):
        r, s = real[col].reset_index(drop=True), synth[col].reset_index(drop=True)
        if col in RANKED:
            r_out[col] = real_bins(r)
            s_out[col] = synthetic_bins(s, r, r_out[col])
        elif col == "DENSITY" and max_density is not None:
            r_out[col], s_out[col] = density_bins(r, max_density), density_bins(s, max_density)
        else:
            r_out[col] = np.where(is_na(r), "N", r.astype(str))
            s_out[col] = np.where(is_na(s), "N", s.astype(str))
    return pd.DataFrame(r_out), pd.DataFrame(s_out)


def marginal_pairs(columns: list[str]) -> list[tuple[str, str]]:
    """SDNist's pairs: every pair of the sorted columns but PUMA and INDP."""
    cols = sorted(c for c in columns if c not in NOT_PAIRED)
    return [(cols[0], cols[0])] if len(cols) == 1 else list(itertools.combinations(cols, 2))


def densities(frame: pd.DataFrame, cols: list[str]) -> pd.Series:
    return frame.groupby(cols).size() / len(frame)


def kmarginal_scores(real: pd.DataFrame, synth: pd.DataFrame) -> tuple[float, pd.Series | None]:
    """``(score, per-group scores)`` of binned tables (step 4); no groups without PUMA."""
    group = [GROUP] if GROUP in real.columns else []
    pairs = marginal_pairs(list(real.columns))
    total = 0.0
    group_n = real.groupby(group).size() if group else None
    group_sum = group_n * 0.0 if group else None
    for pair in pairs:
        cols = group + list(pair)
        t_den = densities(real, cols)
        diff = t_den.subtract(densities(synth, cols), fill_value=0).abs()
        total += diff.sum()
        if group:
            t_sum, d_sum = t_den.groupby(group).sum(), diff.groupby(group).sum()
            capped = t_sum.where(t_sum <= d_sum).fillna(d_sum)
            group_sum = group_sum + capped * len(real) / group_n
    score = (2 - total / len(pairs)) * 500
    return float(score), ((1 - group_sum / len(pairs)) * 1000 if group else None)


def unique_exact_match_share(real: pd.DataFrame, synth: pd.DataFrame) -> float:
    """Percent of the real table's unique records found in the synthetic table (step 5)."""
    cols = sorted(real.columns)
    r = real[cols].astype(str)
    unique = r[~r.duplicated(keep=False)]
    if not len(unique):
        return 0.0
    matched = unique.merge(synth[cols].astype(str).drop_duplicates(), how="inner", on=cols)
    return 100.0 * len(matched) / len(unique)


@dataclass
class SDNist(Metric):
    name: ClassVar[str] = "sdnist"
    headline: ClassVar[str] = "kmarginal"
    #: the k-marginal scores rank higher-is-better; the exact-match share lower-is-better
    lower_is_better: ClassVar[bool] = False
    other_direction: ClassVar[tuple[str, ...]] = ("unique_exact_match_pct",)
    requires: ClassVar[str] = ("columns SDNist can bin: categorical, or ACS's ranked amounts and "
                               "DENSITY (dataset=acs)")

    def applies_to(self, data: Dataset) -> bool:
        return all(c.kind == "categorical" or c.name in RANKED + ("DENSITY",)
                   for c in data.schema.columns if c.kind != "id")

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        cols = data.schema.attributes
        max_density = data.schema["DENSITY"].max if "DENSITY" in cols else None
        real_b, synth_b = sdnist_view(data.private[cols], synthetic[cols], max_density)
        score, per_group = kmarginal_scores(real_b, synth_b)
        scores = {"kmarginal": score, "unique_exact_match_pct": unique_exact_match_share(
            plain_values(data.private[cols], max_density),
            plain_values(synthetic[cols], max_density))}
        if per_group is not None:
            scores["kmarginal_puma_min"] = float(per_group.min())
            scores["kmarginal_puma_mean"] = float(per_group.mean())
        return MetricResult(scores=scores)


def plain_values(frame: pd.DataFrame, max_density: float | None) -> pd.DataFrame:
    """Cells as text with NIST's ``N`` for NaN, numbers without a spurious ``.0``, DENSITY in
    its bins (SDNist bins it in place before matching)."""
    out = {}
    for c in frame.columns:
        s = frame[c]
        if c == "DENSITY" and max_density is not None:
            s = pd.Series(density_bins(s, max_density))
        elif pd.api.types.is_float_dtype(s):
            s = s.map(lambda v: "N" if pd.isna(v) else (str(int(v)) if float(v).is_integer()
                                                        else str(v)))
        out[c] = s.astype(str)
    return pd.DataFrame(out)
