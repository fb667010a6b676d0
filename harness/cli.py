"""``dp-arena``: the Hydra runner.

With no arguments it runs the default competition (``conf/config.yaml``: every mechanism of
the default sweep x epsilon 1 and 10 on the simulated taxi data) and prints the leaderboard.
Any Hydra override narrows or widens the sweep, e.g.
``dp-arena mechanism=independent privacy.epsilon=1,2,4 trial=0,1,2``.

Bad input ends with one message naming the problem and the fix, no traceback (set
``DP_ARENA_DEBUG=1`` for one), and a non-zero exit code.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from .data import PROJECT_ROOT
from .errors import DPArenaError

CONF_DIR = str(PROJECT_ROOT / "conf")
OUTCOME_FILE = "outcome.json"


def run_task(cfg: DictConfig) -> dict[str, Any]:
    """Hydra task: one run. Writes ``outcome.json`` into the job's output folder so the
    sweep summary (which may run in another process) can report every job."""
    from .runner import run_one  # imported here so `--help` stays fast

    hc = HydraConfig.get()
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    plain["sweep"] = hc.sweep.dir if hc.mode == RunMode.MULTIRUN else ""
    label = describe(plain)
    try:
        outcome = run_one(plain)
        record = {"status": outcome.status, "label": label, "run_id": outcome.run_id,
                  "experiment": outcome.experiment, "tracking_uri": plain["tracking"]["uri"],
                  "seconds": outcome.seconds, "scores": outcome.scores}
        print(f"done   {label}  {headline(outcome.scores)}  ({outcome.seconds:.1f}s)", flush=True)
    except DPArenaError as exc:
        record = {"status": "FAILED", "label": label, "message": str(exc)}
        print(f"FAILED {label}\n{indent(str(exc))}", file=sys.stderr, flush=True)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        message = f"{type(exc).__name__}: {exc}"
        record = {"status": "FAILED", "label": label, "message": message}
        print(f"FAILED {label}\n{indent(message)}", file=sys.stderr, flush=True)
        if os.environ.get("DP_ARENA_DEBUG"):
            traceback.print_exc()
        else:
            print("  (set DP_ARENA_DEBUG=1 to see the traceback)", file=sys.stderr)
    Path(hc.runtime.output_dir, OUTCOME_FILE).write_text(json.dumps(record))
    if hc.mode != RunMode.MULTIRUN and record["status"] != "FINISHED":
        sys.exit(2)
    return record


def describe(cfg: dict[str, Any]) -> str:
    from mechanisms import hyperparameter_label

    mech = dict(cfg.get("mechanism") or {})
    name = mech.pop("name", None)
    params = hyperparameter_label(str(name), mech)
    privacy = cfg.get("privacy") or {}
    return (f"{name}{'(' + params + ')' if params != '-' else ''} "
            f"eps={privacy.get('epsilon')} trial={cfg.get('trial')}")


def headline(scores: dict[str, float]) -> str:
    keys = [k for k in ("challenge/overall", "kmarginal/score") if k in scores]
    return "  ".join(f"{k}={scores[k]:.1f}" for k in keys)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def main() -> None:
    hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")(run_task)()


if __name__ == "__main__":
    main()
