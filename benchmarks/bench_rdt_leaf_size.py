"""Benchmark: the Duke report's n_B study (not a test; no data, public settings only).

    .venv/bin/python benchmarks/bench_rdt_leaf_size.py [--width 0.1 0.05] [--p 0.5 0.1]
        [--eps-tree 0.04 0.08] [--confidence 0.95] [--draws 10000]

For each target interval width, leaf share ``p_i0`` and per-tree epsilon (Laplace scale
``lambda = 1 / eps_tree``, sensitivity 1), prints the minimum leaf size ``n_B`` from the exact
joint Laplace-binomial distribution (:func:`dp_arena.mechanisms.rdt.leaf_size.min_leaf_size`), the
exact interval there, the 10,000-draw simulation check of it, the normal approximation's
width at that ``n_B`` and the ``n_B`` the normal approximation would have chosen.

The default ``eps_tree`` values are this project's Adult runs: total epsilon 0.4 or 0.8, two
private attributes (equal shares), m = 5 trees: ``0.4 / 2 / 5 = 0.04``.
"""

from __future__ import annotations

import argparse
import math

from scipy import stats

from dp_arena.mechanisms.rdt.leaf_size import leaf_size_study


def normal_min_n(width: float, confidence: float, p: float, scale: float) -> int:
    """The smallest n whose normal-approximation width is at most ``width`` (closed form of
    the quadratic in 1/n: (w / 2z)^2 = p (1 - p) / n + 2 scale^2 / n^2)."""
    z = float(stats.norm.isf((1 - confidence) / 2))
    c = (width / (2 * z)) ** 2
    a, b = 2 * scale ** 2, p * (1 - p)
    inv_n = (-b + math.sqrt(b * b + 4 * a * c)) / (2 * a) if a else c / b
    return math.ceil(1 / inv_n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=float, nargs="+", default=[0.1, 0.05])
    parser.add_argument("--p", type=float, nargs="+", default=[0.5, 0.1])
    parser.add_argument("--eps-tree", type=float, nargs="+", default=[0.04, 0.08])
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--draws", type=int, default=10_000)
    args = parser.parse_args()
    print(f"confidence {args.confidence:g}; simulation: {args.draws} draws per row")
    print(f"{'width':>6} {'p_i0':>5} {'eps_t':>6} {'lambda':>7} {'n_B':>7} {'exact interval':>19} "
          f"{'simulated':>19} {'sim w':>7} {'normal w':>8} {'normal n_B':>10}")
    for width in args.width:
        for p in args.p:
            for eps_tree in args.eps_tree:
                scale = 1.0 / eps_tree
                row = leaf_size_study(width, args.confidence, p, scale, args.draws)
                sim_w = row.simulated[1] - row.simulated[0]
                print(f"{width:6.3f} {p:5.2f} {eps_tree:6.3f} {scale:7.2f} {row.n:7d} "
                      f"[{row.exact[0]:.4f}, {row.exact[1]:.4f}] "
                      f"[{row.simulated[0]:.4f}, {row.simulated[1]:.4f}] {sim_w:7.4f} "
                      f"{row.normal_width:8.4f} "
                      f"{normal_min_n(width, args.confidence, p, scale):10d}", flush=True)


if __name__ == "__main__":
    main()
