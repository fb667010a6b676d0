"""A sweep's runs with utility and membership-risk scores (the board's views), a planted
leak among them."""

from __future__ import annotations

import math

from tests.support.board import NEW_TAGS, run

LEAK_TAGS = {**NEW_TAGS, "delta": "1e-06", "dataset": "adult", "dataset_id": "a1",
             "privacy_unit": "record"}
NOISE = [0.0, 0.01, -0.01]
REAL = 0.91


def utility(score: float, t: int) -> dict:
    return {"ml_efficacy/score": score + NOISE[t], "ml_efficacy/real_score": REAL,
            "ml_efficacy/gap": REAL - score - NOISE[t], "propensity/pmse_ratio": 1 / score,
            "propensity/auc": 0.5 + (1 - score) / 2, "range_query/mean_rel_error": 1 - score}


def risk(auc: float, tpr01: float, lo01: float, tpr1: float, lo1: float,
         copy: float = 0.0) -> dict:
    return {"membership/auc": auc, "membership/tpr_at_fpr_0.01": tpr01,
            "membership/tpr_at_fpr_0.01_lo": lo01, "membership/tpr_at_fpr_0.01_hi": tpr01 + 0.01,
            "membership/tpr_at_fpr_0.1": tpr1, "membership/tpr_at_fpr_0.1_lo": lo1,
            "membership/tpr_at_fpr_0.1_hi": min(1.0, tpr1 + 0.02),
            "membership/copy_share_train": copy, "membership/copy_share_heldout": 0.0}


def sweep(with_utility: bool = True, with_risk: bool = True, epsilons=(1.0,)) -> list[dict]:
    """Three trials of: a leak (the training rows, declared epsilon), ``independent``, the
    ``uniform`` floor and ``resample`` (epsilon spent inf), on adult with delta 1e-6."""
    rows = []
    for eps in epsilons:
        for t in range(3):
            for mech, ml, mia, extra in (
                    ("test_copies_training", 0.90, risk(0.99, 0.95, 0.90, 0.99, 0.97, 1.0),
                     {"accounting": "declared"}),
                    ("independent", 0.80, risk(0.51, 0.012, 0.004, 0.11, 0.09), {}),
                    ("uniform", 0.55, risk(0.50, 0.010, 0.002, 0.10, 0.08),
                     {"reference": "floor", "private": "false", "epsilon_spent": 0.0}),
                    ("resample", 0.905, risk(0.80, 0.40, 0.35, 0.70, 0.66, 0.6),
                     {"reference": "ceiling", "private": "false",
                      "epsilon_spent": math.inf})):
                scores = {**(utility(ml, t) if with_utility else {}),
                          **(mia if with_risk else {})}
                rows.append({**run(mech, eps, t, 100.0 + 10 * ml + NOISE[t], **LEAK_TAGS),
                             **scores, **extra})
    return rows
