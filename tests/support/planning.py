"""The plan's progress status in a command's output: ``planning: checking job k of n: WHAT
(12s)`` lines on stderr (:func:`dp_arena.sweep.plan.planning_reporter`), each wrapped to the
terminal's width onto continuation lines indented by two. A slow machine prints more of them,
and longer ones (the job's label), so tests that count a message's lines set them aside."""

from __future__ import annotations

import re

#: One status line, its wrapped lines joined again by single spaces.
STATUS = re.compile(r"planning: (composing|checking) job \d+ of \d+(: .+)? \(\d+s\)")


def joined(lines: list[str]) -> str:
    """Wrapped lines as the one line they were (textwrap drops the space at each break)."""
    return " ".join(line.strip() for line in lines)


def without_planning(text: str) -> list[str]:
    """``text``'s lines less the plan's status lines, each with its continuation lines; a
    line that starts like a status but does not read as one (with what follows it) is kept."""
    lines = text.strip().splitlines()
    kept: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("planning: "):
            j = i + 1
            while (not STATUS.fullmatch(joined(lines[i:j])) and j < len(lines)
                   and lines[j].startswith("  ")):
                j += 1
            if STATUS.fullmatch(joined(lines[i:j])):
                i = j
                continue
        kept.append(lines[i])
        i += 1
    return kept
