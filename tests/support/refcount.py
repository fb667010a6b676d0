"""Running code with Python's cyclic garbage collector off, so that only reference counting
frees: what such code leaves alive after its last reference goes is held by a reference
cycle (and would stay resident until a collection happens to run)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def only_reference_counting() -> Iterator[None]:
    """The block runs with ``gc`` disabled; the collector's state before is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
