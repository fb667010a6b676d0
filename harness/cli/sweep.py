"""A sweep's life in the launching process: checked before it starts, stopped cleanly.

- **Plan** (:func:`plan_for`): the jobs of a Hydra sweep are expanded exactly as Hydra's basic
  sweeper does (the cartesian product of ``hydra.sweeper.params`` and the command line), each
  job's config is composed with Hydra's config loader, and :func:`harness.run.preflight.plan_sweep`
  gives every job a verdict (run / n/a / duplicate / invalid). Invalid input is reported once per
  distinct problem and the sweep exits 2 before any job folder or MLflow run exists. The plan is
  written to ``<sweep dir>/plan.json``; each job reads its verdict from there (an n/a or duplicate
  job returns at once), so this works with every launcher that shares the sweep folder.
  Sweepers that are not the basic one (Optuna's search spaces) are checked on the base config.
- **Parent runs** (:func:`start_parent_runs`): one MLflow run per experiment the sweep logs to,
  tagged ``kind=sweep``, holding the sweep's command line; every job's run is its child
  (``mlflow.parentRunId``). The summary callback attaches the board and the summary and ends it.
- **Stop** (:func:`install_stop_handlers`): SIGTERM or SIGINT to the sweep stops every worker
  process (SIGTERM, then SIGKILL after a grace period), marks the runs this sweep left RUNNING
  as KILLED with the reason, ends the parent runs KILLED, prints what finished and exits 143 /
  130. A resumed sweep redoes the stopped runs and says so.
- **Progress** (:func:`progress_text`): ``[done/total]`` and an ETA weighted by each run's
  expected cost (:mod:`harness.cli.progress`), computed by each job from the started/outcome
  files in the shared sweep folder.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from harness.cli.progress import duration  # noqa: F401 - re-exported (notebook, older callers)
from harness.params import config_problem
from harness.redact import command_without_credentials

PLAN_FILE = "plan.json"
OUTCOME_FILE = "outcome.json"
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
NOT_RUN = ("N/A", "DUPLICATE")
STOP_GRACE_S = 5.0


# ----- the plan -------------------------------------------------------------------------------
def expand_jobs(config: DictConfig) -> list[list[str]] | None:
    """Every job's overrides, in the order Hydra's basic sweeper launches them (job number =
    index); ``None`` for another sweeper."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if OmegaConf.select(config, "hydra.sweeper._target_") != BASIC_SWEEPER:
        return None
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    loader = GlobalHydra.instance().config_loader()
    parser = OverridesParser.create(config_loader=loader)
    batches = BasicSweeper.split_arguments(parser.parse_overrides(arguments), None)
    return [list(job) for batch in batches for job in batch]


def job_config(config: DictConfig, overrides: list[str]) -> dict[str, Any]:
    """The resolved config one job will run (without the ``hydra`` node)."""
    from hydra.core.global_hydra import GlobalHydra

    from harness.run.config import preset_of

    loaded = GlobalHydra.instance().config_loader().load_sweep_config(config, overrides)
    option = OmegaConf.select(loaded, "hydra.runtime.choices.mechanism")
    with open_dict(loaded):
        loaded.pop("hydra", None)
    plain: dict[str, Any] = OmegaConf.to_container(loaded, resolve=True)  # type: ignore[assignment]
    plain["mechanism_preset"] = preset_of(option, (plain.get("mechanism") or {}).get("name"))
    return plain


def base_config(config: DictConfig) -> dict[str, Any]:
    copy = config.copy()
    with open_dict(copy):
        copy.pop("hydra", None)
    return OmegaConf.to_container(copy, resolve=True)  # type: ignore[return-value]


def plan_for(config: DictConfig) -> dict[str, Any]:
    """The sweep's plan (see the module docstring) as a JSON-able dict; raises
    :class:`SystemExit` (2) after printing the problems when any job is invalid."""
    from harness.cli.main import describe
    from harness.run.preflight import JobPlan, SweepPlan, plan_sweep

    jobs = expand_jobs(config)
    overrides = jobs if jobs is not None else [[]]
    configs, labels, broken = [], [], {}
    say = planning_reporter()
    for index, job in enumerate(overrides):
        say("composing", index, len(overrides))
        try:
            cfg = job_config(config, job) if jobs is not None else base_config(config)
        except Exception as exc:  # noqa: BLE001 - Hydra's composition error, said once
            broken[index] = JobPlan(index, "invalid", " ".join(job), str(config_problem(exc)))
            cfg = {}
        configs.append(cfg)
        labels.append(describe(cfg) if cfg else " ".join(job))
    planned = plan_sweep(configs, labels, on_job=lambda k, n: say("checking", k, n),
                         delta_given=[jobs is None or sets_delta(job) for job in overrides])
    plan = SweepPlan(tuple(broken.get(j.index, j) for j in planned.jobs), planned.metrics_na,
                     planned.notes)
    problems = plan.problems()
    if problems:
        report_problems(problems, len(overrides))
        raise SystemExit(2)
    return {"started": time.time(), "searched": jobs is None,
            "total": len(plan.of("run")) if jobs is not None else None,
            "jobs": [{"index": j.index, "overrides": overrides[j.index] if jobs else [],
                      "verdict": j.verdict, "label": j.label, "reason": j.reason,
                      "same_as": j.same_as, "row": j.row, "experiment": j.experiment,
                      "mechanism": (configs[j.index].get("mechanism") or {}).get("name"),
                      "delta": j.delta}
                     for j in plan.jobs],
            "workers": workers_of(config),
            "metrics_na": plan.metrics_na,
            "notes": plan.notes,
            "experiments": plan.experiments,
            "tracking_uri": tracking_uri_of(configs[0]) if configs and configs[0] else None}


def sets_delta(overrides: list[str]) -> bool:
    """Whether a job's overrides choose its delta: ``privacy.delta=``, a ``privacy=`` option
    or a competition (whose preset is the challenge's)."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    return bool(keys & {"privacy.delta", "privacy", "competition"})


def workers_of(config: DictConfig) -> int:
    """How many runs the launcher runs at once (joblib's n_jobs, SLURM's array parallelism)."""
    for key in ("hydra.launcher.n_jobs", "hydra.launcher.array_parallelism"):
        try:
            value = OmegaConf.select(config, key)
            if value is not None and int(value) > 0:
                return int(value)
        except Exception:  # noqa: BLE001 - an unresolvable value: the default below
            continue
    return int(os.environ.get("DP_ARENA_JOBS", "2") or 2)


#: Seconds of planning before the first progress line, and between lines.
PLANNING_EVERY_S = 5.0


def planning_reporter(every_s: float = PLANNING_EVERY_S, stream: Any = None):
    """``say(step, k, n)``: a ``planning: checking job k of n (12s)`` line on stderr when
    planning has run ``every_s`` seconds since the last line (silent for quick plans)."""
    began = last = time.monotonic()

    def say(step: str, k: int, n: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= every_s:
            print(f"planning: {step} job {k + 1} of {n} ({now - began:.0f}s)",
                  file=stream or sys.stderr, flush=True)
            last = now

    return say


def quiet_optuna(config: DictConfig) -> None:
    """Optuna (tuning searches) logs each trial in colour at INFO; quiet unless ``-v``."""
    if OmegaConf.select(config, "hydra.hydra_logging.root.level") == "INFO":
        return
    if "optuna" not in str(OmegaConf.select(config, "hydra.sweeper._target_") or ""):
        return
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


def report_problems(problems: dict[str, list[Any]], n_jobs: int) -> None:
    """Each distinct problem once, with how many jobs it affects; nothing was started."""
    print(f"dp-arena: the sweep was not started: {len(problems)} problem"
          f"{'s' if len(problems) > 1 else ''} in its {n_jobs} job"
          f"{'s' if n_jobs > 1 else ''}:", file=sys.stderr)
    for reason, jobs in problems.items():
        who = jobs[0].label if len(jobs) == 1 else f"{len(jobs)} jobs, e.g. {jobs[0].label}"
        lines = reason.splitlines()
        print(f"- {lines[0]}\n" + "".join(f"  {line.strip()}\n" for line in lines[1:])
              + f"  ({who})", file=sys.stderr)


def announce(plan: dict[str, Any]) -> None:
    """Say up front what will not run, and why."""
    jobs = plan["jobs"]
    na = [j for j in jobs if j["verdict"] == "n/a"]
    dup = [j for j in jobs if j["verdict"] == "duplicate"]
    if plan["total"] is not None:
        print(f"sweep: {plan['total']} run{'s' if plan['total'] != 1 else ''}"
              f"{f', {len(na)} n/a' if na else ''}"
              f"{f', {len(dup)} identical to another job (run once)' if dup else ''}",
              flush=True)
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for j in na:
        by_reason.setdefault(f"{j['row'].get('mechanism')}: {j['reason']}", []).append(j)
    for reason, group in by_reason.items():
        print(f"  n/a  {reason}" + (f" ({len(group)} jobs)" if len(group) > 1 else ""),
              flush=True)
    for what, reason in sorted(plan["metrics_na"].items()):
        print(f"  n/a  metric {what}: {reason.split('; ')[0]}", flush=True)
    for note, count in sorted(plan.get("notes", {}).items()):
        print(f"  note {note}" + (f" ({count} jobs)" if count > 1 else ""), flush=True)


def write_plan(sweep_dir: Path, plan: dict[str, Any]) -> None:
    sweep_dir.mkdir(parents=True, exist_ok=True)
    tmp = sweep_dir / f".{PLAN_FILE}.tmp"
    tmp.write_text(json.dumps(plan, default=str))
    tmp.replace(sweep_dir / PLAN_FILE)


def read_plan(sweep_dir: str | Path) -> dict[str, Any] | None:
    path = Path(sweep_dir) / PLAN_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def job_entry(plan: dict[str, Any] | None, num: int, overrides: list[str]) -> dict[str, Any] | None:
    """This job's verdict, when the plan knows it (same number and same overrides)."""
    if not plan or plan.get("searched"):
        return None
    jobs = plan["jobs"]
    if 0 <= num < len(jobs) and sorted(jobs[num]["overrides"]) == sorted(overrides):
        return jobs[num]
    return None


def tracking_uri_of(cfg: dict[str, Any]) -> str | None:
    return (cfg.get("tracking") or {}).get("uri")


# ----- progress -------------------------------------------------------------------------------
def progress_text(sweep_dir: str | Path, plan: dict[str, Any] | None) -> tuple[str, str]:
    """``("[k/N]", "ETA 1m20s")`` from the started/outcome files written so far (k counts
    runs, not n/a or duplicate jobs; the ETA weighted by each run's expected cost,
    :func:`harness.cli.progress.eta_seconds`); empty strings outside a planned sweep."""
    from harness.cli.progress import counts, duration, eta_seconds, sweep_state

    if not plan or not plan.get("total") or plan.get("searched"):
        return "", ""
    runs = sweep_state(sweep_dir, plan)
    c = counts(runs)
    eta = eta_seconds(runs, int(plan.get("workers") or 2)) if c.done < c.total else None
    flight = f" ({c.running} in flight)" if c.running else ""
    return f"[{c.done}/{c.total}]", (f"ETA {duration(eta)}{flight}" if eta is not None else "")


# ----- parent runs ----------------------------------------------------------------------------
def start_parent_runs(plan: dict[str, Any], sweep_dir: Path, command: list[str]) -> dict[str, str]:
    """One parent run per experiment of the sweep: ``{experiment: run_id}``."""
    from harness.report.tracking import client_for, ensure_experiment, source_tags

    parents: dict[str, str] = {}
    if not plan["experiments"]:
        return parents
    client = client_for(plan["tracking_uri"])
    for experiment in plan["experiments"]:
        exp_id = ensure_experiment(client, experiment)
        run = client.create_run(exp_id, run_name=f"sweep {sweep_dir.name}",
                                tags={"kind": "sweep", "sweep": str(sweep_dir),
                                      **source_tags()})
        shown = " ".join(command_without_credentials(command))  # tracking.uri=https://u:pw@..
        client.log_param(run.info.run_id, "command", shown[:6000] or "(defaults)")
        client.log_param(run.info.run_id, "runs", str(plan["total"]))
        parents[experiment] = run.info.run_id
    return parents


def end_parent_runs(plan: dict[str, Any], status: str, files: list[Path] = (),
                    summary: str = "") -> None:
    """Attach the board files and the summary to each parent run, then end it."""
    from harness.report.tracking import client_for

    parents = plan.get("parents") or {}
    if not parents:
        return
    client = client_for(plan["tracking_uri"])
    for run_id in parents.values():
        try:
            for path in files:
                client.log_artifact(run_id, str(path), "leaderboard")
            if summary:
                client.log_text(run_id, summary, "summary.txt")
            client.set_terminated(run_id, status)
        except Exception as exc:  # noqa: BLE001 - the child runs hold the results
            print(f"warning: could not finish the sweep's parent run: {exc}", file=sys.stderr)


# ----- stopping -------------------------------------------------------------------------------
def install_stop_handlers(sweep_dir: Path, plan: dict[str, Any]) -> None:
    """SIGTERM / SIGINT stop the whole sweep (see the module docstring)."""

    def stop(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler signature
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        name = signal.Signals(signum).name
        print(f"\ndp-arena: {name} received, stopping every worker ...", file=sys.stderr,
              flush=True)
        stop_descendants(STOP_GRACE_S)
        killed = mark_stopped_runs(plan, str(sweep_dir), f"sweep stopped by {name}")
        end_parent_runs(plan, "KILLED", summary=f"stopped by {name}")
        finished = sum(1 for p in sweep_dir.glob(f"*/{OUTCOME_FILE}")
                       if json.loads(p.read_text()).get("status") not in NOT_RUN)
        print(f"dp-arena: stopped. {finished} of {plan.get('total') or '?'} runs had finished; "
              f"{killed} in flight marked KILLED. Run the same command again to resume "
              f"(finished runs are skipped, stopped ones redone).", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


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


def mark_stopped_runs(plan: dict[str, Any], sweep: str, reason: str) -> int:
    """Runs of this sweep still RUNNING -> KILLED with ``reason``; returns how many of its runs
    are KILLED now (those the workers marked as they stopped included)."""
    from harness.report.tracking import client_for, mark_killed

    if not plan.get("experiments"):
        return 0
    try:
        client = client_for(plan["tracking_uri"])
        ids = [e.experiment_id for name in plan["experiments"]
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
        print(f"warning: could not mark stopped runs: {exc}", file=sys.stderr)
        return 0
