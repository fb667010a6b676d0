"""Shared by the smartnoise-synth adapters (run inside the ``smartnoise`` environment).

- **transformer**: a ``TableTransformer`` of one ``LabelTransformer`` per column, fitted on a
  frame that lists every code ``0..size-1`` of the task's domain (the schema), never on the
  data; ``preprocessor_eps=0`` (nothing is spent or learned on preprocessing);
- **budget**: ``Synthesizer.create(NAME, epsilon, delta)``: smartnoise's own zCDP conversion
  (``cdp_rho``); settings are smartnoise's defaults unless ``options`` say otherwise;
- **rows**: ``sample()`` with smartnoise's default row count, clipped to the task's public
  bounds; the option ``sampling`` (``protocol.SAMPLING``) chooses how the fitted mbi model
  draws them: ``sample`` (default: i.i.d. records, as dp-arena's own mbi mechanisms draw them;
  smartnoise has no setting for it, so the adapter hands ``sample()`` a model whose
  ``synthetic_data`` passes ``method="sample"``) or ``round`` (smartnoise's behaviour: mbi
  1.1.0's rounding, whose row-order correlation costs MST about 85 kmarginal points on adult
  at epsilon 1). Note: smartnoise's MST and AIM fit with ``known_total`` and sample ``num_rows``,
  both the *exact* private row count (the library's behaviour, not DP for that one count).
"""

from __future__ import annotations

import numpy as np
from protocol import (bounded_rows, read_codes, sampling_option, task_file, write_codes,
                      write_report)


def domain_transformer(columns: list[str], domain: dict[str, int]):
    import pandas as pd
    from snsynth.transform import LabelTransformer, TableTransformer

    widest = max(domain.values())
    listing = pd.DataFrame({c: np.arange(widest) % domain[c] for c in columns})
    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in columns])
    transformer.fit(listing, epsilon=0.0)
    return transformer


def fit_and_write(task: dict, synth_name: str) -> None:
    import pandas as pd
    from snsynth import Synthesizer

    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    codes = read_codes(task_file(task, "private"), columns)
    private = pd.DataFrame(codes, columns=columns)
    options = dict(task["options"])
    method = sampling_option(options)
    synth = Synthesizer.create(synth_name, epsilon=float(budget["epsilon"]),
                               delta=float(budget["delta"]), **options)
    synth.fit(private, transformer=domain_transformer(columns, domain), preprocessor_eps=0.0)
    if method != "round":
        synth.synthesizer = DrawsWith(synth.synthesizer, method)
    rows = bounded_rows(float(synth.num_rows), task)
    sample = synth.sample(rows)
    out = np.asarray(pd.DataFrame(sample, columns=columns) if not isinstance(
        sample, pd.DataFrame) else sample[columns], dtype=np.int64)
    write_codes(task, out)
    write_report(task, {})


class DrawsWith:
    """A fitted mbi model whose ``synthetic_data`` draws with ``method`` (smartnoise's MST and
    AIM call ``self.synthesizer.synthetic_data(rows=...)`` with mbi's default, ``round``)."""

    def __init__(self, model, method: str) -> None:
        self.model, self.method = model, method

    def synthetic_data(self, rows=None):
        return self.model.synthetic_data(rows=rows, method=self.method)
