"""A sweep's parent runs, and how it stops.

- **Parent runs** (:func:`start_parent_runs`): one MLflow run per experiment the sweep logs to,
  tagged ``kind=sweep``, holding the sweep's command line (without credentials); every job's
  run is its child (``mlflow.parentRunId``). :func:`end_parent_runs` attaches the board and
  the summary and ends them.
- **Stop** (:func:`install_stop_handlers`): SIGTERM or SIGINT to the sweep ends the progress
  display (its line ended, so the stop message starts a line of its own), stops every worker
  process (SIGTERM, then SIGKILL after a grace period), marks the runs this sweep left RUNNING
  as KILLED with the reason, ends the parent runs KILLED, prints ``dp-arena: stopped. ...``
  and exits 143 / 130. A resumed sweep redoes the stopped runs and says so. Every console
  write on the way is guarded (:func:`dp_arena.sweep.lines.say`): when stdout/stderr is a pipe
  whose reader has gone (``dp-arena ... 2>&1 | head -1``, a ``tee`` killed by the same
  Ctrl-C), the write is skipped and the clean-up goes on. SIGPIPE stays ignored (Python's
  default, made sure of here): a write to a closed pipe raises ``BrokenPipeError``, which
  the guard catches, rather than killing the process before its runs are closed. Before the
  handlers are in place (planning), ``dp-arena``'s early handler
  (:func:`dp_arena.cli.main.install_early_stop`) answers both signals alike with
  ``dp-arena: stopped.`` and that nothing was started; while they are being put in place
  (:func:`stops_deferred`), a signal waits for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dp_arena.redact import command_without_credentials
from dp_arena.report.tracking import (
    client_for,
    ensure_experiment,
    mark_killed,
    source_tags,
)
from dp_arena.sweep.lines import say
from dp_arena.sweep.records import SweepPlan, read_outcomes

STOP_GRACE_S = 5.0


def start_parent_runs(plan: SweepPlan, sweep_dir: Path, command: list[str]) -> dict[str, str]:
    """One parent run per experiment of the sweep: ``{experiment: run_id}``."""
    parents: dict[str, str] = {}
    if not plan.experiments:
        return parents
    client = client_for(plan.tracking_uri)
    for experiment in plan.experiments:
        exp_id = ensure_experiment(client, experiment)
        run = client.create_run(exp_id, run_name=f"sweep {sweep_dir.name}",
                                tags={"kind": "sweep", "sweep": str(sweep_dir),
                                      **source_tags()})
        shown = " ".join(command_without_credentials(command))  # tracking.uri=https://u:pw@..
        client.log_param(run.info.run_id, "command", shown[:6000] or "(defaults)")
        client.log_param(run.info.run_id, "runs", str(plan.total))
        parents[experiment] = run.info.run_id
    return parents


def end_parent_runs(plan: SweepPlan, status: str, files: Sequence[Path] = (),
                    summary: str = "") -> None:
    """Attach the board files and the summary to each parent run, then end it."""
    if not plan.parents:
        return
    client = client_for(plan.tracking_uri)
    for run_id in plan.parents.values():
        try:
            for path in files:
                client.log_artifact(run_id, str(path), "leaderboard")
            if summary:
                client.log_text(run_id, summary, "summary.txt")
            client.set_terminated(run_id, status)
        except Exception as exc:  # noqa: BLE001 - the child runs hold the results
            say(f"warning: could not finish the sweep's parent run: {exc}")


# ----- stopping -------------------------------------------------------------------------------
@contextlib.contextmanager
def stops_deferred() -> Iterator[list[int]]:
    """A stop signal that comes while the block runs (the parent runs are being created, the
    stop handlers installed) is held, not acted on half-way: the list it yields holds it, for
    the caller to act on once the handlers are in place. When the block fails, the handlers
    it found are restored and a held signal is sent again."""
    held: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in before:
        signal.signal(sig, lambda signum, frame: held.append(signum))
    try:
        yield held
    except BaseException:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if held:
            os.kill(os.getpid(), held[0])
        raise


def install_stop_handlers(sweep_dir: Path, plan: SweepPlan,
                          quiet: Callable[[], None] | None = None) -> Callable[[int, Any], None]:
    """SIGTERM / SIGINT stop the whole sweep (see the module docstring); ``quiet`` ends the
    progress display first. Returns the handler (for a signal held while it was installed)."""

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        name = signal.Signals(signum).name
        if quiet is not None:
            with contextlib.suppress(Exception):  # stopping must finish
                quiet()
        say(f"dp-arena: {name} received, stopping every worker ...")
        stop_descendants(STOP_GRACE_S)
        killed = mark_stopped_runs(plan, str(sweep_dir), f"sweep stopped by {name}")
        end_parent_runs(plan, "KILLED", summary=f"stopped by {name}")
        finished = sum(outcome.ran for _, outcome in read_outcomes(sweep_dir))
        say(f"dp-arena: stopped. {finished} of {plan.total or '?'} runs had finished; "
            f"{killed} in flight marked KILLED. Run the same command again to resume "
            f"(finished runs are skipped, stopped ones redone).")
        os._exit(128 + signum)

    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return stop


def stop_descendants(grace_s: float) -> None:
    """SIGTERM every descendant process, SIGKILL those still alive after ``grace_s``."""
    import psutil

    procs = psutil.Process().children(recursive=True)
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive + psutil.Process().children(recursive=True):
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def mark_stopped_runs(plan: SweepPlan, sweep: str, reason: str) -> int:
    """Runs of this sweep still RUNNING -> KILLED with ``reason``; returns how many of its runs
    are KILLED now (those the workers marked as they stopped included)."""
    if not plan.experiments:
        return 0
    try:
        client = client_for(plan.tracking_uri)
        ids = [e.experiment_id for name in plan.experiments
               if (e := client.get_experiment_by_name(name)) is not None]
        runs = client.search_runs(ids, filter_string=f"tags.sweep = '{sweep}' and "
                                                     "attributes.status = 'RUNNING'",
                                  max_results=10000) if ids else []
        for run in runs:
            if run.data.tags.get("kind", "run") == "run":
                mark_killed(client, run.info.run_id, reason)
        # the workers mark their own runs KILLED as they stop: count every KILLED run of it
        killed = client.search_runs(ids, filter_string=f"tags.sweep = '{sweep}' and "
                                                       "attributes.status = 'KILLED'",
                                    max_results=10000) if ids else []
        return sum(1 for r in killed if r.data.tags.get("kind", "run") == "run")
    except Exception as exc:  # noqa: BLE001 - stopping must finish
        say(f"warning: could not mark stopped runs: {exc}")
        return 0
