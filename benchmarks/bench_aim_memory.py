"""Benchmark: the peak memory of estimating a model and reading its marginals, as a multiple
of the junction tree's size (the factor behind ``dp_arena.mechanisms.pgm.aim.MODEL_COPIES``, which
``dp-arena`` checks AIM's caps against ``limits.memory_limit_mb`` with); not a test.

    python benchmarks/bench_aim_memory.py [--sizes 30x8 40x9]

Each size ``WxN`` is N attributes of W values measured as overlapping 4-way cliques (a chain:
the junction tree is the cliques), as an AIM round does it: all but the last clique fitted by
``dp_arena.mechanisms.pgm.estimate`` for 60 iterations and every clique's marginal read as AIM's
scoring does; then the last clique added and the model refitted for 60 iterations, warm
started as ``dp_arena.mechanisms.pgm.aim`` does (the old beliefs freed first), and every marginal read
again. Each case runs in a fresh child process; prints the tree's size, the measurements'
size and the peak resident memory above the child's memory before the fits, and their ratio.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource


def one(width: int, n_attrs: int, queue) -> None:
    import numpy as np

    from dp_arena.mechanisms import pgm

    domain = {f"a{i}": width for i in range(n_attrs)}
    attrs = list(domain)
    cliques = [tuple(attrs[i:i + 4]) for i in range(n_attrs - 3)]
    rng = np.random.default_rng(0)
    measured = [pgm.Measurement((a,), rng.random(width) * 100, 1.0) for a in attrs]
    measured += [pgm.Measurement(cl, rng.random(width ** 4) * 100 / width ** 3, 1.0)
                 for cl in cliques]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    model = pgm.estimate(domain, measured[:-1], 60, 100.0 * width, tol=None)
    tree = pgm.TreeMarginals(model)
    for cl in cliques:
        tree.marginal(cl, keep=False)
    warm = model.warm_start()
    del model, tree  # as AIM does before a round's refit
    model = pgm.estimate(domain, measured, 60, 100.0 * width, tol=None, warm_start=warm)
    tree = pgm.TreeMarginals(model)
    for cl in cliques:
        tree.marginal(cl, keep=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put((pgm.model_size_mb(domain, cliques),
               sum(m.y.nbytes for m in measured) / 2**20, before, peak))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["30x8", "40x9"])
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    print(f"{'size':>6} {'tree MB':>8} {'answers MB':>10} {'RSS before':>10} {'peak':>6} "
          f"{'(peak-before)/tree':>18}")
    for size in args.sizes:
        width, n_attrs = map(int, size.split("x"))
        queue = ctx.Queue()
        proc = ctx.Process(target=one, args=(width, n_attrs, queue))
        proc.start()
        tree, answers, before, peak = queue.get()
        proc.join()
        print(f"{size:>6} {tree:8.1f} {answers:10.1f} {before:10.0f} {peak:6.0f} "
              f"{(peak - before) / tree:18.2f}")


if __name__ == "__main__":
    main()
