"""Benchmark: privacy audits of every DP mechanism of the project (not a test).

    .venv/bin/python benchmarks/bench_audit.py [--seconds 45] [--eps 1 4] [--only mst aim]
        [--max-runs 20000] [--jobs 2] [--runs N] [--privacy pure|sprint3]
        [--view synthetic|releases] [--neighbours canary|worst_case]

The release view with worst-case neighbours (issue 24's tightness figures):
``--view releases --neighbours worst_case --max-runs 20000 --seconds 600`` prints, besides
L and L/E, the mu-GDP estimate against the claimed mu of the ledger's Gaussian releases.

The audit's power check (independent on titanic at epsilon 1 should reach L >= 0.3):
``--only independent --eps 1 --privacy pure --runs 60000`` (about 7 minutes on 2 cores).

For each DP mechanism on a dataset it applies to (small versions, so slow mechanisms get more
than a handful of runs), times two in-process runs, sets ``audit.runs`` so both worlds fit in
about ``--seconds`` with ``--jobs`` workers (at least 10, at most ``--max-runs`` per world),
runs ``dp-arena-audit``'s driver (:func:`harness.audit.driver.run_audit`, default canary
``rare_cell`` and statistic ``canary_cells``) at each epsilon, and prints runs per second
(both worlds, wall clock, isolation and caching included), the lower bound L, tightness L/E
and the mu-GDP lower bound. Audits go to a throw-away MLflow store and cache. A lower bound
far below epsilon is expected for a black-box audit with few runs: it says how much privacy
loss this statistic *demonstrates*, not what the mechanism's epsilon is.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import harness.cli.schemas  # noqa: F401 - the config files start from the registered schemas
from harness.data.datasets import PROJECT_ROOT

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


def audit_config(mechanism: str, epsilon: float, runs: int, workdir: Path,
                 jobs: int, privacy: str | None = None, view: str = "synthetic",
                 neighbours: str = "canary") -> dict:
    data, shipped = SETUPS[mechanism]
    privacy = privacy or shipped
    overrides = [*data, f"privacy={privacy}", f"mechanism={mechanism}",
                 f"privacy.epsilon={epsilon}", f"audit.runs={runs}", f"audit.jobs={jobs}",
                 f"audit.view={view}", f"audit.neighbours={neighbours}",
                 f"audit.cache_dir={workdir / 'cache'}",
                 f"tracking.uri=sqlite:///{workdir / 'mlflow.db'}"]
    if privacy == "pure":
        overrides.append("privacy.delta=0")
    with initialize_config_dir(str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose("audit", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def seconds_per_run(cfg: dict) -> float:
    """Two runs on D (after one warm-up) to size the audit, in an isolated child: a mechanism
    that starts threads (JAX, for mst/aim/adaptive_grid) must not run in this process, which
    later forks the audit's workers."""
    from harness.run.isolation import call_isolated
    from harness.run.settings import Limits

    value, _report = call_isolated(lambda: _seconds_per_run(cfg), Limits(threads=1))
    return value


def _seconds_per_run(cfg: dict) -> float:
    from harness.audit.driver import run_config_part
    from harness.audit.neighbours import neighbouring_pair
    from harness.audit.releases import release_features
    from harness.audit.runs import audit_run
    from harness.data.datasets import load_dataset
    from harness.run.runner import build_components, parse_run_config

    rc = parse_run_config(run_config_part(cfg))
    mechanism, _ = build_components(rc)
    audit = cfg["audit"]
    pair = neighbouring_pair(load_dataset(rc.dataset), audit["neighbours"], "rare_cell")

    def once() -> None:
        if audit["view"] == "releases":
            release_features(mechanism, pair.without, pair.with_person, rc, False)
        else:
            audit_run(mechanism, pair.without, rc, pair.person.codes, "canary_cells")

    once()
    start = time.perf_counter()
    for _ in range(2):
        once()
    return (time.perf_counter() - start) / 2


def sized_runs(probe: dict, args: argparse.Namespace) -> int:
    """Runs per world so both worlds take about ``--seconds`` with ``--jobs`` workers."""
    per_run = seconds_per_run(probe)
    return int(min(args.max_runs, max(10, args.seconds * args.jobs / per_run / 2)))


def main(argv: list[str] | None = None) -> None:
    from harness.audit.driver import run_audit

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=45.0, help="target per audit")
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--max-runs", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per world for every audit (instead of sizing by --seconds)")
    parser.add_argument("--privacy", choices=("pure", "sprint3"), default=None,
                        help="privacy group for every audit (default: each setup's)")
    parser.add_argument("--view", choices=("synthetic", "releases"), default="synthetic")
    parser.add_argument("--neighbours", choices=("canary", "worst_case"), default="canary")
    args = parser.parse_args(argv)
    where = dict(view=args.view, neighbours=args.neighbours)
    names = args.only or list(SETUPS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        for name in names:
            for eps in args.eps:
                runs = args.runs or sized_runs(audit_config(name, eps, 10, Path(tmp), args.jobs,
                                                            args.privacy, **where), args)
                cfg = audit_config(name, eps, runs, Path(tmp), args.jobs, args.privacy, **where)
                start = time.perf_counter()
                result = run_audit(cfg, None, echo=lambda _line: None)
                wall = time.perf_counter() - start
                data = " ".join(SETUPS[name][0]) + f" privacy={args.privacy or SETUPS[name][1]}"
                mu = (f"{result.mu_estimate:.3f} / {result.mu_claimed:.3f} = "
                      f"{result.mu_estimate / result.mu_claimed:.2f}"
                      if result.mu_claimed > 0 else "-")
                rows.append((name, data, eps, runs, 2 * runs / wall, result.bound.eps_lb,
                             result.bound.eps_lb / eps, result.bound.mu_lb, mu, wall,
                             result.verdict))
                print(f"{name:14s} eps={eps:g} runs/world={runs:6d} {2 * runs / wall:8.3f} "
                      f"runs/s  L={result.bound.eps_lb:.3f}  L/E={result.bound.eps_lb / eps:.3f}"
                      f"  mu_lb={result.bound.mu_lb:.3f}  mu est/claim={mu}  {wall:.0f}s  "
                      f"{result.verdict}", flush=True)
    print(f"\nview {args.view}, neighbours {args.neighbours}\n")
    print("| mechanism | data | epsilon | runs/world | runs/s | L | L/E | mu_lb | mu estimate / "
          "claimed | seconds | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:g} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} | {r[6]:.3f} "
              f"| {r[7]:.3f} | {r[8]} | {r[9]:.0f} | {r[10]} |")


if __name__ == "__main__":
    main()
