"""Hydra callback that closes a sweep: a summary of every job and the sweep's leaderboard."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from .cli import OUTCOME_FILE


class SweepSummary(Callback):
    """On multirun end: count finished/failed jobs, print the leaderboard of this sweep's
    runs, write it under ``<sweep dir>/leaderboard``, and exit 1 if any job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        records = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob(f"*/{OUTCOME_FILE}"))]
        failed = [r for r in records if r["status"] != "FINISHED"]
        print(f"\nsweep finished: {len(records) - len(failed)} of {len(records)} runs succeeded"
              f"{f', {len(failed)} failed' if failed else ''}  ({sweep_dir})")
        for r in failed:
            first = (r.get("message") or "").splitlines()[0] if r.get("message") else ""
            print(f"  failed: {r['label']}: {first}")
        finished = [r for r in records if r["status"] == "FINISHED"]
        for experiment in sorted({r["experiment"] for r in finished}):
            uri = next(r.get("tracking_uri") for r in finished if r["experiment"] == experiment)
            print_leaderboard(experiment, uri, str(sweep_dir))
        if failed:
            sys.exit(1)


def print_leaderboard(experiment: str, tracking_uri: str | None, sweep: str) -> None:
    """This sweep's leaderboard on stdout, and its files under ``<sweep>/leaderboard``."""
    from .leaderboard import build_leaderboard, load_runs, render_markdown, write_outputs

    runs = load_runs(experiment, tracking_uri, sweep=sweep)
    board = build_leaderboard(runs)
    print()
    print(render_markdown(board, title=f"Leaderboard: {experiment} (this sweep)"))
    out = write_outputs(board, runs, Path(sweep) / "leaderboard", title=f"dp-arena: {experiment}")
    print(f"\nwritten: {', '.join(str(p) for p in out)}")
    print(f"every run of the experiment: dp-arena-board --experiment '{experiment}'"
          "    browse: mlflow ui --backend-store-uri sqlite:///mlflow.db")
