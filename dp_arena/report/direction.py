"""Which way a score ranks, as its metric declares it (never guessed from the score's name).

A run tags, per metric, the scores where a smaller value is better
(``lower_is_better/<metric>``, from :meth:`dp_arena.metrics.base.Metric.ranks_lower`); the board
reads them from the runs. For runs without the tag, the registered metric answers; the
runner's own numbers (time, memory, spend) rank lower; anything else ranks higher, the
default a metric has.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from dp_arena.report.tracking import LOWER_IS_BETTER_TAG, RUN_NUMBERS_LOWER

#: Run-frame column: the run's lower-is-better score keys (``metric/score``), comma-separated.
DIRECTION_COLUMN = "lower_is_better"


def tagged_lower_keys(tags: Mapping[str, str]) -> str:
    """A run's ``lower_is_better/<metric>`` tags as one comma-separated list of score keys."""
    return ",".join(f"{tag[len(LOWER_IS_BETTER_TAG):]}/{score}"
                    for tag, scores in sorted(tags.items())
                    if tag.startswith(LOWER_IS_BETTER_TAG)
                    for score in str(scores).split(",") if score)


def tagged_metrics(tags: Mapping[str, str]) -> str:
    """The metrics a run tagged a direction for (comma-separated)."""
    return ",".join(sorted(t[len(LOWER_IS_BETTER_TAG):] for t in tags
                           if t.startswith(LOWER_IS_BETTER_TAG)))


def registered_ranks_lower(key: str) -> bool | None:
    """The registered metric's declaration for ``key``, or None when it is not registered."""
    from dp_arena.errors import ConfigError
    from dp_arena.metrics import metric_class

    metric, _, score = key.partition("/")
    if not score:
        return None
    try:
        return metric_class(metric).ranks_lower(score)
    except ConfigError:
        return None


def ranks_lower(key: str, runs: pd.DataFrame | None = None) -> bool:
    """Whether a smaller value of ``key`` ranks better: the runs' tags when a run tagged the
    key's metric, else the registered metric, else the runner's own numbers; else False."""
    if key in RUN_NUMBERS_LOWER:
        return True
    metric = key.partition("/")[0]
    if runs is not None and DIRECTION_COLUMN in runs and "direction_metrics" in runs:
        tagged = runs["direction_metrics"].fillna("").astype(str).str.split(",")
        if tagged.map(lambda ms: metric in ms).any():
            keys = runs[DIRECTION_COLUMN].fillna("").astype(str).str.split(",")
            return bool(keys.map(lambda ks: key in ks).any())
    return bool(registered_ranks_lower(key))
