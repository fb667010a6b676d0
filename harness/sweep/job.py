"""One job of a sweep, in the worker: its verdict, its run, its outcome record and its line.

- :func:`run_hydra_job`: the Hydra task (:mod:`harness.cli.main`): reads the job's verdict
  from the sweep's plan (an ``n/a`` or duplicate job returns at once), writes ``started.json``,
  runs the job (:func:`execute_job`), writes ``outcome.json`` (:mod:`harness.sweep.records`)
  and prints one line (:func:`report_job`). A tuning search job returns the objective Optuna
  maximizes (``-inf`` for a failed run, so a failure never aborts the study).
- :func:`execute_job`: the job's config (Hydra's typed config converted once, plus what the
  sweep adds: :class:`JobContext`) through :func:`harness.run.runner.run_one`, as an
  :class:`~harness.sweep.records.Outcome`; a failure is an outcome too (the run it started, if
  any, is named: the runner says which run it created before computing).
- :func:`report_job`: ``[k/N] done   mst eps=1 trial=2  challenge/overall=...  (11.2s)  ETA``,
  ``skip`` for a run whose content key already finished, ``FAILED`` with the reason.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import DPArenaError
from harness.redact import scrubbed_reason
from harness.run.config import RunConfig, parse_run_config, preset_of
from harness.run.runner import RunStarted, run_one
from harness.sweep.progress import progress_text
from harness.sweep.records import Outcome, Started, read_plan, write_outcome, write_started

#: The scores a line and a tuning objective prefer, in order.
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")


@dataclass(frozen=True)
class JobContext:
    """What the sweep adds to a job's config: its folder, its parent runs, the preset of the
    mechanism option, the plan's default delta, a search trial's own trial index."""

    sweep: str = ""
    parent_runs: Mapping[str, str] = field(default_factory=dict)
    preset: str = ""
    delta: float | None = None
    search_trial: int | None = None


def job_config(source: Any, context: JobContext = JobContext()) -> RunConfig:
    """The job's :class:`RunConfig`: ``source`` (Hydra's composed config, a config dict or a
    RunConfig) with what the sweep adds."""
    rc = source if isinstance(source, RunConfig) else parse_run_config(
        source, sweep=context.sweep, parent_runs=context.parent_runs, preset=context.preset)
    if context.delta is not None:  # the plan's default delta rule
        rc = rc.replaced(privacy=replace(rc.settings.privacy, delta=context.delta))
    if context.search_trial is not None and rc.tuning.searches:
        rc = rc.replaced(trial=context.search_trial)  # every Optuna trial gets fresh noise
    return rc


def run_hydra_job(cfg: Any, hc: Any) -> Outcome | float:
    """The Hydra task for one job (see the module docstring); ``hc`` is Hydra's job config."""
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    multirun = hc.mode == RunMode.MULTIRUN
    num = int(hc.job.num)
    plan = read_plan(hc.sweep.dir) if multirun else None
    entry = plan.entry(num, list(hc.overrides.task)) if plan else None
    out = Path(hc.runtime.output_dir)
    if entry is not None and entry.verdict in ("n/a", "duplicate"):
        outcome = Outcome("N/A" if entry.verdict == "n/a" else "DUPLICATE", entry.label,
                          message=entry.reason, row=entry.row, same_as=entry.same_as)
        write_outcome(out, outcome)
        return outcome
    search = OmegaConf.select(cfg, "tuning.mode") in ("public", "oracle") and \
        OmegaConf.select(cfg, "tuning.stage") == "search"
    context = JobContext(
        sweep=hc.sweep.dir if multirun else "", parent_runs=plan.parents if plan else {},
        preset=preset_of(hc.runtime.choices.get("mechanism"),
                         OmegaConf.select(cfg, "mechanism.name")),
        delta=entry.delta if entry is not None else None,
        search_trial=num if search and multirun else None)
    began = time.time()
    if multirun:  # the progress display counts this run as in flight
        write_started(out, Started(num, began, entry.label if entry else ""))
    try:
        outcome = execute_job(cfg, context, swept_keys(list(hc.overrides.task)), multirun)
        outcome = outcome.with_(index=num, wall_seconds=time.time() - began)
    except (SystemExit, KeyboardInterrupt):
        if not multirun:
            raise
        # the sweep is stopping (its run is marked KILLED): this worker takes no further job
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(143)
    write_outcome(out, outcome)
    report_job(outcome, progress_text(hc.sweep.dir, plan) if multirun else ("", ""), multirun)
    if not multirun and outcome.failed:
        sys.exit(2)
    if search:  # a failed trial is the worst possible value: the study goes on without it
        return outcome.objective if outcome.objective is not None else -math.inf
    return outcome


def swept_keys(overrides: list[str]) -> list[str]:
    """The mechanism hyperparameters a job's overrides set (``mechanism.k=4`` -> ``k``)."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    return [k.removeprefix("mechanism.") for k in sorted(keys) if k.startswith("mechanism.")]


def execute_job(source: Any, context: JobContext = JobContext(), swept: list[str] = (),
                multirun: bool = True) -> Outcome:
    """Run one job and return its outcome (:func:`report_job` prints it). ``swept``: the
    mechanism settings the job's overrides set, recorded with their values (a search's
    setting)."""
    started: list[RunStarted] = []
    rc: RunConfig | None = None
    try:
        rc = job_config(source, context)
        outcome = run_one(rc, on_start=started.append)
        return Outcome("SKIPPED" if outcome.skipped else outcome.status, rc.label,
                       run_id=outcome.run_id, experiment=outcome.experiment,
                       tracking_uri=outcome.tracking_uri or rc.tracking_uri,
                       seconds=outcome.seconds, scores=outcome.scores,
                       objective=objective_value(outcome.scores, rc),
                       setting=setting_of(rc, swept), redone=outcome.redone,
                       metrics_na=outcome.metrics_na)
    except DPArenaError as exc:
        return failed(rc, source, started, swept, str(exc), user_error=True)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        hint = ""
        if os.environ.get("DP_ARENA_DEBUG"):
            traceback.print_exc()
            print(getattr(exc, "child_traceback", ""), file=sys.stderr)
        else:
            hint = "(set DP_ARENA_DEBUG=1 to see the traceback)"
        return failed(rc, source, started, swept, scrubbed_reason(exc), hint=hint)


def failed(rc: RunConfig | None, source: Any, started: list[RunStarted], swept: list[str],
           message: str, **extra: Any) -> Outcome:
    """A failed job's outcome, naming the run it started (if any)."""
    run = started[0] if started else None
    return Outcome("FAILED", rc.label if rc is not None else fallback_label(source),
                   message=message, run_id=run.run_id if run else None,
                   experiment=run.experiment if run else "",
                   tracking_uri=run.tracking_uri if run else (rc.tracking_uri if rc else None),
                   setting=setting_of(rc, swept) if rc is not None else {}, **extra)


def setting_of(rc: RunConfig, swept: list[str]) -> dict[str, Any]:
    return {k: rc.mechanism_params.get(k) for k in swept}


def fallback_label(source: Any) -> str:
    """A job's name when its config cannot be read: the mechanism, epsilon and trial given."""
    from omegaconf import OmegaConf

    try:
        plain = source if isinstance(source, Mapping) else OmegaConf.to_container(source)
        mech, privacy = plain.get("mechanism") or {}, plain.get("privacy") or {}
        return f"{mech.get('name')} eps={privacy.get('epsilon')} trial={plain.get('trial')}"
    except Exception:  # noqa: BLE001 - a name is all this is for
        return "job"


def objective_value(scores: Mapping[str, float], rc: RunConfig) -> float | None:
    """The score tuning maximizes: ``tuning.objective`` (default: challenge/overall if
    logged, else kmarginal/score), negated when lower is better."""
    from harness.report.leaderboard import lower_is_better

    wanted = rc.tuning.objective
    names = [wanted] if wanted else [k for k in RANKING_PREFERENCE if k in scores]
    if not names or names[0] not in scores:
        return None
    value = float(scores[names[0]])
    return -value if lower_is_better(names[0]) else value


def report_job(outcome: Outcome, progress: tuple[str, str] = ("", ""),
               multirun: bool = True) -> None:
    """One line per finished job (``done``, ``skip``, ``FAILED`` with the reason), with the
    sweep's progress (``[k/N]`` ... ``ETA``) when known. In a sweep, a refusal before the run
    started is explained once, by the sweep summary."""
    label, status = outcome.label, outcome.status
    lead = f"{progress[0]} " if progress[0] else ""
    eta = f"  {progress[1]}" if progress[1] else ""
    if status == "SKIPPED":
        print(f"{lead}skip   {label}  already finished (run {(outcome.run_id or '')[:8]}): "
              f"{headline(outcome.scores)}{eta}", flush=True)
    elif status != "FAILED":
        redo = f"  (redone: {outcome.redone})" if outcome.redone else ""
        print(f"{lead}done   {label}  {headline(outcome.scores)}  "
              f"({seconds_text(outcome.seconds)}){redo}{eta}", flush=True)
    elif outcome.run_id or not multirun or not outcome.user_error:
        hint = f"\n  {outcome.hint}" if outcome.hint else ""
        print(f"{lead}FAILED {label}\n{indent(outcome.message)}{hint}", file=sys.stderr,
              flush=True)
    else:
        print(f"{lead}FAILED {label}  (refused before the run started; reason in the summary)",
              file=sys.stderr, flush=True)


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds >= 0.1 else "<0.1s"


def headline(scores: Mapping[str, float]) -> str:
    keys = [k for k in RANKING_PREFERENCE if k in scores]
    return "  ".join(f"{k}={scores[k]:.1f}" for k in keys)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())

