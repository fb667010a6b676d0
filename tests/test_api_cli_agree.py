"""The Python API and the command line take one path: the same plan entry
(:func:`dp_arena.sweep.plan.plan_jobs`) with the same default delta rule, and a wrong dtype in a
frame is one message naming the column and the fix before anything is written or run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.run.config import RunConfig
from dp_arena.sweep.dataframe import (
    compose_jobs,
    private_base,
    run_competition,
    text_in_number_columns,
)
from dp_arena.sweep.plan import plan_jobs

SCHEMA = Schema((Column("colour", "categorical", "str", values=("green", "red")),
                 Column("size", "categorical", "int64", values=(0, 1, 2, 3)),
                 Column("amount", "numeric", "float", min=0, max=200, bins=(10, 20, 40))))

#: A table size at which the preset delta is too large: 43,078 persons x 2.5e-5 = 1.08, at or above 1/n.
ROWS = 43_078


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"colour": rng.choice(["red", "green"], n),
                         "size": rng.integers(0, 4, n),
                         "amount": rng.gamma(2, 10, n).round(2).clip(0, 200)})


def leftovers(name: str) -> list:
    return list((private_base() / "frames").glob(f"{name}*"))


# ----- a wrong dtype ----------------------------------------------------------------------------
def test_text_columns_are_found_by_name_and_numbers_as_text_pass():
    ok = frame(50)
    assert text_in_number_columns(ok, SCHEMA) == []
    as_text = ok.astype({"amount": str, "size": str})  # numbers written as text still parse
    assert text_in_number_columns(as_text, SCHEMA) == []
    blanks = ok.astype({"amount": object})
    blanks.loc[:3, "amount"] = ["", " ", None, np.nan]  # missing, not text
    assert text_in_number_columns(blanks, SCHEMA) == []
    bad = ok.astype({"amount": object, "size": object})
    bad.loc[7, "amount"] = "12,50"
    bad.loc[9, "size"] = "two"
    assert text_in_number_columns(bad, SCHEMA) == ["size", "amount"]
    words = ok.assign(colour="anything")  # a text column of the schema is not checked here
    assert text_in_number_columns(words, SCHEMA) == []


@pytest.mark.parametrize("which", ["data", "public"])
def test_a_text_value_in_a_numeric_column_is_one_message_naming_the_column(
        no_store, tmp_path, which):
    data, public = frame(300), frame(300, seed=1)
    bad = (data if which == "data" else public).astype({"amount": object})
    bad.loc[5, "amount"] = "secret-text"
    data, public = (bad, public) if which == "data" else (data, bad)
    with pytest.raises(ConfigError) as exc:
        run_competition(data, SCHEMA, public=public, mechanisms=["independent"],
                        epsilons=[1.0], trials=1, name="text_in_numbers", progress=False)
    text = str(exc.value)
    assert text.count("\n") == 1 and text.splitlines()[1].lstrip().startswith("fix:")
    assert f"the {which} DataFrame holds text in column 'amount'" in text
    assert "pd.to_numeric" in text and "categorical" in text
    assert "secret" not in text and "no rows" not in text
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()
    assert leftovers("text_in_numbers") == []


# ----- one plan, one default delta --------------------------------------------------------------
def jobs_for(delta: str | None, tmp_path) -> list[list[str]]:
    """Two jobs on a CSV as ``dp-arena dataset=csv ...`` carries them."""
    frame(ROWS).to_csv(tmp_path / "private.csv", index=False)
    SCHEMA.save(tmp_path / "parameters.json")
    shared = ["dataset=csv", f"dataset.path={tmp_path / 'private.csv'}",
              f"dataset.schema={tmp_path / 'parameters.json'}", "metrics=kmarginal",
              "dataset.holdout_fraction=0",  # every row private: the delta check's size
              *([f"privacy.delta={delta}"] if delta else [])]
    return [["mechanism=uniform", "privacy.epsilon=1.0", f"trial={t}", *shared]
            for t in (0, 1)]


def test_the_plan_applies_the_default_delta_when_the_overrides_set_none(no_store, tmp_path):
    jobs = jobs_for(None, tmp_path)
    configs = compose_jobs(jobs)
    assert all(isinstance(c, RunConfig) for c in configs)
    assert {c.budget.delta for c in configs} == {2.5e-5}  # the preset, before the rule
    plan = plan_jobs(configs, [c.label for c in configs], jobs)
    assert plan.problems() == {}
    # no public part, no max_records: N = 10^9 persons, 1/(10 N) = 1e-10
    assert [j.delta for j in plan.of("run")] == [1e-10, 1e-10]
    assert any("using delta=1e-10" in note for note in plan.notes)
    # the preset set on the command line is the user's choice: refused at this size
    given = jobs_for("2.5e-5", tmp_path)
    refused = plan_jobs(compose_jobs(given), None, given)
    reason, = refused.problems()
    assert "privacy.delta=2.5e-05 is at or above 1/(number of persons" in reason
    # a search sweep's base config (no job overrides) keeps its delta: refused alike
    assert list(plan_jobs(configs[:1], None, None).problems()) == [reason]


@pytest.mark.slow
def test_the_api_runs_the_issue_table_at_the_command_lines_default_delta(tracking_uri,
                                                                         tmp_path):
    board = run_competition(frame(ROWS), SCHEMA, mechanisms=["uniform"], epsilons=[1.0],
                            trials=1, metrics="kmarginal", name="default_delta",
                            progress=False)
    assert len(board) == 1
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name("dp-arena/default_delta")
    runs = [r for r in client.search_runs([experiment.experiment_id])
            if r.data.tags.get("kind") != "sweep"]
    assert len(runs) == 1
    assert float(runs[0].data.params["privacy.delta"]) == 1e-10
    with pytest.raises(DPArenaError, match="at or above 1/"):
        run_competition(frame(ROWS), SCHEMA, mechanisms=["uniform"], epsilons=[1.0], trials=1,
                        delta=2.5e-5, metrics="kmarginal", name="default_delta",
                        progress=False, holdout_fraction=0.0)
    assert leftovers("default_delta") == []


def test_the_api_refuses_a_one_column_table_under_kmarginal_k2_before_any_run(no_store,
                                                                             tmp_path):
    one = frame(300)[["colour"]]
    schema = Schema((SCHEMA["colour"],))
    with pytest.raises(DPArenaError) as exc:
        run_competition(one, schema, mechanisms=["independent"], epsilons=[1.0], trials=1,
                        metrics="kmarginal", name="one_column", progress=False)
    text = str(exc.value)
    assert text.count("metrics.kmarginal.k=2 scores 2-way marginals, but dataset 'one_column' "
                      "has 1 attribute") == 1, text
    assert "fix: set metrics.kmarginal.k=1" in text
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()
    assert leftovers("one_column") == []
