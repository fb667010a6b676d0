"""A sweep's life in the launching process, from its plan to its summary (the Hydra callback
:class:`dp_arena.cli.callbacks.SweepSummary` calls these).

- :func:`open_sweep`: checks the ``DP_ARENA_*`` environment (:mod:`dp_arena.sweep.environment`),
  the launcher, the sweep folder and the local tracking store first, in seconds
  (:mod:`dp_arena.sweep.launch_checks`); then every job before any starts
  (:mod:`dp_arena.sweep.plan`: one message per distinct problem and exit 2; n/a and duplicate
  jobs listed) and the tracking server, and refuses (exit 2) a sweep in which nothing can
  run, all before the parent run exists;
  starts the sweep's MLflow parent run(s) (:mod:`dp_arena.sweep.parents`), writes the plan the
  jobs read, installs the stop handlers (which first end the progress display, so the stop
  message comes out whole) and starts the progress display (:mod:`dp_arena.sweep.progress`;
  in a local joblib sweep it also prints each finished run's line, so only this process
  writes to the terminal).
- :func:`close_sweep`: reads every job's outcome, prints the summary; after a
  ``public``/``oracle`` tuning search it chooses the setting, says why, and scores it on the
  private data (:mod:`dp_arena.sweep.tuning`); then prints the leaderboard of this sweep's
  runs (:mod:`dp_arena.sweep.summary`), attaches board and summary to the parent runs and
  ends them. Exits 1 if any scored run failed or none ran, whatever else happened.
- :func:`abandon_sweep`: a launch that failed after the sweep opened leaves no run RUNNING.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from dp_arena.redact import without_credentials
from dp_arena.report.terminal import terminal_width, wrap_lines
from dp_arena.report.tracking import resolve_tracking_uri
from dp_arena.sweep.across import print_across_datasets
from dp_arena.sweep.cost_estimate import (
    Models,
    estimate_lines,
    price_plan,
    summary_line,
    with_predictions,
)
from dp_arena.sweep.cost_history import read_history
from dp_arena.sweep.environment import check_environment
from dp_arena.sweep.job import is_search
from dp_arena.sweep.launch_checks import (
    check_launcher,
    check_launcher_jobs,
    check_sweep_folder,
    check_tracking_server,
    check_tracking_store,
    nothing_runs,
)
from dp_arena.sweep.lines import say
from dp_arena.sweep.parents import (
    end_parent_runs,
    install_stop_handlers,
    mark_stopped_runs,
    start_parent_runs,
    stops_deferred,
)
from dp_arena.sweep.plan import announce, plan_for
from dp_arena.sweep.progress import ProgressMonitor, monitor_prints_lines
from dp_arena.sweep.records import SweepPlan, read_outcomes, read_plan, write_plan
from dp_arena.sweep.summary import (
    experiments_of,
    print_leaderboard,
    print_summary,
    sweep_failed,
)
from dp_arena.sweep.tuning import final_stage


def checked_plan(config: DictConfig) -> tuple[SweepPlan, str]:
    """The sweep's surroundings checked, then its plan (exit 2 with each problem once);
    returns the plan and the launcher. Nothing is created or written."""
    quiet_optuna(config)
    sweep_dir = Path(config.hydra.sweep.dir)
    # the surroundings, in seconds, before the plan (one message with the fix; nothing made)
    check_environment()
    launcher = str(OmegaConf.select(config, "hydra.launcher._target_") or "")
    check_launcher(launcher)
    if "joblib" in launcher:
        check_launcher_jobs(OmegaConf.select(config, "hydra.launcher.n_jobs"))
    check_sweep_folder(sweep_dir)
    base_uri = resolve_tracking_uri(base_tracking_uri(config))
    check_tracking_store(base_uri)
    plan = plan_for(config)  # exits 2, printing each problem once, before anything starts
    if plan.experiments:
        uri = resolve_tracking_uri(plan.tracking_uri)
        check_tracking_server(uri)
        if uri != base_uri:
            check_tracking_store(uri)
    return plan, launcher


def dry_run(config: DictConfig) -> None:
    """``dp-arena --dry-run ...``: the plan's checks and first screen, then the cost
    estimate (:mod:`dp_arena.sweep.cost_estimate`), and exit 0 (2 on a problem). No run
    starts; the tracking store is only read; no sweep folder or plan file is made."""
    plan, _ = checked_plan(config)
    announce(plan)
    if plan.searched:
        say("cost estimate: a search sweep's jobs are chosen as it runs; none to price",
            sys.stdout)
        return
    uri = resolve_tracking_uri(plan.tracking_uri)
    models = Models.of(read_history(uri))
    cost = price_plan(plan, models)
    lines = estimate_lines(cost, models, plan.workers or 2, without_credentials(uri))
    for line in wrap_lines(lines, terminal_width()):
        say(line, sys.stdout)
    nothing = nothing_runs(plan)
    if nothing:
        say(f"dp-arena: {nothing}")


def priced(plan: SweepPlan) -> SweepPlan:
    """The plan with each run's predicted CPU seconds (the ETA's model) and the estimate's
    line said on the first screen; the plan as it is when the store cannot be read (the ETA
    then waits for measured runs, as without a model)."""
    if plan.searched or not plan.total:
        return plan
    try:
        models = Models.of(read_history(resolve_tracking_uri(plan.tracking_uri)))
    except Exception as exc:  # noqa: BLE001 - an estimate never stops a launch
        say(f"cost estimate: not available ({type(exc).__name__}: the store could not be "
            "read)")
        return plan
    for line in wrap_lines([summary_line(price_plan(plan, models))], terminal_width()):
        say(line, sys.stdout)
    return with_predictions(plan, models)


def open_sweep(config: DictConfig) -> ProgressMonitor:
    """Check, plan and open the sweep; returns its progress monitor (running)."""
    sweep_dir = Path(config.hydra.sweep.dir)
    plan, launcher = checked_plan(config)
    announce(plan)
    nothing = nothing_runs(plan)
    if nothing:
        say(f"dp-arena: {nothing}")
        raise SystemExit(2)
    plan = priced(plan)
    command = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    with stops_deferred() as held:  # a stop now waits for the handlers that close the runs
        plan = replace(plan, parents=start_parent_runs(plan, sweep_dir, command))
        write_plan(sweep_dir, plan)
        monitor = ProgressMonitor(sweep_dir, plan, plan.workers or 2,
                                  echo_changes="joblib" not in launcher,
                                  print_lines=monitor_prints_lines(launcher, plan))
        stop = install_stop_handlers(sweep_dir, plan, quiet=monitor.halt)
    if held:
        stop(held[0], None)
    return monitor.start()


def abandon_sweep(sweep_dir: Path, monitor: ProgressMonitor | None) -> None:
    """A sweep whose launcher failed (Hydra has printed why): the progress display stopped,
    the runs it left RUNNING marked KILLED with the reason, the parent runs ended FAILED, and
    one line saying so."""
    if monitor is not None:
        with contextlib.suppress(Exception):  # closing the runs must happen
            monitor.stop()
    plan = read_plan(sweep_dir) or SweepPlan()
    reason = "the sweep's launcher failed before this run ended"
    killed = mark_stopped_runs(plan, str(sweep_dir), reason)
    end_parent_runs(plan, "FAILED", summary=reason)
    say(f"dp-arena: the sweep's launcher failed (above): {killed} run"
        f"{'s' if killed != 1 else ''} in flight marked KILLED, the sweep's parent run FAILED. "
        "Run the same command again to resume (finished runs are skipped).")


def base_tracking_uri(config: DictConfig) -> str | None:
    """``tracking.uri`` of the sweep's base config (``None`` when unset or unresolvable: the
    plan's jobs then name it)."""
    try:
        value = OmegaConf.select(config, "tracking.uri")
    except Exception:  # noqa: BLE001 - an interpolation the plan reports with the job
        return None
    return str(value) if value else None


def close_sweep(config: DictConfig) -> None:
    """Summary, final tuning stage, leaderboard, parent runs ended (module docstring)."""
    sweep_dir = Path(config.hydra.sweep.dir)
    plan = read_plan(sweep_dir) or SweepPlan()
    failed, files, summary = True, [], ""
    try:
        outcomes = [outcome for _, outcome in read_outcomes(sweep_dir)]
        searched = is_search(config)  # the typed settings' Tuning.searches
        summary = print_summary(outcomes, sweep_dir, "tuning runs" if searched else "runs")
        scored = outcomes
        if searched:
            scored = final_stage(config, outcomes, sweep_dir)
            summary += print_summary(scored, sweep_dir, "scored runs of the chosen setting")
        not_applicable = [o for o in outcomes if o.status == "N/A"]
        for experiment, uri in experiments_of(scored):
            ids = [o.run_id for o in scored if o.run_id and o.experiment == experiment]
            files += print_leaderboard(experiment, uri, str(sweep_dir), ids, not_applicable,
                                       plan.parents.get(experiment))
            files += print_across_datasets(experiment, uri, str(sweep_dir), ids,
                                           not_applicable)  # several datasets: their board
        failed = sweep_failed(scored)
    finally:
        end_parent_runs(plan, "FAILED" if failed else "FINISHED", files, summary)
        if failed:
            sys.exit(1)


def quiet_optuna(config: DictConfig) -> None:
    """Optuna (tuning searches) logs each trial in colour at INFO; quiet unless ``-v``."""
    if OmegaConf.select(config, "hydra.hydra_logging.root.level") == "INFO":
        return
    if "optuna" not in str(OmegaConf.select(config, "hydra.sweeper._target_") or ""):
        return
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
