"""Private selection of a mechanism's setting, as a mechanism wrapping the mechanism.

:class:`DPSelect` wraps a mechanism and a finite grid of candidate settings (``tuning.space``)
the way scikit-learn's search wraps an estimator: the runner fits it like any mechanism. One
``fit_sample`` chooses a candidate with the **exponential mechanism** and spends the rest of
the budget on the chosen setting. The privacy argument:

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
   ``zcdp`` (``zcdp_bs``) the smaller of that and the budget whose rho plus ``eps_sel^2 / 8`` fits
   ``rho(epsilon, delta)``. By composition the whole run is ``(epsilon, delta)``-DP, and
   the ledger checks it. The utilities themselves are never logged (they are functions of
   the private data); the public-view scores of the candidates are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import (
    CALIBRATION_HEADROOM,
    ZCDP_ACCOUNTANTS,
    Budget,
    Ledger,
    accountant_epsilon,
    accountant_rho,
)
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.run.settings import Tuning
from dp_arena.run.tuning import (
    candidates,
    parse_space,
    public_view,
    setting_label,
)
from dp_arena.mechanisms import Mechanism, make_mechanism
from dp_arena.mechanisms.base import clip_contributions, contribution_bound, with_output_facts
from dp_arena.metrics.kmarginal import choose_marginals, marginal_counts, marginal_tvd

SELECT_MARGINALS = 30
SELECT_SEED = 0


def remaining_budget(total: Budget, eps_select: float, accountant: str) -> Budget:
    """Budget left for the chosen setting after an ``eps_select``-DP exponential mechanism,
    such that the ledger's composition of both is at most ``total``."""
    # a hair below what basic composition leaves, so float rounding never tips the ledger over
    left = (total.epsilon - eps_select) * (1 - CALIBRATION_HEADROOM)
    if accountant in ZCDP_ACCOUNTANTS and total.delta > 0:  # zcdp, zcdp_bs
        rho_left = accountant_rho(total.epsilon, total.delta, accountant) - eps_select**2 / 8.0  # type: ignore[arg-type]
        if rho_left > 0:
            left = min(left, accountant_epsilon(rho_left, total.delta, accountant))  # type: ignore[arg-type]
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
    tvs = []
    for cols in pairs:
        h = marginal_counts(private_codes, cols, domain) / float(n_public)
        q = marginal_counts(synthetic_codes, cols, domain).astype(float)
        q = q / q.sum() if q.sum() > 0 else q
        tvs.append(0.5 * float(np.abs(h - q).sum()))
    return 1000.0 * (1.0 - float(np.mean(tvs)))


@dataclass(frozen=True)
class Selection:
    """What dp_select decided (only public or DP-released facts)."""

    chosen: dict[str, Any]
    candidates: list[dict[str, Any]]
    public_scores: list[float]
    eps_select: float
    sensitivity: float
    final_budget: Budget
    reason: str


@dataclass
class DPSelect(Mechanism):
    """``mechanism`` with its setting chosen privately among ``space`` (module docstring).
    Build it with :meth:`around`. It reports the wrapped mechanism's name, privacy unit,
    reference kind, accounting and declared claim as its own (each delegated explicitly);
    it keeps nothing of a run: what was chosen and why (public or DP-released facts only)
    travels with the output table (:func:`dp_arena.mechanisms.base.with_output_facts`) as the run's
    tags and its ``tuning/dp_select.json``."""

    inner: Mechanism
    mechanism_name: str
    base_params: dict[str, Any]
    space: dict[str, list[Any]]
    select_share: float = 0.1
    public_fraction: float = 0.5
    split_seed: int = 0

    @classmethod
    def around(cls, name: str, base_params: dict[str, Any], tuning: Tuning) -> DPSelect:
        """The selector over ``tuning.space`` for mechanism ``name`` configured with
        ``base_params``; the mechanism and every candidate setting are built now, so a bad
        one is refused before the run."""
        inner = make_mechanism(name, base_params)
        space = parse_space(tuning.space)
        for setting in candidates(space):
            make_mechanism(name, {**base_params, **setting})
        return cls(inner, name, dict(base_params), space, tuning.select_share,
                   tuning.public_fraction, tuning.split_seed)

    # ----- the wrapped mechanism's facts (every one delegated by name) ----------------------
    @property  # type: ignore[override]
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property  # type: ignore[override]
    def reference(self):  # type: ignore[override]
        return self.inner.reference

    @property  # type: ignore[override]
    def units(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.inner.units

    @property  # type: ignore[override]
    def accounting(self) -> str:  # type: ignore[override]
        return self.inner.accounting

    @property  # type: ignore[override]
    def filter_bound(self) -> bool:  # type: ignore[override]
        return self.inner.filter_bound

    @property
    def declared_claim(self) -> Any:
        """The wrapped contestant's declared claim (``None`` for a mechanism of ours)."""
        return getattr(self.inner, "declared_claim", None)

    @property
    def n_rows(self) -> Any:
        """The wrapped mechanism's fixed row count, if it has one (``uniform``)."""
        return getattr(self.inner, "n_rows", None)

    def check_applicable(self, data: Dataset) -> None:
        """The candidates run on the public view: no public part is a configuration error
        (said before the mechanism's own checks)."""
        if data.public is None:
            public_view(data, self.public_fraction, self.split_seed)  # raises the reason
        self.inner.check_applicable(data)

    def check_settings(self, data: Dataset) -> None:
        """Every candidate's settings against the schema, where the mechanism checks them
        before a run (``rdt``'s); nothing otherwise."""
        for setting in candidates(self.space):
            candidate = make_mechanism(self.mechanism_name, {**self.base_params, **setting})
            check = getattr(candidate, "check_settings", None)
            if callable(check):
                check(data)

    def notes(self, data: Dataset) -> tuple[str, ...]:
        return self.inner.notes(data)

    def source_modules(self) -> tuple[str, ...]:
        return (__name__, *self.inner.source_modules())

    # ----- the run --------------------------------------------------------------------------
    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        """Choose (one exponential-mechanism release), then run the chosen setting with the
        budget left. ``rng`` is for post-processing: the candidates' runs on the public view,
        clipping, and the chosen mechanism's own post-processing. The output carries what was
        chosen and why (:func:`selection_facts`) and the chosen mechanism's own facts."""
        selection = self.select(data, budget, release, rng)
        chosen = make_mechanism(self.mechanism_name, {**self.base_params, **selection.chosen})
        out = chosen.fit_sample(data, selection.final_budget, release, rng)
        tags, files = selection_facts(selection)
        with_output_facts(out, chosen.setting_tags())
        return with_output_facts(out, tags, files)

    def select(self, data: Dataset, budget: Budget, release: Releaser,
               rng: np.random.Generator) -> Selection:
        """Choose a setting with the exponential mechanism (module docstring, steps 1-4), one
        release through ``release``."""
        ledger = release.ledger
        grid = candidates(self.space)
        view = public_view(data, self.public_fraction, self.split_seed)
        n_public = len(data.public)  # type: ignore[arg-type]
        eps_select = self.select_share * budget.epsilon
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
            mechanism = make_mechanism(self.mechanism_name, {**self.base_params, **setting})
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
            note="utility: 2-way marginal fit of each candidate's public-view output to the "
                 "private data, counts clipped to C rows per person, normalised by the public "
                 "row count")
        chosen = grid[index]
        reason = (f"exponential mechanism (epsilon {eps_select:.4g}, utility sensitivity "
                  f"{sensitivity:.4g} = 1000 x {bound} / (2 x {n_public})) over {len(grid)} "
                  f"candidates run on the public view; utility = fit of their 2-way marginals "
                  f"({len(pairs)} pairs) to the private data; the chosen setting then ran with "
                  f"epsilon {final.epsilon:.4g}; raw utilities are not logged")
        return Selection(chosen, grid, public_scores, eps_select, sensitivity, final, reason)


def selection_facts(selection: Selection) -> tuple[dict[str, str], dict[str, Any]]:
    """The run's tags (``tuning_chosen``, ``tuning_reason``) and ``tuning/dp_select.json``
    for a selection: public settings, public-view scores and DP-released choices only (the
    raw utilities are functions of the private data and are left out)."""
    s = selection
    tags = {"tuning_chosen": setting_label(s.chosen), "tuning_reason": s.reason}
    files = {"tuning/dp_select.json": {
        "chosen": s.chosen, "candidates": s.candidates, "public_view_kmarginal2":
        s.public_scores, "epsilon_select": s.eps_select, "sensitivity": s.sensitivity,
        "final_budget": {"epsilon": s.final_budget.epsilon, "delta": s.final_budget.delta},
        "reason": s.reason}}
    return tags, files
