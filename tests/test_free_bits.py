"""No free bits of one person in what a DP-proposed schema's runs write: neighbouring private
tables (one outlier row, one rare category row, one value in an otherwise empty text column)
give the same written outputs apart from charged releases.

- **Loading** (the schema held fixed, the private table it loads differs by one row): the
  sweep's ``plan.json`` and the run's tags (``schema_quality`` the board's schema note is made
  from, ``schema_source``, ``epsilon_reported``, ...) are byte-for-byte the same; only the
  operator's console says what loading changed, labelled as the owner's private view (checked,
  so the comparison is not blind: the outlier does change what loading did).
- **Proposing** (the table a DP proposal reads differs by one value of an otherwise empty text
  column): with the noise seeded identically and the text column last (its extra key is the
  last draw, so every other draw is the same), the written schema and ledger are byte-for-byte
  the same; with fresh noise, the structure is (the charges' names, kinds, sensitivities and
  scales, the spend, the column's report line). The one value is left out in both because
  ``1 + Laplace(b)`` passes the threshold ``tau = 1 + b ln(1 / (2 delta))`` with probability
  ``delta = 1e-6`` per proposal (the release's own delta): the failure probability of the
  fresh-noise check, 20 proposals, is at most 2e-5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.guards import PRIVATE_VIEW
from dp_arena.data.proposal_file import write_proposal
from dp_arena.data.propose import ProposalSettings, propose
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser

ROWS = 400


def base_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": np.round(rng.uniform(0, 100, ROWS), 1),
                         "c": rng.choice(["a", "b", "c"], ROWS, p=[0.5, 0.3, 0.2])})


@pytest.fixture
def dp_schema(tmp_path: Path) -> Path:
    """A schema proposed from the base table by DP (its own charged release), held fixed."""
    proposal = propose(base_table(), ProposalSettings("dp", epsilon=2.0, delta=1e-6))
    assert set(proposal.schema.names) == {"x", "c"}
    return write_proposal(proposal, tmp_path / "schema" / "parameters.json")[0]


def inside(schema: Path) -> pd.DataFrame:
    """The base table fitted to the schema: every value inside it, so loading changes
    nothing (the world without the extra row)."""
    from dp_arena.data.conform import conform_counted
    from dp_arena.data.schema import Schema

    fitted = conform_counted(base_table(), Schema.load(schema))[0]
    return fitted.dropna().reset_index(drop=True)


def job(path: Path, schema: Path) -> dict:
    return {"mechanism": {"name": "independent"}, "metrics": {"kmarginal": {}},
            "privacy": {"epsilon": 1.0, "delta": 1e-6},
            "dataset": {"name": "csv", "path": str(path), "schema": str(schema)}}


def written_outputs(table: pd.DataFrame, folder: Path, schema: Path,
                    capsys: pytest.CaptureFixture) -> tuple[bytes, dict[str, str], str]:
    """``plan.json``'s bytes, the run's tags and the console, for ``table`` loaded at one
    path (the same path for every world, so the plan's config is the same)."""
    from dp_arena.data.datasets import load_dataset
    from dp_arena.run.config import build_components, parse_run_config
    from dp_arena.run.record import build_record
    from dp_arena.sweep.plan import plan_sweep
    from dp_arena.sweep.records import PLAN_FILE, write_plan

    path = folder / "private.csv"
    table.to_csv(path, index=False)
    capsys.readouterr()
    plan = plan_sweep([job(path, schema)])
    console = capsys.readouterr().err
    assert [j.verdict for j in plan.jobs] == ["run"], plan.jobs[0].reason
    sweep = folder / "sweep"
    sweep.mkdir(exist_ok=True)
    write_plan(sweep, plan)
    rc = parse_run_config(job(path, schema))
    mechanism, _ = build_components(rc)
    tags = build_record(rc, mechanism, load_dataset(rc.dataset)).to_tags()
    return (sweep / PLAN_FILE).read_bytes(), tags, console


def with_row(table: pd.DataFrame, **row: object) -> pd.DataFrame:
    return pd.concat([table, pd.DataFrame([row])], ignore_index=True)


@pytest.mark.parametrize("extra, column, said", [
    ({"x": 1e9, "c": "a"}, "x", "x: values outside the proposed schema clipped or set missing"),
    ({"x": 50.0, "c": "zzz"}, "c", "c: values outside the proposed schema set missing"),
], ids=["outlier row", "rare category row"])
def test_one_row_outside_the_schema_changes_no_written_output(dp_schema, tmp_path, capsys,
                                                              extra, column, said):
    without = written_outputs(inside(dp_schema), tmp_path, dp_schema, capsys)
    with_it = written_outputs(with_row(inside(dp_schema), **extra), tmp_path, dp_schema,
                              capsys)
    assert with_it[0] == without[0]  # plan.json, byte for byte
    assert with_it[1] == without[1]  # every tag of the run record
    assert without[1]["schema_source"] == "dp" and without[1]["schema_quality"]
    assert "outside" not in without[1]["schema_quality"]
    # the console (the owner's private view) does say it: the worlds did load differently
    assert said not in without[2]
    assert said in with_it[2] and PRIVATE_VIEW in with_it[2]


# ----- a DP proposal: the empty text column is released like any other -----------------------
def text_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A table whose last column ``t`` is empty, and the same with one value in it."""
    empty = base_table().assign(t=[None] * ROWS)
    one = empty.copy()
    one.loc[0, "t"] = "only-me"
    return empty, one


def seeded_proposal(table: pd.DataFrame, settings: ProposalSettings, seed: int):
    releaser = Releaser(Ledger(Budget(settings.epsilon, 0.0), unit="record"),
                        NumpySampler(np.random.default_rng(seed)))
    return propose(table, settings, releaser)


@pytest.mark.parametrize("hints", [{}, {"t": {"kind": "categorical"}}],
                         ids=["type released", "kind hinted"])
def test_one_value_in_an_empty_text_column_changes_no_written_file(tmp_path, hints):
    settings = ProposalSettings("dp", epsilon=1.0, delta=1e-6, hints=hints)
    files = []
    for name, table in zip(("empty", "one"), text_tables()):
        proposal = seeded_proposal(table, settings, seed=11)
        assert proposal.dropped == ("t",)
        written = write_proposal(proposal, tmp_path / name / "parameters.json")
        files.append([p.read_bytes() for p in written])
    assert files[0] == files[1]  # parameters.json and parameters.ledger.json, byte for byte
    ledger = json.loads(files[0][1])
    assert any(c["name"] == "t: values" for c in ledger["charges"])  # charged when empty too


def structure(proposal) -> tuple:
    """What a proposal writes, but the released values: charges, spend, the column's note."""
    charges = [(c["name"], c["kind"], c["sensitivity"], c["scale"])
               for c in proposal.ledger["charges"]]
    return (charges, proposal.spent(), proposal.dropped,
            [line for line in proposal.report if line.startswith("t:")])


#: complete public hints: ``x`` and ``c`` spend nothing, so ``t`` is the only column released
#: and fresh noise elsewhere cannot change the structure
HINTED = {"x": {"kind": "numeric", "min": 0, "max": 100}, "c": {"kind": "categorical",
                                                               "values": ["a", "b", "c"]},
          "t": {"kind": "categorical"}}


def test_with_fresh_noise_the_empty_column_spends_and_says_the_same():
    settings = ProposalSettings("dp", epsilon=1.0, delta=1e-6, hints=HINTED)
    empty, one = text_tables()
    for _ in range(20):
        assert structure(propose(empty, settings)) == structure(propose(one, settings))
