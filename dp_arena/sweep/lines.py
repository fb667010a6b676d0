"""A finished job's line (``[k/N] done   mst eps=1 trial=2  kmarginal/score=...  (11.2s)``),
as text, and the guarded console writes of a sweep.

- :func:`job_line`: the line of one outcome and the stream it belongs on (``done`` and
  ``skip`` on stdout, ``FAILED`` with the reason on stderr); the launching process's progress
  monitor prints it for a local (joblib) sweep (:mod:`dp_arena.sweep.progress`), the worker
  for the others (:mod:`dp_arena.sweep.job`).
- :func:`say`: write a line and flush, never raising: a stream whose reader has gone (a pipe
  into ``head`` or a killed ``tee``: ``BrokenPipeError``) or that is closed must not stop a
  sweep's clean-up. It returns whether the line was written; :func:`silence_gone_streams`
  points stdout and stderr at ``/dev/null`` once their reader has gone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from dp_arena.sweep.records import Outcome

#: The scores a line and a tuning objective prefer, in order.
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")


def job_line(outcome: Outcome, progress: tuple[str, str] = ("", ""),
             multirun: bool = True) -> tuple[str, bool]:
    """``(text, to_stderr)``: one finished job's line (``done``, ``skip``, ``FAILED`` with the
    reason), with the sweep's progress (``[k/N]`` ... ``ETA``) when known. In a sweep, a
    refusal before the run started is explained once, by the sweep summary."""
    label, status = outcome.label, outcome.status
    lead = f"{progress[0]} " if progress[0] else ""
    eta = f"  {progress[1]}" if progress[1] else ""
    if status == "SKIPPED":
        text = (f"{lead}skip   {label}  already finished (run {(outcome.run_id or '')[:8]}): "
                f"{headline(outcome.scores)}{eta}")
        return text, False
    if status != "FAILED":
        redo = f"  (redone: {outcome.redone})" if outcome.redone else ""
        text = (f"{lead}done   {label}  {headline(outcome.scores)}  "
                f"({seconds_text(outcome.seconds)}){redo}{eta}")
        return text, False
    if outcome.run_id or not multirun or not outcome.user_error:
        hint = f"\n  {outcome.hint}" if outcome.hint else ""
        return f"{lead}FAILED {label}\n{indent(outcome.message)}{hint}", True
    return (f"{lead}FAILED {label}  (refused before the run started; reason in the summary)",
            True)


def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds >= 0.1 else "<0.1s"


def headline(scores: Mapping[str, float]) -> str:
    keys = [k for k in RANKING_PREFERENCE if k in scores]
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
