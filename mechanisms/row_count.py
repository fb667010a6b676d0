"""How many rows a synthetic table gets: a DP estimate of the row count, bounded.

Algorithm
---------
A mechanism estimates the (contribution-bounded) row count ``n`` from its noisy releases
only (post-processing). At small epsilon that estimate is dominated by noise: it can be
negative, a handful of rows, or millions of rows for a 5,000-row table. The synthetic table
gets ``clip(round(estimate), low, high)`` rows, where

- ``high`` is the schema's ``max_records`` for the run's epsilon (the challenge's published
  cap; the runner rejects any table above it), else the largest ``max_records`` of any run,
  else :data:`DEFAULT_MAX_ROWS` (a fixed, data-independent cap: one million rows keeps
  sampling and scoring within a run's limits, and a k-marginal score does not change with the
  number of rows once there are enough to represent the distribution);
- ``low`` is ``min(MIN_ROWS, high)``: a table of a few rows cannot represent any
  distribution and scores below the uniform floor; :data:`MIN_ROWS` rows sampled from the
  model represent its distribution to within about 1/sqrt(1000) per cell.

Privacy argument
----------------
``low`` and ``high`` come from the schema and fixed constants (public); the estimate is
post-processing of noisy releases that the mechanism charged to its ledger. The clipped
count is therefore post-processing too and costs no budget. The true row count is never read.
"""

from __future__ import annotations

import math

from harness.data.datasets import Dataset

#: Output cap when the schema names no ``max_records`` (data-independent, documented above).
DEFAULT_MAX_ROWS = 1_000_000
#: Output floor: a synthetic table never has fewer rows (unless the cap is smaller).
MIN_ROWS = 1_000


def max_rows(data: Dataset, epsilon: float) -> int:
    """The public cap on synthetic rows: the schema's ``max_records`` for ``epsilon`` (else
    the largest of any run), else :data:`DEFAULT_MAX_ROWS`."""
    runs = [r for r in data.runs if r.max_records]
    matching = [int(r.max_records) for r in runs  # type: ignore[arg-type]
                if math.isclose(r.epsilon, epsilon)]
    limits = matching or [int(r.max_records) for r in runs]  # type: ignore[arg-type]
    return max(limits) if limits else DEFAULT_MAX_ROWS


def row_bounds(data: Dataset, epsilon: float) -> tuple[int, int]:
    """``(low, high)``: the public floor and cap on the synthetic row count."""
    high = max(1, max_rows(data, epsilon))
    return min(MIN_ROWS, high), high


def bounded_row_count(estimate: float, data: Dataset, epsilon: float) -> int:
    """A DP row-count estimate clipped to :func:`row_bounds` (post-processing)."""
    low, high = row_bounds(data, epsilon)
    if not math.isfinite(estimate):
        return low
    return int(min(max(round(estimate), low), high))
