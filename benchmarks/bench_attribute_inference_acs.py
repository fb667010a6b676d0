"""Benchmark: the ``crc_acs`` preset of the attribute-inference metric on NIST's ACS excerpt.

    python benchmarks/bench_attribute_inference_acs.py

Until the harness loads the excerpt as a dataset, this builds one in-process from
``acs-national2019.csv`` in the shared data folder: the preset's eight columns (quasi-identifiers
AGEP, SEX, RAC1P, MSP, HOUSING_TYPE; secrets EDU, PINCP_DECILE, OWN_RENT), each value (``N``
included) a category, a seeded 80/20 split into training and held-out persons. It scores, with
the metric's default settings (2,000 targets a side), three releases of the training part:
the rows themselves (``copy``: the release the preset's source measured, 0.20-0.28), a
bootstrap of them (what ``resample`` does) and each column shuffled on its own (what
``independent`` approximates: no link between a person's columns), and prints every secret's
residual risk with its 95% bootstrap CI and the metric's seconds (process time).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset, shared_data_dir
from dp_arena.data.schema import Schema
from dp_arena.metrics import make_metric
from dp_arena.metrics.attribute_inference import PRESETS


def acs_dataset(seed: int = 0, heldout_share: float = 0.2) -> Dataset:
    preset = PRESETS["crc_acs"]
    columns = [*preset.quasi_identifiers, *preset.secrets]
    raw = pd.read_csv(shared_data_dir() / "acs-national2019.csv", dtype=str, usecols=columns)
    codes = pd.DataFrame({c: pd.factorize(raw[c], sort=True)[0] for c in columns})
    schema = Schema.from_domain({c: int(codes[c].max()) + 1 for c in columns})
    held = np.random.default_rng(seed).random(len(codes)) < heldout_share
    return Dataset("acs", schema, codes[~held].reset_index(drop=True),
                   heldout=codes[held].reset_index(drop=True))


def main() -> None:
    data = acs_dataset()
    metric = make_metric("attribute_inference", {})
    reference = metric.reference(data)
    rng = np.random.default_rng(1)
    training = data.private
    releases = {
        "copy": training,
        "resample": training.iloc[rng.integers(0, len(training), len(training))],
        "independent": pd.DataFrame({c: rng.permutation(training[c].to_numpy())
                                     for c in training.columns})}
    print(f"acs excerpt, columns {reference.columns}")
    for name, release in releases.items():
        started = time.process_time()
        scores = metric.score_with(reference, data, release).scores
        seconds = time.process_time() - started
        for secret in reference.columns.secrets:
            key = f"risk_{secret}"
            print(f"  {name:12s} {secret:13s} {scores[key]:+.3f} "
                  f"[{scores[key + '_lo']:+.3f}, {scores[key + '_hi']:+.3f}]")
        print(f"  {name:12s} seconds {seconds:.2f}")


if __name__ == "__main__":
    main()
