"""One job of a sweep, in the worker: its verdict, its run, its outcome record and its line.

- :func:`run_hydra_job`: the Hydra task (:mod:`dp_arena.cli.main`): reads the job's verdict
  from the sweep's plan (an ``n/a`` or duplicate job returns at once), writes ``started.json``,
  runs the job (:func:`execute_job`), writes ``outcome.json`` (:mod:`dp_arena.sweep.records`)
  and prints one line (:func:`report_job`), unless the launching process's progress monitor
  prints it (a local joblib sweep: :func:`dp_arena.sweep.progress.monitor_prints_lines`, so one
  process writes to the terminal). Then a job in a worker process sends its console output
  (warnings, a ``DP_ARENA_DEBUG`` traceback) to ``console.log`` in its folder, named in its
  line if it failed. A tuning search job returns the objective Optuna maximizes (``-inf`` for
  a failed run, so a failure never aborts the study).
- :func:`execute_job`: the job's config (Hydra's typed config converted once, plus what the
  sweep adds: :class:`JobContext`) through :func:`dp_arena.run.runner.run_one`, as an
  :class:`~dp_arena.sweep.records.Outcome`; a failure is an outcome too (the run it started, if
  any, is named: the runner says which run it created before computing).
- :func:`report_job`: ``[k/N] done   mst eps=1 trial=2  challenge/overall=...  (11.2s)  ETA``,
  ``skip`` for a run whose content key already finished, ``FAILED`` with the reason (the text:
  :func:`dp_arena.sweep.lines.job_line`; a write to a closed pipe is not an error).
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dp_arena.errors import DPArenaError
from dp_arena.redact import scrubbed_reason
from dp_arena.report.tracking import uri_to_record
from dp_arena.run.config import RunConfig, parse_run_config, preset_of, tuning_of
from dp_arena.run.runner import RunStarted, run_one
from dp_arena.sweep.lines import (  # noqa: F401 - API
    RANKING_PREFERENCE,
    headline,
    indent,
    job_line,
    say,
    seconds_text,
)
from dp_arena.sweep.progress import (
    in_launching_process,
    monitor_prints_lines,
    progress_text,
)
from dp_arena.sweep.records import (
    Outcome,
    Started,
    read_plan,
    write_outcome,
    write_started,
)

#: A job's console output, in its folder, when the launching process prints its line.
CONSOLE_LOG = "console.log"


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
    search = is_search(cfg)
    context = JobContext(
        sweep=hc.sweep.dir if multirun else "", parent_runs=plan.parents if plan else {},
        preset=preset_of(hc.runtime.choices.get("mechanism"),
                         OmegaConf.select(cfg, "mechanism.name")),
        delta=entry.delta if entry is not None else None,
        search_trial=num if search and multirun else None)
    began = time.time()
    if multirun:  # the progress display counts this run as in flight
        write_started(out, Started(num, began, entry.label if entry else ""))
    monitor = multirun and monitor_prints_lines(
        str(OmegaConf.select(hc, "launcher._target_") or ""), plan)
    console = out / CONSOLE_LOG if monitor and not in_launching_process() else None
    try:
        with output_to(console) if console else nullcontext():
            outcome = execute_job(cfg, context, swept_keys(list(hc.overrides.task)), multirun)
        outcome = outcome.with_(index=num, wall_seconds=time.time() - began)
    except (SystemExit, KeyboardInterrupt):
        if not multirun:
            raise
        # the sweep is stopping (its run is marked KILLED): this worker takes no further job
        for stream in (sys.stdout, sys.stderr):
            say("", stream, end="")  # flush; a closed pipe must not stop the exit
        os._exit(143)
    if console and outcome.failed and console.is_file() and console.stat().st_size:
        outcome = outcome.with_(hint=" ".join(filter(None, [
            outcome.hint, f"(the run's console output: {console})"])))
    write_outcome(out, outcome)
    if not monitor:
        report_job(outcome, progress_text(hc.sweep.dir, plan) if multirun else ("", ""),
                   multirun)
    if not multirun and outcome.failed:
        sys.exit(2)
    if search:  # a failed trial is the worst possible value: the study goes on without it
        return outcome.objective if outcome.objective is not None else -math.inf
    return outcome


@contextmanager
def output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr (file descriptors 1 and 2, so the run's child process
    too) appended to ``path`` while the block runs."""
    for stream in (sys.stdout, sys.stderr):
        say("", stream, end="")
    saved = [os.dup(1), os.dup(2)]
    with open(path, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                say("", stream, end="")
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def is_search(cfg: Any) -> bool:
    """Whether a job is a search run of a tuning sweep, from its typed settings
    (:attr:`dp_arena.run.settings.Tuning.searches`); ``False`` for a config whose ``tuning``
    group cannot be read (the run then refuses it, with the reason)."""
    try:
        return tuning_of(cfg).searches
    except DPArenaError:
        return False


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
                       tracking_uri=uri_to_record(outcome.tracking_uri or rc.tracking_uri),
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
                   tracking_uri=uri_to_record(run.tracking_uri if run else
                                              (rc.tracking_uri if rc else None)),
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


def ranks_lower(key: str) -> bool:
    """Whether a smaller ``key`` (``<metric>/<score>`` or one of the runner's own numbers)
    is better, as the metric (a registered one, plugins included) declares it."""
    from dp_arena.metrics import metric_class
    from dp_arena.report.tracking import RUN_NUMBERS_LOWER

    if key in RUN_NUMBERS_LOWER:
        return True
    metric, _, score = key.partition("/")
    return bool(score) and metric_class(metric).ranks_lower(score)


def objective_value(scores: Mapping[str, float], rc: RunConfig) -> float | None:
    """The score tuning maximizes: ``tuning.objective`` (default: challenge/overall if
    logged, else kmarginal/score), negated when the metric says lower is better."""
    wanted = rc.tuning.objective
    names = [wanted] if wanted else [k for k in RANKING_PREFERENCE if k in scores]
    if not names or names[0] not in scores:
        return None
    value = float(scores[names[0]])
    return -value if ranks_lower(names[0]) else value


def report_job(outcome: Outcome, progress: tuple[str, str] = ("", ""),
               multirun: bool = True) -> None:
    """Print one finished job's line (:func:`dp_arena.sweep.lines.job_line`): ``done`` and
    ``skip`` on stdout, ``FAILED`` on stderr; a stream whose reader has gone is skipped."""
    text, to_stderr = job_line(outcome, progress, multirun)
    say(text, sys.stderr if to_stderr else sys.stdout)
