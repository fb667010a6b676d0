"""Shared by the smartnoise-synth adapters (run inside the ``smartnoise`` environment).

- **transformer**: a ``TableTransformer`` of one ``LabelTransformer`` per column, fitted on a
  frame that lists every code ``0..size-1`` of the task's domain (the schema), never on the
  data; ``preprocessor_eps=0`` (nothing is spent or learned on preprocessing);
- **budget**: smartnoise converts (epsilon, delta) to zCDP with its own ``cdp_rho``; of that
  rho the adapter keeps the share ``row_count_share`` (option, default 1%) for the number of
  synthetic rows and gives ``Synthesizer.create(NAME, epsilon', delta)`` the largest epsilon'
  (found by bisection) whose ``cdp_rho`` is at most the rest; the two parts compose in zCDP to
  at most the whole rho, which ``cdp_rho`` found to satisfy (epsilon, delta). Settings are
  smartnoise's defaults unless ``options`` say otherwise;
- **rows**: smartnoise samples ``num_rows`` by default, the *exact* private row count, which
  would then be written in every synthetic table. The adapter draws the count instead: the
  number of private records (sensitivity 1: one record added or removed) plus OpenDP's
  discrete Gaussian (``make_gaussian`` on integers, the environment's opendp) at the kept rho,
  clipped to the task's public bounds. (Inside its fit smartnoise still normalizes the model to
  the exact count, ``known_total``: the library's behaviour, within the budget it declares.)
  The option ``sampling`` (``protocol.SAMPLING``) chooses how the fitted mbi model draws
  them: ``sample`` (default: i.i.d. records, as dp-arena's own mbi mechanisms draw them;
  smartnoise has no setting for it, so the adapter hands ``sample()`` a model whose
  ``synthetic_data`` passes ``method="sample"``) or ``round`` (smartnoise's behaviour: mbi
  1.1.0's rounding, whose row-order correlation costs MST about 85 kmarginal points on adult
  at epsilon 1).

The GANs and MWEM (``smartnoise_dpctgan.py``, ``smartnoise_patectgan.py``,
``smartnoise_mwem.py``; :func:`fit_and_write_pure_split`):

- **transformer**: as above, fitted on the schema's listing; the GANs get smartnoise's own
  ``gan`` style (a ``LabelTransformer`` then a ``OneHotEncoder`` per column);
- **budget**: basic composition, no zCDP: of epsilon, ``row_count_share`` (default 1%) goes to
  the row count and the rest to ``Synthesizer.create(NAME, epsilon', delta)`` (MWEM: pure
  epsilon, no delta; DP-CTGAN: opacus 0.14's RDP accountant at that delta; PATE-CTGAN: its
  moments accountant at that delta); the two parts add up to (epsilon, delta);
- **rows**: the number of private records plus OpenDP's discrete Laplace noise (``make_laplace``
  on integers, sensitivity 1) at ``epsilon * row_count_share``, clipped to the public bounds;
- **MWEM's domain and size** (:func:`schema_histograms`): smartnoise's MWEM sizes each
  histogram from the *observed* minimum and maximum code of each column and starts from a
  uniform histogram holding the *exact* number of rows; the adapter builds the histograms on the
  schema's sizes (codes ``0..size-1``) and starts from the noisy row count, and fills MWEM's
  data-dependent defaults (``iterations``: ``10 * ceil(log10 n)``, ``marginal_width``: 3 above
  10,000 rows, else 2) from the noisy count too. Nothing else of the data is read outside
  MWEM's own exponential and Laplace mechanisms.
- **The GANs read the data outside their budget** (the adapter does not close it; declared in
  their claims): smartnoise's ``DataSampler`` takes each column's exact category frequencies
  from the private table to draw the conditional vectors the generator is trained and sampled
  with (PATE-CTGAN's ``sample`` draws them from private rows directly); the number of private
  rows sets opacus's sampling rate (DP-CTGAN) and the number of teachers (PATE-CTGAN).
"""

from __future__ import annotations

import math

import numpy as np
from protocol import (
    bounded_rows,
    laplace_row_count,
    read_codes,
    sampling_option,
    split_epsilon,
    task_file,
    write_codes,
    write_report,
)


def domain_transformer(columns: list[str], domain: dict[str, int], style: str = "cube"):
    """A ``TableTransformer`` fitted on every code ``0..size-1`` of each column (the schema),
    never on the data: ``cube`` (smartnoise's style for MST, AIM, MWEM: a ``LabelTransformer``
    per column) or ``gan`` (a ``LabelTransformer`` then a ``OneHotEncoder``)."""
    import pandas as pd
    from snsynth.transform import LabelTransformer, TableTransformer

    widest = max(domain.values())
    listing = pd.DataFrame({c: np.arange(widest) % domain[c] for c in columns})
    if style == "gan":
        from snsynth.transform import ChainTransformer, OneHotEncoder

        parts = [ChainTransformer([LabelTransformer(nullable=False), OneHotEncoder()])
                 for _ in columns]
    else:
        parts = [LabelTransformer(nullable=False) for _ in columns]
    transformer = TableTransformer(parts)
    transformer.fit(listing, epsilon=0.0)
    return transformer


#: The share of smartnoise's rho the adapter keeps for the number of synthetic rows.
ROW_COUNT_SHARE = 0.01
#: Bisection steps for epsilon' (each calls ``cdp_rho``, about 0.4 s): epsilon' is within
#: epsilon / 2**14 below the largest that fits, i.e. smartnoise gets at most that much less.
SPLIT_STEPS = 14


def split_budget(epsilon: float, delta: float, share: float) -> tuple[float, float]:
    """(epsilon' for smartnoise, rho for the row count): ``cdp_rho(epsilon', delta)`` is at
    most ``(1 - share)`` of ``cdp_rho(epsilon, delta)``, and the count gets the rest (so at
    least ``share`` of it)."""
    from snsynth.utils import cdp_rho

    if not 0 < share < 1:
        raise ValueError(f"row_count_share must be between 0 and 1 (got {share!r})")
    whole = cdp_rho(epsilon, delta)
    low, low_rho, high = 0.0, 0.0, epsilon
    for _ in range(SPLIT_STEPS):
        middle = (low + high) / 2
        rho = cdp_rho(middle, delta)
        if rho <= (1 - share) * whole:
            low, low_rho = middle, rho
        else:
            high = middle
    if low == 0.0:
        raise ValueError("no epsilon leaves the row count its share")
    return low, whole - low_rho


def private_row_count(records: int, rho: float) -> int:
    """``records`` plus OpenDP's discrete Gaussian noise calibrated to rho-zCDP at
    sensitivity 1 (one record added or removed)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    scale = math.sqrt(1 / (2 * rho)) * (1 + 1e-9)  # a hair wider: the map must not exceed rho
    measurement = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)
    if not measurement.map(1) <= rho:
        raise ValueError("the row count's noise does not fit its budget")
    return int(measurement(int(records)))


def fit_and_write(task: dict, synth_name: str) -> None:
    import pandas as pd
    from snsynth import Synthesizer

    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    codes = read_codes(task_file(task, "private"), columns)
    private = pd.DataFrame(codes, columns=columns)
    options = dict(task["options"])
    method = sampling_option(options)
    share = float(options.pop("row_count_share", ROW_COUNT_SHARE))
    delta = float(budget["delta"])
    epsilon, count_rho = split_budget(float(budget["epsilon"]), delta, share)
    synth = Synthesizer.create(synth_name, epsilon=epsilon, delta=delta, **options)
    synth.fit(private, transformer=domain_transformer(columns, domain), preprocessor_eps=0.0)
    if method != "round":
        synth.synthesizer = DrawsWith(synth.synthesizer, method)
    rows = bounded_rows(float(private_row_count(len(codes), count_rho)), task)
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


# ----- the GANs and MWEM: an epsilon split by basic composition (protocol.split_epsilon) ----
def mwem_defaults(options: dict, rows: float) -> dict:
    """MWEM's data-dependent defaults, filled from the noisy row count ``rows`` (smartnoise
    computes them from the exact one): ``iterations`` ``10 * ceil(log10 rows)``,
    ``marginal_width`` 3 above 10,000 rows, else 2. Given options win."""
    rows = max(float(rows), 10.0)
    given = {k: v for k, v in options.items() if v is not None}
    return {"iterations": math.ceil(math.log10(rows)) * 10,
            "marginal_width": 3 if rows > 10_000 else 2, **given}


def schema_histograms(synth, sizes: list[int], total: float):
    """Replace smartnoise MWEM's ``_histogram_from_data_attributes`` (bins from the observed
    minimum and maximum) and ``_initialize_a`` (a uniform start holding the exact row count)
    on the instance ``synth``: histograms over the schema's codes ``0..size-1`` of each column,
    a uniform start holding ``total`` (the noisy row count)."""
    from snsynth.mwem import Histogram

    def histograms(data, splits=()):
        out = []
        for split in splits:
            dims = [int(sizes[i]) for i in split]
            for i in split:
                synth.mins_maxes[str(i)] = (0, int(sizes[i]) - 1)
                synth.scale[str(i)] = 1
            edges = [np.arange(d + 1) - 0.5 for d in dims]
            counts, bins = np.histogramdd(data[:, list(split)], bins=edges)
            out.append(Histogram(counts, dims, bins, split))
        return out

    def initial(histogram, dimensions):
        return np.full(np.shape(histogram), float(total) / float(np.prod(dimensions)))

    def sample(samples):
        # smartnoise's own draws one record at a time (np.random.choice with p, per record);
        # the same independent draws per histogram, vectorized (post-processing)
        parts = []
        for fake, _, split in synth.synthetic_histograms:
            weights = np.ravel(fake) / np.sum(fake)
            cells = np.random.choice(weights.size, size=int(samples), p=weights)
            parts.append(np.stack(np.unravel_index(cells, np.shape(fake)), axis=1))
        combined = np.hstack(parts)
        return synth._transformer.inverse_transform(combined[:, synth._reorder(synth.splits)])

    synth._histogram_from_data_attributes = histograms
    synth._initialize_a = initial
    synth.sample = sample


class OverBudget(ValueError):
    """A library trained past the epsilon it was given (a public line: settings and budget)."""


#: opacus's Renyi orders in smartnoise's DP-CTGAN (``dpctgan.py``).
DPCTGAN_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def dpctgan_spent(records: int, batch_size: int, sigma: float, epochs: int,
                  delta: float) -> float:
    """The epsilon opacus 0.14's accountant gives DP-CTGAN after ``epochs`` epochs: each epoch
    is ``records // batch_size`` iterations of two discriminator steps (fake, then real: opacus
    counts both), sampling rate ``batch_size / records``."""
    from opacus import privacy_analysis

    steps = 2 * epochs * max(records // batch_size, 1)
    rdp = privacy_analysis.compute_rdp(batch_size / records, sigma, steps, DPCTGAN_ALPHAS)
    return float(privacy_analysis.get_privacy_spent(DPCTGAN_ALPHAS, rdp, delta)[0])


def check_dpctgan_spent(synth, records: int, epsilon: float, delta: float) -> None:
    """smartnoise's DP-CTGAN checks its budget only before each epoch, so its last epoch can
    go past it: recompute what it spent (its epochs trained: one per entry of
    ``epsilon_list``, less the entry that stopped it) and refuse to write a model past
    ``epsilon``."""
    checks = list(synth.epsilon_list)
    trained = len(checks) - (1 if checks and checks[-1] > epsilon else 0)
    spent = dpctgan_spent(records, synth._batch_size, synth.sigma, trained, delta)
    if spent > epsilon:
        raise OverBudget(f"DP-CTGAN's last epoch went past its budget (epsilon "
                         f"{epsilon:.3g}); raise sigma or lower epochs")


def fit_and_write_pure_split(task: dict, synth_name: str) -> None:
    """Fit smartnoise's ``dpctgan``, ``patectgan`` or ``mwem`` (module docstring) and write
    the synthetic codes."""
    import pandas as pd
    from snsynth import Synthesizer

    columns, domain = task["columns"], task["domain"]
    budget = task["budget"]
    codes = read_codes(task_file(task, "private"), columns)
    private = pd.DataFrame(codes, columns=columns)
    options = dict(task["options"])
    share = float(options.pop("row_count_share", ROW_COUNT_SHARE))
    epsilon, count_epsilon = split_epsilon(float(budget["epsilon"]), share)
    rows = bounded_rows(float(laplace_row_count(len(codes), count_epsilon)), task)
    if synth_name == "mwem":
        options = mwem_defaults(options, rows)
        synth = Synthesizer.create("mwem", epsilon=epsilon, **options)
        schema_histograms(synth, [int(domain[c]) for c in columns], rows)
        style = "cube"
    else:
        synth = Synthesizer.create(synth_name, epsilon=epsilon, delta=float(budget["delta"]),
                                   **{"verbose": False, "cuda": False, **options})
        style = "gan"
    synth.fit(private, transformer=domain_transformer(columns, domain, style),
              preprocessor_eps=0.0)
    if synth_name == "dpctgan":
        check_dpctgan_spent(synth, len(codes), epsilon, float(budget["delta"]))
    sample = synth.sample(rows)
    frame = sample if isinstance(sample, pd.DataFrame) else pd.DataFrame(sample, columns=columns)
    write_codes(task, np.asarray(frame[columns], dtype=np.int64))
    write_report(task, {})
