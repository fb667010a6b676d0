"""The held-out split of privacy units: persons of the private population kept away from every
mechanism, schema proposal and tuning step, read by scores only.

Algorithms
----------
- :func:`holdout_mask` (record- and user-level tables, ``dataset.holdout_fraction`` /
  ``dataset.split_seed``; ``dp-arena-schema --holdout-fraction / --split-seed``): a uniformly
  random set of ``round(fraction x P)`` of the table's ``P`` persons (rows at record level;
  distinct values of the id column, in sorted order, at user level: a person's rows go
  together) drawn without replacement from ``numpy.random.default_rng([HOLDOUT_STREAM,
  split_seed])``, a stream of its own (the public split and ``max_rows`` draw from
  ``default_rng(split_seed)``). The draw depends on the data only through the number of rows
  or the sorted list of person ids, and the split itself is never released.
- :func:`simulated_heldout_taxis` (``taxi_sim``, ``dataset.n_heldout``): held-out taxis are
  not cut out of the private year (that would change the Sprint 3 scoring table) but
  simulated as more taxis of the same scoring year
  (:func:`dp_arena.data.taxi.sim.simulate_trips`) from an independent seed stream, the third
  child of ``SeedSequence(seed)`` (the private and public years use the first two), then
  relabelled (:func:`with_fresh_ids`) with distinct ids of the year's id range that no private
  taxi holds, drawn from the same stream: the private table is unchanged and no held-out taxi
  shares an id with a private one.

Privacy argument
----------------
Held-out persons are private: they are in ``Dataset.heldout``, which only scores read, and
they never reach a mechanism, a proposal, a tuning step or the ledger's person count
(:meth:`dp_arena.data.datasets.Dataset.training_view`). The split uses public randomness (a
seed) and no data value, so the training part is a data-independent subset and every DP
guarantee on it holds unchanged (removing persons from the input of a DP mechanism costs no
budget). The split spends nothing and releases nothing; its sizes are not logged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dp_arena.errors import ConfigError

#: the entropy word that separates the holdout's random stream from the public split's
HOLDOUT_STREAM = 38


def checked_fraction(fraction: object, setting: str = "dataset.holdout_fraction") -> float:
    """``fraction`` as a float in [0, 1), else one :class:`ConfigError` naming ``setting``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 <= float(fraction) < 1:
        raise ConfigError(f"{setting} must be a share in [0, 1) (got {fraction!r})",
                          f"use e.g. {setting}=0.2 to hold out 20% of the persons, or 0 for "
                          "no holdout")
    return float(fraction)


def checked_seed(seed: object, setting: str = "dataset.split_seed") -> int:
    """``seed`` as a non-negative integer, else one :class:`ConfigError`."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"{setting} must be a non-negative integer (got {seed!r})",
                          f"use e.g. {setting}=0")
    return int(seed)


def holdout_rng(seed: int) -> np.random.Generator:
    """The holdout's own random stream for ``split_seed`` (public randomness)."""
    return np.random.default_rng([HOLDOUT_STREAM, checked_seed(seed)])


def holdout_mask(table: pd.DataFrame, fraction: float, seed: int,
                 id_column: str | None = None) -> np.ndarray:
    """Boolean mask of the held-out rows of ``table``: ``round(fraction x persons)`` persons
    (rows when ``id_column`` is None, else whole persons by id) chosen by the seeded holdout
    stream (module docstring). ``fraction`` 0 holds out nothing. Raises :class:`ConfigError`
    when the split would leave either side without a person (no count in the message)."""
    fraction = checked_fraction(fraction)
    rng = holdout_rng(seed)
    if fraction == 0:
        return np.zeros(len(table), dtype=bool)
    if id_column is None:
        n = len(table)
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, int(round(fraction * n)), replace=False)] = True
    else:
        if id_column not in table.columns:
            raise ConfigError(f"the holdout splits persons by id column {id_column!r}, which "
                              "the table lacks",
                              "name an id column the table has (the schema's id column, or "
                              "dp-arena-schema --id-column), or split rows: dataset.unit=record")
        ids = pd.Index(pd.unique(table[id_column])).sort_values()
        chosen = rng.choice(len(ids), int(round(fraction * len(ids))), replace=False)
        mask = table[id_column].isin(ids[np.sort(chosen)]).to_numpy()
    if not mask.any() or mask.all():
        raise ConfigError(f"holdout_fraction={fraction:g} leaves no person on one side of the "
                          "split",
                          "choose a fraction that keeps persons in both the training and the "
                          "held-out part (e.g. 0.2), or 0 for no holdout")
    return mask


def split_holdout(table: pd.DataFrame, fraction: float, seed: int,
                  id_column: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``(training, heldout)`` parts of ``table`` by :func:`holdout_mask`, each with a fresh
    index; ``heldout`` is None when ``fraction`` is 0 (and ``table`` is returned as is)."""
    if checked_fraction(fraction) == 0:
        checked_seed(seed)
        return table, None
    mask = holdout_mask(table, fraction, seed, id_column)
    return table[~mask].reset_index(drop=True), table[mask].reset_index(drop=True)


def holdout_unit(id_column: str | None) -> str:
    """How a split counts persons, as recorded in a proposal's ``holdout`` block:
    ``record`` or ``user:<id column>`` (the ledger's unit names)."""
    return f"user:{id_column}" if id_column else "record"


def holdout_record(fraction: float, seed: int, id_column: str | None) -> dict[str, object]:
    """The ``proposal.holdout`` block ``dp-arena-schema --holdout-fraction`` writes: the
    settings a run must use so the proposal saw its training rows only."""
    return {"fraction": checked_fraction(fraction), "split_seed": checked_seed(seed),
            "unit": holdout_unit(id_column)}


# ----- taxi_sim: held-out taxis simulated beside the private year --------------------------
def heldout_seed(seed: int) -> np.random.SeedSequence:
    """The held-out taxis' seed: the third child of ``SeedSequence(seed)`` (the private and
    public years of :func:`dp_arena.data.taxi.sim.simulate_years` use the first two)."""
    return np.random.SeedSequence(seed).spawn(3)[2]


def with_fresh_ids(table: pd.DataFrame, id_column: str, id_range: tuple[int, int],
                   taken: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """``table`` with each distinct id replaced by a distinct id of ``id_range`` (inclusive)
    outside ``taken``, drawn from ``rng``; a person's rows keep one id."""
    old = np.unique(table[id_column].to_numpy())
    taken = np.unique(np.asarray(taken))
    lo, hi = id_range
    free = (hi - lo + 1) - int(((taken >= lo) & (taken <= hi)).sum())
    if len(old) > free:
        raise ConfigError(f"taxi_sim: the held-out taxis do not fit the id range [{lo}, {hi}] "
                          "beside the private ones", "simulate fewer trips (dataset.n_heldout)")
    draw = rng.choice(hi - lo + 1, size=min(hi - lo + 1, len(old) + len(taken)),
                      replace=False).astype(np.int64) + lo
    new = draw[~np.isin(draw, taken)][:len(old)]
    out = table.copy()
    out[id_column] = new[np.searchsorted(old, table[id_column].to_numpy())].astype(
        table[id_column].dtype)
    return out


def simulated_heldout_taxis(n_trips: int, seed: int, scoring_year: str,
                            private_ids: np.ndarray, drift: float = 1.0) -> pd.DataFrame:
    """``n_trips`` held-out trips of the scoring year (module docstring): simulated from
    :func:`heldout_seed`, their taxis relabelled with ids no private taxi holds."""
    from dp_arena.data.taxi.sim import simulate_trips, world_of, year_params

    rng = np.random.default_rng(heldout_seed(seed))
    world = world_of(seed, drift)
    trips = simulate_trips(n_trips, rng, str(scoring_year), world)  # type: ignore[arg-type]
    return with_fresh_ids(trips, "taxi_id", year_params(str(scoring_year), world).id_range,
                          private_ids, rng)
