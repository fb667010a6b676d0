"""Reading an experiment's board back from the tracking store (``dp-arena-board`` and the
Python API's :func:`dp_arena.api.read_board` read it the same way).

- :func:`latest_experiment`: the most recently created ``dp-arena/*`` experiment of a store;
- :func:`board_of`: the board every command shows of some runs: ranked
  (:func:`dp_arena.report.leaderboard.build_leaderboard`), audits attached
  (:mod:`dp_arena.report.audits`), on NIST's CRC scale where it applies
  (:mod:`dp_arena.report.crc_scale`);
- :func:`experiment_board`: an experiment's runs and its board;
- :func:`read_board`: the board as a DataFrame, the table ``dp-arena-board`` prints.

Nothing here touches private data: the runs' logged params, tags and scores are what a run
published (DP releases and public facts).
"""

from __future__ import annotations

import pandas as pd

from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.report.audits import attach_audits, load_audits
from dp_arena.report.crc_scale import on_crc_scale
from dp_arena.report.leaderboard import build_leaderboard, load_runs
from dp_arena.report.tracking import client_for


def latest_experiment(tracking_uri: str | None) -> str:
    """The name of the most recently created ``dp-arena/*`` experiment in ``tracking_uri``
    (default: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` here); one
    :class:`DPArenaError` when the store has none (or does not exist)."""
    client = client_for(tracking_uri, must_exist=True)
    exps = [e for e in client.search_experiments() if e.name.startswith("dp-arena/")]
    if not exps:
        raise DPArenaError(f"no dp-arena experiments in {client.tracking_uri}",
                           "run dp-arena first, or pass --tracking-uri / --experiment")
    return max(exps, key=lambda e: e.creation_time or 0).name


def board_of(runs: pd.DataFrame, experiment: str, tracking_uri: str | None = None,
             metric: str | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """The board of ``runs`` (of ``experiment``) as every command shows it (see the module
    docstring)."""
    board = build_leaderboard(runs, metric, alpha=alpha)
    return on_crc_scale(attach_audits(board, load_audits(experiment, tracking_uri)))


def experiment_board(experiment: str, tracking_uri: str | None = None,
                     metric: str | None = None, sweep: str | None = None,
                     alpha: float = 0.05,
                     run_ids: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, board) of an experiment as ``dp-arena-board`` builds them (audits attached)."""
    runs = load_runs(experiment, tracking_uri, sweep=sweep, run_ids=run_ids)
    if runs.empty:
        raise DPArenaError(f"experiment {experiment!r} has no dp-arena runs"
                           f"{' in sweep ' + sweep if sweep else ''}",
                           "run a competition first, or check experiment / sweep")
    return runs, board_of(runs, experiment, tracking_uri, metric, alpha)


def read_board(experiment: str | None = None, tracking_uri: str | None = None,
               metric: str | None = None, sweep: str | None = None,
               alpha: float = 0.05) -> pd.DataFrame:
    """The board of every run of ``experiment`` (default: the most recent ``dp-arena/*``) in
    the store ``tracking_uri`` (default as ``dp-arena-board``), as a DataFrame: the table
    ``dp-arena-board`` prints and writes to ``leaderboard.csv``."""
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be in (0, 1) (got {alpha})", "e.g. alpha=0.05")
    name = experiment or latest_experiment(tracking_uri)
    return experiment_board(name, tracking_uri, metric, sweep, alpha)[1]
