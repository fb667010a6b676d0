"""One privacy audit from a resolved config: an empirical lower bound on a mechanism's epsilon.

Steps (``run_audit``):

1. **check** everything before any work, one :class:`~dp_arena.errors.ConfigError` per problem:
   the ``audit`` settings (``runs >= 10``, confidence in [0.5, 1), known canary and statistic),
   the run config (the runner's own :func:`~dp_arena.run.config.parse_run_config`, components
   and :func:`~dp_arena.run.preflight.check_run`), a differentially private mechanism (the
   reference points ``resample``, ``public_only``, ``uniform`` are refused), secret noise (a
   replayable seed would repeat the same noise in every run), no tuning, and a private part
   large enough for a canary;
2. **the pair**: D = the configured private data, D' = D + a constructed canary
   (:mod:`dp_arena.audit.canary`);
3. **runs**: ``audit.runs`` runs per world with fresh noise, isolated, in parallel, cached in
   ``<audit.cache_dir>/<audit key>/`` while the audit lasts, deleted when it ends (also on a
   failure or a stop) unless ``audit.keep_cache=true`` keeps it so a re-run resumes
   (:mod:`dp_arena.audit.runs`; a canary audit's cache is private data). The key
   hashes the mechanism and settings, budget, accountant, dataset config and keyed data
   fingerprint, canary, statistic and the source of the code the runs execute;
4. **test and bound**: :mod:`dp_arena.audit.decision` (chosen on one half, counted on the other)
   and :mod:`dp_arena.audit.bounds` (Clopper-Pearson, Bonferroni over the two rates);
5. **log**: ONE MLflow run in the experiment the mechanism's runs on this dataset use
   (:func:`dp_arena.run.runner.experiment_for`), tagged ``kind=audit`` (the board reads it with
   :mod:`dp_arena.report.audits`), and ``audit.json`` in the audit's output folder. Nothing
   logged holds a private value: the canary is described, not listed; the statistic values
   are functions of DP releases.

The verdict is ``VIOLATION`` when the lower bound exceeds the claimed epsilon, else ``ok``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dp_arena.data.datasets import load_dataset
from dp_arena.errors import ConfigError
from dp_arena.report.record import number_text
from dp_arena.report.tracking import (
    client_for,
    code_version,
    ensure_experiment,
    flatten,
    source_fingerprint,
)
from dp_arena.run.content import content_hash, mechanism_content
from dp_arena.run.preflight import check_run
from dp_arena.report.tracking import log_metrics
from dp_arena.run.config import RunConfig, build_components, experiment_for, parse_run_config
from dp_arena.run.record import dataset_id
from dp_arena.run.runner import code_fingerprint, data_fingerprint

from .bounds import Bound, attainable_eps_lb, lower_bound
from .canary import Canary
from .neighbours import neighbouring_pair
from .decision import audit_test
from .runs import WORLDS, World, collect
from .settings import AuditSettings

#: Config keys that belong to the audit, not to the run config the runner checks.
AUDIT_KEYS = ("audit", "hydra")
#: Share of the runs the release view chooses its threshold on (the rest are counted).
RELEASE_SELECTION = 0.25
AUDIT_MODULES = ("dp_arena.audit.canary", "dp_arena.audit.statistic", "dp_arena.audit.runs",
                 "dp_arena.audit.releases", "dp_arena.audit.neighbours")


@dataclass(frozen=True)
class AuditResult:
    """What an audit found (no private value in it)."""

    mechanism: str
    hyperparameters: str
    epsilon: float
    delta: float
    accountant: str
    runs: int
    bound: Bound
    canary: str
    statistic: str
    experiment: str
    run_id: str
    folder: str
    seconds: float
    #: the power yardstick: the bound an ideal test could show on a mechanism exactly at its
    #: (epsilon, delta) claim, and at its mu-GDP claim under the gdp accountant (nan: other)
    attainable: float = math.nan
    attainable_gdp: float = math.nan
    view: str = "synthetic"
    neighbours: str = "canary"
    #: release view: the mu-GDP estimate (assumes a Gaussian trade-off curve) and the claim
    #: it is compared with (the ledger's Gaussian releases' mu), runs the replay dropped
    mu_estimate: float = math.nan
    mu_claimed: float = math.nan
    dropped: int = 0
    #: the run's claim is mu-GDP (gdp accountant, Gaussian releases only): a mu lower bound
    #: above ``mu_claimed`` is then a violation too
    claim_is_gdp: bool = False
    #: approximate standard error of ``mu_estimate`` (:func:`mu_standard_error`)
    mu_se: float = math.nan

    @property
    def violation(self) -> bool:
        return is_violation(self.bound, self.epsilon, self.mu_claimed, self.claim_is_gdp)

    @property
    def verdict(self) -> str:
        return "VIOLATION" if self.violation else "ok"

    def summary_lines(self) -> list[str]:
        b = self.bound
        return [
            (f"audit of {self.mechanism} ({self.hyperparameters}) at epsilon={self.epsilon:g}, "
            f"delta={self.delta:g}, accountant={self.accountant}"),
            f"  neighbours: {self.canary}",
            (f"  view: {self.view}; statistic: {self.statistic}, "
             + (f"thresholded as it is on the symmetrized runs (each world's runs plus the "
                "other's with the statistic negated); the threshold chosen on a quarter of the "
                f"runs, rates counted on the rest ({self.runs - int(self.runs * RELEASE_SELECTION)}"
                " runs per world, twice that symmetrized)" if self.view == "releases" else
                "scored by naive Bayes and by LDA; each test's threshold chosen on half of the "
                f"runs, rates counted on the other half ({self.runs - self.runs // 2} runs per "
                "world), the larger bound kept")
             + (f"; {self.dropped} runs the replay could not follow dropped"
                if self.dropped else "")),
            (f"  FPR={b.fpr:.4f} (upper {b.fpr_upper:.4f})  FNR={b.fnr:.4f} (upper "
            f"{b.fnr_upper:.4f}); Clopper-Pearson, {100 * b.confidence:g}% split between "
            "the two rates" + ("" if self.view == "releases" else " and the two tests")
            + " (Bonferroni)"),
            (f"  mu-GDP lower bound={b.mu_lb:.3f}" + (
                f" (if the privacy curve is Gaussian: epsilon >= {b.eps_gdp:.3f} at this "
                "delta; an estimate, not the verdict)" if math.isfinite(b.eps_gdp) else "")),
            *([f"  mu-GDP estimate={self.mu_estimate:.3f} +- {self.mu_se:.3f} (a point "
               "estimate +- its approximate standard error; it assumes a Gaussian trade-off "
               f"curve: the separation of the two distributions of the Gaussian releases' "
               f"log-likelihood ratio) against their claimed mu={self.mu_claimed:.3f}: "
               f"{self.mu_estimate / self.mu_claimed:.2f} of the claim"]
              if math.isfinite(self.mu_estimate) and self.mu_claimed > 0 else []),
            (f"  power: with these runs an ideal test could show at most "
             f"{self.attainable:.3f} on a mechanism leaking exactly epsilon={self.epsilon:g}"
             + (f" ({self.attainable_gdp:.3f} if its privacy curve is the gdp accountant's "
                "mu-GDP)" if math.isfinite(self.attainable_gdp) else "")
             + "; a bound well below means the canary and statistic see less"),
            (f"  logged: run {self.run_id[:8]} in experiment {self.experiment}; runs cached in "
            f"{self.folder}"),
            (f"audit: {self.mechanism} claimed epsilon={self.epsilon:g} empirical lower "
            f"bound={b.eps_lb:.3f} ({100 * b.confidence:g}%) runs={self.runs} "
            f"verdict={self.verdict}"),
        ]


def run_config_part(cfg: dict[str, Any]) -> dict[str, Any]:
    """The config without the audit's own keys: what the runner's checks read."""
    return {k: v for k, v in cfg.items() if k not in AUDIT_KEYS}


def check_auditable(rc: RunConfig, mechanism) -> None:
    if not mechanism.is_private:
        raise ConfigError(f"mechanism {rc.mechanism!r} is a non-private reference point "
                          f"({mechanism.reference}): it claims no epsilon to audit",
                          "audit a differentially private mechanism, e.g. "
                          "mechanism=independent")
    if rc.noise != "secret":
        raise ConfigError("an audit needs fresh noise in every run (privacy.noise=secret); "
                          f"privacy.noise={rc.noise} repeats one noise draw",
                          "drop privacy.noise or set privacy.noise=secret")
    if rc.tuning.mode != "none":
        raise ConfigError("an audit runs one fixed setting; tuning is not supported",
                          "drop tuning=... and set the mechanism's settings directly")


def audit_key(rc: RunConfig, fingerprint: str, settings: AuditSettings, code: str) -> str:
    """What the cached runs depend on (not the number of runs or the confidence)."""
    worst_case = ({"worst_case": [settings.worst_case_persons, settings.worst_case_extra]}
                  if settings.neighbours == "worst_case" else {})
    return content_hash({**mechanism_content(rc), "fingerprint": fingerprint, "code": code,
                         "canary": settings.canary, "statistic": settings.statistic,
                         "view": settings.view, "neighbours": settings.neighbours,
                         **worst_case})


def audit_tags(rc: RunConfig, hyper: str, data_id: str, data, canary: Canary,
               settings: AuditSettings, key: str, verdict: str) -> dict[str, str]:
    return {"kind": "audit", "mechanism": rc.mechanism, "hyperparameters": hyper,
            "epsilon": number_text(rc.budget.epsilon), "delta": number_text(rc.budget.delta),
            "accountant": rc.accountant, "dataset": data.name, "dataset_id": data_id,
            "privacy_unit": data.ledger_unit, "canary": canary.description,
            "canary_strategy": canary.strategy, "statistic": statistic_name(settings),
            "audit_view": settings.view, "audit_neighbours": settings.neighbours,
            "audit_verdict": verdict, "audit_key": key, "code_version": code_version()}


def log_audit(rc: RunConfig, cfg: dict[str, Any], data, tags: dict[str, str],
              result_numbers: dict[str, float], summary: dict[str, Any]) -> tuple[str, str]:
    """One MLflow run (``kind=audit``); returns (experiment, run id)."""
    from mlflow.entities import Param

    client = client_for(rc.tracking_uri)
    experiment = experiment_for(rc, data)
    exp_id = ensure_experiment(client, experiment)
    run = client.create_run(exp_id, run_name=f"audit/{rc.mechanism}/{rc.budget.epsilon:g}",
                            tags=tags)
    run_id = run.info.run_id
    params = flatten({k: v for k, v in cfg.items() if k != "hydra"})
    items = [Param(k, v[:6000]) for k, v in sorted(params.items())]
    for start in range(0, len(items), 100):
        client.log_batch(run_id, params=items[start:start + 100])
    log_metrics(client, run_id, result_numbers)
    client.log_dict(run_id, summary, "audit.json")
    client.set_terminated(run_id, "FINISHED")
    return experiment, run_id


def run_audit(cfg: dict[str, Any], out_dir: Path | None = None,
              echo: Callable[[str], None] = print) -> AuditResult:
    """The whole audit (see the module docstring). Raises DPArenaError on bad input before
    any run."""
    started = time.monotonic()
    settings = AuditSettings.from_config(cfg.get("audit"))
    rc = parse_run_config(run_config_part(cfg))
    mechanism, metrics = build_components(rc)
    check_auditable(rc, mechanism)
    data = load_dataset(rc.dataset)
    check_run(rc, mechanism, metrics, data)
    pair = neighbouring_pair(data, settings.neighbours, settings.canary,
                             settings.worst_case_persons, settings.worst_case_extra)
    canary = pair.person
    worlds = {WORLDS[0]: World(WORLDS[0], pair.without),
              WORLDS[1]: World(WORLDS[1], pair.with_person)}
    mu_claimed, claim_is_gdp = isolated_claim(mechanism, pair.without, rc) \
        if settings.view == "releases" else (math.nan, False)
    fingerprint = data_fingerprint(data)
    code = code_fingerprint(rc, mechanism, {}) + source_fingerprint(AUDIT_MODULES)
    key = audit_key(rc, fingerprint, settings, code)
    folder = Path(settings.cache_dir) / key
    hyper = rc.setting  # the run record's label: audits join the board's rows by it
    echo(f"audit: {rc.mechanism} ({hyper}) epsilon={rc.budget.epsilon:g} "
         f"delta={rc.budget.delta:g} on {data.name}: {settings.runs} runs per world, "
         f"view {settings.view}, neighbours {settings.neighbours}"
         + (f" ({settings.canary})" if settings.neighbours == "canary" else "")
         + f", statistic {statistic_name(settings)}")
    try:
        x = collect(mechanism, worlds, rc, canary.codes, settings.statistic, settings.runs,
                    folder, jobs=settings.jobs, batch_seconds=settings.batch_seconds,
                    echo=echo, view=settings.view)
    finally:  # also when the audit fails or is stopped: kept only when asked for
        if not settings.keep_cache:
            shutil.rmtree(folder, ignore_errors=True)
    x, dropped = followed_runs(x, settings.view)
    mu_estimate = likelihood_ratio_mu(x[WORLDS[0]][:, 1], x[WORLDS[1]][:, 1]) \
        if settings.view == "releases" and mu_claimed > 0 else math.nan
    mu_se = mu_standard_error(mu_estimate, len(x[WORLDS[0]]), len(x[WORLDS[1]]))
    if settings.view == "releases":  # T, the exact log-likelihood ratio: threshold it
        _test, counts, level = audit_test(x[WORLDS[0]][:, :1], x[WORLDS[1]][:, :1],
                                          rc.budget.delta, settings.confidence, "identity",
                                          RELEASE_SELECTION, symmetric=True)
    else:
        _test, counts, level = audit_test(x[WORLDS[0]], x[WORLDS[1]], rc.budget.delta,
                                          settings.confidence)
    # the kept test's bound at its Bonferroni share; it holds at the configured confidence
    bound = dataclasses.replace(lower_bound(counts, rc.budget.delta, level),
                                confidence=settings.confidence)
    verdict = "VIOLATION" if is_violation(bound, rc.budget.epsilon, mu_claimed, claim_is_gdp) \
        else "ok"
    attainable, attainable_gdp = power_yardstick(rc, counts.n0, counts.n1, level)
    numbers = {"eps_lb": bound.eps_lb, "mu_lb": bound.mu_lb, "eps_gdp": bound.eps_gdp, "fpr": bound.fpr,
               "fnr": bound.fnr, "fpr_upper": bound.fpr_upper, "fnr_upper": bound.fnr_upper,
               "runs": float(settings.runs), "confidence": settings.confidence,
               "eps_lb_attainable": attainable, "eps_lb_attainable_gdp": attainable_gdp,
               "mu_estimate": mu_estimate, "mu_estimate_se": mu_se, "mu_claimed": mu_claimed,
               "dropped_runs": dropped,
               "seconds": time.monotonic() - started}
    numbers = {k: v for k, v in numbers.items() if math.isfinite(v)}
    summary = {"mechanism": rc.mechanism, "hyperparameters": hyper,
               "epsilon": rc.budget.epsilon, "delta": rc.budget.delta,
               "accountant": rc.accountant, "dataset": data.name, "canary": canary.description,
               "view": settings.view, "neighbours": settings.neighbours,
               "statistic": statistic_name(settings), "runs_per_world": settings.runs,
               "mu_estimate": mu_estimate if math.isfinite(mu_estimate) else None,
               "mu_estimate_se": mu_se if math.isfinite(mu_se) else None,
               "mu_claimed": mu_claimed if math.isfinite(mu_claimed) else None,
               "dropped_runs": dropped,
               "errors": asdict(counts), "bound": {k: v for k, v in asdict(bound).items()
                                                  if not (isinstance(v, float)
                                                          and math.isnan(v))},
               "eps_lb_attainable": attainable,
               "eps_lb_attainable_gdp": attainable_gdp if math.isfinite(attainable_gdp)
               else None,
               "verdict": verdict, "audit_key": key}
    tags = audit_tags(rc, hyper, dataset_id(rc.dataset, fingerprint), data, canary, settings,
                      key, verdict)
    experiment, run_id = log_audit(rc, cfg, data, tags, numbers, summary)
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "audit.json").write_text(json.dumps({**summary, "run_id": run_id,
                                                              "experiment": experiment},
                                                             indent=1))
    return AuditResult(rc.mechanism, hyper, rc.budget.epsilon, rc.budget.delta, rc.accountant,
                       settings.runs, bound, canary.description, statistic_name(settings),
                       experiment, run_id, str(folder), time.monotonic() - started,
                       attainable, attainable_gdp, settings.view, settings.neighbours,
                       mu_estimate, mu_claimed, dropped, claim_is_gdp, mu_se)


def is_violation(bound: Bound, epsilon: float, mu_claimed: float, claim_is_gdp: bool) -> bool:
    """The lower bound exceeds the claim: epsilon, or mu where the claim is mu-GDP (the mu
    bound is a valid lower bound on any mu-GDP mechanism's mu, at the same confidence)."""
    return bound.eps_lb > epsilon or (claim_is_gdp and bound.mu_lb > mu_claimed)


def statistic_name(settings: AuditSettings) -> str:
    """The statistic the test reads: the release view's is always the likelihood ratio."""
    return "likelihood_ratio" if settings.view == "releases" else settings.statistic


def followed_runs(x: dict[str, np.ndarray], view: str) -> tuple[dict[str, np.ndarray], int]:
    """The release view's runs the replay followed (diverged ones are NaN): the
    log-likelihood ratio ``T`` (column 0) and its parts by noise family (Gaussian, Laplace,
    exponential); the synthetic view's features unchanged. Returns them and how many runs
    were dropped."""
    if view != "releases":
        return x, 0
    kept = {w: v[np.isfinite(v[:, 0])] for w, v in x.items()}
    return kept, sum(len(x[w]) - len(kept[w]) for w in x)


def likelihood_ratio_mu(t0: np.ndarray, t1: np.ndarray) -> float:
    """mu of a Gaussian trade-off curve from the log-likelihood ratio's values on D (``t0``)
    and D' (``t1``): under mu-GDP with the exact likelihood ratio, ``T ~ N(-mu^2/2, mu^2)`` on
    D and ``N(mu^2/2, mu^2)`` on D', so mu = (mean difference) / (pooled sd). An estimate
    that assumes that curve (exact for Gaussian-noise releases), never the verdict. The
    audit applies it to the Gaussian releases' part of ``T`` and compares it with their
    claimed mu (a mechanism that also selects with the exponential mechanism, MST or AIM,
    claims no mu for the selections)."""
    if len(t0) < 2 or len(t1) < 2:
        return math.nan
    sd = math.sqrt((np.var(t0, ddof=1) + np.var(t1, ddof=1)) / 2.0)
    return float((np.mean(t1) - np.mean(t0)) / sd) if sd > 0 else math.nan


def mu_standard_error(mu: float, n0: int, n1: int) -> float:
    """Approximate standard error of :func:`likelihood_ratio_mu` with ``n0`` and ``n1`` runs
    when ``T`` is Gaussian with sd ``mu``: the mean difference over the sd has variance
    ``1/n0 + 1/n1`` plus ``mu^2 / (2 (n0 + n1))`` from estimating the sd (delta method)."""
    if not math.isfinite(mu) or n0 < 2 or n1 < 2:
        return math.nan
    return math.sqrt(1.0 / n0 + 1.0 / n1 + mu * mu / (2.0 * (n0 + n1)))


def claimed_mu(mechanism, data, rc: RunConfig) -> tuple[float, bool]:
    """The mu the ledger claims for a run's Gaussian releases, ``sqrt(sum (Delta/sigma)^2)``
    (what the gdp accountant composes as Gaussian DP), from one run of the mechanism's
    releases on ``data`` (nothing of it is kept but the ledger's sensitivities and scales);
    0 when it makes no Gaussian release. Also whether the run's whole claim is mu-GDP (gdp
    accountant, Gaussian releases only). Refuses, before any audit run, a mechanism that made
    no release through the API."""
    from dp_arena.privacy.accounting import Ledger
    from dp_arena.privacy.release import Releaser

    from .releases import record_releases

    ledger = Ledger(rc.budget, rc.accountant, unit=data.ledger_unit)  # type: ignore[arg-type]
    records: list = []
    record_releases(mechanism, data, rc, Releaser(ledger, observer=records.append,
                                                  stop_after_releases=True),
                    np.random.default_rng())
    if not records:
        raise ConfigError(f"{rc.mechanism} made no release through dp-arena's release API "
                          "(an external contestant's noise is drawn by its own library)",
                          "audit it with audit.view=synthetic")
    gaussian = [c for c in ledger.charges if c.kind == "gaussian"]
    mu = math.sqrt(sum(c.gdp_mu_squared for c in gaussian))
    return mu, bool(gaussian) and len(gaussian) == len(ledger.charges) and rc.accountant == "gdp"


def isolated_claim(mechanism, data, rc: RunConfig) -> tuple[float, bool]:
    """:func:`claimed_mu` in a child process: the audit forks its workers from this process
    afterwards, and a mechanism may start threads (JAX, for mst/aim/adaptive_grid), after
    which a fork can deadlock."""
    from dp_arena.run.isolation import call_isolated

    return call_isolated(lambda: claimed_mu(mechanism, data, rc), rc.limits)[0]


def power_yardstick(rc: RunConfig, n0: int, n1: int, confidence: float) -> tuple[float, float]:
    """:func:`~dp_arena.audit.bounds.attainable_eps_lb` for the claim, and for its mu-GDP
    curve when the gdp accountant (delta > 0) states one (else nan)."""
    from dp_arena.privacy.accounting import gdp_mu

    eps, delta = rc.budget.epsilon, rc.budget.delta
    plain = attainable_eps_lb(eps, delta, n0, n1, confidence)
    if rc.accountant != "gdp" or delta <= 0:
        return plain, math.nan
    return plain, attainable_eps_lb(eps, delta, n0, n1, confidence, mu=gdp_mu(eps, delta))
