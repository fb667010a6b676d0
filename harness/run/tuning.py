"""Honest hyperparameter tuning: three modes, each labelled in MLflow and on the leaderboard.

``public`` (the challenge's own protocol)
    A Hydra Optuna sweep tunes the hyperparameters on the **public view** of the dataset: the
    public year plays the private part, split again by a seeded, data-independent split of
    whole persons into a pseudo-public share (``tuning.public_fraction``, given to mechanisms
    that need public data) and a pseudo-private rest (scored against). The real private part
    is never loaded into those runs' datasets. The chosen setting (best mean objective over its
    Optuna trials) is then scored on the private data with fresh seeds. Costs no privacy.
``oracle``
    The same search, scored on the **private** data. Not differentially private: the choice
    leaks information about the private data. Allowed only with ``tuning.allow_oracle=true``,
    and every run (search and final) is tagged ``private=false``; the leaderboard never ranks
    such rows. It shows how much tuning could gain at best.
``dp_select``
    One run that chooses among a finite grid of candidate settings with the **exponential
    mechanism** and spends the rest of the budget on the chosen setting:

    1. every candidate ``theta`` runs on the public view (public data only, no cost) with the
       final budget, giving a synthetic table ``S_theta``;
    2. its utility is the 2-way marginal fit of ``S_theta`` to the private data,
       ``u(theta; D) = 1000 (1 - (1/M) sum_m TV_m)``,
       ``TV_m = 1/2 sum_c |h_m(D)[c] / N - p_m(S_theta)[c]|``, over ``M`` attribute pairs
       chosen by a fixed seed, where ``h_m(D)`` are the private counts after keeping at most
       ``C`` rows per person (``C = 1`` for record-level data, else the dataset's
       ``max_records_per_individual``) and ``N`` is the **public** part's row count (a public
       constant, so it does not move with ``D``);
    3. adding or removing one person changes each ``h_m`` by at most ``C`` in L1, so every
       ``TV_m`` and ``u`` moves by at most ``Delta_u = 1000 C / (2 N)``;
    4. the exponential mechanism picks ``theta`` with probability proportional to
       ``exp(eps_sel u(theta; D) / (2 Delta_u))``: ``eps_sel``-DP (McSherry & Talwar 2007),
       charged to the run's ledger as one ``exponential`` release (sensitivity ``Delta_u``,
       scale ``2 Delta_u / eps_sel``), ``eps_sel = tuning.select_share x epsilon``;
    5. the chosen setting runs on the private data with what is left: under ``gdp``
       ``(epsilon - eps_sel, delta)`` (pure charges add to the Gaussian part's epsilon); under
       ``zcdp`` the smaller of that and the budget whose rho plus ``eps_sel^2 / 8`` fits
       ``rho(epsilon, delta)``. By composition the whole run is ``(epsilon, delta)``-DP, and
       the ledger checks it. The utilities themselves are never logged (they are functions of
       the private data); the public-view scores of the candidates are.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.data.datasets import Dataset, with_public_split
from harness.errors import ConfigError
from harness.privacy.accounting import (
    CALIBRATION_HEADROOM,
    Budget,
    Ledger,
    zcdp_epsilon,
    zcdp_rho,
)
from harness.privacy.release import NumpySampler, Releaser
from harness.run.settings import Tuning

SELECT_MARGINALS = 30
SELECT_SEED = 0


# ----- the public view ----------------------------------------------------------------------
def public_view(data: Dataset, fraction: float, seed: int) -> Dataset:
    """The dataset as seen by public-mode tuning: the public part becomes the private part
    (split again into pseudo-public ``fraction`` / pseudo-private rest by a seeded split of
    whole persons). The returned object holds no reference to ``data.private``."""
    if data.public is None or len(data.public) == 0:
        raise ConfigError(f"tuning on the public view needs a public part, and dataset "
                          f"{data.name!r} has none",
                          "set dataset.public_fraction (e.g. 0.5) or dataset.public_path")
    base = Dataset(data.name, data.schema, data.public.reset_index(drop=True), None, data.unit,
                   data.id_column, data.max_records_per_individual)
    return with_public_split(base, fraction, seed) if fraction > 0 else base


# ----- search spaces ------------------------------------------------------------------------
def parse_space(space: dict[str, Any]) -> dict[str, list[Any]]:
    """``{"mechanism.k": "choice(2,4)", "mechanism.split": "range(0.1,0.4,0.1)"}`` ->
    candidate values per hyperparameter (the Hydra/Optuna sweep syntax; finite sweeps only)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    parser = OverridesParser.create()
    out: dict[str, list[Any]] = {}
    for key, spec in space.items():
        if not str(key).startswith("mechanism."):
            raise ConfigError(f"tuning.space key {key!r} is not a mechanism hyperparameter",
                              "use keys like mechanism.k")
        if isinstance(spec, (list, tuple)):
            out[key] = list(spec)
            continue
        try:
            override = parser.parse_override(f"{key}={spec}")
        except Exception as exc:  # noqa: BLE001 - Hydra's parser error, reworded
            raise ConfigError(f"tuning.space.{key}: cannot parse {spec!r} ({exc})",
                              "use choice(a,b,...) or range(start,stop,step)") from None
        value = override.value()
        if isinstance(value, ChoiceSweep):
            out[key] = list(value.list)
        elif isinstance(value, RangeSweep):
            out[key] = list(override.sweep_iterator())
        elif override.is_sweep_override():
            raise ConfigError(f"tuning.space.{key}: {spec!r} is not a finite set of candidates",
                              "dp_select needs choice(...) or range(...)")
        else:
            out[key] = [value]
    return out


def candidates(space: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The grid of settings: ``[{"k": 2}, {"k": 4}, ...]`` (keys without ``mechanism.``)."""
    keys = list(space)
    return [{k.removeprefix("mechanism."): v for k, v in zip(keys, combo)}
            for combo in itertools.product(*(space[k] for k in keys))]


def setting_label(setting: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(setting.items())) or "-"


def space_label(space: dict[str, list[Any]]) -> str:
    return "select " + ";".join(f"{k.removeprefix('mechanism.')}∈{{{','.join(map(str, v))}}}"
                                for k, v in space.items())


# ----- dp_select ----------------------------------------------------------------------------
def remaining_budget(total: Budget, eps_select: float, accountant: str) -> Budget:
    """Budget left for the chosen setting after an ``eps_select``-DP exponential mechanism,
    such that the ledger's composition of both is at most ``total``."""
    # a hair below what basic composition leaves, so float rounding never tips the ledger over
    left = (total.epsilon - eps_select) * (1 - CALIBRATION_HEADROOM)
    if accountant == "zcdp" and total.delta > 0:
        rho_left = zcdp_rho(total.epsilon, total.delta) - eps_select**2 / 8.0
        if rho_left > 0:
            left = min(left, zcdp_epsilon(rho_left, total.delta))
    if left <= 0:
        raise ConfigError(f"tuning.select_share leaves no budget (epsilon {total.epsilon:g})",
                          "lower tuning.select_share")
    return Budget(left, total.delta)


def utility_sensitivity(bound: int, n_public: int) -> float:
    """``Delta_u = 1000 C / (2 N)``."""
    return 1000.0 * bound / (2.0 * n_public)


def selection_utility(private_codes: pd.DataFrame, synthetic_codes: pd.DataFrame,
                      pairs: list[tuple[str, ...]], domain: dict[str, int],
                      n_public: int) -> float:
    """``u = 1000 (1 - mean_m 1/2 sum_c |h_m(D)[c]/N - p_m(S)[c]|)`` (see module docstring)."""
    from metrics.kmarginal import marginal_counts

    tvs = []
    for cols in pairs:
        h = marginal_counts(private_codes, cols, domain) / float(n_public)
        q = marginal_counts(synthetic_codes, cols, domain).astype(float)
        q = q / q.sum() if q.sum() > 0 else q
        tvs.append(0.5 * float(np.abs(h - q).sum()))
    return 1000.0 * (1.0 - float(np.mean(tvs)))


@dataclass
class Selection:
    """What dp_select decided (only public or DP-released facts)."""

    chosen: dict[str, Any]
    candidates: list[dict[str, Any]]
    public_scores: list[float]
    eps_select: float
    sensitivity: float
    final_budget: Budget
    reason: str


def dp_select(mechanism_name: str, base_params: dict[str, Any], space: dict[str, list[Any]],
              data: Dataset, budget: Budget, release: Releaser, rng: np.random.Generator,
              tuning: Tuning) -> Selection:
    """Choose a setting with the exponential mechanism (module docstring, steps 1-4), one
    release through ``release``; the caller runs the chosen setting with ``final_budget``.
    ``rng`` is for post-processing (the candidates' runs on the public view, clipping)."""
    ledger = release.ledger
    from mechanisms import make_mechanism
    from mechanisms.base import clip_contributions, contribution_bound
    from metrics.kmarginal import choose_marginals, marginal_tvd

    grid = candidates(space)
    view = public_view(data, tuning.public_fraction, tuning.split_seed)
    n_public = len(data.public)  # type: ignore[arg-type]
    eps_select = tuning.select_share * budget.epsilon
    final = remaining_budget(budget, eps_select, ledger.accountant)
    schema = data.schema
    pairs = choose_marginals(schema.attributes, min(2, len(schema.attributes)),
                             SELECT_MARGINALS, SELECT_SEED)
    domain = schema.domain()
    bound = contribution_bound(data, None)
    private = data.private
    if data.unit == "user":
        private = clip_contributions(private, data.id_column, bound,  # type: ignore[arg-type]
                                     np.random.default_rng(rng.integers(2**63)))
    private_codes = schema.encode(private)
    view_codes = schema.encode(view.private)
    utilities, public_scores = [], []
    for setting in grid:
        mechanism = make_mechanism(mechanism_name, {**base_params, **setting})
        scratch = Releaser(Ledger(final, ledger.accountant, unit=ledger.unit),
                           NumpySampler(np.random.default_rng(rng.integers(2**63))))
        synthetic = mechanism.fit_sample(view, final, scratch, np.random.default_rng(
            rng.integers(2**63)))
        codes = schema.encode(synthetic)
        utilities.append(selection_utility(private_codes, codes, pairs, domain, n_public))
        public_scores.append(1000.0 * (1.0 - float(np.mean(
            [marginal_tvd(view_codes, codes, cols, domain) for cols in pairs]))))
    sensitivity = utility_sensitivity(bound, n_public)
    index = release.exponential(
        f"dp_select: exponential mechanism over {len(grid)} candidate settings", utilities,
        sensitivity, eps_select, query="dp_select utilities",
        note="utility: 2-way marginal fit of each candidate's public-view output to the private "
             "data, counts clipped to C rows per person, normalised by the public row count")
    chosen = grid[index]
    reason = (f"exponential mechanism (epsilon {eps_select:.4g}, utility sensitivity "
              f"{sensitivity:.4g} = 1000 x {bound} / (2 x {n_public})) over {len(grid)} "
              f"candidates run on the public view; utility = fit of their 2-way marginals "
              f"({len(pairs)} pairs) to the private data; the chosen setting then ran with "
              f"epsilon {final.epsilon:.4g}; raw utilities are not logged")
    return Selection(chosen, grid, public_scores, eps_select, sensitivity, final, reason)


# ----- choosing after a search sweep --------------------------------------------------------
def summarize_search(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per setting tried: mean objective, n runs, failures (``records`` are the
    search jobs' outcome records with ``setting`` and ``objective``)."""
    rows = []
    for r in records:
        objective = r.get("objective")
        ok = r.get("status") in ("FINISHED", "SKIPPED") and objective is not None \
            and math.isfinite(objective)
        rows.append({"setting": setting_label(r.get("setting") or {}),
                     "objective": objective if ok else math.nan, "ok": ok})
    frame = pd.DataFrame(rows, columns=["setting", "objective", "ok"])
    if frame.empty:
        return pd.DataFrame(columns=["setting", "mean", "n", "failed"])
    table = frame.groupby("setting").agg(mean=("objective", "mean"), n=("ok", "sum"),
                                         runs=("ok", "size")).reset_index()
    table["failed"] = table["runs"] - table["n"]
    return table.drop(columns="runs").sort_values("mean", ascending=False,
                                                  na_position="last").reset_index(drop=True)


def choose_setting(records: list[dict[str, Any]], objective: str, view: str) -> tuple[
        dict[str, Any], str, pd.DataFrame]:
    """The setting with the best mean objective over its search runs, why, and the table."""
    table = summarize_search(records)
    ok = table.dropna(subset=["mean"])
    if ok.empty:
        raise ConfigError("every tuning run failed: nothing to choose from",
                          "see the failures above")
    best = ok.iloc[0]
    setting = next(r["setting"] for r in records
                   if setting_label(r.get("setting") or {}) == best["setting"])
    others = "; ".join(f"{r.setting} {r.mean:.1f} (n={r.n})" for r in ok.iloc[1:6].itertuples())
    reason = (f"best mean {objective} on the {view} view: {best['setting']} "
              f"{best['mean']:.1f} over {int(best['n'])} run(s), out of {len(ok)} setting(s) "
              f"tried{'; next: ' + others if others else ''}")
    return dict(setting), reason, table
