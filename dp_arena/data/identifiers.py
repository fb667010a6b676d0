"""Identifier-like and row-number columns, left out of a proposed schema with a word.

A row number (the ``rownames`` column of an R export, pandas' unnamed index) or an identifier
(order ids, tail numbers) has one value per row: as a categorical column it is a hundred codes
that hold almost none of the rows, and loading the table refuses it. Such a column is left out
of the proposal (``proposal.dropped``), by one of two public facts, said in its report line:

- **its name** (:func:`named_like_row_number`): the names exports give row numbers
  (:data:`ROW_NUMBER_NAMES`, any case); every source;
- **the sample it is proposed from**, for the exact sources only (a public sample: public; the
  ``--from-private`` opt-in: read exactly and labelled so): text whose present values are all
  distinct, or integers that are all distinct and consecutive (:func:`all_distinct`), over at
  least :data:`MIN_ROWS` values.

A DP proposal decides from the name only: "every value distinct" on the private table is a
fact of it that no charged release states. Its text releases say it anyway, charged: an
all-distinct column has no value above the threshold, and is left out with that note.
A hint on the column keeps it (the user said what it is).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dp_arena.data.infer import CLASSES, present, value_classes

#: column names that exports give row numbers (compared stripped, in lower case)
ROW_NUMBER_NAMES = frozenset({"", "rownames", "row.names", "unnamed: 0", "...1", "index",
                              "row_number", "rownum"})
#: fewer present values than this say nothing about being all distinct
MIN_ROWS = 20


def named_like_row_number(name: str) -> bool:
    return str(name).strip().lower() in ROW_NUMBER_NAMES


def all_distinct(values: pd.Series) -> bool:
    """Whether the present values look like an identifier: text all distinct, or integers all
    distinct and consecutive (a row number); never dates (a daily table's dates are all
    distinct) nor decimals (measurements often are)."""
    s = present(values).astype(str).str.strip()
    if len(s) < MIN_ROWS or s.nunique() < len(s):
        return False
    classes = set(value_classes(s).tolist())
    if classes == {CLASSES.index("text")}:
        return True
    if classes != {CLASSES.index("integer")}:
        return False
    return bool((np.diff(np.sort(pd.to_numeric(s).to_numpy())) == 1).all())


def identifier_notes(df: pd.DataFrame, names: list[str], exact: bool,
                     hinted: set[str]) -> dict[str, str]:
    """The columns of ``names`` to leave out, each with the word its report line says
    (module docstring); ``exact``: the sample is read exactly (public, or the opt-in)."""
    out = {}
    for name in names:
        if name in hinted:
            continue
        if named_like_row_number(name):
            why = "named like a row number"
        elif exact and all_distinct(df[name]):
            why = "every value distinct in the sample it was proposed from, like an identifier"
        else:
            continue
        out[name] = (f"{why} (runs leave it out too; to keep it: --hint "
                     f"'{name}={{kind: categorical}}')")
    return out
