"""How many rows a synthetic table gets: a DP estimate of the row count, bounded, or a public
figure when the estimate is mostly noise.

Algorithm
---------
A mechanism estimates the (contribution-bounded) row count ``n`` from its noisy releases
only (post-processing), and knows the standard deviation ``std`` of that estimate's noise from
its own calibration (noise scales and domain sizes; for a fitted model, also the model). At
small epsilon the estimate is dominated by noise: it can be negative, a handful of rows, or
millions of rows for a 5,000-row table. So:

1. **Public figure** (:func:`public_rows`): the public part's number of rows when the data has
   a public part (assumed of the same order as the private part: a year of trips beside another,
   a split of one table), else the schema's ``max_records`` for the run's epsilon (the
   challenge's published bound), else :data:`FALLBACK_ROWS`.
2. **Rule**: the estimate is used when ``std <= NOISE_FRACTION x the public figure``; otherwise
   (at tiny epsilon, e.g. 1e-6 on any table) the estimate says less about the row count than
   the public figure does, and the public figure is used instead. A non-finite estimate also
   falls back.
3. **Bounds**: the result is clipped to ``[low, high]``, where ``high`` is the schema's
   ``max_records`` for the run's epsilon (the runner rejects any table above it), else the
   largest ``max_records`` of any run, else :data:`DEFAULT_MAX_ROWS` (a fixed,
   data-independent cap: one million rows keeps sampling and scoring within a run's limits),
   and ``low`` is ``min(MIN_ROWS, high)``: a table of a few rows cannot represent any
   distribution and scores below the uniform floor; :data:`MIN_ROWS` rows sampled from the
   model represent its distribution to within about 1/sqrt(1000) per cell.

Before this rule, an estimate that was pure noise landed on the floor or on the cap at random:
``independent`` at epsilon 1e-6 emitted 1,000,000 rows for tables of a few thousand.

Privacy argument
----------------
``low``, ``high`` and the public figure come from the schema, the public part and fixed
constants (public); ``std`` is a function of the noise scales the mechanism calibrated from the
budget and public domain sizes (and, for a fitted model, of the model: post-processing); the
estimate is post-processing of noisy releases that the mechanism charged to its ledger. The
row count is therefore post-processing too and costs no budget. The true row count is never
read.
"""

from __future__ import annotations

import math

from dp_arena.data.datasets import Dataset

#: Output cap when the schema names no ``max_records`` (data-independent, documented above).
DEFAULT_MAX_ROWS = 1_000_000
#: Output floor: a synthetic table never has fewer rows (unless the cap is smaller).
MIN_ROWS = 1_000
#: The public figure when the data has no public part and its schema no ``max_records``: enough
#: rows for a sampled table to show its model's distribution to about 1/sqrt(10,000) per cell,
#: few enough to sample and score in seconds.
FALLBACK_ROWS = 10_000
#: The estimate is used when its noise standard deviation is at most this fraction of the
#: public figure (see the module docstring).
NOISE_FRACTION = 0.5


def max_rows(data: Dataset, epsilon: float) -> int:
    """The public cap on synthetic rows: the schema's ``max_records`` for ``epsilon`` (else
    the largest of any run), else :data:`DEFAULT_MAX_ROWS`."""
    limits = run_limits(data, epsilon)
    return max(limits) if limits else DEFAULT_MAX_ROWS


def run_limits(data: Dataset, epsilon: float) -> list[int]:
    """The schema's ``max_records`` of the runs at ``epsilon``, else of every run (maybe [])."""
    runs = [r for r in data.runs if r.max_records]
    matching = [int(r.max_records) for r in runs  # type: ignore[arg-type]
                if math.isclose(r.epsilon, epsilon)]
    return matching or [int(r.max_records) for r in runs]  # type: ignore[arg-type]


def row_bounds(data: Dataset, epsilon: float) -> tuple[int, int]:
    """``(low, high)``: the public floor and cap on the synthetic row count."""
    high = max(1, max_rows(data, epsilon))
    return min(MIN_ROWS, high), high


def public_rows(data: Dataset, epsilon: float) -> tuple[int, str]:
    """The public figure a row count falls back to, and where it comes from: the public part's
    rows, else the schema's ``max_records`` (for ``epsilon``, else the largest), else
    :data:`FALLBACK_ROWS`."""
    if data.public is not None and len(data.public):
        return len(data.public), "the public part's rows"
    limits = run_limits(data, epsilon)
    if limits:
        return max(limits), "the schema's max_records"
    return FALLBACK_ROWS, "no public figure: the fixed fallback"


def informative(std: float, figure: float) -> bool:
    """Whether an estimate whose noise has standard deviation ``std`` is used rather than the
    public ``figure`` (``std <= NOISE_FRACTION x figure``)."""
    return std <= NOISE_FRACTION * figure


def bounded_row_count(estimate: float, data: Dataset, epsilon: float, *, std: float) -> int:
    """The synthetic row count (module docstring): the DP ``estimate`` when its noise standard
    deviation ``std`` is small next to the public figure, else the public figure; clipped to
    :func:`row_bounds` (post-processing)."""
    low, high = row_bounds(data, epsilon)
    figure = public_rows(data, epsilon)[0]
    if not math.isfinite(estimate) or not informative(std, figure):
        estimate = figure
    return int(min(max(round(estimate), low), high))
