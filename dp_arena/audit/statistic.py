"""Black-box test statistics: features of ONE synthetic table about the canary.

They read only the mechanism's output (a DP release) and the canary's value codes, never the
private data, so they are as public as the release (they are kept in the audit's folder).
Each returns a short vector; :mod:`dp_arena.audit.decision` combines the vector into one score
(a naive-Bayes log-likelihood ratio, or a linear discriminant) fitted on half of the runs.

``canary_cells`` (default)
    Per attribute, the number of synthetic rows holding the canary's value. A mechanism whose
    releases are (noisy) marginals moves these counts when the canary is present; with a
    ``rare_cell`` canary they start at 0, so the shift is the canary alone.
``distance``
    Hamming distance of the synthetic rows to the canary over the attributes: the numbers of
    rows at distance 0, at most 1 and at most 2, and minus the smallest distance. Catches
    mechanisms that reproduce (parts of) whole rows (correlated models, row copying).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError

STATISTICS: tuple[str, ...] = ("canary_cells", "distance")


def check_statistic(name: str) -> None:
    if name not in STATISTICS:
        raise ConfigError(f"audit.statistic must be one of {list(STATISTICS)} (got {name!r})",
                          "use audit.statistic=canary_cells (the default)")


def canary_cell_counts(codes: pd.DataFrame, canary: dict[str, int]) -> np.ndarray:
    """Per attribute (in ``canary``'s order), synthetic rows holding the canary's code."""
    return np.array([float((codes[c].to_numpy() == v).sum()) for c, v in canary.items()])


def distance_features(codes: pd.DataFrame, canary: dict[str, int]) -> np.ndarray:
    """Rows at Hamming distance 0, <= 1, <= 2 from the canary, and minus the smallest
    distance (minus the number of attributes for an empty table)."""
    cols = list(canary)
    if len(codes) == 0:
        return np.array([0.0, 0.0, 0.0, -float(len(cols))])
    target = np.array([canary[c] for c in cols])
    dist = (codes[cols].to_numpy() != target).sum(axis=1)
    return np.array([float((dist == 0).sum()), float((dist <= 1).sum()),
                     float((dist <= 2).sum()), -float(dist.min())])


def features(synthetic: pd.DataFrame, schema: Schema, canary: dict[str, int],
             statistic: str) -> np.ndarray:
    """The statistic's feature vector for one (schema-valid) synthetic table."""
    check_statistic(statistic)
    codes = schema.encode(synthetic)
    if statistic == "canary_cells":
        return canary_cell_counts(codes, canary)
    return distance_features(codes, canary)
