"""Benchmark: the default competition's wall time (not a test).

    python benchmarks/bench_default_competition.py [--repeat 2] [OVERRIDE ...]

Runs ``dp-arena`` (``python -m dp_arena.cli``) with the given overrides (none: the default
competition, 60 runs) in a new empty folder each time, as the quickstart's first command does
after installing, and prints per repetition: the command's wall seconds (planning, the sweep,
the board, a fresh MLflow store included) and the sweep's own span, from the first run's start
to the last run's end as the sweep folder's records say (``started.json`` / ``outcome.json``).
The goal: the 60 runs in at most 3 minutes on 2 idle cores.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import subprocess
import sys
import tempfile
import time

from dp_arena.sweep.records import read_outcomes, read_started


def sweep_span(folder: str) -> tuple[float, int]:
    """(seconds from the first run's start to the last run's end, runs that ran)."""
    sweep = sorted(glob.glob(f"{folder}/multirun/*/*/"))[-1]
    starts = {s.index: s.started for s in read_started(sweep)}
    ran = [o for _, o in read_outcomes(sweep) if o.ran and o.index in starts]
    ends = [starts[o.index] + o.elapsed for o in ran]
    return max(ends) - min(starts[o.index] for o in ran), len(ran)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("overrides", nargs="*", help="dp-arena overrides (default: none)")
    args = parser.parse_args(argv)
    walls, spans = [], []
    for k in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="dp-arena-bench-") as folder:
            started = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "dp_arena.cli", *args.overrides],
                                  cwd=folder, capture_output=True, text=True)
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                sys.exit(f"dp-arena exited {proc.returncode}:\n{proc.stderr[-2000:]}")
            span, runs = sweep_span(folder)
        walls.append(wall)
        spans.append(span)
        print(f"repetition {k + 1}: dp-arena {wall:6.1f} s, sweep {span:6.1f} s ({runs} runs)",
              flush=True)
    print(f"median: dp-arena {statistics.median(walls):.1f} s, sweep {statistics.median(spans):.1f} s"
          f" (goal for the default competition: sweep <= 180 s)")


if __name__ == "__main__":
    main()
