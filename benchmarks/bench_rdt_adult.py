"""Benchmark: ``rdt`` on Adult against a noisy-marginal baseline (not a test).

    /tmp/venv/bin/python benchmarks/bench_rdt_adult.py [--trials 3] [--eps 0.1 0.4 1]
        [--rdt '{"m": 5}' ...]

Adult (shared data) is split by ``public_fraction=0.5`` (split seed 0): the public half gives
the targets' predictors and the structure data, the private half is AD and is what the
scores compare against. P = sex then race, pure DP (Laplace, delta 0).

Mechanisms, each for ``--trials`` trials per epsilon (rng ``default_rng([0, trial])``: fixed
seeds so the figures repeat; the runner itself draws fresh OS entropy):
- ``rdt``: the mechanism with its defaults (``--rdt`` adds variants, JSON hyperparameters);
- ``marginal``: the baseline, which ignores X: one Laplace histogram per private attribute
  (epsilon split like rdt's default, equal shares; sensitivity 1) clamped at 0, normalised,
  and each target's P drawn from it.

Printed per (epsilon, mechanism): means over trials of the ``duke_utility`` scores
(``logreg_coef_corr``, ``joint_prop_corr``, ``assoc_slope_corr``/``fit``), the accuracy of
the synthesized sex and race against the public targets' true labels (the controlled
evaluation, :func:`dp_arena.metrics.duke_utility.label_accuracy`), the epsilon the ledger spent, and
the seconds per setting (fit, and fit + score), then whether rdt beats the baseline on the
coefficient and joint-proportion correlations at every epsilon.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.privacy.accounting import Budget, Ledger, laplace_scale
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.metrics.duke_utility import DukeUtility, label_accuracy

PRIVATE = ("sex", "race")
SHOWN = ("logreg_coef_corr", "joint_prop_corr", "assoc_slope_corr", "assoc_slope_fit")


def noisy_marginal_baseline(data: Dataset, budget: Budget, release: Releaser,
                            rng: np.random.Generator) -> pd.DataFrame:
    """The public targets with each private attribute drawn from its noisy marginal."""
    out = data.public.reset_index(drop=True).copy()  # type: ignore[union-attr]
    eps_each = budget.epsilon / len(PRIVATE)
    scale = laplace_scale(eps_each, 1.0)
    for attr in PRIVATE:
        col = data.schema[attr]
        counts = np.bincount(data.private[attr].to_numpy(), minlength=col.size).astype(float)
        p = np.clip(release.laplace(f"marginal {attr}", counts, 1.0, scale), 0.0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(col.size, 1.0 / col.size)
        out[attr] = np.asarray(col.values)[rng.choice(col.size, size=len(out), p=p)]
    return out


def run(data: Dataset, variants: dict[str, dict], eps_list: list[float],
        trials: int) -> pd.DataFrame:
    metric = DukeUtility(private_attributes=list(PRIVATE), figures=False)
    public = data.public.reset_index(drop=True)  # type: ignore[union-attr]  (the targets)
    rows = []
    for eps in eps_list:
        budget = Budget(eps, 0.0)
        for label, params in [("marginal", None), *variants.items()]:
            for trial in range(trials):
                ledger = Ledger(budget, "gdp")
                rng = np.random.default_rng([0, trial])
                started = time.perf_counter()
                if params is None:
                    synthetic = noisy_marginal_baseline(data, budget, Releaser(ledger), rng)
                else:
                    synthetic = make_mechanism("rdt", params).fit_sample(data, budget, Releaser(ledger), rng)
                fit_seconds = time.perf_counter() - started
                scores = metric.score(data, synthetic).scores
                row = {"epsilon": eps, "mechanism": label, "trial": trial,
                       **{k: scores[k] for k in SHOWN},
                       **{f"acc_{a}": label_accuracy(public[a], synthetic[a]) for a in PRIVATE},
                       "eps_spent": ledger.spent()[0], "fit_s": fit_seconds,
                       "total_s": time.perf_counter() - started}
                rows.append(row)
                print(f"  eps={eps:g} {label} trial {trial}: "
                      f"coef {row['logreg_coef_corr']:.3f} joint {row['joint_prop_corr']:.4f} "
                      f"({row['total_s']:.1f}s)", flush=True)
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    cols = [*SHOWN, *(f"acc_{a}" for a in PRIVATE), "eps_spent", "fit_s", "total_s"]
    return results.groupby(["epsilon", "mechanism"], sort=False)[cols].mean().reset_index()


def verdict(summary: pd.DataFrame, label: str = "rdt") -> list[str]:
    lines = []
    for eps, part in summary.groupby("epsilon"):
        rdt = part[part["mechanism"] == label].iloc[0]
        base = part[part["mechanism"] == "marginal"].iloc[0]
        for key in ("logreg_coef_corr", "joint_prop_corr"):
            ok = rdt[key] > base[key]
            lines.append(f"eps={eps:g} {key}: {label} {rdt[key]:.4f} vs marginal "
                         f"{base[key]:.4f} -> {'beats' if ok else 'DOES NOT beat'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.4, 1.0])
    parser.add_argument("--rdt", nargs="*", default=[],
                        help="extra rdt variants as JSON hyperparameters, e.g. '{\"m\": 5}'")
    args = parser.parse_args()
    data = load_shared_dataset("adult", public_fraction=0.5)
    variants = {"rdt": {}}
    variants.update({f"rdt{json.dumps(v, separators=(',', ':'))}": json.loads(v)
                     for v in args.rdt})
    n_public = len(data.public)  # type: ignore[arg-type]
    print(f"adult: {len(data.private)} private (AD) rows, {n_public} public targets (SD); "
          f"P = {list(PRIVATE)}; {args.trials} trials per setting")
    summary = summarise(run(data, variants, args.eps, args.trials))
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print()
        print(summary.round(4).to_string(index=False))
    print()
    print("\n".join(verdict(summary)))


if __name__ == "__main__":
    main()
