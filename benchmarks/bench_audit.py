"""Benchmark: privacy audits of every DP mechanism of the project (not a test).

    .venv/bin/python benchmarks/bench_audit.py [--seconds 45] [--eps 1 4] [--only mst aim]
        [--max-runs 20000] [--jobs 2] [--runs N] [--privacy pure|sprint3]
        [--view synthetic|releases] [--neighbours canary|worst_case] [--uncapped]

**The release view with worst-case neighbours** (the tightness figures):

    .venv/bin/python benchmarks/bench_audit.py --view releases --neighbours worst_case

audits each DP mechanism (:data:`RELEASE_SETUPS`; ``independent`` twice, with Gaussian and
with Laplace noise) at each epsilon and prints, per audit, the claim against what was measured
and their ratio: for a Gaussian claim (mu-GDP) the **mu-GDP estimate** of the Gaussian releases
against their claimed mu (a point estimate, printed with its standard error; the figure to
reach is 0.8), for a pure-DP claim the **strict lower bound** on epsilon against epsilon (the
figure to reach is 0.5). The runs per world are what the figure needs (:func:`needed_runs`),
capped so the audit fits ``--seconds`` (default 900: 15 minutes) on ``--jobs`` idle cores at
the CPU seconds per run measured before it (CPU, not wall seconds: on a machine shared with
other work the wall time says little); ``--uncapped`` runs what is needed however long it
takes. Each row also gives the wall time, the CPU time of the audit's processes (on 2 idle
cores the wall time is about half of it) and the runs per second the figure needs to fit in
15 minutes on 2 cores.

**The black-box view** (default ``--view synthetic``): for each DP mechanism on a dataset it
applies to (small versions, so slow mechanisms get more than a handful of runs), times two
in-process runs, sets ``audit.runs`` so both worlds fit in about ``--seconds`` with ``--jobs``
workers (at least 10, at most ``--max-runs`` per world), runs ``dp-arena-audit``'s driver
(:func:`dp_arena.audit.driver.run_audit`, default canary ``rare_cell`` and statistic
``canary_cells``) at each epsilon, and prints runs per second (both worlds, wall clock,
isolation and caching included), the lower bound L, tightness L/E and the mu-GDP lower bound.
A lower bound far below epsilon is expected for a black-box audit with few runs: it says how
much privacy loss this statistic *demonstrates*, not what the mechanism's epsilon is. The
audit's power check (independent on titanic at epsilon 1 should reach L >= 0.3):
``--only independent --eps 1 --privacy pure --runs 60000`` (about 7 minutes on 2 cores).

Audits go to a throw-away MLflow store and cache.
"""

from __future__ import annotations

import argparse
import math
import resource
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.data.datasets import PROJECT_ROOT

#: mechanism -> (dataset overrides, privacy group): each on data it applies to.
SETUPS: dict[str, tuple[tuple[str, ...], str]] = {
    "independent": (("dataset=titanic",), "sprint3"),
    "mst": (("dataset=titanic",), "sprint3"),
    "aim": (("dataset=titanic", "mechanism.rounds=8", "mechanism.iters=50",
             "mechanism.final_iters=100"), "sprint3"),
    "rdt": (("dataset=adult", "dataset.max_rows=4000", "dataset.public_fraction=0.5"), "pure"),
    "prefix_tree": (("dataset=msnbc", "dataset.max_rows=5000"), "pure"),
    "archetype": (("dataset=taxi_sim", "dataset.n_private=5000", "dataset.n_public=5000"),
                  "sprint3"),
    "adaptive_grid": (("dataset=taxi_sim", "dataset.n_private=5000", "dataset.n_public=5000"),
                      "sprint3"),
}


@dataclass(frozen=True)
class ReleaseSetup:
    """One row of the release-view table: the mechanism, the data and privacy it runs with,
    the pair's settings and, for a pure-DP claim, the runs per world its figure needs at
    epsilon 1 and 4."""

    mechanism: str
    overrides: tuple[str, ...]
    privacy: str
    audit: tuple[str, ...] = ()
    pure_runs: tuple[int, int] | None = None


#: The release view's rows. Pure-DP runs per world: what a simulation of the audit's own test
#: (exact likelihood ratio of k Laplace releases, each moved by its full sensitivity;
#: symmetrized runs, threshold chosen on a quarter, 95%) needs for a strict bound of about
#: 0.55-0.65 of epsilon on average: the bound of a composition of k releases reaches its claim
#: only when all k fall on the far side (probability 2^-k), so k sets the runs.
RELEASE_SETUPS: dict[str, ReleaseSetup] = {
    "independent": ReleaseSetup("independent", ("dataset=titanic",), "sprint3"),
    # 9 one-way marginals, each at epsilon / 9
    "independent (pure)": ReleaseSetup("independent", ("dataset=titanic",), "pure",
                                       pure_runs=(30000, 10000)),
    # 2 private attributes x 3 trees: 6 releases (each tree's leaf counts, one cell moved)
    "rdt": ReleaseSetup("rdt", SETUPS["rdt"][0], "pure", pure_runs=(15000, 5000)),
    # the path of one sequence of 6 or more sites through 6 levels, each with a generalized
    # and a specific release: 12 releases; D = 200 copies of the sequence, so every node on
    # its path is kept (the thresholds are at most 41 at epsilon 1)
    "prefix_tree": ReleaseSetup("prefix_tree", ("dataset=msnbc", "dataset.max_rows=5000"),
                                "pure", ("audit.worst_case_persons=200",
                                         "audit.worst_case_extra=same"),
                                pure_runs=(60000, 20000)),
    "archetype": ReleaseSetup("archetype", SETUPS["archetype"][0], "sprint3"),
    "adaptive_grid": ReleaseSetup("adaptive_grid", SETUPS["adaptive_grid"][0], "sprint3"),
    "mst": ReleaseSetup("mst", ("dataset=titanic",), "sprint3"),
    "aim": ReleaseSetup("aim", SETUPS["aim"][0], "sprint3"),
}
#: Size audits by CPU seconds per run (the release view: what fits in 15 minutes on 2 *idle*
#: cores, whatever else the machine is doing) instead of wall seconds.
CPU_CLOCK = False
#: Runs per world at least, whatever the claim.
MIN_RUNS = 500
#: Wall-clock target of one audit on 2 cores.
TARGET_SECONDS = 900


def needed_runs(setup: ReleaseSetup, epsilon: float, mu_claimed: float) -> int:
    """Runs per world the figure needs. Gaussian claim: the mu estimate's standard error is
    about ``sqrt(2 / n)``, so ``n = 200 / mu^2`` puts two standard errors within 0.2 mu (an
    estimate of 0.8 of the claim or more, with about 98% probability, for a mechanism exactly
    at its claim). Pure DP: :data:`RELEASE_SETUPS`' simulated figures."""
    if setup.pure_runs is not None:
        return setup.pure_runs[0] if epsilon <= 1 else setup.pure_runs[1]
    return max(MIN_RUNS, math.ceil(200.0 / mu_claimed**2))


def audit_config(mechanism: str, epsilon: float, runs: int, workdir: Path,
                 jobs: int, privacy: str | None = None, view: str = "synthetic",
                 neighbours: str = "canary", data: tuple[str, ...] | None = None,
                 extra: tuple[str, ...] = ()) -> dict:
    data = SETUPS[mechanism][0] if data is None else data
    privacy = privacy or SETUPS[mechanism][1]
    overrides = [*data, f"privacy={privacy}", f"mechanism={mechanism}",
                 f"privacy.epsilon={epsilon}", f"audit.runs={runs}", f"audit.jobs={jobs}",
                 f"audit.view={view}", f"audit.neighbours={neighbours}",
                 f"audit.cache_dir={workdir / 'cache'}",
                 f"tracking.uri=sqlite:///{workdir / 'mlflow.db'}", *extra]
    if privacy == "pure":
        overrides.append("privacy.delta=0")
    with initialize_config_dir(str(PROJECT_ROOT / "dp_arena" / "conf"), version_base="1.3"):
        cfg = compose("audit", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def probe(cfg: dict) -> tuple[float, float]:
    """Seconds per audit run (on D, after one warm-up; the release view's runs include the
    replay) and the claimed mu (release view; nan otherwise), in an isolated child: a
    mechanism that starts threads (JAX, for mst/aim/adaptive_grid) must not run in this
    process, which later forks the audit's workers."""
    from dp_arena.run.isolation import call_isolated
    from dp_arena.run.settings import Limits

    value, _report = call_isolated(lambda: _probe(cfg), Limits(threads=1))
    return value


def _probe(cfg: dict) -> tuple[float, float]:
    from dp_arena.audit.driver import claimed_mu, run_config_part
    from dp_arena.audit.neighbours import neighbouring_pair
    from dp_arena.audit.releases import release_features
    from dp_arena.audit.runs import audit_run
    from dp_arena.data.datasets import load_dataset
    from dp_arena.run.config import build_components, parse_run_config

    rc = parse_run_config(run_config_part(cfg))
    mechanism, _ = build_components(rc)
    audit = cfg["audit"]
    pair = neighbouring_pair(load_dataset(rc.dataset), audit["neighbours"], "rare_cell",
                             audit["worst_case_persons"], audit["worst_case_extra"])
    releases = audit["view"] == "releases"

    def once() -> None:
        if releases:
            release_features(mechanism, pair.without, pair.with_person, rc, False)
        else:
            audit_run(mechanism, pair.without, rc, pair.person.codes, "canary_cells")

    once()
    start = time.perf_counter() if not CPU_CLOCK else time.process_time()
    for _ in range(2):
        once()
    spent = (time.perf_counter() if not CPU_CLOCK else time.process_time()) - start
    mu = claimed_mu(mechanism, pair.without, rc)[0] if releases else math.nan
    return spent / 2, mu


def seconds_per_run(cfg: dict) -> float:
    return probe(cfg)[0]


def sized_runs(probe_cfg: dict, args: argparse.Namespace) -> int:
    """Runs per world so both worlds take about ``--seconds`` with ``--jobs`` workers."""
    per_run = seconds_per_run(probe_cfg)
    return int(min(args.max_runs, max(10, args.seconds * args.jobs / per_run / 2)))


def cpu_seconds() -> float:
    """CPU seconds of this process's finished children (the audit's workers and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def release_rows(args: argparse.Namespace, tmp: Path) -> None:
    """The release view with worst-case neighbours: claim vs measured for every mechanism."""
    from dp_arena.audit.driver import run_audit

    global CPU_CLOCK
    CPU_CLOCK = True
    names = args.only or list(RELEASE_SETUPS)
    rows = []
    for name in names:
        setup = RELEASE_SETUPS[name]
        for eps in args.eps:
            def config(runs: int) -> dict:
                folder = "".join(c if c.isalnum() else "_" for c in f"{name}-{eps:g}")
                return audit_config(setup.mechanism, eps, runs, tmp / folder,
                                    args.jobs, setup.privacy, "releases", "worst_case",
                                    setup.overrides, setup.audit)
            per_run, mu = probe(config(10))
            needed = needed_runs(setup, eps, mu)
            fits = int((args.seconds or TARGET_SECONDS) * args.jobs / per_run / 2 * 0.9)
            runs = args.runs or (needed if args.uncapped else max(10, min(needed, fits)))
            cpu0, start = cpu_seconds(), time.perf_counter()
            result = run_audit(config(runs), None, echo=lambda _line: None)
            wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
            gaussian = result.mu_claimed > 0 and setup.pure_runs is None
            if gaussian:
                claim, measured = f"mu {result.mu_claimed:.3f}", \
                    f"{result.mu_estimate:.3f} +- {result.mu_se:.3f} (estimate)"
                ratio, figure = result.mu_estimate / result.mu_claimed, 0.8
            else:
                claim, measured = f"eps {eps:g}", f"{result.bound.eps_lb:.3f} (strict, 95%)"
                ratio, figure = result.bound.eps_lb / eps, 0.5
            done = 2 * runs - result.dropped
            row = (name, setup.privacy, eps, claim, measured, ratio, figure, runs, needed,
                   wall, cpu, done / wall, 2 * needed / TARGET_SECONDS, result.dropped,
                   result.verdict)
            rows.append(row)
            print(f"{name:20s} eps={eps:g} claim {claim}  measured {measured}  ratio "
                  f"{ratio:.2f} (figure {figure})  runs/world {runs} (needed {needed})  "
                  f"{wall:.0f} s wall, {cpu:.0f} s CPU  {done / wall:.2f} runs/s (needed "
                  f"{2 * needed / TARGET_SECONDS:.1f})  dropped {result.dropped}  "
                  f"{result.verdict}", flush=True)
    print("\nview releases, neighbours worst_case\n")
    print("| mechanism | privacy | epsilon | claimed | measured | ratio | figure | runs/world "
          "(needed) | wall s | CPU s | runs/s | runs/s needed for 15 min | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]} | "
              f"{r[7]} ({r[8]}) | {r[9]:.0f} | {r[10]:.0f} | {r[11]:.2f} | {r[12]:.1f} | "
              f"{r[14]} |")


def synthetic_rows(args: argparse.Namespace, tmp: Path) -> None:
    from dp_arena.audit.driver import run_audit

    where = dict(view=args.view, neighbours=args.neighbours)
    names = args.only or list(SETUPS)
    rows = []
    seconds = args.seconds or 45.0
    args.seconds = seconds
    for name in names:
        for eps in args.eps:
            runs = args.runs or sized_runs(audit_config(name, eps, 10, tmp, args.jobs,
                                                        args.privacy, **where), args)
            cfg = audit_config(name, eps, runs, tmp, args.jobs, args.privacy, **where)
            start = time.perf_counter()
            result = run_audit(cfg, None, echo=lambda _line: None)
            wall = time.perf_counter() - start
            data = " ".join(SETUPS[name][0]) + f" privacy={args.privacy or SETUPS[name][1]}"
            rows.append((name, data, eps, runs, 2 * runs / wall, result.bound.eps_lb,
                         result.bound.eps_lb / eps, result.bound.mu_lb, wall, result.verdict))
            print(f"{name:14s} eps={eps:g} runs/world={runs:6d} {2 * runs / wall:8.3f} "
                  f"runs/s  L={result.bound.eps_lb:.3f}  L/E={result.bound.eps_lb / eps:.3f}"
                  f"  mu_lb={result.bound.mu_lb:.3f}  {wall:.0f}s  {result.verdict}",
                  flush=True)
    print(f"\nview {args.view}, neighbours {args.neighbours}\n")
    print("| mechanism | data | epsilon | runs/world | runs/s | L | L/E | mu_lb | seconds | "
          "verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} | {r[6]:.3f} "
              f"| {r[7]:.3f} | {r[8]:.0f} | {r[9]} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=None,
                        help="target per audit (synthetic view: default 45; release view: "
                        "900)")
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--max-runs", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per world for every audit (instead of sizing)")
    parser.add_argument("--privacy", choices=("pure", "sprint3"), default=None,
                        help="synthetic view: privacy group for every audit (default: each "
                        "setup's)")
    parser.add_argument("--view", choices=("synthetic", "releases"), default="synthetic")
    parser.add_argument("--neighbours", choices=("canary", "worst_case"), default="canary")
    parser.add_argument("--uncapped", action="store_true",
                        help="release view: run the runs the figure needs, however long")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        if args.view == "releases" and args.neighbours == "worst_case":
            release_rows(args, Path(tmp))
        else:
            synthetic_rows(args, Path(tmp))


if __name__ == "__main__":
    main()
