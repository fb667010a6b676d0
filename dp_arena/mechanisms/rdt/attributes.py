"""``rdt``'s attributes: which are private and predictors, how each is collapsed, its split
weight and its share of the budget (helpers of :mod:`dp_arena.mechanisms.rdt`).

Everything here reads the schema, the settings and the structure data SD only (public or a DP
release), never the private table.

Algorithms
----------
- *Generic collapse* (:func:`collapse_rare_values`): an attribute with more than
  ``collapse_above`` values keeps its (at most ``collapse_above - 1``) most frequent SD values
  with at least ``min_count`` SD records; all others share one code.
- *Threshold collapse* (:func:`collapse_below_count`, the Duke report's rule "Agency with
  fewer than 500 observations combined, Occupation fewer than 200"): every value with fewer
  than ``min_count`` SD records shares one code, with no cap on how many are kept.
- *Numeric regrouping* (:func:`regroup_codes`, the report's "Pay in $10k or $25k units"):
  codes whose value (a numeric column's bin lower edge, or a categorical column's numeric
  value) falls in the same ``width``-wide band from the column's smallest value share a code.
- *Per-attribute rules* (:func:`attribute_collapse`): an attribute named in
  ``regroup_widths`` is regrouped first; one named in ``collapse_min_counts`` is then
  threshold-collapsed (on the regrouped codes); an attribute named in either skips the
  generic rule. The report's collapse Methods 1 and 2 are two such settings
  (``dp_arena/conf/mechanism/rdt_report.yaml`` and ``benchmarks/bench_rdt_report.py``).
- *The report's collapse methods* (:func:`report_collapse_method`), as its section 6 words
  them: Method 1 "Pay converted to units of $10,000, no other attributes adjusted" (Pay
  regrouped, the generic rule off for every other attribute); Method 2 "Pay converted to units
  of $25,000, Agencies with fewer than 500 observations combined, Occupations with fewer than
  200 observations combined" (and nothing else).
- *Split weights*: ``attribute_weights`` (a mapping, default 1) or ``sd_association`` (mutual
  information with the private attribute in SD, relative to the largest, floored at 0.05).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.data.schema import Column, Schema, encode_column
from dp_arena.errors import ConfigError, NotApplicable

DEFAULT_PRIVATE_ATTRIBUTES: tuple[str, ...] = ("sex", "race")
#: ``attribute_weights`` value: split weights from the SD association with the private attribute.
SD_ASSOCIATION = "sd_association"


# ----- generic collapse, roles, weights ----------------------------------------------------
def collapse_rare_values(sd_codes: np.ndarray, size: int, collapse_above: int | None,
                         min_count: int) -> np.ndarray:
    """Map ``code -> collapsed code`` of one attribute from its SD counts.

    Attributes with at most ``collapse_above`` values (every attribute when it is ``None``:
    no generic collapse, as in the report's Method 1) are unchanged. Otherwise the (at most
    ``collapse_above - 1``) most frequent SD values with at least ``min_count`` records keep
    their own code (in their original order) and every other value shares the last code.
    """
    if collapse_above is None or size <= collapse_above:
        return np.arange(size)
    counts = np.bincount(sd_codes, minlength=size)
    by_frequency = np.argsort(-counts, kind="stable")
    candidates = by_frequency[:collapse_above - 1]
    kept = np.sort(candidates[counts[candidates] >= min_count]).astype(np.int64)
    mapping = np.full(size, len(kept), dtype=np.int64)
    mapping[kept] = np.arange(len(kept))
    return mapping


def sd_proportions(sd_labels: np.ndarray, n_labels: int) -> np.ndarray:
    """Label proportions in the structure data (uniform when it has no rows)."""
    counts = np.bincount(sd_labels, minlength=n_labels).astype(float)
    return counts / counts.sum() if counts.sum() > 0 else np.full(n_labels, 1.0 / n_labels)


def encode_columns(schema: Schema, frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Codes ``0..n-1`` of ``columns`` (rows x columns, int64)."""
    if not columns:
        return np.zeros((len(frame), 0), dtype=np.int64)
    return np.column_stack([encode_column(schema[c], frame[c]) for c in columns])


def resolve_private_attributes(schema: Schema, requested: list[str] | None,
                               target: str | None = None) -> list[str]:
    """The private attributes, in synthesis order (default: sex then race when present, else
    the dataset's target, the column its utility score predicts; else n/a with how to give
    them to rdt alone, so a sweep of several mechanisms runs the others)."""
    attrs = schema.attributes
    if requested is None:
        if all(a in attrs for a in DEFAULT_PRIVATE_ATTRIBUTES):
            return list(DEFAULT_PRIVATE_ATTRIBUTES)
        if target in attrs:
            return [str(target)]
        fewest = min(reversed(attrs), key=lambda a: schema[a].size)  # ties: the last
        raise NotApplicable(
            f"rdt needs mechanism.private_attributes (no "
            f"{' and '.join(DEFAULT_PRIVATE_ATTRIBUTES)} columns, no dataset.target): give them "
            f"to rdt alone, dp-arena mechanism=rdt mechanism.private_attributes=[{fewest}] ..., "
            "or set dataset.target",
            f"name the columns to synthesize from the others (its columns: {attrs}; "
            f"{fewest!r} has the fewest values, {schema[fewest].size})")
    requested = [requested] if isinstance(requested, str) else list(requested)
    if not requested:
        raise ConfigError("mechanism.private_attributes is empty",
                          f"name at least one of the columns {attrs}")
    unknown = [a for a in requested if a not in attrs]
    if unknown:
        raise ConfigError(f"mechanism.private_attributes: {unknown} not in the schema "
                          f"(columns: {attrs})", "name columns of the dataset (not the id)")
    if len(set(requested)) != len(requested):
        raise ConfigError(f"mechanism.private_attributes lists a column twice: {requested}",
                          "name each private attribute once")
    return requested


def resolve_predictors(schema: Schema, private: list[str],
                       requested: list[str] | None) -> list[str]:
    """The predictor attributes X (default: every attribute that is not private)."""
    attrs = schema.attributes
    if requested is None:
        predictors = [a for a in attrs if a not in private]
    else:
        predictors = [requested] if isinstance(requested, str) else list(requested)
        unknown = [a for a in predictors if a not in attrs]
        if unknown:
            raise ConfigError(f"mechanism.predictors: {unknown} not in the schema "
                              f"(columns: {attrs})", "name columns of the dataset (not the id)")
        overlap = [a for a in predictors if a in private]
        if overlap:
            raise ConfigError(f"mechanism.predictors and private_attributes overlap: {overlap}",
                              "a column is either a predictor or a private attribute")
    if not predictors:
        raise ConfigError("rdt needs at least one predictor attribute",
                          "leave mechanism.predictors=null or name public columns")
    return predictors


def budget_shares(split: list[float] | None, private: list[str]) -> list[float]:
    """Each private attribute's share of the trees' epsilon (default: equal shares)."""
    if split is None:
        return [1.0 / len(private)] * len(private)
    shares = [float(s) for s in split]
    if len(shares) != len(private) or any(not s > 0 for s in shares) or \
            not math.isclose(sum(shares), 1.0, rel_tol=1e-9):
        raise ConfigError(f"mechanism.budget_split must give one positive share per private "
                          f"attribute {private}, summing to 1 (got {split})",
                          f"e.g. mechanism.budget_split=[{', '.join(['0.5'] * 2)}] for two")
    return shares


def attribute_weight_vector(weights: dict[str, float] | str | None, node_attrs: list[str],
                            all_node_attrs: list[str]) -> np.ndarray:
    """Sampling weight of each node attribute from a ``{name: weight}`` setting (default 1;
    names checked against every attribute any forest may split on)."""
    if isinstance(weights, str):
        if weights != SD_ASSOCIATION:
            raise ConfigError(f"mechanism.attribute_weights must be a mapping or "
                              f"{SD_ASSOCIATION!r} (got {weights!r})",
                              "e.g. mechanism.attribute_weights={relationship: 2, fnlwgt: 0}")
        return np.ones(len(node_attrs))
    weights = dict(weights or {})
    unknown = sorted(set(weights) - set(all_node_attrs))
    if unknown:
        raise ConfigError(f"mechanism.attribute_weights: {unknown} are not node attributes",
                          f"use names among {all_node_attrs}")
    bad = {k: v for k, v in weights.items()
           if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0}
    if bad:
        raise ConfigError(f"mechanism.attribute_weights must be finite numbers >= 0 (got {bad})",
                          "e.g. mechanism.attribute_weights={relationship: 2, fnlwgt: 0}")
    return np.array([float(weights.get(a, 1.0)) for a in node_attrs])


def mutual_information(codes: np.ndarray, n_values: int, labels: np.ndarray,
                       n_labels: int) -> float:
    """Empirical mutual information (nats) between two code vectors."""
    if len(codes) == 0:
        return 0.0
    joint = np.bincount(codes * n_labels + labels,
                        minlength=n_values * n_labels).reshape(n_values, n_labels) / len(codes)
    outer = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log(joint[nz] / outer[nz])))


def sd_association_weights(sd_codes: np.ndarray, n_values: np.ndarray, sd_labels: np.ndarray,
                           n_labels: int, floor: float = 0.05) -> np.ndarray:
    """Split weights from the structure data only: each node attribute's mutual information
    with the private attribute in SD, relative to the largest, floored at ``floor``."""
    mi = np.array([mutual_information(sd_codes[:, i], int(n_values[i]), sd_labels, n_labels)
                   for i in range(sd_codes.shape[1])])
    top = mi.max() if len(mi) else 0.0
    return np.maximum(mi / top, floor) if top > 0 else np.ones(len(mi))




# ----- per-attribute collapse rules (the Duke report's Methods 1 and 2) --------------------
def collapse_below_count(sd_codes: np.ndarray, size: int, min_count: int) -> np.ndarray:
    """Map ``code -> collapsed code``: values with at least ``min_count`` SD records keep their
    own code (in their original order); all values below it share the last code (none is
    added when no value is below)."""
    counts = np.bincount(sd_codes, minlength=size)
    kept = np.flatnonzero(counts >= min_count)
    mapping = np.full(size, len(kept), dtype=np.int64)
    mapping[kept] = np.arange(len(kept))
    return mapping


def code_values(column: Column) -> np.ndarray:
    """The number each code stands for: a numeric column's bin lower edge, a categorical
    column's value (which must be a number)."""
    if column.kind == "numeric":
        return np.array([column.bin_bounds(c)[0] for c in range(column.size)], dtype=float)
    values = list(column.values or ())
    if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in values):
        raise ConfigError(f"mechanism.regroup_widths: column {column.name!r} has non-numeric "
                          f"values (e.g. {values[:3]}), so it cannot be regrouped by width",
                          "regroup numeric columns only, or use mechanism.collapse_min_counts")
    return np.asarray(values, dtype=float)


def regroup_codes(values: np.ndarray, width: float) -> np.ndarray:
    """Map ``code -> group``: codes whose value lies in the same ``width``-wide band from the
    smallest value share a group; groups numbered densely in value order."""
    band = np.floor((values - values.min()) / width + 1e-9).astype(np.int64)
    return np.unique(band, return_inverse=True)[1].astype(np.int64)


def attribute_collapse(column: Column, sd_codes: np.ndarray, collapse_above: int | None,
                       min_count: int, own_min_count: int | None,
                       width: float | None) -> np.ndarray:
    """An attribute's collapse map: regrouped by ``width`` and/or threshold-collapsed by
    ``own_min_count`` when either is set for it, else the generic rule."""
    size = column.size
    if own_min_count is None and width is None:
        return collapse_rare_values(sd_codes, size, collapse_above, min_count)
    mapping = np.arange(size) if width is None else regroup_codes(code_values(column), width)
    if own_min_count is None:
        return mapping
    return collapse_below_count(mapping[sd_codes], int(mapping.max()) + 1, own_min_count)[mapping]


def per_attribute_setting(key: str, mapping: Any, attributes: list[str], positive_int: bool,
                          example: str) -> dict[str, float]:
    """A ``{attribute: number}`` setting checked: known attributes, numbers > 0 (integers
    for counts)."""
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise ConfigError(f"mechanism.{key} must be a mapping {{attribute: number}} "
                          f"(got {mapping!r})", f"e.g. mechanism.{key}={example}")
    unknown = sorted(set(mapping) - set(attributes))
    if unknown:
        raise ConfigError(f"mechanism.{key}: {unknown} are not node attributes",
                          f"use names among {attributes}")
    ok = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1) if positive_int \
        else (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) and v > 0)
    bad = {k: v for k, v in mapping.items() if not ok(v)}
    if bad:
        kind = "integers >= 1" if positive_int else "finite numbers > 0"
        raise ConfigError(f"mechanism.{key} values must be {kind} (got {bad})",
                          f"e.g. mechanism.{key}={example}")
    return dict(mapping)


def report_collapse_method(method: int, pay: str, agency: str | None = None,
                           occupation: str | None = None,
                           pay_widths: tuple[float, float] = (10_000, 25_000)) -> dict[str, Any]:
    """The ``rdt`` settings of the Duke report's collapse Method 1 or 2 for a dataset whose
    columns ``pay``, ``agency`` and ``occupation`` play the report's Pay, Agency and
    Occupation. Method 1 regroups only ``pay`` (``pay_widths[0]`` wide, $10,000 in the
    report's units) and adjusts nothing else (``collapse_above=None``); Method 2 regroups
    ``pay`` by ``pay_widths[1]`` ($25,000) and combines the ``agency`` values with fewer than
    500 structure records and the ``occupation`` values with fewer than 200 (those not given
    are left alone), nothing else."""
    if method not in (1, 2):
        raise ConfigError(f"the Duke report has collapse Methods 1 and 2 (got {method!r})",
                          "use method=1 or method=2")
    settings: dict[str, Any] = {"collapse_above": None, "collapse_min_count": None,
                                "regroup_widths": {pay: pay_widths[method - 1]},
                                "collapse_min_counts": None}
    if method == 2:
        rules = {a: n for a, n in ((agency, 500), (occupation, 200)) if a is not None}
        settings["collapse_min_counts"] = rules or None
    return settings
