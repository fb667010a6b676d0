"""Process lifetimes: a child that must not outlive the process that started it.

:func:`die_with_parent` (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, called in the child before
it runs anything): when the parent dies, however it dies (SIGKILL included, where no handler
can clean up), the kernel kills the child. A run's isolated child uses it, and so does an
external contestant's command, which runs in a session of its own and would otherwise be
orphaned when the run's process is killed. Elsewhere it does nothing.

Ground floor: imports nothing from the project.
"""

from __future__ import annotations

import ctypes
import signal
import sys

#: ``PR_SET_PDEATHSIG`` from ``<linux/prctl.h>``.
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; else nothing)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
