"""The own-table path's defaults: a held-out share and a target unless the user says otherwise
(:mod:`dp_arena.data.own_table`), said on the console; README's two own-table commands end with
the utility and risk views on a real table (titanic, decoded to Yes/No and female/male)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import load_csv_dataset
from dp_arena.data.own_table import (
    DEFAULT_HOLDOUT,
    chosen_holdout,
    chosen_target,
    inferred_target,
)
from dp_arena.data.schema import Column, Schema
from tests.support.forked import run_forked

README = Path(__file__).resolve().parents[1] / "README.md"

CAT = dict(kind="categorical", dtype="str")


def schema_of(*columns: Column) -> Schema:
    return Schema(tuple(columns))


def test_the_target_is_a_column_named_like_one_else_the_last_categorical():
    a = Column("a", values=("x", "y"), **CAT)
    b = Column("b", values=("u", "v", "w"), **CAT)
    n = Column("n", "numeric", "float", min=0, max=1)
    assert inferred_target(schema_of(a, b, n)) == ("b", "the schema's last categorical column")
    label = Column("Label", values=("0", "1"), **CAT)
    assert inferred_target(schema_of(label, a, n))[0] == "Label"
    one = Column("one", values=("x",), **CAT)  # a single value: nothing to predict
    assert inferred_target(schema_of(n, one))[0] is None


def test_a_given_target_or_none_is_taken_as_said():
    s = schema_of(Column("a", values=("x", "y"), **CAT), Column("b", values=("u", "v"), **CAT))
    assert chosen_target("a", s) == ("a", "")
    assert chosen_target("none", s) == (None, "")
    found, note = chosen_target(None, s)
    assert found == "b" and "inferred" in note and "dataset.target=none" in note


def test_the_holdout_is_the_users_else_the_proposals_else_the_default():
    assert chosen_holdout(0.0, None) == (0.0, "")
    assert chosen_holdout(0.3, 0.2) == (0.3, "")
    assert chosen_holdout(None, None)[0] == DEFAULT_HOLDOUT
    assert chosen_holdout(None, 0.25)[0] == 0.25
    share, note = chosen_holdout(None, 0.0)  # proposed from every row: none, and how to get one
    assert share == 0.0 and "--holdout-fraction" in note


def table(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"region": rng.choice(["n", "s"], n),
                         "age": rng.integers(18, 80, n),
                         "smoker": rng.choice(["Yes", "No"], n)})


def test_a_csv_run_holds_out_a_fifth_and_infers_its_target(tmp_path):
    df = table()
    df.to_csv(tmp_path / "data.csv", index=False)
    from dp_arena.data.proposal_file import write_proposal
    from dp_arena.data.propose import ProposalSettings, propose

    schema = write_proposal(propose(table(300).sample(frac=1, random_state=1),
                                    ProposalSettings("public")), tmp_path / "p.json")[0]
    data = load_csv_dataset(str(tmp_path / "data.csv"), str(schema))
    # the split rounds the held-out count of persons to a whole person: within one
    assert len(data.heldout) == pytest.approx(DEFAULT_HOLDOUT * len(df), abs=1)
    assert len(data.private) + len(data.heldout) == len(df)
    assert data.target == "smoker"
    notes = " ".join(data.setup_notes)
    assert "20% of the persons held out" in notes and "target 'smoker' (inferred" in notes
    off = load_csv_dataset(str(tmp_path / "data.csv"), str(schema), holdout_fraction=0.0,
                           target="none")
    assert off.heldout is None and off.target is None and off.setup_notes == ()


def test_a_dp_proposal_holds_out_the_runs_default_share(tmp_path):
    """dp-arena-schema --epsilon proposes from the default run's training rows, so the run
    needs no holdout setting (a mismatch would be refused)."""
    from dp_arena.cli.schema import main

    table(2000).to_csv(tmp_path / "data.csv", index=False)
    assert main([str(tmp_path / "data.csv"), "--out", str(tmp_path / "p.json"),
                 "--epsilon", "5"]) == 0
    block = json.loads((tmp_path / "p.json").read_text())["proposal"]
    assert block["holdout"]["fraction"] == DEFAULT_HOLDOUT
    data = load_csv_dataset(str(tmp_path / "data.csv"), str(tmp_path / "p.json"))
    assert data.heldout is not None and "the share the schema's proposal held out" in \
        " ".join(data.setup_notes)


def own_table_commands() -> list[list[str]]:
    """README's two own-table commands, as README writes them (its bash block's lines,
    trailing comments dropped)."""
    lines = [line.split("  #")[0].strip() for line in README.read_text().splitlines()]
    found = [c for c in lines
             if c.startswith(("dp-arena-schema data.csv --out parameters.json --public",
                              "dp-arena dataset=csv dataset.path=data.csv"))]
    assert len(found) == 2, found
    return [shlex.split(c) for c in found]


@pytest.mark.slow
def test_readmes_own_table_commands_end_with_the_utility_and_risk_views(tmp_path,
                                                                        shared_data):
    """Titanic's labelled passengers (decoded: Survived Yes/No, Sex female/male; a 30% public
    sample), README's two commands as written, the sweep narrowed to two mechanisms x two
    trials: the board has the utility view with ML efficacy's AUROC (a binary target, inferred)
    and the risk view with membership."""
    raw = pd.read_csv(shared_data / "titanic.zip")
    raw = raw[raw["Survived"] != 2].copy()  # 2: the passengers whose fate the file leaves out
    raw["Survived"] = raw["Survived"].map({0: "No", 1: "Yes"})
    raw["Sex"] = raw["Sex"].map({0: "female", 1: "male"})
    public = np.random.default_rng(0).random(len(raw)) < 0.3
    raw[~public].to_csv(tmp_path / "data.csv", index=False)
    raw[public].to_csv(tmp_path / "public.csv", index=False)
    propose_cmd, run_cmd = own_table_commands()
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update(COLUMNS="200", DP_ARENA_STATE_DIR=str(tmp_path / "state"))
    first = run_forked(propose_cmd, tmp_path, env)
    assert first.returncode == 0, first.stdout + first.stderr
    schema = json.loads((tmp_path / "parameters.json").read_text())["schema"]
    assert not schema["Survived"].get("allow_missing")  # no missing value: binary
    narrowed = [*run_cmd, "mechanism=independent,uniform", "privacy.epsilon=1", "trial=0,1"]
    proc = run_forked(narrowed, tmp_path, env, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "target 'Survived' (inferred" in out and "20% of the persons held out" in out
    utility = out[out.index("### utility view"):]
    assert "AUROC" in utility and "train on real, test on real" in utility
    risk = out[out.index("### risk view"):]
    assert "membership/auc" in risk
    row = next(line for line in risk.splitlines() if line.startswith("| independent"))
    assert float(row.split("|")[3].split("±")[0]) > 0  # an AUC was logged for the owner
