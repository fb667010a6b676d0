"""A sweep over several datasets (``competition=suite``, or ``dataset=adult,titanic,...``)
ends with the board across datasets (:mod:`dp_arena.report.across_datasets`) after each
table's own board: printed within the terminal's width (Markdown when piped) and written,
with its critical-difference diagrams, under ``<sweep dir>/leaderboard/across_datasets``.
A sweep of one dataset prints nothing more."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from dp_arena.sweep.records import Outcome


def print_across_datasets(experiment: str, tracking_uri: str | None, sweep: str,
                          run_ids: list[str] | None = None,
                          not_applicable: Sequence[Outcome] = ()) -> list[Path]:
    """The board across datasets of this sweep's runs of ``experiment`` when they cover two
    datasets or more: printed, written; returns the files written (none otherwise). A
    failure here is one warning line: the per-dataset boards stand."""
    from dp_arena.report import terminal
    from dp_arena.report.across_datasets import across_datasets, spans_datasets
    from dp_arena.report.across_render import render_markdown, render_text, write_across
    from dp_arena.report.leaderboard import load_runs
    from dp_arena.sweep.summary import not_applicable_records

    try:
        runs = load_runs(experiment, tracking_uri, run_ids=run_ids)
        if not spans_datasets(runs):
            return []
        boards = across_datasets(runs, not_applicable=not_applicable_records(not_applicable))
        folder = Path(sweep) / "leaderboard" / "across_datasets"
        heading = f"Across datasets: {experiment} (this sweep)"
        files = write_across(boards, folder, heading)
    except Exception as exc:  # noqa: BLE001 - the sweep's own boards are written already
        print(f"warning: the board across datasets was not drawn: {type(exc).__name__}: "
              f"{exc}", file=sys.stderr)
        return []
    print()
    if terminal.board_format() == "text":
        print(render_text(boards, heading, terminal.terminal_width(),
                          files=terminal.relative(folder)))
    else:
        print(render_markdown(boards, heading, diagrams=False))
    print("\n" + "\n".join(terminal.files_lines(folder, [p.name for p in files])))
    return files
