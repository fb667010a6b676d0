"""Adapter: DataSynthesizer's PrivBayes (``DataDescriber.describe_dataset_in_correlated_attribute
_mode`` and ``DataGenerator``, DataSynthesizer 0.1.13). Run as
``python datasynthesizer_privbayes.py FOLDER`` in the ``datasynthesizer`` environment.

Algorithms (what the library does, and what the adapter changes around it):

- **PrivBayes** (Zhang et al. 2017, as DataSynthesizer implements it): a Bayesian network of
  degree ``k`` (option ``degree``, default 1: at DataSynthesizer's default 2 the structure
  search had not finished on adult after 30 minutes) chosen greedily by the exponential
  mechanism on mutual information (epsilon/2), then noisy conditional distributions by Laplace
  noise on counts (epsilon/2), sampled attribute by attribute.
- **domain** (closed by the adapter): the library takes categories from the private file
  (``unique()``), the tables' extent from each column's largest value (``max() + 1``), a
  column's binary-ness from its distinct values, and candidate keys from ``is_unique``; none
  has a parameter in the correlated mode except the categories and the flags. The adapter
  gives every column as an integer, categorical, non-key attribute with its full domain
  (``categorical_attribute_domain_file``: codes ``0..size-1`` from the task), and appends
  ``max(size)`` *public* rows (row ``i`` holds code ``i mod size`` in each column) so that every
  code is present in every column: the library's extents and binary flags then follow the
  task's domain, not the data. Adding fixed public rows keeps neighbouring tables neighbours.
- **bins**: none (every column is given as codes of the task's own bins).
- **row count** (closed for the output, not inside): the library samples whatever count it
  is given; the adapter gives it the private row count plus OpenDP's discrete Laplace noise
  (``make_laplace`` on integers, sensitivity 1) at ``row_count_share`` (option, default 1%)
  of epsilon, clipped to the task's public bounds. The library itself calibrates its
  exponential mechanism's sensitivity (PrivBayes Lemma 1) and its Laplace noise to the exact
  number of rows it reads (PrivBayes takes ``n`` as public): the claim says ``row_count``.
- **budget**: the library gets epsilon' = (1 - share) epsilon (pure DP; delta unused) and
  splits it as above. Its describer also releases per-column noisy distributions at epsilon'
  in the description (independent-attribute mode, run first); the adapter replaces them with
  uniform ones before generating, so they never reach the output (the generator would use
  them only for a parent combination without a conditional, which the full domain rules
  out). What reaches the output: structure (epsilon'/2) + conditionals (epsilon'/2) + the row
  count (share epsilon) = epsilon by basic composition, as the library declares it.
- **seeds**: every DataSynthesizer entry point seeds numpy's global generator, with 0 by
  default (the same noise every fit); the adapter passes a fresh seed from the operating
  system's randomness each time.
- **cores**: the structure search uses ``multiprocessing.Pool()`` (every core, the data
  pickled per task); the adapter runs it in process (option ``processes``: a pool of that
  size instead, when above 1).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np
from protocol import (
    bounded_rows,
    laplace_row_count,
    main,
    read_codes,
    split_epsilon,
    task_file,
    write_codes,
    write_report,
)

#: The share of epsilon the adapter keeps for the number of synthetic rows.
ROW_COUNT_SHARE = 0.01


def fresh_seed() -> int:
    """A seed from the operating system's randomness (numpy's legacy seeding takes 32 bits)."""
    return secrets.randbits(32)


def padding_rows(sizes: list[int]) -> np.ndarray:
    """``max(sizes)`` public rows; row ``i`` holds ``i mod size`` in each column, so every
    code of every column appears (nothing read from data)."""
    count = max(sizes)
    return np.stack([np.arange(count) % size for size in sizes], axis=1).astype(np.int64)


class SerialPool:
    """``multiprocessing.Pool()`` stand-in that maps in this process."""

    def __init__(self, *_args, **_kwargs) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc) -> None:
        return None

    def map(self, function, tasks):
        return [function(task) for task in tasks]


def use_processes(processes: int) -> None:
    """DataSynthesizer's structure search: in process (1) or a pool of ``processes``."""
    import functools
    import multiprocessing

    import DataSynthesizer.lib.PrivBayes as privbayes

    privbayes.Pool = SerialPool if processes <= 1 else functools.partial(
        multiprocessing.Pool, processes)


def uniform_marginals(description: dict) -> dict:
    """The description with every column's (noisy, independent-mode) distribution replaced
    by the uniform one over its domain: public, so nothing of it reaches the output."""
    for info in description["attribute_description"].values():
        size = len(info["distribution_bins"])
        info["distribution_probabilities"] = [1 / size] * size
    return description


def fit_and_write(task: dict) -> None:
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator

    columns, domain = task["columns"], task["domain"]
    options = dict(task["options"])
    degree = int(options.pop("degree", 1))
    if degree < 1:
        raise ValueError("degree must be at least 1 (0 asks DataSynthesizer to choose it from "
                         "the data)")
    share = float(options.pop("row_count_share", ROW_COUNT_SHARE))
    use_processes(int(options.pop("processes", 1)))
    if options:
        raise ValueError(f"unknown options {sorted(options)}")
    model_epsilon, count_epsilon = split_epsilon(float(task["budget"]["epsilon"]), share)
    codes = read_codes(task_file(task, "private"), columns)
    sizes = [int(domain[c]) for c in columns]
    work = Path(task["folder"]) / "tmp"
    padded = work / "padded.csv"
    np.savetxt(padded, np.vstack([codes, padding_rows(sizes)]), fmt="%d", delimiter=",",
               header=",".join(columns), comments="")
    domain_file = work / "domain.json"
    domain_file.write_text(json.dumps({c: list(range(s)) for c, s in zip(columns, sizes)}))
    describer = DataDescriber(category_threshold=max(sizes) + 1)
    describer.describe_dataset_in_correlated_attribute_mode(
        str(padded), k=degree, epsilon=model_epsilon,
        attribute_to_datatype={c: "Integer" for c in columns},
        attribute_to_is_categorical={c: True for c in columns},
        attribute_to_is_candidate_key={c: False for c in columns},
        categorical_attribute_domain_file=str(domain_file), seed=fresh_seed())
    description = work / "description.json"
    description.write_text(json.dumps(uniform_marginals(describer.data_description)))
    rows = bounded_rows(float(laplace_row_count(len(codes), count_epsilon)), task)
    generator = DataGenerator()
    generator.generate_dataset_in_correlated_attribute_mode(rows, str(description),
                                                            seed=fresh_seed())
    out = generator.synthetic_dataset[columns].to_numpy().astype(np.int64)
    write_codes(task, out)
    write_report(task, {"public_rows_added": len(padding_rows(sizes))})


if __name__ == "__main__":
    main(fit_and_write)
