"""A finished job's line (``[k/N] done   mst eps=1 trial=2  kmarginal/score=...  (11.2s)``),
as text, and the guarded console writes of a sweep.

- :func:`job_line`: the line of one outcome and the stream it belongs on (``done`` and
  ``skip`` on stdout, ``FAILED`` with the reason on stderr); the launching process's progress
  monitor prints it for a local (joblib) sweep (:mod:`dp_arena.sweep.progress`), the worker
  for the others (:mod:`dp_arena.sweep.job`). On a terminal a ``done`` or ``skip`` line fits
  its width (:func:`fit_job_line`: shorter, then folded onto two lines), so none wraps.
- :func:`say`: write a line and flush, never raising: a stream whose reader has gone (a pipe
  into ``head`` or a killed ``tee``: ``BrokenPipeError``) or that is closed must not stop a
  sweep's clean-up. It returns whether the line was written; :func:`silence_gone_streams`
  points stdout and stderr at ``/dev/null`` once their reader has gone.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from dp_arena.sweep.records import Outcome

#: The scores a line and a tuning objective prefer, in order.
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")


def job_line(outcome: Outcome, progress: tuple[str, str] = ("", ""),
             multirun: bool = True, width: int | None = None) -> tuple[str, bool]:
    """``(text, to_stderr)``: one finished job's line (``done``, ``skip``, ``FAILED`` with the
    reason), with the sweep's progress (``[k/N]`` ... ``ETA``) when known. In a sweep, a
    refusal before the run started is explained once, by the sweep summary. ``width``: the
    terminal's, which a ``done`` or ``skip`` line then fits (:func:`fit_job_line`), and each
    line of a ``FAILED`` one too (:func:`fold_lines`)."""
    label, status = outcome.label, outcome.status
    lead = f"{progress[0]} " if progress[0] else ""
    eta = f"  {progress[1]}" if progress[1] else ""
    if status == "SKIPPED":
        text = (f"{lead}skip   {label}  already finished (run {(outcome.run_id or '')[:8]}): "
                f"{headline(outcome.scores)}{eta}")
        return fit_job_line(text, lead, "skip", label, outcome.scores, "", progress[1],
                            width), False
    if status != "FAILED":
        redo = f"  (redone: {outcome.redone})" if outcome.redone else ""
        time_text = f"({seconds_text(outcome.seconds)})"
        text = f"{lead}done   {label}  {headline(outcome.scores)}  {time_text}{redo}{eta}"
        return fit_job_line(text, lead, "done", label, outcome.scores, time_text, progress[1],
                            width), False
    if outcome.run_id or not multirun or not outcome.user_error:
        hint = f"\n  {outcome.hint}" if outcome.hint else ""
        return fold_lines(f"{lead}FAILED {label}\n{indent(outcome.message)}{hint}", width), True
    return fold_lines(f"{lead}FAILED {label}  (refused before the run started; reason in the "
                      "summary)", width), True


def fold_lines(text: str, width: int | None) -> str:
    """Each line of ``text`` within ``width`` (none: as it is): a longer one is wrapped at
    spaces, its continuation indented two more than the line (a word longer than the width
    is broken)."""
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        pad = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=pad if len(pad) < width // 2 else "",
                             break_on_hyphens=False, drop_whitespace=True) or [""]
    return "\n".join(out)


def fit_job_line(full: str, lead: str, verb: str, label: str, scores: Mapping[str, float],
                 time_text: str, eta: str, width: int | None) -> str:
    """``full`` when it fits ``width`` (or no width is given); else the first that fits of:
    the ranking score alone and the ETA without the runs in flight; single spaces and the
    score's short name (``overall=673.4``); then two lines, the run's label, then its score,
    time and ETA, indented (each cut to the width, the label keeping its ``eps=... trial=...``
    end). Mechanism, epsilon, trial, score, time and progress are kept."""
    if width is None or len(full) <= width:
        return full
    main, short = headline(scores, 1), short_headline(scores)
    bare_eta = eta.split(" (")[0]
    facts = [p for p in (short, time_text, bare_eta) if p]
    for text in ("  ".join(p for p in (f"{lead}{verb} ", label, main, time_text, bare_eta) if p),
                 " ".join([f"{lead}{verb}", label, *facts])):
        if len(text) <= width:
            return text
    first = f"{lead}{verb} "
    return "\n".join([first + cut_label(label, width - len(first)),
                      cut_end("  " + " ".join(facts), width)])


def cut_label(label: str, width: int) -> str:
    """``label`` within ``width``: the part before `` eps=`` (mechanism and settings) cut
    with ``…`` first, so epsilon and trial stay; then the end."""
    if len(label) <= width:
        return label
    head, sep, tail = label.partition(" eps=")
    tail = sep + tail
    room = width - len(tail)
    if room >= 2:
        return head[:room - 1] + "…" + tail
    return cut_end(label, width)


def cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def short_headline(scores: Mapping[str, float]) -> str:
    """The ranking score as ``name=value`` with the name after its family (``overall=673.4``)."""
    keys = [k for k in RANKING_PREFERENCE if k in scores]
    return f"{keys[0].split('/')[-1]}={scores[keys[0]]:.1f}" if keys else ""


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds >= 0.1 else "<0.1s"


def headline(scores: Mapping[str, float], most: int | None = None) -> str:
    """The ranking scores a run logged (``RANKING_PREFERENCE``; the first ``most``)."""
    keys = [k for k in RANKING_PREFERENCE if k in scores][:most]
    return "  ".join(f"{k}={scores[k]:.1f}" for k in keys)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def say(text: str, stream: TextIO | Any = None, end: str = "\n") -> bool:
    """Write ``text`` and flush; ``False`` (nothing raised) if the stream is gone."""
    stream = sys.stderr if stream is None else stream
    try:
        stream.write(text + end)
        stream.flush()
        return True
    except (OSError, ValueError):  # BrokenPipeError, a closed file
        return False


def is_terminal(stream: Any) -> bool:
    """The stream is a terminal (and still open)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def silence_gone_streams(fds: Iterable[int] = (1, 2)) -> None:
    """Point the file descriptors ``fds`` (default stdout and stderr), and stdout / stderr
    when they share a file with one of them (``2>&1``), at ``/dev/null``: their reader has
    gone, so what follows (the summary, the interpreter's last flush at exit) is dropped
    instead of raising ``BrokenPipeError``."""
    def identity(fd: int) -> tuple[int, int] | None:
        try:
            st = os.fstat(fd)
            return st.st_dev, st.st_ino
        except OSError:
            return None

    gone = {identity(fd) for fd in fds} - {None}
    targets = {fd for fd in (1, 2) if identity(fd) in gone} | set(fds)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in sorted(targets):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass
