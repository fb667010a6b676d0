"""The risk a board row's claimed budget allows: "empirical risk, not a DP guarantee".

When runs logged a membership attack (:mod:`dp_arena.metrics.membership`), each row gets

- :func:`claimed_budget`: the (epsilon, delta) the row claims for its whole release: its
  epsilon and delta, or schema + mechanism totals (basic composition); none for reference
  rows (``resample``, ``public_only``, ``uniform``), non-private rows, n/a rows, rows that
  spend nothing and infinite spends;
- :func:`dp_tpr_bound`: the bound that budget implies on the attack's true-positive rate at
  each FPR, ``min(1, e^epsilon * FPR + delta)`` (the hypothesis-testing view of
  (epsilon, delta)-DP, Kairouz, Oh and Viswanath 2015);
- :func:`beats_bound`: whether the mean over trials of the TPR's lower 95% CI end is above it;
- :func:`with_risk_bounds`: the board with the bound at each FPR (``tpr_bound_fpr_<fpr>``), the
  FPRs where the attack beats it (``beats_bound_at_fpr``) and the mark ``MARK_BEATS_BOUND``
  (explained by ``BOUND_LEGEND``) on those rows.

An empirical check, computed from logged scores, spending no budget: staying under the bound
proves nothing; beating it is evidence against the claimed budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dp_arena.report.scores import MIA_FPRS
from dp_arena.report.tracking import INF_THRESHOLD

MARK_BEATS_BOUND = "membership attack beats the bound of the claimed budget"
#: What the risk view says under its table, and after ``MARK_BEATS_BOUND`` in every legend.
BOUND_LEGEND = ("an (epsilon, delta)-DP release bounds any membership attack's true-positive "
                "rate at false-positive rate FPR by min(1, e^epsilon * FPR + delta); the row's "
                "attack beats it significantly (the lower end of its TPR's 95% CI is above "
                "the bound): staying under the bound proves nothing; beating it is evidence "
                "against the claimed budget")
#: Board columns of the bound a row's claimed budget implies at each FPR, and of the FPRs at
#: which the attack beats it significantly ("" when none).
BOUND_PREFIX = "tpr_bound_fpr_"
BEATS_BOUND = "beats_bound_at_fpr"


def dp_tpr_bound(epsilon: float, delta: float, fpr: float) -> float:
    """The largest true-positive rate any membership test can have at false-positive rate
    ``fpr`` against an (epsilon, delta)-DP release: ``min(1, e^epsilon * fpr + delta)``
    (hypothesis-testing view of DP, Kairouz, Oh and Viswanath 2015)."""
    if epsilon > 700:  # e^epsilon overflows a float, and the bound is 1 long before
        return 1.0
    return float(min(1.0, math.exp(epsilon) * fpr + delta))


def claimed_budget(row: pd.Series | Mapping[str, Any]) -> tuple[float, float] | None:
    """The (epsilon, delta) a row claims for its whole release, or None when it claims none:
    reference rows (``resample``, ``public_only``, ``uniform``: they are no DP release),
    non-private rows (oracle tuning), rows that spend nothing (epsilon spent 0, and no schema
    spend), rows with an infinite epsilon, spend or total (a schema read from the private
    file) and rows without a delta. The claim is
    the row's epsilon and delta (an external contestant's declared budget is its row's
    epsilon), or, when the run also spent budget on its schema, ``epsilon_total`` and
    ``delta_total`` (schema plus mechanism, basic composition): the synthetic table depends
    on both."""
    if row.get("kind") in ("reference", "non-private") or row.get("status") == "n/a":
        return None
    numbers = {}
    for col in ("epsilon", "epsilon_spent", "epsilon_total", "delta_total"):
        try:
            numbers[col] = float(row.get(col, math.nan))
        except (TypeError, ValueError):
            numbers[col] = math.nan
    if any(math.isinf(numbers[c]) or numbers[c] > INF_THRESHOLD
           for c in ("epsilon", "epsilon_spent", "epsilon_total")):
        return None
    spend = numbers["epsilon_spent" if math.isnan(numbers["epsilon_total"]) else "epsilon_total"]
    if spend == 0:
        return None
    try:
        delta = float(row.get("delta", ""))
    except (TypeError, ValueError):
        return None
    if math.isnan(numbers["epsilon"]) or math.isnan(delta):
        return None
    if not math.isnan(numbers["epsilon_total"]):
        total_delta = numbers["delta_total"]
        return numbers["epsilon_total"], (delta if math.isnan(total_delta) else total_delta)
    return numbers["epsilon"], delta


def beats_bound(row: pd.Series | Mapping[str, Any], fpr: float) -> bool:
    """Whether the membership attack beats the row's bound at ``fpr`` significantly: the lower
    end of the TPR's confidence interval (``membership/tpr_at_fpr_<fpr>_lo``, mean over the
    row's trials) is above ``dp_tpr_bound`` of its claimed budget. Evidence against the claim;
    staying under the bound proves nothing."""
    budget = claimed_budget(row)
    if budget is None:
        return False
    try:
        low = float(row.get(f"membership/tpr_at_fpr_{fpr:g}_lo", math.nan))
    except (TypeError, ValueError):
        return False
    return not math.isnan(low) and low > dp_tpr_bound(*budget, fpr)


def with_risk_bounds(board: pd.DataFrame) -> pd.DataFrame:
    """``board`` with, when some row has a membership TPR, the bound each row's claimed
    budget implies at each FPR (``tpr_bound_fpr_<fpr>``, NaN without a claim), the FPRs at
    which the attack beats it (``beats_bound_at_fpr``, e.g. ``"0.01,0.1"``) and the mark
    ``MARK_BEATS_BOUND`` on those rows; unchanged otherwise."""
    tprs = [f"membership/tpr_at_fpr_{f:g}{end}" for f in MIA_FPRS for end in ("", "_lo")]
    if not any(c in board for c in tprs):
        return board
    out = board.copy()
    for fpr in MIA_FPRS:
        out[f"{BOUND_PREFIX}{fpr:g}"] = [
            dp_tpr_bound(*b, fpr) if (b := claimed_budget(r)) is not None else math.nan
            for _, r in out.iterrows()]
    out[BEATS_BOUND] = [",".join(f"{f:g}" for f in MIA_FPRS if beats_bound(r, f))
                        for _, r in out.iterrows()]
    out["marks"] = [("; ".join(p for p in (str(m or ""), MARK_BEATS_BOUND) if p) if beaten
                     else m) for m, beaten in zip(out["marks"], out[BEATS_BOUND])]
    out.attrs.update(board.attrs)
    return out
