"""Benchmark: the progress ETA replayed on a finished sweep (its criterion: never below the time left after the first 10 runs).

    python benchmarks/eta_replay.py FOLDER   # a folder holding multirun/<date>/<time>/

At every moment a run finished (after the 10th), the ETA that :mod:`dp_arena.sweep.progress`
computes from the runs' start times and wall times (read from the sweep's started/outcome
files) against the time the sweep really had left; prints the lowest and highest ratio (the
goal: never below 0.5).
"""
import glob
import sys

from dp_arena.sweep.progress import RunState, eta_seconds, run_group
from dp_arena.sweep.records import read_plan, read_outcomes, read_started
d = sorted(glob.glob(sys.argv[1] + "/multirun/*/*/"))[-1]
plan = read_plan(d)
starts = {s.index: s.started for s in read_started(d)}
elapsed = {o.index: o.elapsed for _, o in read_outcomes(d) if o.ran}
jobs = [j for j in plan.of("run")]
ends = sorted(starts[j.index] + elapsed[j.index] for j in jobs)
end = max(ends)
def states(t):
    out = []
    for j in jobs:
        s, e = starts[j.index], starts[j.index] + elapsed[j.index]
        st = "done" if e <= t else "running" if s <= t else "pending"
        sec = elapsed[j.index] if st == "done" else max(t - s, 0.0) if st == "running" else 0.0
        out.append(RunState(j.mechanism, st, sec, j.label, run_group(j.label)))
    return out
rows = []
for k, t in enumerate(ends[:-1], start=1):
    if k >= 10:
        eta = eta_seconds(states(t + 1e-6), plan.workers or 2)
        rows.append((eta / (end - t), k, round(eta), round(end - t)))
print("lowest ETA/remaining after 10 runs: %.2f at run %d (ETA %ds, %ds left)" % min(rows))
print("highest: %.2f at run %d (ETA %ds, %ds left)" % max(rows))
