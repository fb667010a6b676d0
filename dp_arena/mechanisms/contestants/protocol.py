"""The contestant protocol (version 1), from inside a contestant's environment.

Importable by the adapter scripts beside it (a script's folder is on its ``sys.path``); uses
the standard library and numpy only, so it runs in any contestant environment. The harness
(:mod:`dp_arena.mechanisms.external`) runs ``PYTHON SCRIPT FOLDER`` with the working directory and
``TMPDIR`` inside ``FOLDER`` (mode 0700, files 0600, removed after the run), where it wrote:

- ``task.json``: ``protocol`` (1), ``mechanism``, ``encoding`` (``codes``: every column an
  integer code ``0..size-1``; ``values``: the schema's values), ``columns`` (in order),
  ``domain`` (column -> number of codes, missing code included), ``budget`` (``epsilon``,
  ``delta``, ``accountant``, and ``rho`` when the accountant is zCDP), ``rows`` (``min``,
  ``max``: the public bounds on the synthetic row count; more than ``max`` fails the run),
  ``unit`` (``record``), ``files`` (``private``, ``public`` or null, ``output``, ``report``,
  ``failure``), ``options`` (the mechanism's ``options`` setting);
- ``schema.json``: the columns' schema in dp-arena's ``parameters.json`` layout (values,
  ranges, bins): the domain is given, never to be inferred from the data;
- ``private.csv`` (and ``public.csv`` when the dataset has a public part): a header row, then
  one row per record, in the task's encoding.

The script writes ``synthetic.csv`` (same header and encoding) and exits 0; optionally
``report.json`` ``{"tags": {"name": number}}`` (public counts about its own output, e.g. rows
it dropped; only names the contestant declares are kept: its manifest in ``claims.py``, or
``mechanism.report_tags``; every other entry is dropped without a trace); on failure it exits
non-zero and may write one line to ``failure.txt``, which reaches the run's owner only (the
state folder's ``contestant-failures.log``): the board and MLflow get a fixed category (non-zero
exit, signal, no output, bad output, time or memory limit). The three files must be regular
files (a symbolic link is not read). The environment holds only ``PATH``, ``HOME`` (inside the
folder when sandboxed), locale, time zone, thread limits and the protocol's ``TMPDIR``,
``PYTHONNOUSERSITE`` and ``MPLBACKEND``: none of the harness's settings. The script runs in
an operating-system sandbox (:mod:`dp_arena.sandbox`): no network, a read-only system and
environment, the folder its only writable place, its processes ended with the run.

For adapters that close a library's read of the exact row count: :func:`split_epsilon` (a
share of epsilon for the count, basic composition) and :func:`laplace_row_count` (OpenDP's
discrete Laplace; imports OpenDP only when called, so only environments that draw a count need
it).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import traceback
from pathlib import Path

PROTOCOL = 1


def load_task(folder: str | os.PathLike) -> dict:
    task = json.loads((Path(folder) / "task.json").read_text())
    if task.get("protocol") != PROTOCOL:
        raise SystemExit(f"this adapter speaks protocol {PROTOCOL}, the task is "
                         f"{task.get('protocol')}")
    task["folder"] = str(folder)
    return task


def task_file(task: dict, key: str) -> Path | None:
    name = task["files"].get(key)
    return None if name is None else Path(task["folder"]) / name


def read_codes(path: Path, columns: list[str]):
    """A codes CSV as an ``n x d`` int64 numpy array, columns in ``columns`` order."""
    import numpy as np

    with open(path, newline="") as fh:
        header = next(csv.reader(fh))
    index = [header.index(c) for c in columns]
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    return data[:, index]


def private_file(path: Path):
    """Open ``path`` for writing, mode 0600 (never readable by others)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                     newline="")


def write_codes(task: dict, array) -> None:
    """Write the synthetic codes (``n x d``, columns in the task's order)."""
    with private_file(task_file(task, "output")) as fh:
        writer = csv.writer(fh)
        writer.writerow(task["columns"])
        writer.writerows(array.tolist())


def write_report(task: dict, tags: dict[str, float]) -> None:
    with private_file(task_file(task, "report")) as fh:
        json.dump({"tags": {k: float(v) for k, v in tags.items()}}, fh)


def bounded_rows(estimate: float, task: dict) -> int:
    """A row count (the library's own DP estimate) clipped to the task's public bounds."""
    low, high = int(task["rows"]["min"]), int(task["rows"]["max"])
    if not math.isfinite(estimate):
        return low
    return int(min(max(round(estimate), low), high))


def split_epsilon(epsilon: float, share: float) -> tuple[float, float]:
    """(epsilon for the synthesizer, epsilon for the row count): ``share`` of ``epsilon`` for
    the count, the rest for the synthesizer; they add up to ``epsilon`` (basic composition)."""
    if not 0 < share < 1:
        raise ValueError(f"row_count_share must be between 0 and 1 (got {share!r})")
    count = epsilon * share
    return epsilon - count, count


def laplace_row_count(records: int, epsilon: float) -> int:
    """``records`` plus OpenDP's discrete Laplace noise calibrated to epsilon-DP at
    sensitivity 1 (one record added or removed)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    scale = (1 / epsilon) * (1 + 1e-9)  # a hair wider: the map must not exceed epsilon
    measurement = dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)
    if not measurement.map(1) <= epsilon:
        raise ValueError("the row count's noise does not fit its budget")
    return int(measurement(int(records)))


#: How the mbi-based adapters draw records from the library's fitted model (task option
#: ``sampling``): ``sample`` (default) draws i.i.d. records, as dp-arena's own mbi mechanisms
#: do; ``round`` is the libraries' own default (mbi 1.1's randomized rounding), which in mbi
#: 1.1.0 makes records that share a parent value draw their next column in row order, so
#: columns sampled from the same parents come out strongly correlated (mbi 2.0 shuffles
#: within each parent group); kept to show what the library gives by default.
SAMPLING = ("sample", "round")


def sampling_option(options: dict) -> str:
    """Pop the ``sampling`` option (see :data:`SAMPLING`) from ``options``."""
    method = options.pop("sampling", "sample")
    if method not in SAMPLING:
        raise ValueError(f"option sampling must be one of {list(SAMPLING)}")
    return method


def innermost_line(message: str) -> str:
    """The last line of a (possibly nested) library message that says something, unwrapped
    from ``Variant("...")`` (OpenDP nests the original error inside FFI traces)."""
    import re

    lines = [ln.strip() for ln in message.splitlines() if ln.strip(" \t\"')(")]
    last = lines[-1] if lines else ""
    match = re.fullmatch(r'[A-Za-z]+\("(.*)"\)?', last)
    return match.group(1) if match else last


def main(run, public_errors: tuple[type, ...] = ()) -> None:
    """Run ``run(task)`` for the folder in ``sys.argv[1]``; on an exception write one line to
    ``failure.txt``: the exception's type, plus its first line when it is one of
    ``public_errors`` (library errors known not to quote data, e.g. a budget check), and exit
    1. The traceback goes to stderr, which the harness shows only with ``DP_ARENA_DEBUG=1``."""
    task = load_task(sys.argv[1])
    try:
        run(task)
    except BaseException as exc:  # noqa: BLE001 - reported through the protocol
        traceback.print_exc()
        reason = type(exc).__name__
        if isinstance(exc, public_errors):
            reason = f"{reason}: {innermost_line(str(exc))[:200]}"
        with private_file(task_file(task, "failure")) as fh:
            fh.write(reason + "\n")
        sys.exit(1)
