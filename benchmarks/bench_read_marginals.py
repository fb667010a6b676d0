"""Benchmark: reading the measured marginals from a calibrated junction tree, one direct sum per
measured clique (the definition, and the estimator before 2026-11-28) against
``dp_arena.mechanisms.pgm.mirror_descent.read_marginals`` (one node's readers share their passes,
``shared_sums``); not a test.

    python benchmarks/bench_read_marginals.py [--attrs 34] [--cells 2e6] [--repeats 15]
        [--seed 0]

The model is shaped like a late full-``aim`` round on a wide table: ``--attrs`` attributes of
2-12 values (seeded), random 3-way cliques of at most 10,000 cells added while the junction
tree stays under ``--cells`` cells (AIM's size cap plays that part), the 1-way marginals of
every attribute measured too, beliefs calibrated from random potentials. Every mirror-descent
step reads these marginals once and calibrates the tree once, so the printed calibration time
is the scale the reading is part of. Prints the tree, the readers, the seconds of each
(min and median of interleaved repeats), the ratio shared / direct and the largest relative
difference between the two (sums in another order).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dp_arena.mechanisms.pgm.mirror_descent import JunctionTree, _Reader, marginal_plan, read_marginals


def wide_model(n_attrs: int, max_cells: float, rng: np.random.Generator
               ) -> tuple[dict[str, int], list[tuple[str, ...]], JunctionTree]:
    """A domain and the 3-way cliques a size-capped greedy selection would measure."""
    domain = {f"x{i}": int(rng.integers(2, 13)) for i in range(n_attrs)}
    attrs = list(domain)
    cliques: list[tuple[str, ...]] = []
    tree = JunctionTree(domain, tuple((a,) for a in attrs))
    for _ in range(40 * n_attrs):
        cl = tuple(rng.choice(attrs, 3, replace=False))
        if math.prod(domain[a] for a in cl) > 10_000:
            continue
        trial = JunctionTree(domain, tuple(cliques + [cl] + [(a,) for a in attrs
                                                              if not any(a in c for c in
                                                                         cliques + [cl])]))
        if sum(math.prod(trial.shape[n]) for n in trial.nodes) <= max_cells:
            cliques.append(cl)
            tree = trial
    return domain, cliques, tree


def readers_of(tree: JunctionTree, domain: dict[str, int], cliques: list[tuple[str, ...]]
               ) -> list[_Reader]:
    out = []
    for cl in cliques:
        node = tree.host(cl)
        kept = [a for a in node if a in cl]
        out.append(_Reader(cl, node, tuple(kept), [kept.index(a) for a in cl],
                           tuple(domain[a] for a in cl), cl, [], ()))
    return out


def direct(readers: list[_Reader], plan: list, beliefs: dict) -> list[np.ndarray]:
    """One sum over its node per reader of no larger clique, the rest from the smallest larger
    one (the estimator's plan before ``shared_sums``)."""
    tables: dict[int, np.ndarray] = {}
    for i in sorted(range(len(readers)), key=lambda i: -len(readers[i].clique)):
        r = readers[i]
        if plan[i] is None:
            axes = tuple(k for k, a in enumerate(r.node) if a not in r.clique)
            table = beliefs[r.node]
            table = np.transpose(table.sum(axis=axes) if axes else table, r.perm)
        else:
            j, axes, perm = plan[i]
            table = np.transpose(tables[j].sum(axis=axes), perm)
        tables[i] = np.ascontiguousarray(table)
    return [tables[i].ravel() for i in range(len(readers))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attrs", type=int, default=34)
    parser.add_argument("--cells", type=float, default=2e6)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    domain, cliques, tree = wide_model(args.attrs, args.cells, rng)
    measured = cliques + [(a,) for a in domain]
    readers = readers_of(tree, domain, measured)
    plan = marginal_plan(measured, domain)
    potentials = {n: rng.normal(size=tree.shape[n]) for n in tree.nodes}
    beliefs = tree.calibrate(potentials, 10_000.0)
    from_node = sum(p is None for p in plan)
    print(f"{args.attrs} attributes, {len(cliques)} 3-way cliques; junction tree "
          f"{len(tree.nodes)} nodes, {sum(math.prod(tree.shape[n]) for n in tree.nodes):,} "
          f"cells; {len(readers)} readers, {from_node} read from a node", flush=True)
    seconds: dict[str, list[float]] = {"direct": [], "shared": [], "calibrate": []}
    for _ in range(args.repeats):
        for label, run in (("direct", lambda: direct(readers, plan, beliefs)),
                           ("shared", lambda: read_marginals(readers, plan, beliefs)),
                           ("calibrate", lambda: tree.calibrate(potentials, 10_000.0))):
            start = time.perf_counter()
            run()
            seconds[label].append(time.perf_counter() - start)
    for label, s in seconds.items():
        print(f"  {label:9s}: min {1e3 * min(s):7.1f} ms, median {1e3 * np.median(s):7.1f} ms")
    a, b = direct(readers, plan, beliefs), read_marginals(readers, plan, beliefs)
    diff = max(float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-300))) for x, y in zip(a, b))
    print(f"  shared / direct: min {min(seconds['shared']) / min(seconds['direct']):.3f}, "
          f"median {np.median(seconds['shared']) / np.median(seconds['direct']):.3f}; "
          f"largest relative difference {diff:.1e}")


if __name__ == "__main__":
    main()
