"""The own-table path's defaults (``dataset=csv``, ``run_competition``): a held-out share and a
prediction target, so the board's utility and risk views appear unless the user says otherwise.

- **Held-out share** (:func:`chosen_holdout`): ``dataset.holdout_fraction`` when given; else
  the share a proposal read from this file recorded (``dp-arena-schema --epsilon`` or
  ``--from-private`` proposes from the training rows of the same split, by default
  :data:`DEFAULT_HOLDOUT`); else :data:`DEFAULT_HOLDOUT`.
- **Target** (:func:`chosen_target`): ``dataset.target`` when given (``none``: no prediction
  task); else the first column named like a target (:data:`TARGET_NAMES`, any case), else the
  schema's last categorical column of at least two values.

Both are said on the console as notes of the plan (:func:`setup_notes`). They are public
facts: a setting, and a column name of the schema (a public sample's, a charged DP release's,
or a from-private schema's, which is marked as such everywhere).
"""

from __future__ import annotations

from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError

#: the held-out share of persons a user's table gets unless told otherwise
DEFAULT_HOLDOUT = 0.2
#: column names taken as the prediction target (compared in lower case)
TARGET_NAMES = ("target", "label", "class", "outcome", "y")
#: ``dataset.target`` meaning "no prediction task"
NO_TARGET = "none"


def inferred_target(schema: Schema) -> tuple[str | None, str]:
    """The column to predict when none is given, and why it was chosen (module docstring)."""
    attributes = [c for c in schema.columns if c.kind != "id"]
    for col in attributes:
        if col.name.strip().lower() in TARGET_NAMES:
            return col.name, "named like a target"
    categorical = [c for c in attributes if c.kind == "categorical" and c.present_size >= 2]
    if categorical:
        return categorical[-1].name, "the schema's last categorical column"
    return None, "no categorical column to predict"


def chosen_target(target: str | None, schema: Schema) -> tuple[str | None, str]:
    """``dataset.target`` resolved (None: infer it; ``none``: no task) and a note saying what
    was chosen ("" when the user named the column)."""
    if target is None:
        found, why = inferred_target(schema)
        if found is None:
            return None, (f"no prediction target ({why}): the utility view's ML efficacy is "
                          "n/a (set dataset.target=COLUMN)")
        return found, (f"target {found!r} (inferred: {why}; set dataset.target=COLUMN, or "
                       f"dataset.target={NO_TARGET} for no prediction task)")
    if not isinstance(target, str):
        raise ConfigError(f"dataset.target must be a column name (got {target!r})",
                          f"set dataset.target=COLUMN, or dataset.target={NO_TARGET}")
    if target.strip().lower() == NO_TARGET:
        return None, ""
    return target, ""


def chosen_holdout(fraction: float | None, recorded: float | None) -> tuple[float, str]:
    """``dataset.holdout_fraction`` resolved (None: the proposal's recorded share, else
    :data:`DEFAULT_HOLDOUT`; ``recorded`` is None when no proposal read this file) and a note
    ("" when the user gave it)."""
    if fraction is not None:
        return fraction, ""
    if recorded is None:
        return DEFAULT_HOLDOUT, (f"{DEFAULT_HOLDOUT:.0%} of the persons held out for the "
                                 "utility and risk views (the default; "
                                 "dataset.holdout_fraction=0 for none)")
    if recorded > 0:
        return recorded, (f"{recorded:.0%} of the persons held out for the utility and risk "
                          "views (the share the schema's proposal held out)")
    return 0.0, ("no held-out persons: the schema was proposed from every row, so no utility "
                 "or risk view (propose it again with dp-arena-schema --holdout-fraction "
                 f"{DEFAULT_HOLDOUT:g})")


def setup_notes(name: str, *notes: str) -> tuple[str, ...]:
    """The notes said for dataset ``name`` (empty ones left out)."""
    return tuple(f"dataset {name!r}: {n}" for n in notes if n)
