"""Benchmark: the Duke report's comparisons with ``rdt_report`` on Adult, under the report's
epsilon-per-tree reading and under the total-budget adaptation, side by side (not a test).

    .venv/bin/python benchmarks/bench_rdt_report.py [--quick] [--trials 10]

``--quick``: 2 trials (about 100 s); the full run (10 trials) about 8 minutes on a shared core.

Source: ``../shared/seeds/004_*.txt`` (section 6). Adult (shared data; skipped with the reason
when absent) is split by ``public_fraction=0.5`` (split seed 0): the public half gives the
targets and the structure data, the private half is AD and what the scores compare against.
P = sex then race, pure DP (delta 0), ``gdp`` ledger.

Adult's stand-ins for the report's columns: Pay = ``hours-per-week`` (bands 10 and 25 codes wide
for the report's $10,000 and $25,000), Agency = ``native-country``, Occupation =
``occupation``. Settings (``dp_arena/conf/mechanism/rdt_report.yaml`` plus one change at a time):
- ``M1``: collapse Method 1 as the report words it (only Pay regrouped, nothing else adjusted:
  :func:`dp_arena.mechanisms.rdt.attributes.report_collapse_method`); ``M2``: Method 2 exactly;
- ``M1 m10``: ten trees; ``M1 nB2000``: n_B = 2000;
- ``M1 agency hi`` / ``M2 agency hi``: Agency's split weight 10 (others 1; the report's
  values are in its figure tables, not its text: "low" is read as 1, "high" as 10);
- ``M2 occupation 60``: Occupation's split weight 60 (the report's Figure 13), others 1.

Readings: ``per tree`` (the report's: every tree spends epsilon, the run's budget and spend
are ``m x 2 x epsilon``) and ``total`` (this project's adaptation: the run's budget is epsilon,
divided over the ``m x 2`` trees). The report's epsilon comparison is 0.1 vs 0.4; every other
comparison is at epsilon 0.1.

Each run is seeded (rng ``default_rng([0, trial])``, the releaser's sampler
``default_rng([1, trial])``), so a comparison is paired by trial: printed is the difference of
the means (B - A) with its 95% paired t-interval, for ``logreg_coef_corr``, the (sex, race,
attribute) panels' ``joint3_prop_corr`` and ``assoc3_slope_corr`` (slopes, the report's panel
(c)), and the slope correlation over Agency's and Occupation's cells alone; then whether each of
the report's conclusions holds (a "no difference" claim holds when every interval contains 0, an
"improves" claim when the named score's interval is above 0). Also printed: the share of leaves
that leafFreqMin sends to their parent (structure-data count below 10) and the spend.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.resources import config_dir
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.rdt.attributes import report_collapse_method
from dp_arena.metrics.duke_utility import DukeUtility, slope_scores

PRIVATE = ("sex", "race")
PAY, AGENCY, OCCUPATION = "hours-per-week", "native-country", "occupation"
PAY_WIDTHS = (10, 25)
SCORES = ("logreg_coef_corr", "joint3_prop_corr", "assoc3_slope_corr", "slope_agency",
          "slope_occupation")
READINGS = ("per tree", "total")


def report_preset() -> dict:
    values = yaml.safe_load((config_dir() / "mechanism" / "rdt_report.yaml").read_text())
    values.pop("name")
    return values


def settings() -> dict[str, dict]:
    """The report's settings on Adult (``epsilon_per_tree`` is set per run)."""
    base = report_preset()
    m1 = {**base, **report_collapse_method(1, PAY, AGENCY, OCCUPATION, PAY_WIDTHS)}
    m2 = {**base, **report_collapse_method(2, PAY, AGENCY, OCCUPATION, PAY_WIDTHS)}
    return {
        "M1": m1, "M2": m2,
        "M1 m10": {**m1, "m": 10},
        "M1 nB2000": {**m1, "n_B": 2000},
        "M1 agency hi": {**m1, "attribute_weights": {AGENCY: 10.0}},
        "M2 agency hi": {**m2, "attribute_weights": {AGENCY: 10.0}},
        "M2 occupation 60": {**m2, "attribute_weights": {OCCUPATION: 60.0}},
    }


@dataclass(frozen=True)
class Claim:
    """One of the report's conclusions: setting B against A at epsilon ``eps_a`` / ``eps_b``;
    ``kind`` ``same`` (no significant difference on any score) or ``better`` (B above A on
    ``scores``); ``not_better`` (B not significantly above A on any score)."""

    text: str
    a: str
    b: str
    kind: str
    scores: tuple[str, ...] = SCORES[:3]
    eps_a: float = 0.1
    eps_b: float = 0.1


CLAIMS = (
    Claim("epsilon 0.1 vs 0.4: no significant difference (n_B 1000; Figure 8)", "M1", "M1",
          "same", eps_b=0.4),
    Claim("5 vs 10 trees: differences not significant (Figure 5)", "M1", "M1 m10", "same"),
    Claim("adding trees beyond five is not helpful (Figure 5)", "M1", "M1 m10", "not_better"),
    Claim("Method 2 improves Agency and Occupation slopes (Figure 4)", "M1", "M2", "better",
          ("slope_agency", "slope_occupation")),
    Claim("Agency weight low vs high: a significant difference with Method 2 (Figure 6)", "M2",
          "M2 agency hi", "differ", ("assoc3_slope_corr", "slope_agency")),
    Claim("... but not when Pay is the sole collapsed attribute, Method 1 (Figure 7)", "M1",
          "M1 agency hi", "same", ("assoc3_slope_corr", "slope_agency")),
    Claim("Occupation weight 60 improves the fit for occupations (Figures 12-14)", "M2",
          "M2 occupation 60", "better", ("slope_occupation", "logreg_coef_corr")),
    Claim("n_B 1000 vs 2000: no significant difference (Figure 9)", "M1", "M1 nB2000", "same"),
)


def budget_for(reading: str, params: dict, eps: float) -> tuple[dict, Budget]:
    """The run's settings and budget under one reading of the report's epsilon."""
    if reading == "per tree":
        return {**params, "epsilon_per_tree": eps}, Budget(params["m"] * len(PRIVATE) * eps, 0.0)
    return {**params, "epsilon_per_tree": None}, Budget(eps, 0.0)


def one_run(data: Dataset, params: dict, reading: str, eps: float, trial: int,
            metric: DukeUtility) -> dict:
    params, budget = budget_for(reading, params, eps)
    ledger = Ledger(budget, "gdp")
    release = Releaser(ledger, NumpySampler(np.random.default_rng([1, trial])))
    mech = make_mechanism("rdt", params)
    fit = mech.fit(data, budget, release, np.random.default_rng([0, trial]))  # type: ignore[attr-defined]
    result = metric.score(data, fit.synthetic)
    cells = result.tables["duke_private_combinations"]
    leaves = [(t.sd_count[t.is_leaf] < mech.leaf_min_count).mean()  # type: ignore[attr-defined]
              for f in fit.forests.values() for t in f.trees]
    return {**{k: result.scores[k] for k in SCORES[:3]},
            "slope_agency": slope_scores(cells[cells["attribute"] == AGENCY])["assoc_slope_corr"],
            "slope_occupation": slope_scores(
                cells[cells["attribute"] == OCCUPATION])["assoc_slope_corr"],
            "leaves_to_parent": float(np.mean(leaves)), "eps_spent": ledger.spent()[0]}


def paired(a: pd.Series, b: pd.Series) -> tuple[float, float, float]:
    """Mean of B - A over paired trials and its 95% t-interval."""
    d = b.to_numpy() - a.to_numpy()
    n = len(d)
    half = float(stats.t.ppf(0.975, n - 1)) * d.std(ddof=1) / np.sqrt(n) if n > 1 else np.inf
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def verdict(claim: Claim, intervals: dict[str, tuple[float, float, float]]) -> str:
    lows = {k: intervals[k][1] for k in claim.scores}
    highs = {k: intervals[k][2] for k in claim.scores}
    if claim.kind == "same":
        ok = all(lows[k] <= 0 <= highs[k] for k in claim.scores)
    elif claim.kind == "not_better":
        ok = all(lows[k] <= 0 for k in claim.scores)
    elif claim.kind == "differ":
        ok = any(lows[k] > 0 or highs[k] < 0 for k in claim.scores)
    else:
        ok = all(lows[k] > 0 for k in claim.scores)
    return "holds" if ok else "does not hold"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help="2 trials (a smoke run: intervals on 1 degree of freedom)")
    args = parser.parse_args()
    try:
        data = load_shared_dataset("adult", public_fraction=0.5)
    except (OSError, DPArenaError) as exc:  # the shared data folder is optional
        print(f"skipped: Adult is not available ({exc})")
        return
    trials = 2 if args.quick else args.trials
    metric = DukeUtility(private_attributes=list(PRIVATE), figures=False)
    chosen = settings()
    wanted = sorted({(c.a, c.eps_a) for c in CLAIMS} | {(c.b, c.eps_b) for c in CLAIMS})
    print(f"adult: half public; {trials} trials; {len(wanted)} settings x 2 readings")
    rows, started = [], time.perf_counter()
    for reading in READINGS:
        for label, eps in wanted:
            for trial in range(trials):
                rows.append({"reading": reading, "setting": label, "epsilon": eps,
                             "trial": trial,
                             **one_run(data, chosen[label], reading, eps, trial, metric)})
            print(f"  {reading:8s} eps={eps:g} {label}: {time.perf_counter() - started:.0f}s",
                  flush=True)
    frame = pd.DataFrame(rows)

    print(f"\nmeans over {trials} trials, per reading (spent: the ledger's total)")
    summary = frame.groupby(["reading", "setting", "epsilon"], sort=False).agg(
        **{k: (k, "mean") for k in (*SCORES, "leaves_to_parent")}, spent=("eps_spent", "max"))
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.float_format", "{:.3f}".format):
        print(summary.to_string())

    print("\nthe report's conclusions (B - A, mean [95% paired CI])")
    for claim in CLAIMS:
        print(f"- {claim.text}: A = {claim.a} @ {claim.eps_a:g}, B = {claim.b} @ {claim.eps_b:g}")
        for reading in READINGS:
            part = frame[frame["reading"] == reading]
            a = part[(part["setting"] == claim.a) & (part["epsilon"] == claim.eps_a)]
            b = part[(part["setting"] == claim.b) & (part["epsilon"] == claim.eps_b)]
            intervals = {k: paired(a[k], b[k]) for k in SCORES}
            shown = ", ".join(f"{k} {m:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                              for k, (m, lo, hi) in intervals.items() if k in claim.scores)
            print(f"    {reading:8s}: {verdict(claim, intervals):13s} {shown}")


if __name__ == "__main__":
    main()
