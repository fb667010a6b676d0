"""A console script run as a user runs it, in a forked child of the test's interpreter.

A subprocess per command pays the interpreter start and the imports (pandas, scikit-learn,
JAX, MLflow, Hydra: 2-3 s of CPU) every time; a test module that runs 30 commands pays more for
the imports than for the commands. :func:`run_forked` forks instead: the child is its own
process (its own working folder, ``sys.argv``, environment, file descriptors 1 and 2, exit
status; nothing it does reaches the test's process), and the imports are already done. What
differs from a fresh interpreter is only what the parent had imported and cached, so the
entry point's first lines (Hydra's global state) are reset before it starts.

Used where a test checks what a command prints and leaves behind (the README's commands, bad
inputs). Tests of the installed scripts themselves (the wheel, the console-script shims, stop
signals) keep a real subprocess.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

#: console script -> its entry point (pyproject.toml's [project.scripts]).
SCRIPTS = {
    "dp-arena": "harness.cli.main:main",
    "dp-arena-board": "harness.cli.board:main",
    "dp-arena-simulate": "harness.cli.simulate:main",
    "dp-arena-score": "harness.cli.score:main",
    "dp-arena-audit": "harness.cli.audit:main",
    "dp-arena-prepare": "harness.cli.prepare:main",
    "dp-arena-schema": "harness.cli.schema:main",
    "dp-arena-contestants": "harness.cli.contestants:main",
}


def entry_point(script: str):
    """The ``main`` callable of a console script (imported here, in the parent)."""
    module, _, name = SCRIPTS[script].partition(":")
    return getattr(importlib.import_module(module), name)


def exit_status(code: object) -> int:
    """What the interpreter exits with for ``SystemExit(code)``: 0 for None, the integer, or 1
    after printing anything else (as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def sqlalchemy_engines() -> dict[int, object]:
    """Every live SQLAlchemy engine of this process, by id."""
    from sqlalchemy.engine import Engine
    return {id(o): o for o in gc.get_objects() if isinstance(o, Engine)}


def close_new_engines(before: Mapping[int, object]) -> None:
    """Close the connections of the engines opened since ``before`` (MLflow's store on the
    command's ``mlflow.db``), as the interpreter's shutdown would: ``os._exit`` skips it, and
    SQLite leaves its ``-wal`` and ``-shm`` files beside a database whose connections stay
    open. Engines inherited from the parent are not touched."""
    for key, engine in sqlalchemy_engines().items():
        if key not in before:
            engine.dispose()


def _child(main, argv: Sequence[str], cwd: Path, env: Mapping[str, str], out: int,
           err: int) -> None:
    """The forked child: never returns (``os._exit``), whatever ``main`` does."""
    status = 1
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = list(argv)
        from hydra.core.global_hydra import GlobalHydra
        GlobalHydra.instance().clear()
        inherited = sqlalchemy_engines()
        try:
            status = exit_status(main())  # a console script exits with main's return
        except SystemExit as stop:
            status = exit_status(stop.code)
        except KeyboardInterrupt:
            status = 130
        except BaseException:  # an uncaught error, printed as the interpreter does
            traceback.print_exc()
            status = 1
        # the parent's exit handlers are not run (they would clean up the parent's temporary
        # folders); what the command opened is closed
        close_new_engines(inherited)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the child is leaving; nothing to report to
                pass
        os._exit(status)


def run_forked(argv: Sequence[str], cwd: Path, env: Mapping[str, str],
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Run console script ``argv[0]`` with arguments ``argv[1:]`` in a forked child in ``cwd``
    with environment ``env``; its output and exit status as :func:`subprocess.run` gives them
    (``capture_output=True, text=True``). A child still running after ``timeout`` seconds is
    killed and :class:`subprocess.TimeoutExpired` raised."""
    main = entry_point(argv[0])
    sys.stdout.flush(), sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(main, argv, Path(cwd), env, out.fileno(), err.fileno())
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(list(argv), timeout)
            time.sleep(0.02)
        code = os.waitstatus_to_exitcode(status)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    return subprocess.CompletedProcess(list(argv), code, texts[0], texts[1])
