"""The held-out scores as a board row carries them (read by the utility and risk views,
:mod:`dp_arena.report.views`, the risk bound, :mod:`dp_arena.report.risk`, and the utility plot).

- the names: the utility scores (``UTILITY_METRICS``: ML efficacy, its train-on-real reference
  and gap, the propensity pMSE ratio, the range-query error) and the risk scores
  (``RISK_METRICS``: the membership attack's AUC, its TPR at each of ``MIA_FPRS``, the copy
  shares, ``MEMBERSHIP_METRICS``; the attribute-inference residual risk, largest and mean);
- ``CI_METRICS``: the scores whose 95% CI over trials a board row carries as
  ``ci95:<metric>`` (``CI_PREFIX``) besides the ranking metric's;
- :func:`metric_value`: a row's mean over trials of a score, or the half-width of its CI
  (read from ``mean``/``ci95`` when it is the ranking metric);
- :func:`has_any`: whether some row of a board has a value of one of some scores.

Pure reading of logged scores: no private data, no budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

#: The held-out utility scores (the utility view) and risk scores (the risk view; "empirical
#: risk, not a DP guarantee").
ML_SCORE, ML_REAL, ML_GAP = "ml_efficacy/score", "ml_efficacy/real_score", "ml_efficacy/gap"
PMSE_RATIO, RANGE_ERROR = "propensity/pmse_ratio", "range_query/mean_rel_error"
UTILITY_METRICS = (ML_SCORE, ML_REAL, ML_GAP, PMSE_RATIO, RANGE_ERROR)
MIA_AUC = "membership/auc"
#: False-positive rates at which the membership attack's true-positive rate is logged
#: (``membership/tpr_at_fpr_<fpr>``, CI ends ``..._lo`` and ``..._hi``).
MIA_FPRS = (0.01, 0.1)
COPY_TRAIN, COPY_HELDOUT = "membership/copy_share_train", "membership/copy_share_heldout"
MEMBERSHIP_METRICS = (MIA_AUC, *(f"membership/tpr_at_fpr_{f:g}" for f in MIA_FPRS),
                      COPY_TRAIN, COPY_HELDOUT)
#: The attribute-inference metric's headline (the largest residual risk over secrets) and the
#: mean over secrets, each with its bootstrap CI ends ``..._lo`` and ``..._hi``.
AI_RISK, AI_RISK_MEAN = "attribute_inference/risk", "attribute_inference/risk_mean"
RISK_METRICS = (*MEMBERSHIP_METRICS, AI_RISK, AI_RISK_MEAN)
#: The headline scores a board gives a verdict under (besides its ranking score), with what
#: each measures: the marginals, the held-out utility, the empirical risks.
MARGINALS = "kmarginal/score"
HEADLINE_SCORES = {MARGINALS: "marginals", ML_SCORE: "held-out utility",
                   MIA_AUC: "membership risk", AI_RISK: "attribute risk"}
#: Scores whose 95% CI over trials a board row carries (column ``ci95:<metric>``) besides
#: the ranking metric's.
CI_METRICS = (ML_SCORE, MIA_AUC, PMSE_RATIO, RANGE_ERROR)
CI_PREFIX = "ci95:"


def has_any(board: pd.DataFrame, metrics: Iterable[str]) -> bool:
    """Whether some row of ``board`` has a value of one of ``metrics`` (as a column, or as the
    ranking metric's ``mean``)."""
    key = board.attrs.get("metric")
    for col in metrics:
        source = "mean" if col == key else col
        if source in board and pd.to_numeric(board[source], errors="coerce").notna().any():
            return True
    return False


def metric_value(row: pd.Series | Mapping[str, Any], metric: str, key: str | None,
                 ci: bool = False) -> float:
    """A row's mean over trials of ``metric`` (``ci``: the half-width of its 95% CI), read
    from ``mean``/``ci95`` when it is the ranking metric ``key``; NaN when absent."""
    col = ("ci95" if ci else "mean") if metric == key else (CI_PREFIX + metric if ci
                                                            else metric)
    value = row.get(col, math.nan)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def owner_side_metrics(runs: pd.DataFrame, key_prefix: str) -> list[str]:
    """Metrics the runs were scored with (``<key_prefix><metric>`` columns, the
    ``metric_key/<metric>`` tags) that read held-out persons and logged no score to the store:
    their scores stay on the data owner's side (:mod:`dp_arena.run.heldout`)."""
    from dp_arena.errors import ConfigError
    from dp_arena.metrics import metric_class

    out = []
    for col in (c for c in runs.columns if c.startswith(key_prefix)):
        name = col[len(key_prefix):]
        if not runs[col].fillna("").astype(str).ne("").any():
            continue
        try:
            reads = metric_class(name).reads_heldout
        except ConfigError:
            continue
        if reads and not any(c.startswith(f"{name}/") for c in runs.columns):
            out.append(name)
    return sorted(out)
