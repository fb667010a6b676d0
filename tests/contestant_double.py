"""A test double contestant for the external-mechanism protocol (run by any interpreter with
numpy): noisy 1-way histograms (Laplace, epsilon split evenly over the columns), columns
sampled independently. ``options.mode`` makes it misbehave on purpose:

- ``ok`` (default); ``fail``: exit 3 with a one-line reason; ``crash``: raise without one;
  ``signal``: kill itself with SIGKILL;
- ``sleep``: sleep ``options.seconds`` first (time limits, SIGTERM);
- ``too_many_rows``: one row over the task's cap; ``out_of_domain``: a code past the domain;
- ``options.probe``: print ``PROBE {json}`` on its standard output (shown on stderr with
  ``DP_ARENA_DEBUG=1``: a sandboxed contestant can write nowhere else): the folder's path,
  its mode and its files' modes;
- ``options.env_probe``: print ``ENV_PROBE {json}``: what the double found in its environment
  (every variable's name; the values of ``DP_ARENA_SECRET_FILE`` and ``MLFLOW_TRACKING_URI``
  and of the thread limits; whether it could read the secret file through the variable);
- ``leak``: exit 1 with a failure line that quotes the first private record (what a careless
  library message does), raised as a *public* error so the protocol writes it whole;
- ``options.report``: extra ``report.json`` tags written beside ``rows_written``.

With ``encoding: values`` it writes values drawn uniformly from the schema (never reading the
private table); ``out_of_domain`` then puts a value outside the first column's domain.
"""

import json
import os
import stat
import sys
import time
from pathlib import Path

if len(sys.argv) > 2:  # an explicit protocol folder; else the protocol's PYTHONPATH has it
    sys.path.insert(0, sys.argv[2])
import numpy as np
from protocol import (
    bounded_rows,
    main,
    read_codes,
    task_file,
    write_codes,
    write_report,
)


def run(task: dict) -> None:
    options = task["options"]
    mode = options.get("mode", "ok")
    folder = Path(task["folder"])
    if options.get("env_probe"):
        secret = os.environ.get("DP_ARENA_SECRET_FILE")
        print("ENV_PROBE " + json.dumps({
            "names": sorted(os.environ), "secret_file": secret,
            "secret_readable": bool(secret) and os.access(secret, os.R_OK),
            "tracking_uri": os.environ.get("MLFLOW_TRACKING_URI"),
            "pythonpath": os.environ.get("PYTHONPATH"),
            "threads": {k: v for k, v in os.environ.items() if k.endswith("_THREADS")}}),
            flush=True)
    if options.get("probe"):
        modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir()}
        print("PROBE " + json.dumps({
            "folder": str(folder), "mode": oct(stat.S_IMODE(folder.stat().st_mode)),
            "pid": os.getpid(),
            "files": modes, "tmpdir": os.environ.get("TMPDIR"), "cwd": os.getcwd(),
            "task": {k: v for k, v in task.items() if k != "folder"},
            "schema": json.loads((folder / "schema.json").read_text())}), flush=True)
    if mode == "sleep":
        time.sleep(float(options.get("seconds", 60)))
    if mode == "fail":
        raise ToldToFail("the double was told to fail")
    if mode == "leak":
        first = (folder / task["files"]["private"]).read_text().splitlines()[1]
        fields = first.split(",")
        raise ToldToFail(f"cannot fit record {fields} near {' '.join(fields)} "
                         f"(\"{fields[1]}\")")
    if mode == "crash":
        os._exit(5)
    if mode == "signal":
        os.kill(os.getpid(), 9)
    columns, domain = task["columns"], task["domain"]
    if task["encoding"] == "values":
        return write_values(task, mode, folder)
    private = read_codes(task_file(task, "private"), columns)
    eps = task["budget"]["epsilon"] / len(columns)
    rng = np.random.default_rng()
    n = bounded_rows(len(private) + rng.laplace(0, 1 / eps), task)
    if mode == "too_many_rows":
        n = task["rows"]["max"] + 1
    out = np.empty((n, len(columns)), dtype=np.int64)
    for j, col in enumerate(columns):
        counts = np.bincount(private[:, j], minlength=domain[col]) + \
            rng.laplace(0, 1 / eps, domain[col])
        p = np.clip(counts, 0, None) + 1e-9
        out[:, j] = rng.choice(domain[col], size=n, p=p / p.sum())
    if mode == "out_of_domain":
        out[0, 0] = domain[columns[0]]
    write_codes(task, out)
    write_report(task, {"rows_written": n, **options.get("report", {})})


class ToldToFail(Exception):
    """The double's own failure (its message quotes no data: a public error)."""


def write_values(task: dict, mode: str, folder: Path) -> None:
    import csv

    schema = json.loads((folder / "schema.json").read_text())["schema"]
    rng = np.random.default_rng()
    rows = []
    for _ in range(task["rows"]["min"]):
        row = []
        for col in task["columns"]:
            spec = schema[col]
            row.append(rng.choice(spec["values"]) if "values" in spec
                       else int(rng.integers(spec["min"], spec["max"] + 1)))
        rows.append(row)
    if mode == "out_of_domain":
        rows[0][0] = 99
    with open(folder / task["files"]["output"], "w", newline="") as fh:
        csv.writer(fh).writerows([task["columns"], *rows])


if __name__ == "__main__":
    main(run, public_errors=(ToldToFail,))
