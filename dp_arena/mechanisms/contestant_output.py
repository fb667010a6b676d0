"""What a contestant wrote, read and checked before anything else reads it: files opened only
as regular files (never through a link), ``synthetic.csv`` validated against the schema and the
public row cap (every problem names the column and the count, never a value), and
``report.json``'s declared tags. The protocol is :class:`dp_arena.mechanisms.external.External`'s.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import DPArenaError, SchemaError

from .row_count import row_bounds

#: At most this many ``report.json`` tags are kept (each a declared name and a finite number).
MAX_REPORT_TAGS = 10


def own_file(path: Path) -> BinaryIO | None:
    """``path`` opened for reading if it is a regular file the contestant wrote, else ``None``:
    never through a symbolic link (the contestant's ``synthetic.csv -> /any/file`` would make
    the harness read that file as its output), never a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_output(folder: Path, name: str, table: str, data: Dataset,
                epsilon: float) -> pd.DataFrame:
    """Contestant ``name``'s ``synthetic.csv``, checked (:class:`External`, step 4): codes
    (``table``) as an int64 frame, values as a schema-valid frame."""
    schema = data.schema.drop_id()
    where = f"synthetic data from contestant {name!r}"
    fh = own_file(folder / "synthetic.csv")
    if fh is None:
        raise DPArenaError(f"contestant {name!r} exited 0 but wrote no synthetic.csv "
                           "(a regular file)", "the script must write synthetic.csv in the "
                           "folder it is given")
    cap = row_bounds(data, epsilon)[1]
    try:
        with fh:
            frame = pd.read_csv(fh, dtype=str, keep_default_na=True, nrows=cap + 1)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        raise SchemaError(["not a CSV file with a header row"], where=where,
                          fix="write a header row, then one row per record") from None
    problems = column_problems(list(frame.columns), schema.names)
    if len(frame) > cap:
        problems.append(f"more than {cap} rows (the public cap on synthetic rows)")
    if problems:
        raise SchemaError(problems, where=where, fix="emit the schema's columns, at most the "
                          "row cap, every value in its domain")
    frame = frame[schema.names]
    if table == "codes":
        return checked_codes(frame, schema.domain(), where)
    return checked_values(frame, data, where)


def column_problems(found: list[str], wanted: list[str]) -> list[str]:
    missing = [c for c in wanted if c not in found]
    extra = [c for c in found if c not in wanted]
    return ([f"missing columns: {missing}"] if missing else []) + \
        ([f"unexpected columns: {extra}"] if extra else [])


def checked_codes(frame: pd.DataFrame, domain: dict[str, int], where: str) -> pd.DataFrame:
    """Every value an integer code in ``0..size-1`` (problems name column and count only)."""
    problems = [] if len(frame) else ["no rows"]
    out = {}
    for col, size in domain.items():
        num = pd.to_numeric(frame[col], errors="coerce")
        bad = num.isna() | (num != np.floor(num)) | (num < 0) | (num >= size)
        if bad.any():
            problems.append(f"{col}: {int(bad.sum())} value(s) not an integer code in "
                            f"0..{size - 1}")
        out[col] = num.fillna(0).astype(np.int64)
    if problems:
        raise SchemaError(problems, where=where,
                          fix="emit one integer code in 0..size-1 per column (task.json domain)")
    return pd.DataFrame(out)


def checked_values(frame: pd.DataFrame, data: Dataset, where: str) -> pd.DataFrame:
    """Values parsed with the schema's types, then the schema check of every mechanism."""
    schema = data.schema.drop_id()
    out = {}
    for col in schema.columns:
        numeric = col.kind == "numeric" or (col.kind == "categorical" and col.dtype != "str"
                                           and all(isinstance(v, (int, float))
                                                   for v in col.values or ()))
        out[col.name] = pd.to_numeric(frame[col.name], errors="coerce") if numeric \
            else frame[col.name]
    parsed = pd.DataFrame(out)
    problems = schema.problems(parsed)
    if problems:
        raise SchemaError(problems, where=where,
                          fix="emit in-domain values for every schema column")
    return parsed


def report_tag_name_ok(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and len(name) <= 40


def report_tags(folder: Path, declared: Iterable[str],
                limit: int = MAX_REPORT_TAGS) -> dict[str, str]:
    """``report.json``'s tags (:class:`External`, step 4): those under a ``declared`` name with
    a finite number, at most ``limit``, tagged ``contestant/<name>``. Every other entry and
    anything else in the file is dropped without a trace (not even a count)."""
    fh = own_file(folder / "report.json")
    if fh is None:
        return {}
    try:
        with fh:
            tags = json.loads(fh.read(65536)).get("tags", {})
    except (OSError, ValueError, AttributeError):
        return {}
    entries = list(tags.items()) if isinstance(tags, dict) else []
    allowed = {name for name in declared if report_tag_name_ok(name)}
    out = {}
    for key, value in entries:
        if key in allowed and len(out) < limit and isinstance(value, (int, float)) and \
                not isinstance(value, bool) and np.isfinite(value):
            out[f"contestant/{key}"] = f"{value:g}"
    return out
