"""The Hydra callback that opens and closes a sweep (in the launching process, not in the
workers): ``on_multirun_start`` is :func:`dp_arena.sweep.session.open_sweep` (checks, plan,
parent runs, stop handlers, progress), or with ``dry_run`` (``dp-arena --dry-run``)
:func:`dp_arena.sweep.session.dry_run` (the plan and its cost estimate, then exit 0), ``on_multirun_end`` ends
the progress display and is :func:`dp_arena.sweep.session.close_sweep` (summary, final tuning
stage, leaderboard); when the reader of the output has gone (a pipe into ``head``), what
would be printed is dropped (the board is still written and attached to the parent run), and
a broken pipe found only while printing ends the sweep with exit 1, no traceback, its runs
closed. A launch that fails after the sweep opened (``on_multirun_end`` never runs) has its
runs closed at exit (:meth:`SweepSummary.close_abandoned`).
"""

from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from dp_arena.errors import DPArenaError
from dp_arena.sweep.lines import say, silence_gone_streams


class SweepSummary(Callback):
    """Checks a sweep before it starts, and closes it (see the module docstring)."""

    monitor: Any = None

    def __init__(self, dry_run: bool = False) -> None:
        #: ``dp-arena --dry-run``: plan and price the sweep, run nothing
        #: (:func:`dp_arena.sweep.session.dry_run`)
        self.dry_run = bool(dry_run)

    def __getstate__(self) -> dict[str, Any]:
        """Hydra hands the callbacks to the workers: the progress thread stays here."""
        return {k: v for k, v in self.__dict__.items() if k != "monitor"}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from dp_arena.sweep.session import dry_run, open_sweep

        if self.dry_run:
            try:
                dry_run(config)
            except DPArenaError as exc:
                print(f"dp-arena: {exc}", file=sys.stderr)
                raise SystemExit(2) from None
            raise SystemExit(0)
        try:
            self.monitor = open_sweep(config)
            self.ended = False
            atexit.register(self.close_abandoned, str(config.hydra.sweep.dir))
        except DPArenaError as exc:  # Hydra would turn an exception here into a warning
            say(f"dp-arena: the sweep was not started: {exc}")
            raise SystemExit(2) from None
        except Exception as exc:  # noqa: BLE001 - same: never start a sweep half-prepared
            say(f"dp-arena: the sweep was not started: {type(exc).__name__}: {exc}")
            raise SystemExit(2) from None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from dp_arena.sweep.session import close_sweep

        self.ended = True
        if self.monitor is not None:
            self.monitor.stop()
            gone = self.monitor.console.gone_fds()
            if gone:  # the summary and the board go to their files and the parent run only
                silence_gone_streams(gone)
        try:
            close_sweep(config)  # ends the parent runs whatever happens
        except BrokenPipeError:  # the reader of our output has gone (`dp-arena ... | head`)
            silence_gone_streams()
            raise SystemExit(1) from None

    def close_abandoned(self, sweep_dir: str) -> None:
        """At exit: a sweep whose launch failed after it opened (a worker process lost, a
        launcher error: :meth:`on_multirun_end` never ran) leaves no run RUNNING
        (:func:`dp_arena.sweep.session.abandon_sweep`)."""
        if getattr(self, "ended", True):
            return
        from dp_arena.sweep.session import abandon_sweep

        abandon_sweep(Path(sweep_dir), self.monitor)
