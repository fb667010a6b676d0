"""The mechanism interface and the helpers every mechanism shares.

A mechanism is a dataclass whose fields are its hyperparameters (set from
``dp_arena/conf/mechanism/NAME.yaml`` and sweepable as ``mechanism.FIELD=...``); what each may be is
declared in ``parameter_constraints`` and checked when it is built. The runner calls
``fit_sample(data, budget, release, rng)``: every privacy-relevant random draw goes through
``release`` (:class:`dp_arena.privacy.release.Releaser`: it charges the run's ledger and draws the
noise in one call), and the mechanism calls ``release.done()`` after its last noisy release.
``rng`` is for post-processing only (clipping order, sampling from a released model, ids).

A mechanism keeps no state of a run: public facts about a run (what a wrapper chose, a
mechanism's diagnostics) travel with its output table (:func:`with_output_facts`; the runner
reads them with :func:`output_facts` and logs them as tags and artifact files).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError, NotApplicable
from dp_arena.params import Constraint, check_parameters
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser

#: Non-private reference points: ``ceiling`` (reads private data, epsilon = inf),
#: ``public`` (public data only, epsilon = 0), ``floor`` (no data, epsilon = 0).
Reference = Literal["ceiling", "public", "floor"]


@dataclass
class Mechanism(ABC):
    """Base class: subclasses are dataclasses; their fields are the hyperparameters."""

    name: ClassVar[str]
    #: ``None`` for DP mechanisms; a :data:`Reference` kind for non-private reference points.
    reference: ClassVar[Reference | None] = None
    #: Privacy units the mechanism supports.
    units: ClassVar[tuple[str, ...]] = ("record", "user")
    #: ``ledger``: every noisy release goes through ``release`` and the ledger checks the
    #: composition; ``declared``: the budget is declared by code outside the release API (an
    #: external contestant) and recorded as one charge nobody checks (tagged, marked on boards).
    accounting: ClassVar[str] = "ledger"
    #: True when the mechanism's proven bound is its privacy filter over the whole budget
    #: (adaptively chosen noise scales, as AIM's), not the ledger's composition of its
    #: charges: the run then reports the budget as spent, under every accountant.
    filter_bound: ClassVar[bool] = False
    #: What each setting may be (:mod:`dp_arena.params`: ``Interval``, ``OneOf``, ``Satisfies``,
    #: a type, ``None`` for null; any one suffices), checked when the mechanism is built,
    #: so a sweep refuses a bad value before launch. Checks that need the data stay in the
    #: mechanism (``check_applicable``, ``fit_sample``).
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}

    def __post_init__(self) -> None:
        check_parameters(self, "mechanism")

    @abstractmethod
    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        """Return a synthetic table in ``data.schema`` (all columns, including the id column)."""

    @property
    def is_private(self) -> bool:
        return self.reference is None

    def check_applicable(self, data: Dataset) -> None:
        """Raise :class:`~dp_arena.errors.NotApplicable` with the reason when this mechanism
        cannot run on ``data`` at all (privacy unit, public part, data shape), whatever its
        settings. Reads only public facts: the schema, the unit and whether a public part
        exists. Subclasses extend it; ``fit_sample`` may assume it passed."""
        if data.unit not in self.units:
            raise NotApplicable(f"{self.name} supports {'/'.join(self.units)}-level privacy and "
                                f"dataset {data.name!r} is {data.unit}-level",
                                f"use a dataset with unit in {list(self.units)}")

    def setting_tags(self) -> dict[str, str]:
        """Public facts of this mechanism's settings to tag each of its runs with (a pure
        function of the settings, e.g. how it reads epsilon). Facts of one fit travel with its
        output table instead (:func:`with_output_facts`): a mechanism holds no run state."""
        return {}

    def source_modules(self) -> tuple[str, ...]:
        """The modules whose source this mechanism runs (part of the run's code
        fingerprint, with what they import); a wrapper adds the wrapped mechanism's."""
        return (type(self).__module__,)

    def memory_mb(self, data: Dataset) -> tuple[float, str] | None:
        """The most memory (MB) this mechanism's own caps let a fit on ``data`` allocate
        beyond the loaded data and the runtime, with how that figure is made; from public
        facts only (the schema and the settings). A run whose limit is below it is refused
        before it starts (:func:`dp_arena.run.preflight.check_memory_caps`). Default: no
        bound stated (``None``)."""
        return None

    def notes(self, data: Dataset) -> tuple[str, ...]:
        """What this mechanism will trim or cap on ``data`` because of its settings (e.g.
        marginals over a memory cap), from public facts only (the schema). A sweep says each
        note once before it starts, instead of every run repeating it."""
        return ()


#: The key of ``DataFrame.attrs`` under which an output table carries its run's facts.
OUTPUT_FACTS = "dp_arena.output_facts"


def with_output_facts(table: pd.DataFrame, tags: dict[str, str] | None = None,
                      files: dict[str, Any] | None = None) -> pd.DataFrame:
    """``table`` (a mechanism's output) carrying public facts about the run that made it:
    ``tags`` for the run's MLflow tags, ``files`` (artifact path -> JSON-able object) for its
    artifacts; added to any the table already carries. Only public or DP-released facts."""
    facts = table.attrs.setdefault(OUTPUT_FACTS, {"tags": {}, "files": {}})
    facts["tags"].update(tags or {})
    facts["files"].update(files or {})
    return table


def output_facts(table: pd.DataFrame) -> tuple[dict[str, str], dict[str, Any]]:
    """The ``(tags, files)`` an output table carries (:func:`with_output_facts`), taken off
    the table (so later copies do not carry them); none for anything but a table."""
    attrs = getattr(table, "attrs", None)
    facts = (attrs.pop(OUTPUT_FACTS, None) if isinstance(attrs, dict) else None) or {}
    return dict(facts.get("tags", {})), dict(facts.get("files", {}))


def contribution_bound(data: Dataset, max_contrib: int | None) -> int:
    """Rows a person may contribute after bounding: 1 for record-level data, else
    ``max_contrib`` (default: the dataset's ``max_records_per_individual``)."""
    if data.unit == "record":
        return 1
    bound = max_contrib if max_contrib is not None else data.max_records_per_individual
    if bound is None or int(bound) < 1:
        raise ConfigError(
            "user-level data needs a contribution bound",
            "set mechanism.max_contrib (rows kept per person) or the dataset's "
            "max_records_per_individual",
        )
    return int(bound)


def require_delta(name: str, budget: Budget, example: str = "1e-9",
                  why: str = "measures with Gaussian noise") -> None:
    """A mechanism whose noise or accounting needs delta > 0 (Gaussian noise, a zCDP
    conversion): one clear error at delta 0, before anything is spent."""
    if budget.delta <= 0:
        raise ConfigError(f"{name} {why} and needs delta > 0",
                          f"set privacy.delta > 0 (e.g. {example})")


def clip_contributions(df: pd.DataFrame, id_column: str, bound: int,
                       rng: np.random.Generator) -> pd.DataFrame:
    """Keep at most ``bound`` rows per person, chosen uniformly at random (row clipping).

    After clipping, adding or removing one person changes any count query by at most
    ``bound`` (L1) and any histogram by at most ``bound`` in L1 and in L2.
    """
    order = rng.permutation(len(df))
    keep = order[occurrence_rank(df[id_column].to_numpy()[order]) < bound]
    if df.index.is_monotonic_increasing:  # the usual case: positions sort as labels do
        return df.iloc[np.sort(keep)]
    return df.iloc[keep].sort_index()


def occurrence_rank(values: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same value (0 for a value's
    first occurrence): pandas' ``groupby(...).cumcount()`` in NumPy, about 8x faster on the
    small tables an audit runs thousands of times. A missing value (no person) gets
    ``len(values)``, beyond any bound, as pandas leaves it out of every group."""
    codes = pd.factorize(values)[0]  # -1 for a missing value
    by_value = np.argsort(codes, kind="stable")  # positions grouped by value, in order
    sorted_codes = codes[by_value]
    starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
    first = np.repeat(starts, np.diff(np.append(starts, len(codes))))
    rank = np.empty(len(codes), dtype=np.int64)
    rank[by_value] = np.arange(len(codes)) - first
    rank[codes < 0] = len(codes)
    return rank


def bounded_private(data: Dataset, bound: int, rng: np.random.Generator) -> pd.DataFrame:
    """The private table with every person clipped to ``bound`` rows (record-level data is
    returned as it is: each person is one row)."""
    if data.unit == "record":
        return data.private
    return clip_contributions(data.private, data.id_column, bound, rng)  # type: ignore[arg-type]


def assign_ids(n_rows: int, data: Dataset, rng: np.random.Generator) -> np.ndarray | None:
    """Synthetic person ids for ``n_rows`` rows, using public data only (no privacy cost).

    Group sizes follow the public trips-per-person distribution when public data with the id
    column exists, otherwise every row is its own person. Ids are fresh integers inside the id
    column's [min, max] range. Returns ``None`` when the schema has no id column.
    """
    id_col = data.schema.id_column
    if id_col is None:
        return None
    if data.public is not None and id_col in data.public and len(data.public):
        sizes_pool = data.public.groupby(id_col).size().to_numpy()
        mean = max(float(sizes_pool.mean()), 1.0)
        draws = rng.choice(sizes_pool, size=int(np.ceil(n_rows / mean * 1.5)) + 10)
        while draws.sum() < n_rows:
            draws = np.concatenate([draws, rng.choice(sizes_pool, size=len(draws))])
        sizes = draws[: int(np.searchsorted(np.cumsum(draws), n_rows)) + 1]
    else:
        sizes = np.ones(n_rows, dtype=np.int64)
    per_row = np.repeat(fresh_ids(len(sizes), data, rng), sizes)[:n_rows]
    return rng.permutation(per_row)


def fresh_ids(n_people: int, data: Dataset, rng: np.random.Generator) -> np.ndarray:
    """``n_people`` distinct random values of the id column, inside its [min, max] range."""
    col = data.schema[str(data.schema.id_column)]
    span = int(col.max) - int(col.min) + 1  # type: ignore[arg-type]
    if n_people > span:
        raise ConfigError(f"cannot give {n_people} synthetic people distinct {col.name} values "
                          f"in [{col.min}, {col.max}]", "widen the id column's range")
    return int(col.min) + rng.choice(span, size=n_people, replace=False)  # type: ignore[arg-type]


def finish(data: Dataset, codes: pd.DataFrame, rng: np.random.Generator,
           extra: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> pd.DataFrame:
    """Codes -> schema values (numeric values drawn inside their bin from public values when
    there are any), optional ``extra`` columns, person ids from public data only."""
    schema = data.schema
    out = schema.decode(codes, rng, reference=data.public)
    if extra is not None:
        out = extra(out)
    ids = assign_ids(len(out), data, rng)
    if ids is not None:
        out.insert(0, schema.id_column, ids)  # type: ignore[arg-type]
    return out[schema.names].reset_index(drop=True)
