"""Reading figures printed in docstrings, so tests can tie each printed figure to the code."""

from __future__ import annotations

import re


def printed_table(doc: str, header_start: str) -> list[list[str]]:
    """The rows of the reStructuredText simple table whose header row starts with
    ``header_start``, cells split on two or more spaces."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if line.startswith("="):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows
