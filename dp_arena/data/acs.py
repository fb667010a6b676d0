"""``dataset=acs``: NIST's ACS "national2019" excerpt (27,253 persons x 24 columns), the data of
the Collaborative Research Cycle (CRC) archive and of SDNist's reports.

The schema is built from NIST's public data dictionary (``acs-data-dictionary.json``) and, for
the code lists the dictionary leaves out (PUMA's national2019 areas, INDP's industry codes),
NIST's published schema (``acs-national2019.json``): public facts, no privacy cost. ``N`` (not
applicable, e.g. marital status of a child) is a value of its column, never a missing cell:

- coded columns (MSP, EDU, PINCP_DECILE, DVET, DREM, DPHY, INDP_CAT, INDP, NOC, NPF) are
  categorical over NIST's codes as strings, ``"N"`` among them; columns without ``N`` (SEX,
  HISP, RAC1P, HOUSING_TYPE, OWN_RENT, DEYE, DEAR) over integer codes; AGEP over the
  dictionary's ages 0..99 (one category each);
- the amounts PINCP (income) and POVPIP (income-to-poverty ratio, 501 = above 5x) are numeric;
  their ``N`` is the column's one extra code (``allow_missing``, NaN in the frame): the only
  empty cells an ACS table may hold. DENSITY, PWGTP and WGTP are numeric without ``N``.

Every other column has ``allow_missing`` false, so no mechanism can invent a missing cell.
Feature sets (``dataset.features``): :data:`FEATURE_SETS`, or a list of column names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.data.schema import Column, Schema, coerce_dtypes
from dp_arena.errors import ConfigError, DPArenaError

ACS_FILE = "acs-national2019.csv"
ACS_SCHEMA_FILE = "acs-national2019.json"
ACS_DICTIONARY_FILE = "acs-data-dictionary.json"
#: NIST's column order of the excerpt
ALL_FEATURES = ("PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "HOUSING_TYPE",
                "OWN_RENT", "DENSITY", "INDP", "INDP_CAT", "EDU", "PINCP", "PINCP_DECILE",
                "POVPIP", "DVET", "DREM", "DPHY", "DEYE", "DEAR", "PWGTP", "WGTP")
#: NIST's named feature sets: the CRC's "demographic-focused", "family-focused" and
#: "industry-focused" columns (as SDNist v2.3.0's sample reports on them list their features)
#: and all 24 columns
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "demographic": ("AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU",
                    "PINCP_DECILE", "DVET", "DEYE"),
    "family": ("PUMA", "AGEP", "SEX", "MSP", "HISP", "RAC1P", "NOC", "NPF", "OWN_RENT",
               "PINCP_DECILE", "POVPIP"),
    "industry": ("PUMA", "SEX", "MSP", "HISP", "RAC1P", "OWN_RENT", "INDP_CAT", "EDU",
                 "PINCP_DECILE"),
    "all": ALL_FEATURES,
}
#: amounts kept numeric (N = the column's extra code where the dictionary lists one)
NUMERIC = ("PINCP", "POVPIP", "DENSITY", "PWGTP", "WGTP")
#: public scoring bins of the amounts (dp-arena's encoding for mechanisms; SDNist bins its own)
NUMERIC_BINS: dict[str, tuple[float, ...]] = {
    "PINCP": (0, 5_000, 10_000, 20_000, 30_000, 40_000, 50_000, 75_000, 100_000, 150_000,
              250_000),
    "POVPIP": tuple(range(50, 501, 50)),
    "PWGTP": (10, 20, 40, 80, 160, 320),
    "WGTP": (1, 10, 20, 40, 80, 160, 320),
}
#: SDNist's log-scale density bins (``bin_density`` in sdnist/report/dataset/binning.py)
DENSITY_LOG_BINS = 20


def chosen_features(features: Any) -> tuple[str, ...]:
    """``dataset.features``: a name of :data:`FEATURE_SETS` or a list of ACS column names."""
    if isinstance(features, str):
        if features not in FEATURE_SETS:
            raise ConfigError(f"dataset.features {features!r} is not a feature set",
                              f"use one of {sorted(FEATURE_SETS)} or a list of columns")
        return FEATURE_SETS[features]
    names = list(features or [])
    unknown = [n for n in names if n not in ALL_FEATURES]
    if not names or unknown or len(set(names)) != len(names):
        raise ConfigError(f"dataset.features: {unknown or names} is not a list of distinct "
                          "ACS columns", f"use names from {list(ALL_FEATURES)}")
    return tuple(n for n in ALL_FEATURES if n in names)


def dictionary_codes(entry: dict[str, Any]) -> list[str]:
    """The codes a dictionary entry lists, ranges expanded (``min``..``max`` integers)."""
    values = entry.get("values", {})
    codes = [str(k) for k in values if k not in ("min", "max")]
    if "min" in values and "max" in values:
        codes += [str(v) for v in range(int(values["min"]), int(values["max"]) + 1)]
    return codes


def density_cut_points(max_density: float) -> tuple[float, ...]:
    """Interior cut points of SDNist's density bins: ``[0, 150]`` then log-spaced edges from
    the ninth of 21 (10 to the dictionary's max + 500), as ``bin_density`` draws them."""
    edges = np.logspace(1, np.log10(max_density + 500), num=DENSITY_LOG_BINS + 1)
    return tuple([150.0] + [float(e) for e in edges[8:-1]])


def acs_column(name: str, entry: dict[str, Any], nist: dict[str, Any]) -> Column:
    """One column of the ACS schema from its dictionary ``entry`` and NIST schema ``nist``."""
    values = entry.get("values", {})
    if name in NUMERIC:
        listed = [float(k) for k in values if k not in ("min", "max", "N")]  # 0, 501
        lo = min([float(values["min"])] + listed)
        hi = max([float(values["max"])] + listed)
        bins = (density_cut_points(hi) if name == "DENSITY" else NUMERIC_BINS[name])
        return Column(name, "numeric", dtype="float64" if name in ("PINCP", "DENSITY")
                      else "int64", min=lo, max=hi, bins=bins, allow_missing="N" in values)
    if name == "PUMA" or not values:  # codes the dictionary does not list: NIST's schema
        return Column(name, "categorical", dtype="object",
                      values=tuple(str(v) for v in nist["values"]))
    codes = dictionary_codes(entry)
    if "N" in codes:
        return Column(name, "categorical", dtype="object", values=tuple(codes))
    return Column(name, "categorical", dtype="int64", values=tuple(int(c) for c in codes))


def acs_schema(dictionary: dict[str, Any], nist_schema: dict[str, Any],
               features: tuple[str, ...]) -> Schema:
    """The schema of ``features`` from the public dictionary and NIST's schema."""
    nist = nist_schema.get("schema", nist_schema)
    return Schema(tuple(acs_column(f, dictionary[f], nist.get(f, {})) for f in features))


def read_acs_frame(path: Path, schema: Schema) -> pd.DataFrame:
    """The excerpt's columns of ``schema``, typed: coded columns as NIST's code strings,
    integer codes as integers, amounts as numbers with ``N`` as NaN (numeric columns only)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=schema.names)
    out = {}
    for col in schema.columns:
        s = raw[col.name].str.strip()
        if col.kind == "numeric":
            out[col.name] = pd.to_numeric(s.where(s != "N"), errors="raise")
        elif col.dtype == "object":
            out[col.name] = s.astype(object)
        else:
            out[col.name] = s.astype(np.int64)
    frame = pd.DataFrame(out)[schema.names]
    schema.validate(frame, where=f"dataset acs ({path.name})")
    return coerce_dtypes(schema, frame)


def load_acs_parts(folder: Path, features: Any) -> tuple[Schema, pd.DataFrame]:
    """``(schema, table)`` of the chosen features from the shared data folder."""
    chosen = chosen_features(features)
    paths = [folder / n for n in (ACS_FILE, ACS_SCHEMA_FILE, ACS_DICTIONARY_FILE)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DPArenaError(f"dataset acs: {missing} not in {folder}",
                           "put NIST's ACS excerpt files in the shared data folder (see its "
                           "README) or set DP_ARENA_DATA / dataset.data_dir")
    schema = acs_schema(json.loads(paths[2].read_text()), json.loads(paths[1].read_text()),
                        chosen)
    return schema, read_acs_frame(paths[0], schema)
