"""A console script run as a user runs it, in a child forked from a fork server that has
already imported dp-arena.

A subprocess per command pays the interpreter start and the imports (pandas, scikit-learn,
JAX, MLflow, Hydra: 2-3 s of CPU) every time; a test module that runs 30 commands pays more for
the imports than for the commands. :func:`run_forked` forks instead, from a fork server
(:mod:`multiprocessing`'s ``forkserver``, one per test process, preloading :data:`PRELOAD`):
the child is its own process (its own working folder, ``sys.argv``, environment, file
descriptors 1 and 2, exit status; nothing it does reaches the test's process), and the
imports are already done. The server is a fresh interpreter that only imported modules, so
forking it is safe; the test's own process is not (it may have started JAX's threads). What
differs from a fresh interpreter is what the imports cached, so Hydra's global state is reset
before the entry point starts.

Used where a test checks what a command prints and leaves behind (the README's commands, bad
inputs). Tests of the installed scripts themselves (the wheel, the console-script shims, stop
signals) keep a real subprocess.
"""

from __future__ import annotations

import functools
import gc
import importlib
import multiprocessing
import multiprocessing.context
import os
import signal
import subprocess
import sys
import tempfile
import tomllib
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

#: console script -> its entry point, as pyproject.toml's [project.scripts] installs them.
SCRIPTS: dict[str, str] = tomllib.loads(
    (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["scripts"]


#: What the fork server imports once (a command's own imports then cost nothing).
PRELOAD = (*(target.partition(":")[0] for target in SCRIPTS.values()), "dp_arena.run.runner",
           "dp_arena.sweep.session", "mlflow", "sqlalchemy", "sklearn.linear_model")


def entry_point(script: str):
    """The ``main`` callable of a console script."""
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


def _child(script: str, argv: Sequence[str], cwd: str, env: Mapping[str, str], out: str,
           err: str) -> None:
    """In a child of the fork server: never returns (``os._exit``), whatever ``main`` does."""
    status = 1
    try:
        for path, fd in ((out, 1), (err, 2)):
            target = os.open(path, os.O_WRONLY)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [p for p in extra if p not in sys.path]  # as the interpreter would
        sys.argv = list(argv)
        main = entry_point(script)
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
        # the server's exit handlers are not run; what the command opened is closed
        close_new_engines(inherited)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the child is leaving; nothing to report to
                pass
        os._exit(status)


@functools.cache
def fork_server() -> multiprocessing.context.ForkServerContext:
    """This process's fork server, started on first use as a fresh interpreter that imports
    :data:`PRELOAD` and nothing runs in. Children are forked from it, not from the test's
    process: a process that has started JAX's runtime (its thread pools) cannot be forked
    safely (a child's first JAX computation never returns), and the tests' processes do."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def run_forked(argv: Sequence[str], cwd: Path, env: Mapping[str, str],
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Run console script ``argv[0]`` with arguments ``argv[1:]`` in a child of the fork
    server, in ``cwd`` with environment ``env``; its output and exit status as
    :func:`subprocess.run` gives them (``capture_output=True, text=True``). A child still
    running after ``timeout`` seconds is killed and :class:`subprocess.TimeoutExpired`
    raised."""
    if argv[0] not in SCRIPTS:
        raise KeyError(f"{argv[0]!r} is not one of {sorted(SCRIPTS)}")
    with tempfile.TemporaryDirectory(prefix="forked-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        out.touch(), err.touch()
        child = fork_server().Process(target=_child, args=(
            argv[0], tuple(argv), str(cwd), dict(env), str(out), str(err)))
        child.start()
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(list(argv), timeout)
        code = child.exitcode
        texts = [p.read_text(errors="replace") for p in (out, err)]
    return subprocess.CompletedProcess(list(argv), code, texts[0], texts[1])
