"""How the plain (argparse) commands end: user errors are one message and exit status 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from dp_arena.errors import DPArenaError

#: Exit status of a command refused for bad input.
EXIT_INVALID = 2


def run_or_explain(prog: str, work: Callable[[], object]) -> int:
    """``work()``; a :class:`DPArenaError` becomes ``<prog>: error: <message>`` on stderr and
    exit status 2 (no traceback). Returns 0 when ``work`` finished."""
    try:
        work()
    except DPArenaError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID) from None
    return 0


class ExplainingParser(argparse.ArgumentParser):
    """An argument parser whose errors are one message with the fix (``prog: error: MESSAGE``,
    then ``fix: see prog --help ...``; no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n  fix: see {self.prog} --help "
                                "for the options and the values they take\n")
