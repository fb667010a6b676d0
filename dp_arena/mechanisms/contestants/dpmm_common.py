"""Shared by the dpmm adapters (run inside the ``dpmm`` environment: dpmm 0.1.9, its OpenDP
0.12.1 noise): MST, AIM and PrivBayes as dpmm's ``MSTGM``, ``AIMGM`` and ``PrivBayesGM``.

- **domain** (given): the models are built with ``domain={column: size}`` from the task, and
  fitted on the codes directly (no ``TableBinner``: dpmm's pipelines would otherwise bin the
  data themselves, by default with ``priv-tree`` at a ``proc_epsilon`` of their own). dpmm
  reads a domain from the data (``max() + 1``) only when none is given.
- **budget**: dpmm converts (epsilon, delta) itself (``cdp_rho``, McKenna et al.'s
  conversion). MST and AIM run in zCDP at that rho (MST: thirds for 1-way measurements,
  selection and 2-way measurements; AIM: 10% of each round to selection, 90% to measurement);
  PrivBayes composes an exponential-mechanism structure search at epsilon/2 (pure) with
  Gaussian measurements at ``cdp_rho(epsilon/2, delta)``. The Gaussian noise is OpenDP's
  (``make_gaussian``, one draw per cell); the exponential mechanisms draw with numpy. Delta
  must be positive. Every model's random state is left unseeded (the operating system's
  randomness).
- **what each reads outside its budget**: MST and AIM nothing (the row count is the model's
  noisy total); dpmm's PrivBayes calibrates its exponential mechanism's sensitivity to the
  exact private row count (PrivBayes Lemma 1, ``n`` taken as public).
- **rows**: the fitted model's noisy total, clipped to the task's public bounds, drawn with
  the option ``sampling`` (``protocol.SAMPLING``): ``sample`` (default, i.i.d. records) or
  ``round`` (dpmm's default, its copy of mbi 1.1's randomized rounding); dpmm's domain
  compression (on noisy 1-way answers only) is reversed after drawing.
- **cores**: ``n_jobs=1`` unless ``options`` say otherwise (dpmm's default is every core but
  one, with the data pickled to each worker).

Other ``options`` are passed to the model's constructor (e.g. ``n_iters``, ``degree``,
``max_model_size``, ``compress``).
"""

from __future__ import annotations

import numpy as np
from protocol import (
    bounded_rows,
    read_codes,
    sampling_option,
    task_file,
    write_codes,
    write_report,
)

#: Algorithm name -> (dpmm module, class).
MODELS = {"MST": ("dpmm.models.mst", "MSTGM"), "AIM": ("dpmm.models.aim", "AIMGM"),
          "PrivBayes": ("dpmm.models.priv_bayes", "PrivBayesGM")}


def model_class(name: str):
    import importlib

    module, cls = MODELS[name]
    return getattr(importlib.import_module(module), cls)


def fit_and_write(task: dict, algorithm_name: str) -> None:
    import pandas as pd

    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    if not budget["delta"] > 0:
        raise ValueError("dpmm's models convert their budget to zCDP and need delta > 0")
    codes = read_codes(task_file(task, "private"), columns)
    frame = pd.DataFrame(codes, columns=columns)
    options = dict(task["options"])
    method = sampling_option(options)
    options.setdefault("n_jobs", 1)
    sizes = {c: int(domain[c]) for c in columns}
    model = model_class(algorithm_name)(epsilon=float(budget["epsilon"]),
                                        delta=float(budget["delta"]), domain=sizes, **options)
    model.check_fit(frame)
    model.fit(frame)
    generator = model.generator
    rows = bounded_rows(float(generator.model.total), task)
    synthetic = generator.model.synthetic_data(rows=rows, method=method)
    if generator.compress:
        synthetic = generator.compressor.reverse(synthetic)
    out = synthetic.df[columns].to_numpy().astype(np.int64)
    write_codes(task, out)
    write_report(task, {})
