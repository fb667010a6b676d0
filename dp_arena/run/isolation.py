"""Running a run's computation in a child process under a time and a memory limit.

``call_isolated(fn, limits)`` forks the current process (the child inherits the loaded
dataset, the mechanism object and every imported module at no cost), runs ``fn()`` in the
child and hands its return value back through a pickle file. The parent watches the child:

- **time**: wall-clock seconds since the fork; past ``time_limit_s`` the child's whole process
  tree is killed and :class:`RunLimitExceeded` says ``time limit of N s exceeded``;
- **memory**: the resident set size (RSS) of the child's process tree, sampled every
  ``poll_s``; above ``memory_limit_mb`` the tree is killed and the error says
  ``memory limit of N MB exceeded``. RSS counts everything the child holds, including what it
  inherited from the harness (imports, the dataset). As a backstop against an allocation
  faster than the sampling, the child's address space is capped (``RLIMIT_AS``) at its size at
  the fork plus twice the limit plus 1 GiB; an allocation past that raises ``MemoryError`` in
  the child, which is reported as the same memory-limit failure.

The child runs with BLAS/OpenMP pools capped at ``threads`` (default 1: two parallel runs on
two cores, and OpenMP stays safe after a fork), through the variables of
:data:`dp_arena.mechanisms.contestants.THREAD_VARIABLES`, which a contestant's scrubbed environment
keeps (so a contestant started by the run is capped too). The child dies with its parent
(``PR_SET_PDEATHSIG`` on Linux), so killing a sweep never
leaves orphaned mechanism processes behind. An exception in the child is re-raised in the
parent with its type and message (or as :class:`RunError` when its type cannot be rebuilt).
Without ``os.fork`` (Windows) or with ``limits.isolate=false`` the function runs in-process
and no limit is enforced.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dp_arena.errors import DPArenaError
from dp_arena.processes import die_with_parent
from dp_arena.run.settings import Limits
from dp_arena.mechanisms.contestants import THREAD_VARIABLES

T = TypeVar("T")
_MB = 2**20


class RunError(DPArenaError):
    """A failure inside the isolated child whose exception type could not be rebuilt."""


class RunLimitExceeded(DPArenaError):
    """The run passed its time or memory limit and was stopped (``kind``: ``time`` or
    ``memory``)."""

    kind = "time"

    @classmethod
    def of(cls, kind: str, problem: str, fix: str) -> RunLimitExceeded:
        exc = cls(problem, fix)
        exc.kind = kind
        return exc


@dataclass
class ChildReport:
    """What the parent observed about the child."""

    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    isolated: bool = False


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def call_isolated(fn: Callable[[], T], limits: Limits) -> tuple[T, ChildReport]:
    """``fn()`` in a forked child under ``limits``; returns its value and what was observed."""
    if not limits.isolate or not can_fork():
        start = time.perf_counter()
        value = fn()
        return value, ChildReport(time.perf_counter() - start, 0.0, False)
    with tempfile.TemporaryDirectory(prefix="dp-arena-child-") as tmp:
        result_path = Path(tmp) / "result.pkl"
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, reported through the file
            _child_main(fn, limits, result_path)
        report = ChildReport(isolated=True)
        try:
            status = _watch(pid, limits, report)
        except BaseException:  # e.g. Ctrl-C: never leave the child running
            kill_tree(pid)
            _reap(pid)
            raise
        return _collect(result_path, status, limits, report), report


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _child_main(fn: Callable[[], Any], limits: Limits, result_path: Path) -> None:
    """Child side: die with the parent, cap the address space, run, write the outcome."""
    code = 1
    try:
        die_with_parent()
        limiter = _limit_threads(limits.threads)  # noqa: F841 - holds the limit while fn runs
        if limits.memory_limit_mb:
            _cap_address_space(limits.memory_limit_mb)
        try:
            payload = ("ok", fn())
            code = 0
        except MemoryError as exc:
            payload = ("memory", f"{type(exc).__name__}: {exc}".strip(": "))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            payload = ("error", pack_exception(exc))
        _write_pickle(result_path, payload)
    except BaseException:  # noqa: BLE001 - last resort: the parent sees a missing result
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _limit_threads(threads: int | None) -> Any:
    """Cap BLAS/OpenMP thread pools in the child (and its subprocesses). Besides sharing the
    cores fairly between parallel runs, one thread keeps OpenMP code safe in a forked child
    even if the parent had started an OpenMP pool (GNU libgomp is not fork-safe)."""
    if threads is None:
        return None
    for var in THREAD_VARIABLES:
        os.environ[var] = str(threads)
    try:
        from threadpoolctl import threadpool_limits

        return threadpool_limits(threads)
    except Exception:  # noqa: BLE001 - no threadpoolctl: the environment variables remain
        return None


def _write_pickle(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(".part")
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an unpicklable result is a failure to report
        data = pickle.dumps(("error", pack_exception(RunError(
            f"the run's result could not be handed back from the child process: {exc}"))))
    tmp.write_bytes(data)
    tmp.rename(path)


def _cap_address_space(limit_mb: float) -> None:
    try:
        import psutil

        current = psutil.Process().memory_info().vms
    except Exception:  # noqa: BLE001 - no psutil: skip the backstop
        return
    cap = int(current + 2 * limit_mb * _MB + 1024 * _MB)
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        pass


def tree_rss_bytes(pid: int) -> int:
    """RSS of process ``pid`` and all its descendants (0 if it is gone)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every descendant (children first, so none is re-parented alive)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        children = proc.children(recursive=True)
    except psutil.Error:
        children = []
    for p in reversed(children):
        try:
            p.kill()
        except psutil.Error:
            pass
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _watch(pid: int, limits: Limits, report: ChildReport) -> int:
    """Wait for the child, enforcing the limits; returns its wait status (or a negative
    marker: -1 time limit, -2 memory limit)."""
    start = time.monotonic()
    verdict = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        report.seconds = time.monotonic() - start
        if done:
            return status if verdict == 0 else verdict
        rss_mb = tree_rss_bytes(pid) / _MB
        report.peak_rss_mb = max(report.peak_rss_mb, rss_mb)
        if verdict == 0 and limits.time_limit_s and report.seconds > limits.time_limit_s:
            verdict = -1
            kill_tree(pid)
        elif verdict == 0 and limits.memory_limit_mb and rss_mb > limits.memory_limit_mb:
            verdict = -2
            kill_tree(pid)
        time.sleep(limits.poll_s)


def stopped_by_signal(status: int) -> bool:
    """Whether a child's wait status says a stop signal (SIGINT, SIGTERM) ended it: killed by
    one, or exiting with the shell's code for one (130, 143)."""
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status) in (signal.SIGINT, signal.SIGTERM)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) in (128 + signal.SIGINT,
                                                                128 + signal.SIGTERM)


def _collect(result_path: Path, status: int, limits: Limits, report: ChildReport) -> Any:
    if status == -1:
        raise RunLimitExceeded.of("time", f"time limit of {limits.time_limit_s:g} s exceeded "
                                  f"(stopped after {report.seconds:.1f} s)",
                                  "raise limits.time_limit_s, or make the run cheaper")
    if status == -2:
        raise RunLimitExceeded.of("memory", f"memory limit of {limits.memory_limit_mb:g} MB "
                                  f"exceeded (resident memory reached {report.peak_rss_mb:.0f} "
                                  "MB)", "raise limits.memory_limit_mb, or make the run smaller")
    if not result_path.is_file() and stopped_by_signal(status):
        # the sweep (or the terminal) is stopping: the run is stopped, not failed (the
        # runner marks it KILLED; a sweep's worker then takes no further job)
        raise KeyboardInterrupt("the run's process was stopped by a signal")
    if not result_path.is_file():
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit code {os.WEXITSTATUS(status)}")
        hint = " (out of memory?)" if os.WIFSIGNALED(status) and \
            os.WTERMSIG(status) == signal.SIGKILL else ""
        raise RunError(f"the run's process ended without a result: {how}{hint}",
                       "see the job's log; set limits.isolate=false to debug in-process")
    kind, value = pickle.loads(result_path.read_bytes())
    if kind == "ok":
        return value
    if kind == "memory":
        limit = f"{limits.memory_limit_mb:g} MB" if limits.memory_limit_mb else "memory"
        raise RunLimitExceeded.of("memory", f"memory limit of {limit} exceeded (allocation "
                                  f"failed: {value})",
                                  "raise limits.memory_limit_mb, or make the run smaller")
    raise unpack_exception(value)


def pack_exception(exc: BaseException) -> dict[str, Any]:
    """A picklable description of ``exc`` that :func:`unpack_exception` turns back into an
    exception of the same type and message."""
    state = {}
    for key, value in getattr(exc, "__dict__", {}).items():
        try:
            pickle.dumps(value)
            state[key] = value
        except Exception:  # noqa: BLE001, S112 - drop what cannot travel
            continue
    try:
        pickle.dumps(exc.args)
        args = exc.args
    except Exception:  # noqa: BLE001
        args = (str(exc),)
    return {"module": type(exc).__module__, "name": type(exc).__qualname__, "args": args,
            "state": state, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))}


def unpack_exception(packed: dict[str, Any]) -> BaseException:
    """The exception :func:`pack_exception` described (same type and ``str``), else a
    :class:`RunError` carrying its message."""
    import importlib

    try:
        cls = importlib.import_module(packed["module"])
        for part in packed["name"].split("."):
            cls = getattr(cls, part)
        exc = cls.__new__(cls)
        exc.args = tuple(packed["args"])
        exc.__dict__.update(packed["state"])
        if str(exc) == packed["message"]:
            exc.child_traceback = packed.get("traceback", "")  # type: ignore[attr-defined]
            return exc
    except Exception:  # noqa: BLE001, S110 - fall back to the message
        pass
    err = RunError(f"{packed['name']}: {packed['message']}")
    err.child_traceback = packed.get("traceback", "")  # type: ignore[attr-defined]
    return err
