"""Measuring a run's wall time, CPU time and peak memory (resident set size)."""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass, field

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def cpu_seconds_now() -> float:
    """CPU seconds (user + system) used so far by this process (all its threads) and by its
    children that have ended and been waited for (a contestant's subprocess)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def current_rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc; else the lifetime peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class ResourceMonitor:
    """Context manager sampling RSS every ``interval`` seconds in a background thread.

    ``peak_mb`` is the largest RSS seen while the block ran (includes memory held before it;
    ``extra_mb`` is the growth above the RSS at entry); ``cpu_seconds`` the CPU time the
    process (every thread) and its waited-for children used while it ran
    (:func:`cpu_seconds_now`).
    """

    interval: float = 0.05
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_bytes: int = 0
    start_bytes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def __enter__(self) -> "ResourceMonitor":
        self.start_bytes = self.peak_bytes = current_rss_bytes()
        self._t0 = time.perf_counter()
        self._cpu0 = cpu_seconds_now()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_bytes = max(self.peak_bytes, current_rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0
        self.cpu_seconds = max(cpu_seconds_now() - self._cpu0, 0.0)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_bytes = max(self.peak_bytes, current_rss_bytes())

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20

    @property
    def extra_mb(self) -> float:
        return max(self.peak_bytes - self.start_bytes, 0) / 2**20
