"""A sweep's own lines: what it will not run (before it starts), the summary of its outcomes
and this sweep's leaderboard, every line within the width the terminal reports
(:func:`dp_arena.report.terminal.terminal_width`, :func:`dp_arena.report.terminal.wrap_lines`:
prose wrapped at spaces, continuation lines indented, a word longer than the width broken).

- :func:`announce_lines`: the plan up front: the run count, each n/a reason once (with how
  many jobs), the metrics that apply to no job, the notes (the default delta, a mechanism's
  planning notes, warnings), each wrapped to the width;
- :func:`print_summary`: runs finished, skipped because already finished, redone after an
  interruption, failed with each distinct reason once, n/a (n/a and duplicate jobs are not
  runs and are not counted);
- :func:`print_leaderboard`: the board of this sweep's runs (skipped ones included, the n/a
  jobs as rows) on stdout, written under ``<sweep dir>/leaderboard``, and the headline (winner
  per epsilon, the board as an MLflow table) on the sweep's parent run.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dp_arena.redact import without_credentials
from dp_arena.report.leaderboard import NotApplicableRow
from dp_arena.report.terminal import relative, terminal_width, wrap_lines
from dp_arena.report.tracking import is_database_server, resolve_tracking_uri
from dp_arena.sweep.records import JobPlan, Outcome, SweepPlan


def announce_lines(plan: SweepPlan, width: int | None = None) -> list[str]:
    """What the sweep says up front (see the module docstring), each line at most ``width``
    characters (default: :func:`terminal_width`); a continuation line is indented under its
    item."""
    width = width or terminal_width()
    na, dup = plan.of("n/a"), plan.of("duplicate")
    head = []
    if plan.total is not None:
        head.append(f"sweep: {plan.total} run{'s' if plan.total != 1 else ''}"
                    f"{f', {len(na)} n/a' if na else ''}"
                    f"{f', {len(dup)} identical to another job (run once)' if dup else ''}")
    by_reason: dict[str, list[JobPlan]] = {}
    for j in na:
        by_reason.setdefault(f"{j.row.mechanism if j.row else j.mechanism}: {j.reason}",
                             []).append(j)
    items = [f"n/a  {reason}" + (f" ({len(group)} jobs)" if len(group) > 1 else "")
             for reason, group in by_reason.items()]
    items += [f"n/a  metric {what}: {reason.split('; ')[0]}"
              for what, reason in sorted(plan.metrics_na.items())]
    items += [f"note {note}" + (f" ({count} jobs)" if count > 1 else "")
              for note, count in sorted(plan.notes.items())]
    out = wrap_lines(head, width)
    for item in items:
        for k, text in enumerate(item.splitlines()):
            out += textwrap.wrap(text, width, initial_indent="  " if k == 0 else "    ",
                                 subsequent_indent="    ", break_on_hyphens=False)
    return out


def print_summary(outcomes: Sequence[Outcome], sweep_dir: Path, what: str = "runs") -> str:
    """Print (and return) the sweep's summary (see the module docstring)."""
    runs = [o for o in outcomes if o.ran]
    failed = [o for o in runs if o.failed]
    skipped = [o for o in runs if o.status == "SKIPPED"]
    redone = [o for o in runs if o.redone]
    na = [o for o in outcomes if o.status == "N/A"]
    ok = len(runs) - len(failed)
    extra = [f"{len(skipped)} already finished earlier (skipped)"] if skipped else []
    if redone:
        extra.append(f"{len(redone)} interrupted earlier and redone")
    if failed:
        extra.append(f"{len(failed)} failed")
    if na:
        extra.append(f"{len(na)} n/a (mechanism does not apply to the data)")
    width = terminal_width()
    lines = ["\n" + "\n".join(wrap_lines(
        [(f"sweep finished: {ok} of {len(runs)} {what} succeeded"
          f"{', ' + ', '.join(extra) if extra else ''}  ({relative(sweep_dir)})")], width))]
    print(lines[0], flush=True)
    by_reason: dict[str, list[Outcome]] = {}
    for o in failed:
        by_reason.setdefault(o.message or "(no reason recorded)", []).append(o)
    for reason, group in by_reason.items():
        more = f" (+{len(group) - 1} more)" if len(group) > 1 else ""
        # a run that started printed its whole reason already: one line here; a run refused
        # before it started is explained here, once
        reason_lines = reason.splitlines()[:1] if all(o.run_id for o in group) \
            else reason.splitlines()
        text = "\n".join(
            textwrap.wrap(f"failed: {group[0].label}{more}:", width, initial_indent="  ",
                          subsequent_indent="    ", break_on_hyphens=False)
            + [w for line in reason_lines for w in textwrap.wrap(
                line, width, initial_indent="    ", subsequent_indent="      ",
                break_on_hyphens=False)])
        print(text, file=sys.stderr, flush=True)
        lines.append(text)
    return "\n".join(lines) + "\n"


def sweep_failed(outcomes: Sequence[Outcome]) -> bool:
    """Any scored run failed, or nothing ran."""
    return any(o.failed for o in outcomes) or not any(o.ran for o in outcomes)


def experiments_of(outcomes: Sequence[Outcome]) -> list[tuple[str, str | None]]:
    """(experiment, tracking URI) of every experiment the outcomes' runs logged to."""
    seen: dict[str, str | None] = {}
    for o in outcomes:
        if o.run_id and o.experiment and o.experiment not in seen:
            seen[o.experiment] = o.tracking_uri
    return sorted(seen.items())


def not_applicable_records(outcomes: Sequence[Outcome]) -> list[NotApplicableRow]:
    """One board row per distinct n/a (mechanism, settings, epsilon, delta, dataset,
    accountant): the trials of an n/a job are one row."""
    seen: dict[tuple, NotApplicableRow] = {}
    for o in outcomes:
        if o.row is None:
            continue
        row = replace(o.row, reason=o.message)
        key = tuple(str(v) for v in (row.mechanism, row.hyperparameters, row.epsilon,
                                     row.delta, row.dataset, row.accountant))
        seen.setdefault(key, row)
    return list(seen.values())


def print_leaderboard(experiment: str, tracking_uri: str | None, sweep: str,
                      run_ids: list[str] | None = None,
                      not_applicable: Sequence[Outcome] = (),
                      parent: str | None = None) -> list[Path]:
    """This sweep's leaderboard on stdout, and its files under ``<sweep>/leaderboard``;
    returns the files written. ``not_applicable``: the sweep's n/a outcomes, shown as rows;
    ``parent``: the sweep's parent run, which gets the headline and the board as a table."""
    from dp_arena.report import terminal
    from dp_arena.report.experiments import board_of
    from dp_arena.report.leaderboard import load_runs, with_not_applicable
    from dp_arena.report.render import render_markdown, write_outputs

    runs = load_runs(experiment, tracking_uri, run_ids=run_ids)
    if runs.empty:
        return []
    board = board_of(runs, experiment, tracking_uri)
    board = with_not_applicable(board, not_applicable_records(not_applicable))
    out = write_outputs(board, runs, Path(sweep) / "leaderboard", title=f"dp-arena: {experiment}")
    if parent:
        log_parent_headline(tracking_uri, parent, board)
    print()
    title = f"Leaderboard: {experiment} (this sweep)"
    if terminal.board_format() == "text":  # a terminal: plain text within its width
        print(terminal.render_terminal(board, title, files=str(Path(sweep) / "leaderboard"
                                                               / "leaderboard.md")))
    else:
        print(render_markdown(board, title=title))
    # every line within the terminal's width (dp_arena.report.terminal.files_lines)
    print("\n" + "\n".join(terminal.files_lines(Path(sweep) / "leaderboard",
                                                [Path(p).name for p in out])))
    uri = without_credentials(resolve_tracking_uri(tracking_uri))
    browse = ("mlflow ui --backend-store-uri sqlite:///mlflow.db" if uri.startswith("sqlite:")
              else f"mlflow ui --backend-store-uri {uri}" if is_database_server(uri) else uri)
    board_command = (f"every run of the experiment: dp-arena-board --experiment '{experiment}'"
                     f"{' --tracking-uri ' + uri if uri.startswith('http') else ''}")
    print("\n".join(terminal.wrap_lines([board_command, f"browse: {browse}"],
                                        terminal.terminal_width())))
    return [Path(p) for p in out]


def log_parent_headline(tracking_uri: str | None, parent: str, board: Any) -> None:
    """The winner per epsilon (metrics, tags) and the board as an MLflow table on the parent
    run (:mod:`dp_arena.report.headline`); a failure is a warning, the board files remain."""
    from dp_arena.report.headline import log_headline
    from dp_arena.report.tracking import client_for

    try:
        log_headline(client_for(tracking_uri), parent, board)
    except Exception as exc:  # noqa: BLE001 - the board is printed and written regardless
        print(f"warning: could not log the headline on the sweep's parent run: "
              f"{type(exc).__name__}", file=sys.stderr)
