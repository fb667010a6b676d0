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
        if len(failed) < len(records):
            self._print_leaderboard(config, str(sweep_dir))
        if failed:
            sys.exit(1)

    @staticmethod
    def _print_leaderboard(config: DictConfig, sweep: str) -> None:
        from .leaderboard import build_leaderboard, load_runs, render_markdown, write_outputs
        from .runner import parse_run_config
        from omegaconf import OmegaConf

        keys = [k for k in config.keys() if k != "hydra"]
        plain = OmegaConf.to_container(OmegaConf.masked_copy(config, keys), resolve=True)
        try:
            rc = parse_run_config(plain)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a broken config already failed every job
            return
        runs = load_runs(rc.experiment, rc.tracking_uri, sweep=sweep)
        if runs.empty:
            return
        board = build_leaderboard(runs)
        print()
        print(render_markdown(board, title=f"Leaderboard: {rc.experiment} (this sweep)"))
        out = write_outputs(board, runs, Path(sweep) / "leaderboard")
        print(f"\nwritten: {', '.join(str(p) for p in out)}")
        print("all runs of the experiment: dp-arena-board --experiment "
              f"'{rc.experiment}'   |   browse: mlflow ui --backend-store-uri "
              "sqlite:///mlflow.db")
