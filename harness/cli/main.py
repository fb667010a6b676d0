"""``dp-arena``: the Hydra runner.

With no arguments it runs the default competition (``conf/config.yaml``: every mechanism of
the default sweep x epsilon 1 and 10 on the simulated taxi data) in parallel through the
Hydra joblib launcher and prints the leaderboard. Any Hydra override narrows or widens the
sweep, e.g. ``dp-arena mechanism=independent privacy.epsilon=1,2,4 trial=0,1,2``; a named
competition fixes the whole setting: ``dp-arena competition=sprint3``.

Every job prints one progress line (``done``, ``skip`` for a run whose content key already
finished, or ``FAILED`` with the reason) and writes ``outcome.json`` into its output folder,
which the sweep summary (:mod:`harness.cli.callbacks`, in the parent process) reads.

Bad input ends with one message naming the problem and the fix, no traceback (set
``DP_ARENA_DEBUG=1`` for one), and a non-zero exit code.
"""

from __future__ import annotations

import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from harness.data.datasets import PROJECT_ROOT
from harness.errors import DPArenaError

CONF_DIR = str(PROJECT_ROOT / "conf")
OUTCOME_FILE = "outcome.json"
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")


def run_task(cfg: DictConfig) -> Any:
    """Hydra task: one run. Writes ``outcome.json`` into the job's output folder. Returns the
    outcome record, or for a tuning search job the objective Optuna maximizes (``-inf`` for a
    failed run, so a failure never aborts the study; the final choice ignores failed runs)."""
    hc = HydraConfig.get()
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    multirun = hc.mode == RunMode.MULTIRUN
    plain["sweep"] = hc.sweep.dir if multirun else ""
    search = is_search(plain)
    if search and multirun:
        plain["trial"] = int(hc.job.num)  # every Optuna trial gets fresh noise
    record = execute_job(plain, swept_setting(plain, list(hc.overrides.task)), multirun)
    Path(hc.runtime.output_dir, OUTCOME_FILE).write_text(json.dumps(record))
    if not multirun and record["status"] == "FAILED":
        sys.exit(2)
    if search:  # a failed trial is the worst possible value: the study goes on without it
        return record["objective"] if record["objective"] is not None else -math.inf
    return record


def execute_job(plain: dict[str, Any], setting: dict[str, Any] | None = None,
                multirun: bool = True) -> dict[str, Any]:
    """Run one config, print its progress line, and return its outcome record. In a sweep
    (``multirun``) a refusal before the run started is explained once, by the sweep summary."""
    from harness.run.runner import run_one  # imported here so `--help` stays fast

    label = describe(plain)
    base = {"label": label, "setting": setting or {}, "objective": None,
            "tracking_uri": (plain.get("tracking") or {}).get("uri")}
    try:
        outcome = run_one(plain)
        record = {**base, "status": "SKIPPED" if outcome.skipped else outcome.status,
                  "run_id": outcome.run_id, "experiment": outcome.experiment,
                  "tracking_uri": outcome.tracking_uri or base["tracking_uri"],
                  "seconds": outcome.seconds, "scores": outcome.scores,
                  "objective": objective_value(outcome.scores, plain)}
        if outcome.skipped:
            print(f"skip   {label}  already finished (run {outcome.run_id[:8]}): "
                  f"{headline(outcome.scores)}", flush=True)
        else:
            print(f"done   {label}  {headline(outcome.scores)}  ({outcome.seconds:.1f}s)",
                  flush=True)
    except DPArenaError as exc:
        run = getattr(exc, "dp_arena_run", {})
        record = {**base, **run, "status": "FAILED", "message": str(exc)}
        if run or not multirun:
            print(f"FAILED {label}\n{indent(str(exc))}", file=sys.stderr, flush=True)
        else:  # bad input, refused before any run started: the sweep summary says why, once
            print(f"FAILED {label}  (refused before the run started; reason in the summary)",
                  file=sys.stderr, flush=True)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        message = f"{type(exc).__name__}: {exc}"
        record = {**base, **getattr(exc, "dp_arena_run", {}), "status": "FAILED",
                  "message": message}
        print(f"FAILED {label}\n{indent(message)}", file=sys.stderr, flush=True)
        if os.environ.get("DP_ARENA_DEBUG"):
            traceback.print_exc()
            print(getattr(exc, "child_traceback", ""), file=sys.stderr)
        else:
            print("  (set DP_ARENA_DEBUG=1 to see the traceback)", file=sys.stderr)
    return record


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
    from mechanisms import hyperparameter_label

    mech = dict(cfg.get("mechanism") or {})
    name = mech.pop("name", None)
    params = hyperparameter_label(str(name), mech)
    privacy = cfg.get("privacy") or {}
    mode = (cfg.get("tuning") or {}).get("mode", "none")
    tuning = "" if mode in (None, "none") else f" [{mode}:{(cfg.get('tuning') or {}).get('stage')}]"
    return (f"{name}{'(' + params + ')' if params != '-' else ''} "
            f"eps={privacy.get('epsilon')} trial={cfg.get('trial')}{tuning}")


def headline(scores: dict[str, float]) -> str:
    keys = [k for k in RANKING_PREFERENCE if k in scores]
    return "  ".join(f"{k}={scores[k]:.1f}" for k in keys)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def main() -> None:
    hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")(run_task)()


if __name__ == "__main__":
    main()
