"""trim_heap (dp_arena/mechanisms/pgm/heap.py): freed heap memory goes back to the operating system.

Tolerance: 4,000 arrays of 48 KB (below glibc's mmap threshold, so on the heap) hold about
183 MB; freed with one array allocated after them still live (it holds the heap's top), glibc
keeps them resident. After the trim at most a quarter of that may stay: every freed array
spans whole pages, so what stays is bookkeeping and the pinned array, about a megabyte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dp_arena.mechanisms.pgm.heap import trim_heap

STATUS = Path("/proc/self/status")


def resident_mb() -> float:
    line = next(x for x in STATUS.read_text().splitlines() if x.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(not STATUS.exists(), reason="no /proc/self/status (not Linux)")
def test_freed_heap_memory_is_returned():
    start = resident_mb()
    arrays = [np.ones(6_000) for _ in range(4_000)]
    pin = np.ones(6_000)  # allocated last: keeps the heap's top in use
    held = resident_mb() - start
    assert held > 100  # the arrays are resident (48 KB x 4,000 = 183 MB)
    del arrays
    if not trim_heap():
        pytest.skip("the C library is not glibc: nothing to trim")
    assert resident_mb() - start < held / 4
    del pin
