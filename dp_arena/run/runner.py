"""One run: dataset x mechanism (+ hyperparameters) x (epsilon, delta) x trial.

``run_one(cfg)`` takes the run's config (:class:`dp_arena.run.config.RunConfig`, or a config it
converts once), validates it whole before touching data or MLflow, then
loads the dataset, skips the run if its content key already finished (resume), and otherwise
runs the mechanism against a fresh privacy ledger in a child process under the run's time and
memory limits (:mod:`dp_arena.run.isolation`), validates the synthetic table against the schema,
scores it with every metric that applies, and logs params, metrics, tags and artifacts to
MLflow. Any failure after the MLflow run started (an exception, an invalid table, a time or
memory limit) marks it FAILED with the reason. The runner fits whatever mechanism the config
builds: under ``tuning.mode=dp_select`` that is the private selector wrapping the mechanism
(:mod:`dp_arena.run.dp_select`); the tuning modes are described in :mod:`dp_arena.run.tuning`.
The content key is derived from the run's one content description (:mod:`dp_arena.run.content`).

What a run writes is a DP release, public, or an opt-in that is labelled:

- **noise**: drawn from fresh OS entropy per run (:mod:`dp_arena.privacy.noise`), never from
  ``seed``/``trial`` or anything else logged; ``privacy.noise=replayable`` derives it from the
  local secret key and the content key instead, and tags the run ``noise=replayable`` (not a DP
  release to holders of that key);
- **fingerprints**: ``data_fingerprint`` is an HMAC of the data under the local secret
  (:mod:`dp_arena.privacy.secret`), so it identifies the data without revealing it;
- **artifacts**: the synthetic table (a DP release; not for ``resample``, whose output is private
  rows, unless ``tracking.log_private_synthetic=true``), ``ledger.json``, ``scores.json`` and the
  metric tables/figures each metric declares public. Metric outputs computed on the private data
  are logged only with ``tracking.log_private_tables=true``, which tags the run
  ``private_tables=true``. Score scalars are computed on the private data (as the challenge
  published its scores) and logged as metrics, except those of metrics that read the held-out
  persons: they go to an owner-only file (:mod:`dp_arena.run.heldout`) unless
  ``tracking.log_heldout_scores=true`` (tagged ``heldout_scores``);
- **delta**: a delta at or above 1/(number of persons) is refused unless
  ``privacy.allow_large_delta=true`` (tagged ``large_delta=true``).
"""

from __future__ import annotations

import json
import math
import signal
import tempfile
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dp_arena.data.cache import cached_load
from dp_arena.data.conform import schema_numbers
from dp_arena.data.datasets import Dataset
from dp_arena.errors import DPArenaError, SchemaError
from dp_arena.privacy.accounting import Ledger
from dp_arena.privacy.noise import noise_rng
from dp_arena.privacy.release import Releaser, make_sampler
from dp_arena.privacy.secret import keyed_digest
from dp_arena.redact import scrubbed_reason
from dp_arena.report.record import RunRecord, setting_label
from dp_arena.report.tracking import (
    LOWER_IS_BETTER_TAG,
    METRIC_NA_TAG,
    client_for,
    json_safe,
    log_folder,
    log_metrics,
    log_params,
    run_tag,
    code_version,
    ensure_experiment,
    find_finished_run,
    find_interrupted_run,
    mark_killed,
    source_fingerprint,
    source_tags,
)
from dp_arena.run.config import (
    RunConfig,
    build_components,
    experiment_for,
    parse_run_config,
)
from dp_arena.run.content import run_key
from dp_arena.run.cost_inputs import cost_inputs, cost_tags
from dp_arena.run.heldout import OPT_IN_TAG, OPT_IN_VALUE, split_scores, write_heldout_scores
from dp_arena.run.isolation import call_isolated
from dp_arena.run.preflight import check_data_size, check_run
from dp_arena.run.record import build_record, private_output_reason
from dp_arena.run.references import metric_references, scoring_view
from dp_arena.run.resources import ResourceMonitor
from dp_arena.mechanisms import Mechanism
from dp_arena.mechanisms.base import output_facts
from dp_arena.mechanisms.external import ContestantFailed, failure_category, owner_note
from dp_arena.metrics import Metric, MetricResult
from dp_arena.metrics.base import drawn

STATUS_OK, STATUS_FAILED = "FINISHED", "FAILED"
#: Modules every run executes besides its mechanism's and metrics' (code fingerprint roots).
RUN_MODULES = ("dp_arena.data.datasets", "dp_arena.privacy.accounting", "dp_arena.data.schema",
               "dp_arena.run.isolation")


@dataclass(frozen=True)
class RunStarted:
    """The MLflow run a run logs to, known once it is created (before any computation)."""

    run_id: str
    experiment: str
    tracking_uri: str


@dataclass(frozen=True)
class RunOutcome:
    """What a finished (or skipped) run produced."""

    status: str
    mechanism: str
    epsilon: float
    trial: int
    run_id: str | None = None
    experiment: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    message: str = ""
    seconds: float = 0.0
    skipped: bool = False
    tracking_uri: str = ""
    redone: str = ""  # why an earlier attempt with the same content key is redone
    metrics_na: dict[str, str] = field(default_factory=dict)


def code_fingerprint(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric]) -> str:
    """Source fingerprint of the code this run executes (see tracking.source_fingerprint)."""
    roots = (*mechanism.source_modules(), *sorted(type(m).__module__ for m in metrics.values()),
             *RUN_MODULES, *(("dp_arena.run.tuning",) if rc.tuning.tuned else ()))
    return source_fingerprint(tuple(roots))


def run_one(cfg: Any, on_start: Callable[[RunStarted], None] | None = None) -> RunOutcome:
    """Run, score and log one configuration (a :class:`RunConfig`, or anything
    :func:`parse_run_config` reads). Raises DPArenaError for bad input found before the MLflow
    run starts; failures after that are logged and re-raised (the MLflow run is FAILED with
    the reason; ``on_start`` has been told which run it is). A run whose content key already
    FINISHED is skipped (unless ``resume=false``): the outcome is the earlier run's."""
    rc = cfg if isinstance(cfg, RunConfig) else parse_run_config(cfg)
    mechanism, metrics = build_components(rc)
    check_data_size(rc)
    data = cached_load(rc.dataset)  # the worker's memo: loaded once, inherited by the fork
    checked = check_run(rc, mechanism, metrics, data)
    client = client_for(rc.tracking_uri)
    experiment = experiment_for(rc, data)
    exp_id = ensure_experiment(client, experiment)
    fingerprint = data_fingerprint(data)
    code = code_fingerprint(rc, mechanism, metrics)
    key = run_key(rc, fingerprint, code)
    redo = ""
    if rc.resume:
        earlier = find_finished_run(client, exp_id, key)
        if earlier is not None:
            return skipped_outcome(rc, earlier, experiment, client.tracking_uri)
        interrupted = find_interrupted_run(client, exp_id, key)
        if interrupted is not None:
            redo = f"run {interrupted.info.run_id[:8]} was interrupted ({interrupted.info.status})"
    record = run_record(rc, mechanism, data, fingerprint, key, code)
    tags = {**record.to_tags(), **lineage_tags(rc, experiment, checked.metrics_na),
            **contestant_tags(mechanism),
            **cost_tags(cost_inputs(rc.dataset, data, float(rc.budget.epsilon)))}
    run_id = client.create_run(exp_id, run_name=record.name, tags=tags).info.run_id
    if on_start is not None:
        on_start(RunStarted(run_id, experiment, client.tracking_uri))
    try:
        with stop_signals_as_exit(), system_metrics(rc, client, run_id):
            log_params(client, run_id, rc.as_dict())
            log_dataset_input(client, run_id, data, fingerprint, rc)
            computed = execute(rc, mechanism, checked.metrics, checked.view, client, run_id, key)
    except Exception as exc:  # every failure is recorded, then re-raised
        failed = contestant_failure(mechanism, exc)
        message = str(failed) if failed is not None else \
            failure_message(rc.mechanism, exc, tuple(data.schema.names))
        client.set_tag(run_id, "failure_reason", message[:5000])
        if failed is not None:
            client.set_tag(run_id, "contestant.failure", failed.kind)
        client.set_terminated(run_id, STATUS_FAILED)
        if failed is not None and failed is not exc:
            raise failed from None  # a contestant's failure says its category only
        raise
    except BaseException as exc:  # a stop signal or Ctrl-C: the run ends KILLED, with why
        mark_killed(client, run_id, f"stopped: {type(exc).__name__}")
        raise
    client.set_terminated(run_id, STATUS_OK)
    return RunOutcome(STATUS_OK, rc.mechanism, rc.budget.epsilon, rc.trial, run_id, experiment,
                      computed.scores, seconds=computed.seconds,
                      tracking_uri=client.tracking_uri, redone=redo,
                      metrics_na=checked.metrics_na)


def contestant_tags(mechanism: Mechanism) -> dict[str, str]:
    """``contestant.isolation`` for an external contestant (what it runs under), else none."""
    tag = getattr(mechanism, "isolation_tag", None)
    return tag() if callable(tag) else {}


def contestant_failure(mechanism: Mechanism, exc: BaseException) -> ContestantFailed | None:
    """An external contestant's failure as its category (:data:`dp_arena.mechanisms.external.FAILURES`;
    the exception's own words go to the owner's file), else ``None``."""
    if not callable(getattr(mechanism, "isolation_tag", None)):
        return None
    if isinstance(exc, ContestantFailed):
        return exc
    kind = failure_category(exc)
    owner_note(mechanism.name, kind, f"{type(exc).__name__}: {exc}")
    return ContestantFailed(mechanism.name, kind)


def lineage_tags(rc: RunConfig, experiment: str, metrics_na: dict[str, str]) -> dict[str, str]:
    """The sweep's parent run, MLflow's source tags, and the metrics that did not apply."""
    tags = dict(source_tags())
    parent = rc.parent_runs.get(experiment)
    if parent:
        tags["mlflow.parentRunId"] = parent
    if metrics_na:
        tags["metrics_na"] = "; ".join(f"{n}: {r}" for n, r in sorted(metrics_na.items()))[:5000]
        tags.update({f"{METRIC_NA_TAG}{n}": r[:5000] for n, r in metrics_na.items()})
    return tags


def log_dataset_input(client, run_id: str, data: Dataset, fingerprint: str,
                      rc: RunConfig) -> None:
    """The dataset as an MLflow input (``mlflow.log_input``'s entity): its name, the keyed
    fingerprint as digest (MLflow's own digest would be an unkeyed hash of the private data)
    and the schema's column names; no profile, since a row count of private data is private."""
    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.types import ColSpec
    from mlflow.types import Schema as MlflowSchema

    source = CodeDatasetSource({"dataset": json.dumps(rc.dataset, sort_keys=True, default=str)})
    meta = MetaDataset(source=source, name=data.name, digest=fingerprint,
                       schema=MlflowSchema([ColSpec("string", c) for c in data.schema.names]))
    client.log_inputs(run_id, datasets=[DatasetInput(meta._to_mlflow_entity(),
                                                     tags=[InputTag("mlflow.data.context",
                                                                    "private")])])


@contextmanager
def system_metrics(rc: RunConfig, client, run_id: str):
    """With ``tracking.system_metrics=true``, MLflow's system metrics (``system/*``: CPU,
    memory, disk, network of this machine, every second) are logged while the run computes.
    Like ``seconds``, they grow with the private data's size: treat them like scores."""
    if not rc.system_metrics:
        yield
        return
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(run_id, sampling_interval=1,
                                   tracking_uri=client.tracking_uri)
    monitor.start()
    try:
        yield
    finally:
        monitor.finish()


@contextmanager
def stop_signals_as_exit():
    """While a run is logged, SIGTERM raises ``SystemExit`` (as Ctrl-C raises
    ``KeyboardInterrupt``), so the run is marked KILLED rather than left RUNNING. Only in
    the main thread, where Python delivers signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):  # the signal handler's signature
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def skipped_outcome(rc: RunConfig, earlier, experiment: str, uri: str) -> RunOutcome:
    scores = {k: v for k, v in earlier.data.metrics.items() if "/" in k}
    return RunOutcome(STATUS_OK, rc.mechanism, rc.budget.epsilon, rc.trial, earlier.info.run_id,
                      experiment, scores, "already finished (same content key)",
                      float(earlier.data.metrics.get("seconds", 0.0)), skipped=True,
                      tracking_uri=uri)


@dataclass
class Computed:
    """What the isolated child hands back: numbers to log, extra tags, the artifact folder."""

    numbers: dict[str, float]
    scores: dict[str, float]
    seconds: float
    tags: dict[str, str] = field(default_factory=dict)
    #: the scores of metrics that read held-out persons: for the owner's side only
    heldout: dict[str, float] = field(default_factory=dict)


def execute(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric], data: Dataset,
            client, run_id: str, key: str) -> Computed:
    """Compute in a child process under the run's limits, then log what it produced."""
    with tempfile.TemporaryDirectory(prefix="dp-arena-run-") as tmp:
        out = Path(tmp)
        references = metric_references(metrics, data)  # before the fork: the worker keeps them
        computed, report = call_isolated(
            lambda: compute(rc, mechanism, metrics, data, out, key, references), rc.limits)
        numbers = dict(computed.numbers)
        if report.isolated:
            numbers["peak_memory_mb"] = max(numbers["peak_memory_mb"], report.peak_rss_mb)
            numbers["wall_seconds"] = report.seconds
        if computed.tags:
            client.log_batch(run_id, tags=[run_tag(k, v) for k, v in computed.tags.items()])
        log_metrics(client, run_id, numbers)
        log_folder(client, run_id, out)
        if computed.heldout:  # the owner's side, never the store (dp_arena.run.heldout)
            write_heldout_scores(run_id, computed.heldout)
        reason = private_output_reason(mechanism, data)
        if reason and not rc.log_private_synthetic:
            client.set_tag(run_id, "synthetic_logged",
                           f"false ({reason}; opt in with tracking.log_private_synthetic=true)")
    return computed


def compute(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric], data: Dataset,
            out: Path, key: str, references: dict[str, Any] | None = None) -> Computed:
    """The run's computation (in the isolated child): fit, validate, score, and write the
    artifacts into ``out``. Touches no MLflow store. The noise comes from
    :func:`dp_arena.privacy.noise.noise_rng` (fresh OS entropy unless ``privacy.noise=replayable``);
    the child draws it, so no two runs share a stream. The mechanism fits the training view
    (:meth:`Dataset.training_view`: no held-out persons); the metrics score the whole
    dataset (they read ``data.heldout``), each given its real-data side from ``references``
    (:mod:`dp_arena.run.references`; computed here when absent)."""
    references = references if references is not None else {}
    noise, rng = noise_rng(rc.noise, key).spawn(2)  # the releaser's noise; post-processing
    training = data.training_view()  # the mechanism never receives the held-out persons
    ledger = Ledger(rc.budget, rc.accountant, unit=training.ledger_unit)  # type: ignore[arg-type]
    release = Releaser(ledger, make_sampler(rc.sampler, noise))
    with ResourceMonitor() as fit:
        synthetic = mechanism.fit_sample(training, rc.budget, release, rng)
    tags, files = output_facts(synthetic)  # facts the output carries (dp_arena.mechanisms.base)
    extra_tags = {**mechanism.setting_tags(), **tags}
    for path, record in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(json.dumps(json_safe(record), indent=1))
    synthetic = check_synthetic(synthetic, data, rc)
    with ResourceMonitor() as scoring:
        results = {name: metric.score_with(references[name], scoring_view(metric, data),
                                           synthetic)
                   if references.get(name) is not None
                   else metric.score(scoring_view(metric, data), synthetic)
                   for name, metric in metrics.items()}
    eps_spent, delta_spent = spent_budget(mechanism, ledger)
    scores, heldout = stored_scores(rc, metrics, results)
    if heldout and rc.log_heldout_scores:
        extra_tags[OPT_IN_TAG] = OPT_IN_VALUE
    extra_tags.update(direction_tags(scores, metrics))
    numbers = {
        **scores,
        "seconds": fit.seconds, "score_seconds": scoring.seconds,
        "cpu_seconds": fit.cpu_seconds + scoring.cpu_seconds, "fit_cpu_seconds": fit.cpu_seconds,
        "peak_memory_mb": max(fit.peak_mb, scoring.peak_mb), "fit_memory_mb": fit.extra_mb,
        "epsilon_spent": eps_spent, "delta_spent": delta_spent,
        **schema_numbers(data.schema_source, eps_spent, delta_spent),
    }
    log_synthetic = not private_output_reason(mechanism, data) or rc.log_private_synthetic
    if log_synthetic:
        numbers["n_synthetic_rows"] = float(len(synthetic))
    write_artifacts(out, rc, mechanism, synthetic, public_results(results, metrics, rc),
                    ledger, numbers, log_synthetic=log_synthetic)
    return Computed(numbers, scores, fit.seconds, extra_tags, heldout)


def stored_scores(rc: RunConfig, metrics: dict[str, Metric],
                  results: dict[str, MetricResult]) -> tuple[dict[str, float], dict[str, float]]:
    """``(store, held-out)``: the scores the tracking store gets, and those of metrics that
    read held-out persons, kept on the owner's side (:mod:`dp_arena.run.heldout`); with
    ``tracking.log_heldout_scores=true`` the store gets both (a labelled opt-in)."""
    scores = {f"{name}/{key}": float(v) for name, r in results.items()
              for key, v in r.scores.items()}
    store, heldout = split_scores(
        scores, frozenset(n for n, m in metrics.items() if type(m).reads_heldout))
    return (scores if rc.log_heldout_scores else store), heldout


def direction_tags(scores: dict[str, float], metrics: dict[str, Metric]) -> dict[str, str]:
    """Per metric with stored scores, the tag naming those where smaller ranks better (the
    board reads it). Only the names of ``scores``, the ones the store gets: a name the metric
    returns only on some data (an owner-side score) never reaches a tag."""
    lower: dict[str, list[str]] = {}
    for key in scores:
        name, _, score = key.partition("/")
        lower.setdefault(name, [])
        if type(metrics[name]).ranks_lower(score):
            lower[name].append(score)
    return {f"{LOWER_IS_BETTER_TAG}{name}": ",".join(sorted(found))
            for name, found in lower.items()}


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
    """The (epsilon, delta) the run can prove it spent: infinity for ``resample``, the whole
    budget for a mechanism whose bound is a privacy filter (``filter_bound``: AIM), else the
    ledger's composition of the charges."""
    if mechanism.reference == "ceiling":
        return math.inf, 0.0
    if mechanism.filter_bound and ledger.charges:
        return ledger.budget.epsilon, ledger.budget.delta
    return ledger.spent()


def accountant_label(accountant: str, hyper: str) -> str:
    """``hyper`` (a settings label) with the accountant in front when it is not the default:
    :func:`dp_arena.report.record.setting_label` (a run's own label: ``rc.setting``)."""
    return setting_label(hyper, "", accountant)


def run_tags(rc: RunConfig, mechanism: Mechanism, data: Dataset, fingerprint: str,
             key: str, code: str) -> dict[str, str]:
    """The run's tags: its record's (:func:`dp_arena.run.record.build_record`)."""
    return run_record(rc, mechanism, data, fingerprint, key, code).to_tags()


def run_record(rc: RunConfig, mechanism: Mechanism, data: Dataset, fingerprint: str,
               key: str, code: str) -> RunRecord:
    """The run's :class:`~dp_arena.report.record.RunRecord`, with its provenance."""
    return build_record(rc, mechanism, data, fingerprint=fingerprint, key=key, code=code,
                        version=code_version())


def data_fingerprint(data: Dataset) -> str:
    """The ``data_fingerprint`` tag: HMAC-SHA256 of the data's content under the local secret
    (16 hex digits). Same data and key -> same fingerprint (resume works); without the key it
    cannot be linked to a candidate table."""
    return keyed_digest(data.content_digest(), "data-fingerprint")[:16]


def public_results(results: dict[str, MetricResult], metrics: dict[str, Metric],
                   rc: RunConfig) -> dict[str, MetricResult]:
    """The metric outputs the run may log: only those each metric declares public
    (``Metric.public_outputs``), unless ``tracking.log_private_tables=true``."""
    if rc.log_private_tables:
        return results
    kept = {}
    for name, result in results.items():
        public, private = metrics[name].split_result(result)
        kept[name] = MetricResult(result.scores, public.tables, public.figures)
        for fig in private.figures.values():
            if not callable(fig):  # a deferred figure was never drawn
                close_figure(fig)
    return kept


def close_figure(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def write_artifacts(out: Path, rc: RunConfig, mechanism: Mechanism, synthetic: pd.DataFrame,
                    results: dict, ledger: Ledger, numbers: dict[str, float],
                    log_synthetic: bool = True) -> None:
    """The run's artifacts as files under ``out`` (sub-folders become artifact paths). The
    synthetic table is left out when ``log_synthetic`` is false (a reference output that is
    itself private, see :func:`private_output_reason`)."""
    report = {
        "mechanism": rc.mechanism, "hyperparameters": rc.mechanism_params,
        "epsilon": rc.budget.epsilon, "delta": rc.budget.delta, "trial": rc.trial,
        "reference": mechanism.reference, "tuning": rc.tuning.mode,
        "metrics": json_safe(numbers),
    }
    (out / "scores.json").write_text(json.dumps(report, indent=1))
    (out / "ledger.json").write_text(json.dumps(json_safe(ledger.to_dict()), indent=1))
    if log_synthetic:
        synthetic.to_parquet(out / "synthetic.parquet", index=False)
    for result in results.values():
        for name, table in result.tables.items():
            (out / "tables").mkdir(exist_ok=True)
            table.to_csv(out / "tables" / f"{name}.csv", index=False)
        for name, fig in result.figures.items():
            (out / "plots").mkdir(exist_ok=True)
            drawn(fig).savefig(out / "plots" / f"{name}.png", dpi=100, bbox_inches="tight")


def failure_message(mechanism: str, exc: BaseException, public: tuple[str, ...] = ()) -> str:
    """The failure reason a run records: dp-arena's own errors as they are (they name the
    column, the count and the fix), any other exception's text scrubbed of data-derived
    values (:func:`dp_arena.redact.scrubbed`; ``public``: names that may stay, the columns)."""
    if isinstance(exc, DPArenaError):
        return str(exc)
    return f"mechanism {mechanism!r} run failed: {scrubbed_reason(exc, public)}"
