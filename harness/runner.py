"""One run: dataset x mechanism (+ hyperparameters) x (epsilon, delta) x trial.

``run_one(cfg)`` validates the whole configuration before touching data or MLflow, then
loads the dataset, runs the mechanism against a fresh privacy ledger, validates the synthetic
table against the schema, scores it with every metric that applies, and logs params, metrics,
tags and artifacts to MLflow. Any failure after the MLflow run started marks it FAILED with
the reason. The private table is never logged: artifacts are the synthetic table (not for
``resample``, whose output is private rows, unless ``tracking.log_private_synthetic=true``),
the score report, the ledger and aggregate tables/plots.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechanisms import Mechanism, hyperparameter_label, make_mechanism
from metrics import Metric, make_metric

from .data import Dataset, load_dataset
from .errors import ConfigError, DPArenaError, SchemaError
from .privacy import Budget, Ledger, check_accountant
from .resources import ResourceMonitor
from .tracking import client_for, code_version, ensure_experiment, flatten

STATUS_OK, STATUS_FAILED = "FINISHED", "FAILED"


@dataclass(frozen=True)
class RunConfig:
    """The validated content of one run's config."""

    mechanism: str
    mechanism_params: dict[str, Any]
    budget: Budget
    accountant: str
    trial: int
    seed: int
    dataset: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    experiment: str  # "" = dp-arena/<dataset name>, known once the dataset is loaded
    tracking_uri: str | None
    log_private_synthetic: bool
    sweep: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class RunOutcome:
    status: str
    mechanism: str
    epsilon: float
    trial: int
    run_id: str | None = None
    experiment: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    message: str = ""
    seconds: float = 0.0


def parse_run_config(cfg: dict[str, Any]) -> RunConfig:
    """Check a resolved config dict and pull out what a run needs (raises ConfigError)."""
    for key in ("dataset", "mechanism", "privacy"):
        if not isinstance(cfg.get(key), dict):
            raise ConfigError(f"config has no '{key}' group", f"add {key}=... to the command")
    mech = dict(cfg["mechanism"])
    name = mech.pop("name", None)
    if not name:
        raise ConfigError("mechanism config has no 'name'", "use mechanism=NAME")
    privacy = cfg["privacy"]
    try:
        epsilon = float(privacy.get("epsilon"))
        delta = float(privacy.get("delta", 0.0))
    except (TypeError, ValueError):
        raise ConfigError(f"privacy.epsilon/delta must be numbers (got {privacy.get('epsilon')!r},"
                          f" {privacy.get('delta')!r})", "e.g. privacy.epsilon=1") from None
    budget = Budget(epsilon, delta)
    accountant = privacy.get("accountant", "gdp")
    check_accountant(accountant)
    metrics_cfg = {k: dict(v or {}) for k, v in (cfg.get("metrics") or {}).items() if v is not False}
    if not metrics_cfg:
        raise ConfigError("no metrics configured", "use metrics=default")
    tracking = cfg.get("tracking") or {}
    trial, seed = cfg.get("trial", 0), cfg.get("seed", 0)
    if not isinstance(trial, int) or not isinstance(seed, int) or trial < 0 or seed < 0:
        raise ConfigError(f"trial and seed must be non-negative integers (got {trial!r}, {seed!r})",
                          "e.g. trial=0 seed=0")
    experiment = tracking.get("experiment") or ""
    return RunConfig(name, mech, budget, accountant, trial, seed, dict(cfg["dataset"]),
                     metrics_cfg, experiment, tracking.get("uri"),
                     bool(tracking.get("log_private_synthetic", False)),
                     str(cfg.get("sweep", "")), cfg)


def build_components(rc: RunConfig) -> tuple[Mechanism, dict[str, Metric]]:
    """Instantiate the mechanism and metrics (unknown names/settings -> ConfigError)."""
    mechanism = make_mechanism(rc.mechanism, rc.mechanism_params)
    metrics = {name: make_metric(name, settings) for name, settings in rc.metrics.items()}
    return mechanism, metrics


def run_key(rc: RunConfig, fingerprint: str) -> str:
    """Content key of a run: same key = same computation (used to deduplicate trials)."""
    content = {
        "mechanism": rc.mechanism, "params": rc.mechanism_params,
        "epsilon": rc.budget.epsilon, "delta": rc.budget.delta, "accountant": rc.accountant,
        "dataset": rc.dataset, "fingerprint": fingerprint, "seed": rc.seed, "trial": rc.trial,
        "metrics": rc.metrics, "code": code_version(),
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:20]


def run_one(cfg: dict[str, Any]) -> RunOutcome:
    """Run, score and log one configuration. Raises DPArenaError for bad input found before
    the MLflow run starts; failures after that are logged and returned as FAILED."""
    rc = parse_run_config(cfg)
    mechanism, metrics = build_components(rc)
    data = load_dataset(rc.dataset)
    if data.unit not in mechanism.units:
        raise ConfigError(f"mechanism {rc.mechanism!r} does not support {data.unit}-level privacy",
                          f"use a dataset with unit in {list(mechanism.units)}")
    applicable = {n: m for n, m in metrics.items() if m.applies_to(data)}
    if not applicable:
        raise ConfigError(f"none of the metrics {sorted(metrics)} applies to dataset {data.name!r}",
                          "add a generic metric, e.g. metrics.kmarginal={}")
    client = client_for(rc.tracking_uri)
    experiment = rc.experiment or f"dp-arena/{data.name}"
    exp_id = ensure_experiment(client, experiment)
    fingerprint = data.fingerprint()
    tags = run_tags(rc, mechanism, data, fingerprint)
    run = client.create_run(exp_id, run_name=f"{rc.mechanism}/{rc.budget.epsilon:g}/{rc.trial}",
                            tags=tags)
    run_id = run.info.run_id
    outcome = RunOutcome(STATUS_FAILED, rc.mechanism, rc.budget.epsilon, rc.trial, run_id,
                         experiment=experiment)
    try:
        log_params(client, run_id, rc)
        execute(rc, mechanism, applicable, data, client, run_id, outcome)
        outcome.status = STATUS_OK
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, then re-raised
        outcome.message = failure_message(rc.mechanism, exc)
        client.set_tag(run_id, "failure_reason", outcome.message[:5000])
        client.set_terminated(run_id, STATUS_FAILED)
        raise
    client.set_terminated(run_id, STATUS_OK)
    return outcome


def execute(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric], data: Dataset,
            client, run_id: str, outcome: RunOutcome) -> None:
    rng = np.random.default_rng([rc.seed, rc.trial])
    ledger = Ledger(rc.budget, rc.accountant, unit=data.ledger_unit)  # type: ignore[arg-type]
    with ResourceMonitor() as fit:
        synthetic = mechanism.fit_sample(data, rc.budget, ledger, rng)
    synthetic = check_synthetic(synthetic, data, rc)
    with ResourceMonitor() as scoring:
        results = {name: metric.score(data, synthetic) for name, metric in metrics.items()}
    eps_spent, delta_spent = spent_budget(mechanism, ledger)
    scores = {f"{name}/{key}": float(v) for name, r in results.items() for key, v in r.scores.items()}
    numbers = {
        **scores,
        "seconds": fit.seconds, "score_seconds": scoring.seconds,
        "peak_memory_mb": max(fit.peak_mb, scoring.peak_mb), "fit_memory_mb": fit.extra_mb,
        "epsilon_spent": eps_spent, "delta_spent": delta_spent,
        "n_synthetic_rows": float(len(synthetic)),
    }
    log_metrics(client, run_id, numbers)
    log_artifacts(client, run_id, rc, mechanism, synthetic, results, ledger, numbers)
    outcome.scores, outcome.seconds = scores, fit.seconds


def check_synthetic(synthetic: pd.DataFrame, data: Dataset, rc: RunConfig) -> pd.DataFrame:
    """The mechanism's output must be a schema-valid table within the run's row limit."""
    if not isinstance(synthetic, pd.DataFrame):
        raise DPArenaError(f"mechanism {rc.mechanism!r} returned {type(synthetic).__name__}, "
                           "not a DataFrame", "fix the mechanism's fit_sample")
    problems = data.schema.problems(synthetic)
    limit = max_records(data, rc.budget.epsilon)
    if limit is not None and len(synthetic) > limit:
        problems.append(f"{len(synthetic)} rows, over the run's max_records {limit}")
    if problems:
        raise SchemaError(problems, where=f"synthetic data from mechanism {rc.mechanism!r}",
                          fix="the mechanism must emit in-domain values for every schema column")
    return synthetic[data.schema.names].reset_index(drop=True)


def max_records(data: Dataset, epsilon: float) -> int | None:
    limits = [r.max_records for r in data.runs if r.max_records and math.isclose(r.epsilon, epsilon)]
    if not limits:
        limits = [r.max_records for r in data.runs if r.max_records]
    return max(limits) if limits else None


def spent_budget(mechanism: Mechanism, ledger: Ledger) -> tuple[float, float]:
    if mechanism.reference == "ceiling":
        return math.inf, 0.0
    return ledger.spent()


def run_tags(rc: RunConfig, mechanism: Mechanism, data: Dataset, fingerprint: str) -> dict[str, str]:
    tags = {
        "mechanism": rc.mechanism,
        "hyperparameters": hyperparameter_label(rc.mechanism, rc.mechanism_params),
        "epsilon": f"{rc.budget.epsilon:g}", "delta": f"{rc.budget.delta:g}",
        "trial": str(rc.trial), "accountant": rc.accountant,
        "privacy_unit": data.ledger_unit, "dataset": data.name,
        "data_fingerprint": fingerprint, "code_version": code_version(),
        "run_key": run_key(rc, fingerprint),
        "private": "true" if mechanism.is_private else "false",
        "reference": mechanism.reference or "",
        "sweep": rc.sweep,
    }
    if mechanism.reference == "floor" and data.public is None and not getattr(mechanism, "n_rows", None):
        tags["non_private_note"] = "row count read from the private data (no public part)"
    return tags


def log_params(client, run_id: str, rc: RunConfig) -> None:
    from mlflow.entities import Param

    params = flatten({k: v for k, v in rc.raw.items() if k != "hydra"})
    items = [Param(k, v[:6000]) for k, v in sorted(params.items())]
    for start in range(0, len(items), 100):
        client.log_batch(run_id, params=items[start:start + 100])


def log_metrics(client, run_id: str, numbers: dict[str, float]) -> None:
    from mlflow.entities import Metric as MlflowMetric

    now = int(time.time() * 1000)
    items = [MlflowMetric(k, float(v), now, 0) for k, v in numbers.items()]
    client.log_batch(run_id, metrics=items)


def log_artifacts(client, run_id: str, rc: RunConfig, mechanism: Mechanism,
                  synthetic: pd.DataFrame, results: dict, ledger: Ledger,
                  numbers: dict[str, float]) -> None:
    report = {
        "mechanism": rc.mechanism, "hyperparameters": rc.mechanism_params,
        "epsilon": rc.budget.epsilon, "delta": rc.budget.delta, "trial": rc.trial,
        "reference": mechanism.reference, "metrics": json_safe(numbers),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "scores.json").write_text(json.dumps(report, indent=1))
        (out / "ledger.json").write_text(json.dumps(json_safe(ledger.to_dict()), indent=1))
        client.log_artifact(run_id, str(out / "scores.json"))
        client.log_artifact(run_id, str(out / "ledger.json"))
        if mechanism.reference != "ceiling" or rc.log_private_synthetic:
            synthetic.to_parquet(out / "synthetic.parquet", index=False)
            client.log_artifact(run_id, str(out / "synthetic.parquet"))
        else:
            client.set_tag(run_id, "synthetic_logged",
                           "false (resample output is private rows; opt in with "
                           "tracking.log_private_synthetic=true)")
        for result in results.values():
            for name, table in result.tables.items():
                table.to_csv(out / f"{name}.csv", index=False)
                client.log_artifact(run_id, str(out / f"{name}.csv"), "tables")
            for name, fig in result.figures.items():
                fig.savefig(out / f"{name}.png", dpi=100, bbox_inches="tight")
                client.log_artifact(run_id, str(out / f"{name}.png"), "plots")


def json_safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def failure_message(mechanism: str, exc: BaseException) -> str:
    if isinstance(exc, DPArenaError):
        return str(exc)
    return f"mechanism {mechanism!r} run failed: {type(exc).__name__}: {exc}"
