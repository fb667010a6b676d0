"""The public sizes a run's cost is modelled on (:mod:`dp_arena.sweep.cost_model`), and their
tags on the run.

- ``columns``: the schema's attributes (public);
- ``cells``: the sum of their domain sizes (one-way marginal cells; public, the schema's);
- ``rows``: a public or declared row figure, never the private table's count (which is
  private): the dataset's declared size (``dataset.n_private`` of the simulated taxi data,
  else a ``dataset.max_rows`` cap), else the public part's rows, else the schema's
  ``max_records``, else the fixed fallback of :func:`dp_arena.mechanisms.row_count.public_rows`.
  ``rows_source`` says which. Datasets with no public or declared figure (the shared ones
  without ``max_rows``) all get the same fallback figure: their costs then differ through
  ``columns`` and ``cells`` only.

Every run carries these as tags (:func:`cost_tags`: ``cost.rows``, ``cost.rows_source``,
``cost.columns``, ``cost.cells``): public facts, read back by the dry run's model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dp_arena.data.datasets import Dataset

TAG_PREFIX = "cost."


@dataclass(frozen=True)
class CostInputs:
    """A dataset's public sizes (module docstring)."""

    rows: int
    rows_source: str
    columns: int
    cells: int


def declared_rows(dataset_cfg: Mapping[str, Any]) -> tuple[int, str] | None:
    """The row figure the dataset's config declares (``n_private``, else ``max_rows``)."""
    for key, source in (("n_private", "dataset.n_private"), ("max_rows", "dataset.max_rows cap")):
        value = dataset_cfg.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value), source
    return None


def cost_inputs(dataset_cfg: Mapping[str, Any], data: Dataset, epsilon: float) -> CostInputs:
    """The public sizes of ``data`` (module docstring); reads no private value."""
    from dp_arena.mechanisms.row_count import public_rows

    attributes = data.schema.attributes
    cells = sum(data.schema[name].size for name in attributes)
    rows, source = declared_rows(dataset_cfg) or public_rows(data, epsilon)
    return CostInputs(int(rows), source, len(attributes), int(cells))


def cost_tags(inputs: CostInputs) -> dict[str, str]:
    """The run's ``cost.*`` tags."""
    return {f"{TAG_PREFIX}rows": str(inputs.rows), f"{TAG_PREFIX}rows_source": inputs.rows_source,
            f"{TAG_PREFIX}columns": str(inputs.columns), f"{TAG_PREFIX}cells": str(inputs.cells)}


def inputs_from_tags(tags: Mapping[str, str]) -> CostInputs | None:
    """A stored run's sizes from its ``cost.*`` tags (``None``: a run without them)."""
    try:
        return CostInputs(int(tags[f"{TAG_PREFIX}rows"]), tags.get(f"{TAG_PREFIX}rows_source", ""),
                          int(tags[f"{TAG_PREFIX}columns"]), int(tags[f"{TAG_PREFIX}cells"]))
    except (KeyError, ValueError):
        return None
