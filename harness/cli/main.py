"""``dp-arena``: the Hydra runner.

With no arguments it runs the default competition (``conf/config.yaml``: every mechanism of
the default sweep x epsilon 1 and 10 on the simulated taxi data) in parallel through the
Hydra joblib launcher and prints the leaderboard. Any Hydra override narrows or widens the
sweep, e.g. ``dp-arena mechanism=independent privacy.epsilon=1,2,4 trial=0,1,2``; a named
competition fixes the whole setting: ``dp-arena competition=sprint3``.

Before any job starts, the sweep callback (:mod:`harness.cli.callbacks`, in the parent process)
checks every job and writes the sweep's plan; each job reads its verdict from it (n/a and
duplicate jobs return at once), prints one line (``[k/N] done``, ``skip`` for a run whose
content key already finished, or ``FAILED`` with the reason, and an ETA) and writes
``outcome.json`` into its output folder, which the sweep summary reads. ``-v`` shows Hydra's and
the libraries' INFO logging, which is off by default.

Bad input ends with one message naming the problem and the fix, no traceback (set
``DP_ARENA_DEBUG=1`` for one), and a non-zero exit code.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import harness.cli.schemas  # noqa: F401 - registers the config schemas with Hydra (also in workers)
from harness.cli.compose import first_job_command, refuse_bad_command
from harness.errors import DPArenaError
from harness.resources import config_dir

CONF_DIR = str(config_dir())
OUTCOME_FILE = "outcome.json"
STARTED_FILE = "started.json"
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")


def run_task(cfg: DictConfig) -> Any:
    """Hydra task: one run. Writes ``outcome.json`` into the job's output folder. Returns the
    outcome record, or for a tuning search job the objective Optuna maximizes (``-inf`` for a
    failed run, so a failure never aborts the study; the final choice ignores failed runs).
    In a sweep, the job first reads its verdict from the sweep's plan
    (:mod:`harness.cli.sweep`): an ``n/a`` or duplicate job returns at once."""
    from harness.cli.sweep import job_entry, progress_text, read_plan
    from harness.run.config import preset_of

    hc = HydraConfig.get()
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    multirun = hc.mode == RunMode.MULTIRUN
    plain["sweep"] = hc.sweep.dir if multirun else ""
    plain["mechanism_preset"] = preset_of(hc.runtime.choices.get("mechanism"),
                                          (plain.get("mechanism") or {}).get("name"))
    plan = read_plan(hc.sweep.dir) if multirun else None
    entry = job_entry(plan, int(hc.job.num), list(hc.overrides.task)) if multirun else None
    out = Path(hc.runtime.output_dir, OUTCOME_FILE)
    if entry is not None and entry["verdict"] in ("n/a", "duplicate"):
        record = {"status": "N/A" if entry["verdict"] == "n/a" else "DUPLICATE",
                  "label": entry["label"], "message": entry["reason"], "row": entry["row"],
                  "same_as": entry["same_as"], "setting": {}, "objective": None}
        out.write_text(json.dumps(record))
        return record
    if plan:
        plain["parent_runs"] = plan.get("parents") or {}
    if entry is not None and entry.get("delta") is not None:  # the plan's default delta rule
        plain["privacy"] = {**plain["privacy"], "delta": entry["delta"]}
    search = is_search(plain)
    if search and multirun:
        plain["trial"] = int(hc.job.num)  # every Optuna trial gets fresh noise
    began = time.time()
    if multirun:  # the progress display counts this run as in flight (harness.cli.progress)
        Path(hc.runtime.output_dir, STARTED_FILE).write_text(json.dumps(
            {"index": int(hc.job.num), "started": began, "label": entry["label"] if entry
             else ""}))
    try:
        record = execute_job(plain, swept_setting(plain, list(hc.overrides.task)), multirun)
        record.update(index=int(hc.job.num), wall_seconds=time.time() - began)
    except (SystemExit, KeyboardInterrupt):
        if not multirun:
            raise
        # the sweep is stopping (its run is marked KILLED): this worker takes no further job
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(143)
    out.write_text(json.dumps(record))
    report_job(record, progress_text(hc.sweep.dir, plan) if multirun else ("", ""), multirun)
    if not multirun and record["status"] == "FAILED":
        sys.exit(2)
    if search:  # a failed trial is the worst possible value: the study goes on without it
        return record["objective"] if record["objective"] is not None else -math.inf
    return record


def execute_job(plain: dict[str, Any], setting: dict[str, Any] | None = None,
                multirun: bool = True) -> dict[str, Any]:
    """Run one config and return its outcome record (:func:`report_job` prints it)."""
    from harness.run.runner import run_one  # imported here so `--help` stays fast
    from harness.redact import scrubbed_reason

    label = describe(plain)
    base = {"label": label, "setting": setting or {}, "objective": None,
            "tracking_uri": (plain.get("tracking") or {}).get("uri")}
    try:
        outcome = run_one(plain)
        return {**base, "status": "SKIPPED" if outcome.skipped else outcome.status,
                "run_id": outcome.run_id, "experiment": outcome.experiment,
                "tracking_uri": outcome.tracking_uri or base["tracking_uri"],
                "seconds": outcome.seconds, "scores": outcome.scores,
                "objective": objective_value(outcome.scores, plain),
                "redone": outcome.redone, "metrics_na": outcome.metrics_na}
    except DPArenaError as exc:
        run = getattr(exc, "dp_arena_run", {})
        return {**base, **run, "status": "FAILED", "message": str(exc), "user_error": True}
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        record = {**base, **getattr(exc, "dp_arena_run", {}), "status": "FAILED",
                  "message": scrubbed_reason(exc)}
        if os.environ.get("DP_ARENA_DEBUG"):
            traceback.print_exc()
            print(getattr(exc, "child_traceback", ""), file=sys.stderr)
        else:
            record["hint"] = "(set DP_ARENA_DEBUG=1 to see the traceback)"
        return record


def report_job(record: dict[str, Any], progress: tuple[str, str] = ("", ""),
               multirun: bool = True) -> None:
    """One line per finished job (``done``, ``skip``, ``FAILED`` with the reason), with the
    sweep's progress (``[k/N]`` ... ``ETA``) when known. In a sweep, a refusal before the run
    started is explained once, by the sweep summary."""
    label, status = record["label"], record["status"]
    lead = f"{progress[0]} " if progress[0] else ""
    eta = f"  {progress[1]}" if progress[1] else ""
    if status == "SKIPPED":
        print(f"{lead}skip   {label}  already finished (run {record['run_id'][:8]}): "
              f"{headline(record['scores'])}{eta}", flush=True)
    elif status != "FAILED":
        redo = f"  (redone: {record['redone']})" if record.get("redone") else ""
        print(f"{lead}done   {label}  {headline(record['scores'])}  "
              f"({seconds_text(record['seconds'])}){redo}{eta}", flush=True)
    elif record.get("run_id") or not multirun or not record.get("user_error"):
        hint = f"\n  {record['hint']}" if record.get("hint") else ""
        print(f"{lead}FAILED {label}\n{indent(record['message'])}{hint}", file=sys.stderr,
              flush=True)
    else:
        print(f"{lead}FAILED {label}  (refused before the run started; reason in the summary)",
              file=sys.stderr, flush=True)


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds >= 0.1 else "<0.1s"


def is_search(plain: dict[str, Any]) -> bool:
    tuning = plain.get("tuning") or {}
    return tuning.get("mode") in ("public", "oracle") and tuning.get("stage") == "search"


def swept_setting(plain: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """The mechanism hyperparameters this job's overrides set (typed, from the config)."""
    mech = plain.get("mechanism") or {}
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    return {k.removeprefix("mechanism."): mech.get(k.removeprefix("mechanism."))
            for k in sorted(keys) if k.startswith("mechanism.")}


def objective_value(scores: dict[str, float], plain: dict[str, Any]) -> float | None:
    """The score tuning maximizes: ``tuning.objective`` (default: challenge/overall if
    logged, else kmarginal/score), negated when lower is better."""
    from harness.report.leaderboard import lower_is_better

    wanted = (plain.get("tuning") or {}).get("objective")
    names = [wanted] if wanted else [k for k in RANKING_PREFERENCE if k in scores]
    if not names or names[0] not in scores:
        return None
    value = float(scores[names[0]])
    return -value if lower_is_better(names[0]) else value


def describe(cfg: dict[str, Any]) -> str:
    """The job's run label (:func:`harness.run.config.run_label`), from its raw config."""
    from harness.run.config import run_label

    mech = dict(cfg.get("mechanism") or {})
    name = str(mech.pop("name", None))
    privacy = cfg.get("privacy") or {}
    tuning_cfg = cfg.get("tuning") or {}
    mode = tuning_cfg.get("mode", "none")
    tuning = "" if mode in (None, "none") else f" [{mode}:{tuning_cfg.get('stage')}]"
    return run_label(name, mech, str(cfg.get("mechanism_preset") or ""),
                     privacy.get("accountant"), privacy.get("epsilon"), cfg.get("trial"), tuning)


def headline(scores: dict[str, float]) -> str:
    keys = [k for k in RANKING_PREFERENCE if k in scores]
    return "  ".join(f"{k}={scores[k]:.1f}" for k in keys)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def main() -> None:
    # JAX (under Private-PGM) probes for TPUs/GPUs and logs an INFO line per run; the harness
    # runs on CPU unless the user says otherwise.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    quiet_banners(sys.argv[1:])
    sys.argv[1:] = with_verbosity(sys.argv[1:])
    register_resolvers()
    refuse_bad_command("dp-arena", Path(CONF_DIR), "config", sys.argv[1:])
    if any(a in ("-c", "--cfg") for a in sys.argv[1:]):  # show one job, not "ambiguous value"
        sys.argv[1:], note = first_job_command("config", Path(CONF_DIR), sys.argv[1:])
        if note:
            print(note, file=sys.stderr)
    hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")(run_task)()


def swept_values(key: str, _root_: DictConfig) -> str:
    """``${dp_arena_swept:KEY}``: what the sweep runs for ``KEY`` (``hydra.sweeper.params``,
    else the config's own value), for the ``--help`` text."""
    params = OmegaConf.select(_root_, "hydra.sweeper.params") or {}
    if key in params:
        return str(params[key]).replace(",", ", ")
    return str(OmegaConf.select(_root_, key, default="?"))


def register_resolvers() -> None:
    """The config's own interpolation functions (``dp_arena_swept``), once per process."""
    if not OmegaConf.has_resolver("dp_arena_swept"):
        OmegaConf.register_new_resolver("dp_arena_swept", swept_values)


#: Hydra's and the libraries' INFO logging, shown with ``-v``.
VERBOSE_OVERRIDES = ("hydra.hydra_logging.root.level=INFO", "hydra.job_logging.root.level=INFO")


#: Environment that silences the native libraries' console banners (XLA's "Very slow
#: compile?" alarm and TensorFlow-style C++ logging under JAX); workers inherit it.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def quiet_banners(argv: list[str]) -> None:
    """Set :data:`QUIET_ENV` (unless the user set it, or asked for ``-v``)."""
    if any(a in ("-v", "--verbose") for a in argv):
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


def with_verbosity(argv: list[str]) -> list[str]:
    """``-v`` / ``--verbose`` (ours, not Hydra's) -> Hydra's and the job's INFO logging;
    quiet by default (conf/config.yaml sets both to WARNING)."""
    verbose = any(a in ("-v", "--verbose") for a in argv)
    rest = [a for a in argv if a not in ("-v", "--verbose")]
    return rest + list(VERBOSE_OVERRIDES) if verbose else rest


if __name__ == "__main__":
    main()
