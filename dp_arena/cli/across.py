"""``dp-arena-across``: the board across datasets of an MLflow experiment (a suite:
``dp-arena competition=suite``, or any experiment whose runs cover two datasets or more): per
epsilon and headline score, each mechanism's average rank with a bootstrap interval, wins,
ties and losses, the Friedman test and the Nemenyi critical difference
(:mod:`dp_arena.report.across_datasets`). Prints plain text within the terminal's width,
Markdown when piped; writes Markdown, CSV, a self-contained HTML page and one PNG
critical-difference diagram per score and epsilon."""

from __future__ import annotations

import sys
from pathlib import Path

from dp_arena.cli.board import (
    OUT_FIX,
    add_experiment_arguments,
    experiment_runs,
    out_folder_problem,
)
from dp_arena.cli.exits import ExplainingParser
from dp_arena.errors import DPArenaError


def main(argv: list[str] | None = None) -> int:
    parser = ExplainingParser(
        prog="dp-arena-across",
        description="Compare the mechanisms of a dp-arena experiment across its datasets: "
                    "average ranks, wins/ties/losses, Friedman test, critical-difference "
                    "diagram.")
    add_experiment_arguments(parser)
    parser.add_argument("--metric", action="append", default=None,
                        help="a score to compare on (repeatable; default: every headline "
                             "score the runs logged)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="level of the Friedman test, the critical difference and the "
                             "per-dataset tests behind wins/ties/losses (default 0.05)")
    parser.add_argument("--out", default="across_datasets",
                        help="output folder (default: across_datasets)")
    args = parser.parse_args(argv)
    if not 0 < args.alpha < 1:
        parser.error(f"--alpha must be in (0, 1) (got {args.alpha})")
    try:
        problem = out_folder_problem(args.out)
        if problem:
            raise DPArenaError(problem, OUT_FIX.replace("dp-arena-board", "dp-arena-across"))
        from dp_arena.report.across_datasets import across_datasets, spans_datasets
        from dp_arena.report.across_render import render_markdown, render_text, write_across
        from dp_arena.report.leaderboard import score_columns
        from dp_arena.report.terminal import board_format, files_lines, terminal_width

        experiment, runs = experiment_runs(args.tracking_uri, args.experiment, args.sweep)
        if not spans_datasets(runs):
            raise DPArenaError(f"the runs of {experiment!r} cover one dataset: there is "
                               "nothing to compare across datasets",
                               "run a suite (dp-arena competition=suite), or read this "
                               "experiment's board with dp-arena-board")
        for metric in args.metric or ():
            if metric not in score_columns(runs):
                raise DPArenaError(f"--metric {metric!r} was not logged by these runs",
                                   f"use one of {score_columns(runs)}")
        boards = across_datasets(runs, args.metric, alpha=args.alpha)
        heading = f"Across datasets: {experiment}"
        try:
            paths = write_across(boards, args.out, heading)
        except OSError as exc:
            raise DPArenaError(f"--out {args.out!r}: cannot write there "
                               f"({exc.strerror or exc})", OUT_FIX) from None
        if board_format() == "text":
            print(render_text(boards, heading, terminal_width(), files=str(args.out)))
        else:
            print(render_markdown(boards, heading, diagrams=False))
        print("\n" + "\n".join(files_lines(args.out, [Path(p).name for p in paths])))
    except DPArenaError as exc:
        print(f"dp-arena-across: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
