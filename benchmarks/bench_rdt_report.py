"""Benchmark: the Duke report's comparisons with ``rdt`` on Adult (not a test).

    .venv/bin/python benchmarks/bench_rdt_report.py [--trials 5] [--eps 0.1 0.4]
        [--only report m10 ...]

Adult (shared data; skipped with the reason when absent) is split by ``public_fraction=0.5``
(split seed 0): the public half gives the targets and the structure data, the private half is
AD and what the scores compare against. P = sex then race, pure DP (delta 0), ``gdp`` ledger.

Settings (each at every ``--eps``, ``--trials`` trials, rng ``default_rng([0, trial])`` and
the releaser's sampler ``default_rng([1, trial])``: fixed so the figures repeat):
- ``report``: ``conf/mechanism/rdt_report.yaml`` (m = 5, n_B = 1000, depth = all, no
  shrinkage, leafFreqMin 10, synthesized-sex chain) with collapse **Method 1** on Adult's
  analogues of the report's columns: native-country (Agency) and occupation (Occupation)
  values with fewer than 500 / 200 structure records combined, age and hours-per-week (Pay)
  regrouped in bands 10 codes wide; other wide columns (fnlwgt, capital-gain/loss) by the
  generic rule;
- one change at a time, the report's comparisons: ``method2`` (bands 25 codes wide), ``m10``,
  ``weights`` (split "sampling weights" on: ``attribute_weights=sd_association``), ``nB2000``;
  and the readings this project changed: ``authentic`` (``chain=authentic``), ``half_depth``
  (``max_depth=null``), ``shrink`` (``shrinkage=1``);
- ``default``: ``conf/mechanism/rdt.yaml`` as shipped, ``default_synth`` (its
  ``chain=synthesized``) and ``default_weights`` (its ``attribute_weights=sd_association``);
- ``marginal``: the noisy-marginal baseline of ``bench_rdt_adult.py`` (ignores X).
The epsilon comparison (0.1 vs 0.4) is every row at both budgets.

Printed per (epsilon, setting): the mean over trials and a 95% t-interval half-width of
``logreg_coef_corr``, the (sex, race, attribute) panels' ``joint3_prop_corr``,
``assoc3_slope_corr`` and ``level3_corr_corr``, and the accuracy of the synthesized sex and
race against the public targets' true labels; then the spend (max over runs, <= epsilon).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from harness.data.datasets import Dataset, load_shared_dataset
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.release import NumpySampler, Releaser
from mechanisms import make_mechanism
from metrics.duke_utility import DukeUtility, label_accuracy

sys.path.insert(0, str(Path(__file__).parent))
from bench_rdt_adult import noisy_marginal_baseline  # noqa: E402

CONF = Path(__file__).resolve().parents[1] / "conf" / "mechanism"
PRIVATE = ("sex", "race")
SHOWN = ("logreg_coef_corr", "joint3_prop_corr", "assoc3_slope_corr", "level3_corr_corr",
         "acc_sex", "acc_race")
METHOD_1 = {"collapse_min_counts": {"native-country": 500, "occupation": 200},
            "regroup_widths": {"age": 10, "hours-per-week": 10}}
METHOD_2 = {**METHOD_1, "regroup_widths": {"age": 25, "hours-per-week": 25}}


def preset(name: str) -> dict:
    values = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    values.pop("name")
    return values


def settings() -> dict[str, dict | None]:
    report = {**preset("rdt_report"), **METHOD_1}
    return {
        "marginal": None,
        "report": report,
        "method2": {**report, **METHOD_2},
        "m10": {**report, "m": 10},
        "weights": {**report, "attribute_weights": "sd_association"},
        "nB2000": {**report, "n_B": 2000},
        "authentic": {**report, "chain": "authentic"},
        "half_depth": {**report, "max_depth": None},
        "shrink": {**report, "shrinkage": 1.0},
        "default": preset("rdt"),
        "default_synth": {**preset("rdt"), "chain": "synthesized"},
        "default_weights": {**preset("rdt"), "attribute_weights": "sd_association"},
    }


def one_run(data: Dataset, params: dict | None, eps: float, trial: int,
            metric: DukeUtility) -> dict:
    budget = Budget(eps, 0.0)
    ledger = Ledger(budget, "gdp")
    release = Releaser(ledger, NumpySampler(np.random.default_rng([1, trial])))
    rng = np.random.default_rng([0, trial])
    if params is None:
        out = noisy_marginal_baseline(data, budget, release, rng)
    else:
        out = make_mechanism("rdt", params).fit_sample(data, budget, release, rng)
    scores = metric.score(data, out).scores
    public = data.public.reset_index(drop=True)  # type: ignore[union-attr]
    return {**{k: scores[k] for k in SHOWN[:4]},
            **{f"acc_{a}": label_accuracy(public[a], out[a]) for a in PRIVATE},
            "eps_spent": ledger.spent()[0]}


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% t-interval half-width per (epsilon, setting)."""
    out = []
    for (eps, label), part in rows.groupby(["epsilon", "setting"], sort=False):
        n = len(part)
        t = float(stats.t.ppf(0.975, n - 1)) if n > 1 else float("nan")
        row = {"epsilon": eps, "setting": label, "n": n,
               "max_spent": part["eps_spent"].max()}
        for key in SHOWN:
            row[key] = f"{part[key].mean():.3f}+-{t * part[key].std(ddof=1) / np.sqrt(n):.3f}"
        out.append(row)
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.4])
    parser.add_argument("--only", nargs="*", default=None, help="setting names to run")
    args = parser.parse_args()
    try:
        data = load_shared_dataset("adult", public_fraction=0.5)
    except Exception as exc:  # the shared data folder is optional
        print(f"skipped: Adult is not available ({exc})")
        return
    chosen = {k: v for k, v in settings().items() if args.only is None or k in args.only}
    metric = DukeUtility(private_attributes=list(PRIVATE), figures=False)
    print(f"adult: {len(data.private)} private rows, {len(data.public)} public targets; "  # type: ignore[arg-type]
          f"{args.trials} trials per setting")
    rows = []
    started = time.perf_counter()
    for eps in args.eps:
        for label, params in chosen.items():
            for trial in range(args.trials):
                rows.append({"epsilon": eps, "setting": label, "trial": trial,
                             **one_run(data, params, eps, trial, metric)})
            print(f"  eps={eps:g} {label}: done ({time.perf_counter() - started:.0f}s)",
                  flush=True)
    summary = summarise(pd.DataFrame(rows))
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        print()
        print(summary.to_string(index=False))


if __name__ == "__main__":
    main()
