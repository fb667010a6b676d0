"""The Hydra callback that opens and closes a sweep (in the launching process, not in the
workers): ``on_multirun_start`` is :func:`harness.sweep.session.open_sweep` (checks, plan,
parent runs, stop handlers, progress), ``on_multirun_end`` is
:func:`harness.sweep.session.close_sweep` (summary, final tuning stage, leaderboard).
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.errors import DPArenaError


class SweepSummary(Callback):
    """Checks a sweep before it starts, and closes it (see the module docstring)."""

    monitor: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """Hydra hands the callbacks to the workers: the progress thread stays here."""
        return {k: v for k, v in self.__dict__.items() if k != "monitor"}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.sweep.session import open_sweep

        try:
            self.monitor = open_sweep(config)
        except DPArenaError as exc:  # Hydra would turn an exception here into a warning
            print(f"dp-arena: the sweep was not started: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except Exception as exc:  # noqa: BLE001 - same: never start a sweep half-prepared
            print(f"dp-arena: the sweep was not started: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            raise SystemExit(2) from None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.sweep.session import close_sweep

        if self.monitor is not None:
            self.monitor.stop()
        close_sweep(config)
