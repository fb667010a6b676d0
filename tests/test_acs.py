"""``dataset=acs`` (NIST's ACS excerpt, schema from its public data dictionary), no invented
missing cells in its synthetic tables, and the ``subsample`` reference mechanism."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.acs import FEATURE_SETS, acs_schema, chosen_features, dictionary_codes
from dp_arena.data.datasets import Dataset, load_dataset
from dp_arena.errors import ConfigError
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.reference import subsample
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser

DEMOGRAPHIC = ["AGEP", "SEX", "MSP", "RAC1P", "HOUSING_TYPE", "OWN_RENT", "EDU",
               "PINCP_DECILE", "DVET", "DEYE"]


@pytest.fixture
def acs_dir(shared_data) -> Path:
    if not (shared_data / "acs-national2019.csv").is_file():
        pytest.skip("NIST's ACS excerpt (acs-national2019.csv) is not in the shared data folder")
    return shared_data


def raw_column(folder: Path, name: str) -> list[str]:
    """One column of the CSV as text, read without pandas."""
    with open(folder / "acs-national2019.csv", newline="") as fh:
        return [row[name] for row in csv.DictReader(fh)]


def test_feature_sets_and_errors():
    assert list(FEATURE_SETS["demographic"]) == DEMOGRAPHIC
    assert len(FEATURE_SETS["all"]) == 24
    assert (len(FEATURE_SETS["family"]), len(FEATURE_SETS["industry"])) == (11, 9)
    for columns in FEATURE_SETS.values():  # every set in NIST's column order
        assert chosen_features(list(reversed(columns))) == columns
    assert chosen_features(["SEX", "AGEP"]) == ("AGEP", "SEX")  # NIST's column order
    for bad in ("family_focused", ["AGEP", "AGE"], ["SEX", "SEX"], []):
        with pytest.raises(ConfigError):
            chosen_features(bad)


def test_schema_from_the_dictionary_by_hand():
    dictionary = {
        "MSP": {"values": {"N": "n/a", "1": "married", "6": "never"}},
        "NPF": {"values": {"N": "n/a", "min": 2, "max": 4}},
        "SEX": {"values": {"1": "Male", "2": "Female"}},
        "AGEP": {"values": {"min": 0, "max": 3}},
        "WGTP": {"values": {"0": "GQ", "min": 1, "max": 9}},
        "POVPIP": {"values": {"N": "n/a", "min": 0, "max": 500, "501": "above"}},
    }
    assert dictionary_codes(dictionary["NPF"]) == ["N", "2", "3", "4"]
    schema = acs_schema(dictionary, {}, ("AGEP", "SEX", "MSP", "NPF", "WGTP", "POVPIP"))
    assert schema["MSP"].values == ("N", "1", "6") and not schema["MSP"].allow_missing
    assert schema["NPF"].values == ("N", "2", "3", "4")
    assert schema["SEX"].values == (1, 2) and schema["AGEP"].values == (0, 1, 2, 3)
    assert (schema["WGTP"].min, schema["WGTP"].max) == (0, 9) and not schema["WGTP"].allow_missing
    assert (schema["POVPIP"].min, schema["POVPIP"].max) == (0, 501)
    assert schema["POVPIP"].allow_missing  # its N is the extra code


@pytest.mark.realdata
def test_demographic_reads_nist_codes(acs_dir):
    data = load_dataset({"name": "acs", "features": "demographic", "data_dir": str(acs_dir)})
    assert data.name == "acs_demographic" and data.private.shape == (27_253, 10)
    assert list(data.private.columns) == DEMOGRAPHIC
    assert not any(c.allow_missing for c in data.schema.columns)
    assert int(data.private.isna().sum().sum()) == 0
    for col in ("MSP", "EDU", "PINCP_DECILE", "DVET"):  # N is a value, counted as in the file
        raw = raw_column(acs_dir, col)
        assert int((data.private[col] == "N").sum()) == raw.count("N") > 0
    assert data.private["AGEP"].tolist() == [int(v) for v in raw_column(acs_dir, "AGEP")]


@pytest.mark.realdata
def test_all_features_and_holdout(acs_dir):
    data = load_dataset({"name": "acs", "features": "all", "data_dir": str(acs_dir),
                         "holdout_fraction": 0.2})
    assert data.private.shape[1] == 24 and len(data.private) + len(data.heldout) == 27_253
    assert len(data.heldout) == round(0.2 * 27_253)
    assert sorted(c.name for c in data.schema.columns if c.allow_missing) == ["PINCP", "POVPIP"]
    whole = pd.concat([data.private, data.heldout])
    assert int(whole["PINCP"].isna().sum()) == raw_column(acs_dir, "PINCP").count("N")
    assert whole.drop(columns=["PINCP", "POVPIP"]).isna().sum().sum() == 0


@pytest.mark.realdata
@pytest.mark.parametrize("mechanism", ["independent", "mst", "aim"])
def test_no_missing_cells_in_synthetic_demographic_tables(acs_dir, mechanism):
    data = load_dataset({"name": "acs", "features": "demographic", "data_dir": str(acs_dir),
                         "max_rows": 5000})
    budget = Budget(1.0, 1e-9)
    out = make_mechanism(mechanism, {}).fit_sample(
        data, budget, Releaser(Ledger(budget, "zcdp")), np.random.default_rng(0))
    assert int(out.isna().sum().sum()) == 0
    assert data.schema.problems(out) == []


def test_subsample_draws_without_replacement(small_dataset: Dataset):
    frame = small_dataset.private.drop(columns="pid")
    record = Dataset("rec", small_dataset.schema.drop_id(),
                     frame.assign(row=np.arange(len(frame))))  # row: which private row
    rows = subsample(record, 0.1, np.random.default_rng(0))
    assert len(rows) == round(0.1 * len(frame))
    assert rows["row"].is_unique and rows["row"].is_monotonic_increasing
    persons = subsample(small_dataset, 0.2, np.random.default_rng(0))
    ids = persons["pid"].unique()
    assert len(ids) == round(0.2 * small_dataset.private["pid"].nunique())
    whole = small_dataset.private[small_dataset.private["pid"].isin(ids)]
    assert len(persons) == len(whole)  # all the rows of each chosen person
    assert subsample(small_dataset, 1.0, np.random.default_rng(0)).equals(
        small_dataset.private.reset_index(drop=True))
    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError):
            subsample(small_dataset, bad, np.random.default_rng(0))


def test_subsample_rows_are_labelled_as_samples_on_the_board():
    from dp_arena.report.leaderboard import row_label

    assert row_label({"mechanism": "subsample", "reference": "ceiling"}) == \
        "subsample (non-private sample)"
    assert row_label({"mechanism": "resample", "reference": "ceiling"}) == \
        "resample (non-private ceiling)"
    assert row_label({"mechanism": "mst", "reference": None}) == "mst"
