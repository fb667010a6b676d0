"""Honest hyperparameter tuning: three modes, each labelled in MLflow and on the leaderboard.

``public`` (the challenge's own protocol)
    A Hydra Optuna sweep tunes the hyperparameters on the **public view** of the dataset: the
    public year plays the private part, split again by a seeded, data-independent split of
    whole persons into a pseudo-public share (``tuning.public_fraction``, given to mechanisms
    that need public data) and a pseudo-private rest (scored against). The real private part
    is never loaded into those runs' datasets. The chosen setting (best mean objective over its
    Optuna trials) is then scored on the private data with fresh seeds. Costs no privacy.
``oracle``
    The same search, scored on the **private** data. Not differentially private: the choice
    leaks information about the private data. Allowed only with ``tuning.allow_oracle=true``,
    and every run (search and final) is tagged ``private=false``; the leaderboard never ranks
    such rows. It shows how much tuning could gain at best.
``dp_select``
    One run that chooses among a finite grid of candidate settings privately, with the
    exponential mechanism, and spends the rest of the budget on the chosen setting: a
    mechanism wrapping the mechanism (:class:`dp_arena.run.dp_select.DPSelect`, where the
    privacy argument is written down).

This module holds what the modes share: the public view (:func:`public_view`) and the search
spaces (:func:`parse_space`, :func:`candidates`, labels). The search sweep's final stage
(choosing, then scoring the chosen setting) is :mod:`dp_arena.sweep.tuning`.
"""

from __future__ import annotations

import itertools
from typing import Any

from dp_arena.data.datasets import Dataset, with_public_split
from dp_arena.errors import ConfigError


# ----- the public view ----------------------------------------------------------------------
def public_view(data: Dataset, fraction: float, seed: int) -> Dataset:
    """The dataset as seen by public-mode tuning: the public part becomes the private part
    (split again into pseudo-public ``fraction`` / pseudo-private rest by a seeded split of
    whole persons). The returned object holds no reference to ``data.private``."""
    if data.public is None or len(data.public) == 0:
        raise ConfigError(f"tuning on the public view needs a public part, and dataset "
                          f"{data.name!r} has none",
                          "set dataset.public_fraction (e.g. 0.5) or dataset.public_path")
    base = Dataset(data.name, data.schema, data.public.reset_index(drop=True), None, data.unit,
                   data.id_column, data.max_records_per_individual)
    return with_public_split(base, fraction, seed) if fraction > 0 else base


# ----- search spaces ------------------------------------------------------------------------
def parse_space(space: dict[str, Any]) -> dict[str, list[Any]]:
    """``{"mechanism.k": "choice(2,4)", "mechanism.split": "range(0.1,0.4,0.1)"}`` ->
    candidate values per hyperparameter (the Hydra/Optuna sweep syntax; finite sweeps only)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    parser = OverridesParser.create()
    out: dict[str, list[Any]] = {}
    for key, spec in space.items():
        if not str(key).startswith("mechanism."):
            raise ConfigError(f"tuning.space key {key!r} is not a mechanism hyperparameter",
                              "use keys like mechanism.k")
        if isinstance(spec, (list, tuple)):
            out[key] = list(spec)
            continue
        try:
            override = parser.parse_override(f"{key}={spec}")
        except Exception as exc:  # noqa: BLE001 - Hydra's parser error, reworded
            raise ConfigError(f"tuning.space.{key}: cannot parse {spec!r} ({exc})",
                              "use choice(a,b,...) or range(start,stop,step)") from None
        value = override.value()
        if isinstance(value, ChoiceSweep):
            out[key] = list(value.list)
        elif isinstance(value, RangeSweep):
            out[key] = list(override.sweep_iterator())
        elif override.is_sweep_override():
            raise ConfigError(f"tuning.space.{key}: {spec!r} is not a finite set of candidates",
                              "dp_select needs choice(...) or range(...)")
        else:
            out[key] = [value]
    return out


def candidates(space: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The grid of settings: ``[{"k": 2}, {"k": 4}, ...]`` (keys without ``mechanism.``)."""
    keys = list(space)
    return [{k.removeprefix("mechanism."): v for k, v in zip(keys, combo)}
            for combo in itertools.product(*(space[k] for k in keys))]


def setting_label(setting: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(setting.items())) or "-"


def space_label(space: dict[str, list[Any]]) -> str:
    return "select " + ";".join(f"{k.removeprefix('mechanism.')}∈{{{','.join(map(str, v))}}}"
                                for k, v in space.items())
