"""Shared by the smartnoise-synth adapters (run inside the ``smartnoise`` environment).

- **transformer**: a ``TableTransformer`` of one ``LabelTransformer`` per column, fitted on a
  frame that lists every code ``0..size-1`` of the task's domain (the schema), never on the
  data; ``preprocessor_eps=0`` (nothing is spent or learned on preprocessing);
- **budget**: smartnoise converts (epsilon, delta) to zCDP with its own ``cdp_rho``; of that
  rho the adapter keeps the share ``row_count_share`` (option, default 1%) for the number of
  synthetic rows and gives ``Synthesizer.create(NAME, epsilon', delta)`` the largest epsilon'
  (found by bisection) whose ``cdp_rho`` is at most the rest; the two parts compose in zCDP to
  at most the whole rho, which ``cdp_rho`` found to satisfy (epsilon, delta). Settings are
  smartnoise's defaults unless ``options`` say otherwise;
- **rows**: smartnoise samples ``num_rows`` by default, the *exact* private row count, which
  would then be written in every synthetic table. The adapter draws the count instead: the
  number of private records (sensitivity 1: one record added or removed) plus OpenDP's
  discrete Gaussian (``make_gaussian`` on integers, the environment's opendp) at the kept rho,
  clipped to the task's public bounds. (Inside its fit smartnoise still normalizes the model to
  the exact count, ``known_total``: the library's behaviour, within the budget it declares.)
  The option ``sampling`` (``protocol.SAMPLING``) chooses how the fitted mbi model draws
  them: ``sample`` (default: i.i.d. records, as dp-arena's own mbi mechanisms draw them;
  smartnoise has no setting for it, so the adapter hands ``sample()`` a model whose
  ``synthetic_data`` passes ``method="sample"``) or ``round`` (smartnoise's behaviour: mbi
  1.1.0's rounding, whose row-order correlation costs MST about 85 kmarginal points on adult
  at epsilon 1).
"""

from __future__ import annotations

import math

import numpy as np
from protocol import (
    bounded_rows,
    read_codes,
    sampling_option,
    task_file,
    write_codes,
    write_report,
)


def domain_transformer(columns: list[str], domain: dict[str, int]):
    import pandas as pd
    from snsynth.transform import LabelTransformer, TableTransformer

    widest = max(domain.values())
    listing = pd.DataFrame({c: np.arange(widest) % domain[c] for c in columns})
    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in columns])
    transformer.fit(listing, epsilon=0.0)
    return transformer


#: The share of smartnoise's rho the adapter keeps for the number of synthetic rows.
ROW_COUNT_SHARE = 0.01
#: Bisection steps for epsilon' (each calls ``cdp_rho``, about 0.4 s): epsilon' is within
#: epsilon / 2**14 below the largest that fits, i.e. smartnoise gets at most that much less.
SPLIT_STEPS = 14


def split_budget(epsilon: float, delta: float, share: float) -> tuple[float, float]:
    """(epsilon' for smartnoise, rho for the row count): ``cdp_rho(epsilon', delta)`` is at
    most ``(1 - share)`` of ``cdp_rho(epsilon, delta)``, and the count gets the rest (so at
    least ``share`` of it)."""
    from snsynth.utils import cdp_rho

    if not 0 < share < 1:
        raise ValueError(f"row_count_share must be between 0 and 1 (got {share!r})")
    whole = cdp_rho(epsilon, delta)
    low, low_rho, high = 0.0, 0.0, epsilon
    for _ in range(SPLIT_STEPS):
        middle = (low + high) / 2
        rho = cdp_rho(middle, delta)
        if rho <= (1 - share) * whole:
            low, low_rho = middle, rho
        else:
            high = middle
    if low == 0.0:
        raise ValueError("no epsilon leaves the row count its share")
    return low, whole - low_rho


def private_row_count(records: int, rho: float) -> int:
    """``records`` plus OpenDP's discrete Gaussian noise calibrated to rho-zCDP at
    sensitivity 1 (one record added or removed)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    scale = math.sqrt(1 / (2 * rho)) * (1 + 1e-9)  # a hair wider: the map must not exceed rho
    measurement = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)
    if not measurement.map(1) <= rho:
        raise ValueError("the row count's noise does not fit its budget")
    return int(measurement(int(records)))


def fit_and_write(task: dict, synth_name: str) -> None:
    import pandas as pd
    from snsynth import Synthesizer

    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    codes = read_codes(task_file(task, "private"), columns)
    private = pd.DataFrame(codes, columns=columns)
    options = dict(task["options"])
    method = sampling_option(options)
    share = float(options.pop("row_count_share", ROW_COUNT_SHARE))
    delta = float(budget["delta"])
    epsilon, count_rho = split_budget(float(budget["epsilon"]), delta, share)
    synth = Synthesizer.create(synth_name, epsilon=epsilon, delta=delta, **options)
    synth.fit(private, transformer=domain_transformer(columns, domain), preprocessor_eps=0.0)
    if method != "round":
        synth.synthesizer = DrawsWith(synth.synthesizer, method)
    rows = bounded_rows(float(private_row_count(len(codes), count_rho)), task)
    sample = synth.sample(rows)
    out = np.asarray(pd.DataFrame(sample, columns=columns) if not isinstance(
        sample, pd.DataFrame) else sample[columns], dtype=np.int64)
    write_codes(task, out)
    write_report(task, {})


class DrawsWith:
    """A fitted mbi model whose ``synthetic_data`` draws with ``method`` (smartnoise's MST and
    AIM call ``self.synthesizer.synthetic_data(rows=...)`` with mbi's default, ``round``)."""

    def __init__(self, model, method: str) -> None:
        self.model, self.method = model, method

    def synthetic_data(self, rows=None):
        return self.model.synthetic_data(rows=rows, method=self.method)
