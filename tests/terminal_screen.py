"""A minimal terminal for tests: renders the bytes a program wrote to a pseudo-terminal into the
rows a user would see, and runs a command in a pseudo-terminal (stdlib ``pty``).

The model handles what the sweep's display and a terminal's line discipline emit: printable
characters (overwriting), ``\\r``, ``\\n`` (a new row, from its first column, as a pty's output
processing makes it), ``\\b``, wrapping at the width, ``ESC [ K`` (clear to
the end of the row), ``ESC [ A`` / ``ESC [ B`` (cursor up / down); any other escape sequence is
consumed and ignored.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def render(data: str, width: int = 200) -> list[str]:
    """The screen's rows (trailing spaces stripped, trailing empty rows dropped)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(data):
        ch = data[i]
        if ch == "\x1b":
            m = CSI.match(data, i)
            if m:
                n = int(m.group(1) or 1) if m.group(1).isdigit() else 1
                if m.group(2) == "K":
                    del rows[row][col:]
                elif m.group(2) == "A":
                    row = max(row - n, 0)
                elif m.group(2) == "B":
                    row += n
                i = m.end()
            else:
                i += 2
            while len(rows) <= row:
                rows.append([])
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":  # as a terminal sees it behind a pty's output processing (onlcr)
            row, col = row + 1, 0
        elif ch == "\b":
            col = max(col - 1, 0)
        elif ch >= " ":
            if col >= width:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
        while len(rows) <= row:
            rows.append([])
        i += 1
    out = ["".join(r).rstrip() for r in rows]
    while out and not out[-1]:
        out.pop()
    return out


@dataclass
class PtyRun:
    """A command run in a pseudo-terminal of its own (its controlling terminal, so ``^C``
    typed into it is SIGINT to its foreground process group, as in a real terminal)."""

    argv: Sequence[str]
    cwd: Path
    env: dict[str, str]
    rows: int = 50
    cols: int = 200
    output: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        self.proc = subprocess.Popen(
            list(self.argv), cwd=self.cwd, env=self.env, stdin=slave, stdout=slave,
            stderr=slave, start_new_session=True,
            # the child only makes the terminal its controlling one, then execs
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))  # noqa: PLW1509
        os.close(slave)

    def read(self, timeout: float = 0.2) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self.master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                pass

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def wait_for(self, done: Callable[[PtyRun], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            if done(self):
                return True
            if self.proc.poll() is not None:
                self.read(0.5)
                return done(self)
        return False

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def finish(self, timeout: float) -> int:
        """Read until the command exits (and its output is drained); its exit code."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
        code = self.proc.wait(timeout=30)
        for _ in range(20):  # what is still buffered in the terminal
            before = len(self.output)
            self.read(0.1)
            if len(self.output) == before:
                break
        os.close(self.master)
        return code
