"""Shared by the OpenDP adapters (run inside the ``opendp`` environment: opendp[mbi], polars).

- **keys** from the task's domain for every column (codes ``0..size-1``): OpenDP never
  discovers categories from the data, so it spends nothing on them;
- **budget**: OpenDP's AIM/MST run in zCDP (with keys for every column OpenDP refuses a
  delta). rho is the largest that OpenDP's own conversion (``make_zCDP_to_approxDP`` fixed at
  delta, as its ``Context`` translates losses) turns into at most ``(epsilon, delta)``; the
  query runs in a ``Context`` with privacy unit one row (record-level) and loss rho. Pure DP
  (delta = 0) has no such rho and is refused;
- **dry run** (option ``dry_run``, on for MST): OpenDP's MST can fail its own budget check
  by a few ulps (``insufficient budget for query``, opendp#2789), depending only on rho, the
  number of columns and ``measure_split``. With ``dry_run`` the adapter first runs the
  algorithm on public fake data (uniform codes, 3 per column, 200 rows, the same columns:
  nothing private is read) for rho, then rho (1 - k/1000), k = 1..19, and fits the private
  table once with the first rho that passes (at most the budget; reported as the tag
  ``rho_shaved_permille``). Without it, the failure is the run's one-line reason;
- **rows**: the model's noisy total (what ``ContingencyTable.synthesize()`` uses by default),
  clipped to the task's public bounds, drawn by ``synthesize(rows, method=...)`` with the
  option ``sampling`` (``protocol.SAMPLING``): ``sample`` (default: i.i.d. records, as
  dp-arena's own mbi mechanisms draw them) or ``round`` (OpenDP's default, which inherits mbi
  1.1.0's row-order correlation: on adult at epsilon 1 it costs MST about 85 kmarginal
  points);
- **nulls**: OpenDP appends a null key to every column; a synthetic row holding a null in any
  column has no code in the schema and is dropped, counted in the report tag
  ``null_rows_dropped``.
"""

from __future__ import annotations

import numpy as np
from protocol import (
    bounded_rows,
    read_codes,
    sampling_option,
    task_file,
    write_codes,
    write_report,
)


def fit_and_write(task: dict, algorithm_name: str) -> None:
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    if not budget["delta"] > 0:
        raise ValueError("OpenDP's AIM and MST run in zCDP and need delta > 0")
    codes = read_codes(task_file(task, "private"), columns)
    frame = pl.LazyFrame({c: codes[:, j] for j, c in enumerate(columns)},
                         schema={c: pl.Int64 for c in columns})
    keys = {c: list(range(domain[c])) for c in columns}
    options = dict(task["options"])
    dry_run = bool(options.pop("dry_run", False))
    method = sampling_option(options)
    rho = opendp_rho(budget["epsilon"], budget["delta"])
    make = getattr(dp.mbi, algorithm_name)
    shaved = 0
    if dry_run:
        shaved = passing_shave(lambda r: release_table(
            fake_frame(columns), {c: [0, 1, 2] for c in columns}, make(**options), r), rho)
    table = release_table(frame, keys, make(**options), rho * (1 - shaved / 1000))
    rows = bounded_rows(float(table.model.total), task)
    synthetic = table.synthesize(rows=rows, method=method)
    complete = synthetic.drop_nulls()
    out = complete.select(columns).to_numpy().astype(np.int64)
    write_codes(task, out)
    write_report(task, {"null_rows_dropped": len(synthetic) - len(complete),
                        **({"rho_shaved_permille": shaved} if dry_run else {})})


def release_table(frame, keys: dict, algorithm, rho: float):
    """OpenDP's contingency table of ``frame`` under ``rho``-zCDP, one row per person."""
    import opendp.prelude as dp

    context = dp.Context.compositor(data=frame, privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(rho=rho), split_evenly_over=1)
    return context.query().contingency_table(keys=keys, algorithm=algorithm).release()


def fake_frame(columns: list[str], rows: int = 200):
    """Public fake data for the dry run: uniform codes 0..2 (no private data)."""
    import polars as pl

    rng = np.random.default_rng()
    return pl.LazyFrame({c: rng.integers(0, 3, rows) for c in columns},
                        schema={c: pl.Int64 for c in columns})


def passing_shave(attempt, rho: float, tries: int = 20) -> int:
    """The first ``k`` in ``0..tries-1`` for which ``attempt(rho (1 - k/1000))`` passes
    OpenDP's budget check (see the module docstring); else 0 (the private fit then fails
    with OpenDP's own reason)."""
    from opendp.mod import OpenDPException

    for k in range(tries):
        try:
            attempt(rho * (1 - k / 1000))
            return k
        except OpenDPException as exc:
            if "insufficient budget" not in str(exc):
                raise
    return 0


def opendp_rho(epsilon: float, delta: float) -> float:
    """The largest rho that OpenDP converts to at most ``(epsilon, delta)``: a Gaussian
    measurement's scale searched by ``binary_search_param`` so that
    ``make_fix_delta(make_zCDP_to_approxDP(.), delta)`` maps to at most ``(epsilon, delta)``,
    and that measurement's rho (what ``Context`` does when it translates a loss)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=float)

    def approx(scale: float):
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale)),
                                   delta)

    scale = dp.binary_search_param(approx, d_in=1.0, d_out=(epsilon, delta), T=float)
    return float(dp.m.make_gaussian(*space, scale).map(1.0))


def public_errors() -> tuple[type, ...]:
    """OpenDP's own errors (e.g. its budget check) say nothing about the data."""
    from opendp.mod import OpenDPException

    return (OpenDPException,)
