"""``dp-arena``: the Hydra runner.

With no arguments it runs the default competition (``dp_arena/conf/config.yaml``: every mechanism of
the default sweep x epsilon 1 and 10 on the simulated taxi data) in parallel through the
Hydra joblib launcher and prints the leaderboard. Any Hydra override narrows or widens the
sweep, e.g. ``dp-arena mechanism=independent privacy.epsilon=1,2,4 trial=0,1,2``; a named
competition fixes the whole setting: ``dp-arena competition=sprint3``.

Before any job starts, the sweep callback (:mod:`dp_arena.cli.callbacks`, in the parent process)
checks every job and writes the sweep's plan; each job reads its verdict from it (n/a and
duplicate jobs return at once), prints one line (``[k/N] done``, ``skip`` for a run whose
content key already finished, or ``FAILED`` with the reason, and an ETA) and writes its
outcome record into its output folder, which the sweep summary reads: the sweep's life is
:mod:`dp_arena.sweep`; this module is the entry point. ``-v`` shows Hydra's and the libraries'
INFO logging, which is off by default.

Bad input ends with one message naming the problem and the fix, no traceback (set
``DP_ARENA_DEBUG=1`` for one), and a non-zero exit code.

``--dry-run`` checks and plans the sweep as a launch does, prints the plan's first screen and
the cost estimate (predicted CPU seconds and peak memory per mechanism and dataset, from the
finished runs in the tracking store: :mod:`dp_arena.sweep.cost_estimate`) and exits 0 without
starting any run or writing to the store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from dp_arena.cli.compose import first_job_command, forced_option_settings, refuse_bad_command
from dp_arena.resources import config_dir
from dp_arena.run import config_store  # noqa: F401 - registers the schema and resolvers (also in workers)

CONF_DIR = str(config_dir())


def run_task(cfg: DictConfig) -> Any:
    """Hydra task: one job (:func:`dp_arena.sweep.job.run_hydra_job`, imported here so
    ``--help`` stays fast)."""
    from dp_arena.sweep.job import run_hydra_job

    return run_hydra_job(cfg, HydraConfig.get())


def main() -> None:
    # JAX (under Private-PGM) probes for TPUs/GPUs and logs an INFO line per run; the harness
    # runs on CPU unless the user says otherwise.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    quiet_banners(sys.argv[1:])
    sys.argv[1:] = with_verbosity(sys.argv[1:])
    sys.argv[1:] = with_dry_run(sys.argv[1:])
    refuse_bad_command("dp-arena", Path(CONF_DIR), "config", sys.argv[1:])
    sys.argv[1:] = forced_option_settings(sys.argv[1:])
    if any(a in ("-c", "--cfg") for a in sys.argv[1:]):  # show one job, not "ambiguous value"
        sys.argv[1:], note = first_job_command("config", Path(CONF_DIR), sys.argv[1:])
        if note:
            print(note, file=sys.stderr)
    install_early_stop()  # SIGTERM as Ctrl-C, one line, until the sweep's own handlers
    hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")(run_task)()


def install_early_stop() -> None:
    """Until the sweep's own handlers are installed
    (:func:`dp_arena.sweep.parents.install_stop_handlers`), SIGTERM and SIGINT end the command
    at once with ``dp-arena: stopped.`` and what it means (nothing was started), exit 143 /
    130: SIGTERM while the sweep was planned used to end it silently, Ctrl-C in a
    ``KeyboardInterrupt`` traceback."""

    def stop(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr
            print(f"dp-arena: stopped. {name} came before any run started: nothing was "
                  "started. Run the same command again to start the sweep.", file=sys.stderr,
                  flush=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


#: The override ``--dry-run`` stands for (the sweep callback's switch, not a run setting:
#: a run's content key never sees it).
DRY_RUN_OVERRIDE = "hydra.callbacks.summary.dry_run=true"


def with_dry_run(argv: list[str]) -> list[str]:
    """``--dry-run`` (ours, not Hydra's) -> :data:`DRY_RUN_OVERRIDE`: the sweep is checked
    and priced (predicted CPU seconds and peak memory per mechanism and dataset), nothing
    runs (:func:`dp_arena.sweep.session.dry_run`)."""
    rest = [a for a in argv if a != "--dry-run"]
    return rest + [DRY_RUN_OVERRIDE] if len(rest) != len(argv) else rest


#: Hydra's and the libraries' INFO logging, shown with ``-v``.
VERBOSE_OVERRIDES = ("hydra.hydra_logging.root.level=INFO", "hydra.job_logging.root.level=INFO")


#: Environment that silences the native libraries' console banners (XLA's "Very slow
#: compile?" alarm and TensorFlow-style C++ logging under JAX); workers inherit it.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def quiet_banners(argv: list[str]) -> None:
    """Set :data:`QUIET_ENV` (unless the user set it, or asked for ``-v``)."""
    if any(a in ("-v", "--verbose") for a in argv):
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


def with_verbosity(argv: list[str]) -> list[str]:
    """``-v`` / ``--verbose`` (ours, not Hydra's) -> Hydra's and the job's INFO logging;
    quiet by default (dp_arena/conf/config.yaml sets both to WARNING)."""
    verbose = any(a in ("-v", "--verbose") for a in argv)
    rest = [a for a in argv if a not in ("-v", "--verbose")]
    return rest + list(VERBOSE_OVERRIDES) if verbose else rest


if __name__ == "__main__":
    main()
