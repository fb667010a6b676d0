"""The dry run's cost estimate against a suite's measured CPU time, side by side.

    python benchmarks/bench_cost_estimate.py --folder /tmp/cost-bench

1. Populates the folder's store (``./mlflow.db``) with a training sweep (``--populate``;
   skipped when the store already has its runs: resume skips them);
2. prints ``dp-arena --dry-run`` of the suite (``--suite``): its table and its total;
3. runs the suite for real and sums its runs' ``cpu_seconds`` (the runs the suite added to the
   store; CPU time of fit + scoring, which the estimate predicts);
4. prints the estimate, its interval and the measured total side by side, with their ratio,
   and the suite's whole-command CPU (every process the command waited for: imports, data
   loading, MLflow logging; the estimate does not claim these).

Needs the shared data folder (``DP_ARENA_DATA`` or ../shared/data).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from mlflow import MlflowClient

POPULATE = ("mechanism=independent,mst_quick,uniform", "dataset=titanic,nltcs,adult",
            "privacy.epsilon=1,10", "trial=0")
SUITE = ("mechanism=independent,mst_quick,uniform", "dataset=titanic,nltcs,adult,acs",
         "privacy.epsilon=1,10", "trial=1,2")


def dp_arena(folder: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """``dp-arena args`` in ``folder``; its output and the CPU seconds of every process it
    (and they) waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(Path(sys.executable).with_name("dp-arena")), *args], cwd=folder,
                          capture_output=True, text=True, env=os.environ.copy())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, cpu


def run_ids(folder: Path) -> dict[str, tuple[str, str, float]]:
    """Every finished job run of the store: id -> (cost key, dataset, cpu_seconds)."""
    from dp_arena.sweep.cost_history import cost_key

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    out = {}
    for exp in client.search_experiments():
        for run in client.search_runs([exp.experiment_id], max_results=5000):
            tags = run.data.tags
            if tags.get("kind", "run") == "run" and run.info.status == "FINISHED":
                key = cost_key(tags.get("mechanism", ""), tags.get("hyperparameters", ""))
                out[run.info.run_id] = (key, tags.get("dataset", ""),
                                        float(run.data.metrics.get("cpu_seconds", 0.0)))
    return out


def table_of(stdout: str) -> dict[tuple[str, str], tuple[str, float | None]]:
    """The dry run's rows: (cost key, dataset) -> (its CPU text, its mean; None unknown)."""
    lines = stdout.splitlines()
    head = next(i for i, x in enumerate(lines) if x.strip().startswith("mechanism "))
    out = {}
    for line in lines[head + 1:]:
        if line.startswith("total:"):
            break
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 4:
            mean = None if cells[3] == "unknown" else seconds_of(cells[3].split(" (")[0])
            out[(cells[0], cells[1])] = (cells[3], mean)
    return out


def by_group(runs: dict[str, tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for key, dataset, cpu in runs.values():
        out[(key, dataset)] = out.get((key, dataset), 0.0) + cpu
    return out


def seconds_of(text: str) -> float:
    """``1m20s`` / ``12.5s`` / ``1h02m`` -> seconds."""
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text.strip())
    if not found or not any(found.groups()):
        raise ValueError(text)
    h, m, s = (float(g or 0) for g in found.groups())
    return 3600 * h + 60 * m + s


def estimate_of(stdout: str) -> tuple[float, float, float]:
    """The dry run's total: mean, low, high CPU seconds."""
    line = next(x for x in stdout.splitlines() if x.startswith("total:"))
    found = re.search(r"CPU (\S+) \((\S+)-(\S+?)\)", line)
    if not found:
        raise SystemExit(f"no priced total in the dry run: {line}")
    return tuple(seconds_of(g) for g in found.groups())  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path("/tmp/cost-bench"))
    parser.add_argument("--populate", nargs="*", default=list(POPULATE))
    parser.add_argument("--suite", nargs="*", default=list(SUITE))
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    start = time.time()
    done, cpu = dp_arena(args.folder, args.populate)
    print(f"populate: exit {done.returncode}, {len(run_ids(args.folder))} finished runs in the "
          f"store, command CPU {cpu:.0f}s, wall {time.time() - start:.0f}s")
    if done.returncode:
        print(done.stderr[-3000:])
    dry, dry_cpu = dp_arena(args.folder, ["--dry-run", *args.suite])
    print(dry.stdout)
    if dry.returncode:
        raise SystemExit(dry.stderr[-3000:])
    mean, low, high = estimate_of(dry.stdout)
    before = run_ids(args.folder)
    start = time.time()
    ran, suite_cpu = dp_arena(args.folder, args.suite)
    wall = time.time() - start
    after = run_ids(args.folder)
    added = {k: v for k, v in after.items() if k not in before}
    measured = sum(cpu for _, _, cpu in added.values())
    print(f"suite: exit {ran.returncode}, {len(added)} runs added, wall {wall:.0f}s")
    if ran.returncode:
        print(ran.stderr[-3000:])
    print(f"{'mechanism':14}{'dataset':18}{'estimate':>10}{'measured':>10}{'ratio':>7}"
          "   (estimate, 90% interval)")
    groups = by_group(added)
    for (key, dataset), (text, guess) in table_of(dry.stdout).items():
        got = groups.get((key, dataset), 0.0)
        ratio = f"{guess / got:7.2f}" if guess and got else "      -"
        print(f"{key:14}{dataset:18}{(f'{guess:.1f}' if guess else 'unknown'):>10}{got:10.1f}"
              f"{ratio}   {text}")
    print(f"{'':34}{'CPU seconds':>12}")
    print(f"{'dry-run estimate (mean)':34}{mean:12.1f}   90% interval {low:.1f}-{high:.1f}")
    print(f"{'measured: sum of runs cpu_seconds':34}{measured:12.1f}")
    print(f"{'ratio estimate / measured':34}{mean / measured if measured else float('nan'):12.2f}")
    print(f"{'whole suite command CPU':34}{suite_cpu:12.1f}   (imports, data loading, MLflow: "
          "not estimated)")
    print(f"{'dry run command CPU':34}{dry_cpu:12.1f}")


if __name__ == "__main__":
    main()
