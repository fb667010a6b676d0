"""``dp-arena-board``: the leaderboard of an MLflow experiment (any tracking URI: the local
SQLite file or a shared ``mlflow server``). Prints plain text within the terminal's width (80
columns included; :mod:`dp_arena.report.terminal`), Markdown when stdout is a pipe or a file;
writes Markdown, CSV, a self-contained HTML page and PNG plots (score vs epsilon with CI bands,
score-vs-runtime Pareto front), and says where, within the terminal's width."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from dp_arena.cli.exits import ExplainingParser
from dp_arena.errors import DPArenaError


def out_folder_problem(out: str | Path) -> str | None:
    """Why the board cannot write into the folder ``out`` (None when it can): a file on the
    way, or a first existing folder on the way this user may not write in (``os.access``;
    root may write in any folder of a writable file system)."""
    path = Path(out).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        return f"--out {str(out)!r}: {str(existing)!r} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" (the folder {str(existing)!r} on the way)"
        return f"--out {str(out)!r}: this user cannot write there{where}"
    return None


OUT_FIX = "pass --out with a folder you can write to, e.g. --out ~/dp-arena-board"


def add_experiment_arguments(parser: ExplainingParser) -> None:
    """``--experiment``, ``--tracking-uri`` and ``--sweep``: which runs a board command reads
    (:func:`experiment_runs`)."""
    parser.add_argument("--experiment", default=None,
                        help="MLflow experiment (default: the most recently created dp-arena/*)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or "
                             "sqlite:///mlflow.db in this folder)")
    parser.add_argument("--sweep", default=None, help="only the runs of this sweep folder")


def main(argv: list[str] | None = None) -> int:
    parser = ExplainingParser(
        prog="dp-arena-board",
        description="Rank the runs of a dp-arena experiment: prints Markdown, writes CSV, "
                    "a self-contained HTML page and PNG plots (score vs epsilon, Pareto front).")
    add_experiment_arguments(parser)
    parser.add_argument("--metric", default=None,
                        help="score to rank by, e.g. kmarginal/score (default: challenge/overall "
                             "if logged, else kmarginal/score)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the paired tests that decide ties "
                             "(default 0.05)")
    parser.add_argument("--out", default="leaderboard", help="output folder (default: leaderboard)")
    parser.add_argument("--heldout-scores", action="store_true",
                        help="the data owner's board: read the held-out scores (ml_efficacy, "
                             "membership, attribute_inference) kept in this machine's "
                             "owner-only files, so the verdict covers held-out utility and "
                             "risk; the board printed and the files written then hold them "
                             "and say so (not for publication)")
    args = parser.parse_args(argv)
    if not 0 < args.alpha < 1:
        parser.error(f"--alpha must be in (0, 1) (got {args.alpha})")
    try:
        problem = out_folder_problem(args.out)  # before any run is read or drawn
        if problem:
            raise DPArenaError(problem, OUT_FIX)
        from dp_arena.report.experiments import board_of
        from dp_arena.report.render import render_markdown, write_outputs
        from dp_arena.report.terminal import board_format, files_lines, render_terminal

        experiment, runs = experiment_runs(args.tracking_uri, args.experiment, args.sweep)
        if args.heldout_scores:
            from dp_arena.report.headline import OWNER_READ
            from dp_arena.run.heldout import with_owner_scores

            before = runs
            runs = with_owner_scores(runs)
            if runs is before:  # no owner-side file holds a score of these runs
                from dp_arena.run.heldout import state_dir

                print(f"dp-arena-board: --heldout-scores: no held-out scores of these runs in "
                      f"{state_dir()} (the owner's side of the machine that ran them; "
                      "DP_ARENA_STATE_DIR names another)", file=sys.stderr)
        board = board_of(runs, experiment, args.tracking_uri, args.metric, args.alpha)
        if args.heldout_scores:
            board.attrs[OWNER_READ] = True
        try:
            paths = write_outputs(board, runs, args.out, title=f"dp-arena: {experiment}")
        except OSError as exc:  # what the check cannot see: a read-only disk, a full one
            raise DPArenaError(f"--out {args.out!r}: cannot write the board there "
                               f"({exc.strerror or exc})", OUT_FIX) from None
        if board_format() == "text":  # a terminal: plain text within its width
            print(render_terminal(board, f"Leaderboard: {experiment}",
                                  files=str(Path(args.out) / "leaderboard.md")))
        else:
            print(render_markdown(board, title=f"Leaderboard: {experiment}"))
        print("\n" + "\n".join(files_lines(args.out, [Path(p).name for p in paths])))
    except DPArenaError as exc:
        print(f"dp-arena-board: error: {exc}", file=sys.stderr)
        return 2
    return 0


def experiment_runs(tracking_uri: str | None, experiment: str | None,
                    sweep: str | None) -> tuple[str, Any]:
    """(the experiment's name, its runs) from ``--tracking-uri``/``--experiment``/``--sweep``
    (the latest ``dp-arena/*`` experiment when none is named); one :class:`DPArenaError`
    for a store dp-arena cannot read or an experiment without runs."""
    from dp_arena.report.experiments import latest_experiment
    from dp_arena.report.leaderboard import load_runs
    from dp_arena.sweep.launch_checks import tracking_scheme_problem

    problem = tracking_scheme_problem(tracking_uri)
    if problem:  # MLflow's own message is a traceback about its model registry
        raise DPArenaError(problem.replace("tracking.uri", "--tracking-uri", 1),
                           "pass sqlite:///path/to/mlflow.db, file:///a/folder or the "
                           "http(s)://host:port of an MLflow server (default: "
                           "sqlite:///mlflow.db in this folder)")
    name = experiment or latest_experiment(tracking_uri)
    runs = load_runs(name, tracking_uri, sweep=sweep)
    if runs.empty:
        raise DPArenaError(f"experiment {name!r} has no dp-arena runs"
                           f"{' in sweep ' + sweep if sweep else ''}",
                           "run dp-arena first, or check --experiment / --sweep")
    return name, runs


if __name__ == "__main__":
    sys.exit(main())
