"""Nothing lost without a word (every value or row that loading sets
missing, clips, rounds or drops is counted per column, reported before any run, and refused
above ``dataset.max_loss``; the counts stay on the console), warnings with a real fix, and a
board that says when it mixes runs on different schemas of one table.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import hashlib
import math
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.conform import (COUNTS_LABEL, MAX_LOSS, ColumnLoss, LoadReport, SchemaSource,
                                  conform, conform_counted, loss_refusal, over_limit, schema_digest)
from dp_arena.data.datasets import Dataset, load_dataset
from dp_arena.data.guards import PRIVATE_VIEW, dataset_warnings
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.sweep.plan import plan_sweep

PUBLIC_PROPOSAL = {"source": "public", "out_of_domain": "coerce"}


# ----- counting -------------------------------------------------------------------------------
def test_each_kind_of_loss_is_counted_by_hand():
    schema = Schema((
        Column("c", "categorical", "str", values=("a", "b"), allow_missing=True),
        Column("k", "categorical", "int64", values=(1, 2)),
        Column("x", "numeric", "int64", min=0, max=10),
        Column("d", "datetime", "str", min="2016-01-01", max="2016-01-31", resolution="day",
               format="%Y-%m-%d", allow_missing=True)))
    df = pd.DataFrame({
        "c": ["a", "z", None, " b ", None, "y"],        # z, y not in the domain; 2 empty
        "k": [1, 2, 1, 2, 1, 2],
        "x": [-5, "abc", 3.4, 3, 50, 7],                # clipped 2, unparsed 1, rounded 1
        "d": ["2016-01-02", "2016-02-10", "01/05/2016", None, "2016-01-31", "2016-01-15"]})
    out, report = conform_counted(df, schema)
    by = {c.name: c for c in report.columns}
    assert by["c"] == ColumnLoss("c", "categorical", present=4, empty=2, set_missing=2)
    assert by["k"] == ColumnLoss("k", "categorical", present=6)
    # row 1's "abc" does not parse: set missing in a column without allow_missing -> dropped
    assert by["x"] == ColumnLoss("x", "numeric", present=6, set_missing=1, unparsed=1,
                                 clipped=2, rounded=1, dropped_rows=1)
    # one date outside [min, max], one in another format
    assert by["d"] == ColumnLoss("d", "datetime", present=5, empty=1, set_missing=2,
                                 unparsed=1)
    assert (report.rows_in, report.rows_dropped) == (6, 1) and len(out) == 5
    assert by["x"].lost == 4 and by["x"].share == pytest.approx(4 / 6)
    assert out["x"].tolist() == [0.0, 3.0, 3.0, 10.0, 7.0]


def test_the_loggable_notes_are_one_bit_per_column_and_conform_keeps_its_form():
    schema = Schema((Column("c", "categorical", "str", values=("a", "b")),
                     Column("x", "numeric", "float", min=0, max=10, allow_missing=True)))
    df = pd.DataFrame({"c": ["a", "z", None, "b"], "x": [1.0, None, 2.0, 30.0]})
    fitted, notes = conform(df, schema)
    _, report = conform_counted(df, schema)
    assert notes == report.notes == (
        "c: values outside the proposed schema set missing",
        "x: values outside the proposed schema clipped or set missing",
        "rows dropped: missing where the schema allows none (columns c)")
    assert not any(ch.isdigit() for ch in " ".join(notes))
    assert fitted["c"].tolist() == ["a", "b"]


def test_the_limit_is_strict_and_applies_to_columns_and_rows():
    one_percent = LoadReport((ColumnLoss("a", "numeric", present=1000, clipped=10),), 1000, 10)
    assert over_limit(one_percent, 0.01) == ([], False)  # exactly 1% is not more than 1%
    assert loss_refusal(one_percent, 0.01) is None
    more = LoadReport((ColumnLoss("a", "numeric", present=1000, clipped=11),), 1000, 11)
    assert over_limit(more, 0.01) == ([more.columns[0]], True)
    assert loss_refusal(more, 0.011) is None


def test_max_loss_outside_zero_one_is_one_message(tmp_path):
    path, schema = three_format_table(tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_dataset({"name": "csv", "path": str(path), "schema": str(schema), "max_loss": 2})
    assert "dataset.max_loss must be a share in [0, 1]" in str(exc.value)


# ----- the 900-row table whose dates come in three formats ------------------------------------
def three_format_table(folder: Path, n: int = 900) -> tuple[Path, Path]:
    """``n`` trips whose ``day`` is written in three formats in turn (``2016-03-07``,
    ``03/07/2016``, ``Mar 07 2016``), against a schema that knows only ``%Y-%m-%d``: exactly
    the rows with ``i % 3 != 0`` do not parse, 600 of 900."""
    rng = np.random.default_rng(0)
    days = pd.Timestamp("2016-01-01") + pd.to_timedelta(np.arange(n) % 300, unit="D")
    formats = ("%Y-%m-%d", "%m/%d/%Y", "%b %d %Y")
    day = [d.strftime(formats[i % 3]) for i, d in enumerate(days)]
    pd.DataFrame({"day": day, "fare": np.round(rng.uniform(5, 50, n), 2),
                  "company": rng.choice(["A", "B", "C"], n)}).to_csv(folder / "trips.csv",
                                                                    index=False)
    (folder / "p.json").write_text(json.dumps({"runs": [], "proposal": PUBLIC_PROPOSAL,
                                               "schema": {
        "day": {"kind": "datetime", "dtype": "str", "min": "2016-01-01", "max": "2016-12-31",
                "resolution": "month", "format": "%Y-%m-%d"},
        "fare": {"kind": "numeric", "dtype": "float", "min": 0, "max": 100,
                 "bins": [10, 20, 30, 40]},
        "company": {"kind": "categorical", "dtype": "str", "values": ["A", "B", "C"]}}}))
    return folder / "trips.csv", folder / "p.json"


#: no held-out share: the counts below are of every row of the file
EVERY_ROW = {"holdout_fraction": 0.0}


def job(dataset: dict) -> dict:
    return {"mechanism": {"name": "independent"}, "metrics": {"kmarginal": {}},
            "privacy": {"epsilon": 1.0, "delta": 1e-6}, "dataset": dataset}


#: By hand: 900 rows, every third in the schema's format; the other 600 do not parse, and
#: ``day`` allows no missing value, so those 600 rows are dropped.
DAY_LINE = ("- day (datetime): 600 of 900 present values (66.7%) lost: 600 set missing (600 did "
            "not parse); 600 rows dropped as missing here")
ROWS_LINE = "600 of 900 rows (66.7%) dropped: missing where the schema allows none (day: 600)"


def test_three_date_formats_are_refused_by_the_plan_with_the_counts_and_a_fix(tmp_path, capsys):
    path, schema = three_format_table(tmp_path)
    dataset = {"name": "csv", "path": str(path), "schema": str(schema),
               **EVERY_ROW}
    plan = plan_sweep([job(dataset), job({**dataset, "max_loss": MAX_LOSS})])
    assert [j.verdict for j in plan.jobs] == ["invalid", "invalid"]
    assert len(plan.problems()) == 1, "one problem, however many jobs share it"
    reason = plan.jobs[0].reason
    assert DAY_LINE in reason and ROWS_LINE in reason and COUNTS_LABEL in reason
    assert f"more than {MAX_LOSS:.2%} (dataset.max_loss)" in reason
    day_fix = reason.split(DAY_LINE)[1].splitlines()[0]
    assert "date format" in day_fix and "--hint 'day={kind: datetime, format: mixed}'" in day_fix
    assert "dataset.drop=[day]" in reason and "dataset.max_loss=" in reason
    assert not plan.notes and "600" not in capsys.readouterr().err  # said once, in the error


def test_the_suggested_drop_loads_the_table_without_the_column(tmp_path):
    """Following the refusal's fix ``dataset.drop=[day]`` leaves ``day`` out of the data and
    the schema alike: the plan runs and no row is lost."""
    path, schema = three_format_table(tmp_path)
    dataset = {"name": "csv", "path": str(path), "schema": str(schema), "drop": ["day"],
               **EVERY_ROW}
    plan = plan_sweep([job(dataset)])
    assert [j.verdict for j in plan.jobs] == ["run"], plan.jobs[0].reason
    data = load_dataset(dataset)
    assert "day" not in data.schema.names and "day" not in data.private.columns
    assert len(data.private) == 900


def test_max_loss_lets_it_through_with_the_report_printed_once(tmp_path, capsys):
    path, schema = three_format_table(tmp_path)
    dataset = {"name": "csv", "path": str(path), "schema": str(schema), "max_loss": 0.7,
               **EVERY_ROW}
    plan = plan_sweep([job(dataset), {**job(dataset), "trial": 1}])
    assert [j.verdict for j in plan.jobs] == ["run", "run"]
    err = capsys.readouterr().err
    assert err.count(COUNTS_LABEL) == 1 and err.count(DAY_LINE) == 1
    assert "rows: 600 of 900 dropped (66.7%)" in err
    # the plan's notes (written to plan.json) keep not even one bit per column: that bit is
    # on the console, labelled as the owner's private view
    assert not any("values outside" in note for note in plan.notes)
    assert err.count("warning: day: values outside the proposed schema set missing") == 1
    assert err.count(PRIVATE_VIEW) == 1
    assert len(load_dataset(dataset).private) == 300


def test_fifty_thousand_categories_fitted_to_a_hundred_are_refused(tmp_path):
    n, kept = 100_000, 100
    pd.DataFrame({"cat": [f"k{i % 50_000}" for i in range(n)],
                  "x": np.arange(n) % 7}).to_csv(tmp_path / "wide.csv", index=False)
    (tmp_path / "p.json").write_text(json.dumps({"runs": [], "proposal": PUBLIC_PROPOSAL,
                                                 "schema": {
        "cat": {"kind": "categorical", "dtype": "str", "values": [f"k{i}" for i in range(kept)]},
        "x": {"kind": "categorical", "dtype": "int64", "values": list(range(7))}}}))
    plan = plan_sweep([job({"name": "csv", "path": str(tmp_path / "wide.csv"), **EVERY_ROW,
                            "schema": str(tmp_path / "p.json")})])
    reason = plan.jobs[0].reason
    # each of the 100 kept categories holds 2 rows: 200 kept, 99,800 set missing and dropped
    assert plan.jobs[0].verdict == "invalid"
    assert ("- cat (categorical): 99,800 of 100,000 present values (99.8%) lost: 99,800 set "
            "missing (99,800 not among its categories)") in reason
    assert "99,800 of 100,000 rows (99.8%) dropped" in reason
    assert "--max-categories" in reason and "x (categorical)" not in reason
    # an identifier's values do not fit any number of categories: leaving it out comes first
    fixes = reason.split("- cat (categorical)")[1].split("fix: ")[1]
    assert fixes.startswith("leave it out, dataset.drop=[cat]")


# ----- the counts stay on the console ---------------------------------------------------------
@pytest.mark.slow
def test_a_sweep_says_the_counts_on_the_console_and_stores_none(tmp_path):
    from tests.sweep_support import dp_arena, runs_of

    three_format_table(tmp_path)
    inputs = {p.name for p in tmp_path.iterdir()}
    common = ("dataset=csv", "dataset.path=trips.csv", "dataset.schema=p.json",
              "mechanism=independent", "privacy.epsilon=1", "privacy.delta=1e-6",
              "metrics=kmarginal", "dataset.holdout_fraction=0")
    refused = dp_arena(tmp_path, *common, timeout=300)
    text = refused.stdout + refused.stderr
    assert refused.returncode == 2 and "the sweep was not started" in text, text
    assert text.count(DAY_LINE) == 1 and COUNTS_LABEL in text, text
    assert {p.name for p in tmp_path.iterdir()} == inputs, "a refused sweep left something"

    ran = dp_arena(tmp_path, *common, "dataset.max_loss=0.7", timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stderr.count(DAY_LINE) == 1 and ran.stderr.count(COUNTS_LABEL) == 1
    runs = runs_of(tmp_path)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.params["dataset.max_loss"] == "0.7"
    assert ran.stderr.count("day: values outside the proposed schema set missing") == 1
    assert list(tmp_path.rglob("plan.json"))
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in inputs]
    assert any(p.name == "mlflow.db" for p in written)
    for count in (DAY_LINE, "600 of 900", "600 set missing", "600 rows", COUNTS_LABEL,
                  "values outside", "changed on loading", PRIVATE_VIEW):
        holders = [str(p) for p in written if count.encode() in p.read_bytes()]
        assert holders == [], f"{count!r} written to {holders}"


# ----- warnings with a real fix ---------------------------------------------------------------
def test_the_one_bin_fix_names_a_hint_not_the_command_that_made_the_schema():
    x = np.random.default_rng(0).exponential(5, 500)
    schema = Schema((Column("x", "numeric", "float", min=0, max=1000),))
    warning, = dataset_warnings(Dataset("t", schema, pd.DataFrame({"x": x})))
    assert "'x'" in warning and "--hint 'x={kind: numeric, min: A, max: B}'" in warning
    assert "'bins'" in warning and "--public FILE" in warning and "larger --epsilon" in warning
    assert "proposes them" not in warning


def skewed(share: float, n: int = 1000, source: SchemaSource | None = SchemaSource("dp"),
           missing: bool = False):
    """``share`` of the rows in one code: the value "a", or (``missing``) the missing code."""
    top = int(round(share * n))
    values = np.array(["a"] * top + ["b"] * (n - top - n // 100) + ["c"] * (n // 100),
                      dtype=object)
    if missing:
        values[:top] = None
    schema = Schema((Column("c", "categorical", "str", values=("a", "b", "c"),
                            allow_missing=missing),))
    return Dataset("t", schema, pd.DataFrame({"c": values}), schema_source=source)


def test_a_proposed_categorical_left_mostly_missing_is_a_warning_with_a_fix():
    warning, = dataset_warnings(skewed(0.95, missing=True))
    assert "categorical column 'c'" in warning and "more than 90% of the rows missing" \
        in warning
    assert "--max-categories" in warning and "--hint 'c={values: [...]}'" in warning
    assert not any(ch.isdigit() for ch in warning.replace("90%", ""))
    assert dataset_warnings(skewed(0.85, missing=True)) == []          # below the share
    # a skewed column (95% in one value) is the data as it is, not a weak schema
    assert dataset_warnings(skewed(0.95)) == []
    assert dataset_warnings(skewed(0.95, missing=True, source=None)) == []  # hand-written


# ----- schemas on the board -------------------------------------------------------------------
def test_the_schema_digest_is_keyed_and_follows_the_content():
    a = Schema((Column("x", "numeric", "float", min=0, max=10, bins=(2, 5)),))
    b = Schema((Column("x", "numeric", "float", min=0, max=10, bins=(3, 5)),))
    canonical = json.dumps(a.to_parameters()["schema"], sort_keys=True, separators=(",", ":"))
    assert schema_digest(a) == schema_digest(Schema.from_parameters(a.to_parameters()))
    assert schema_digest(a) != schema_digest(b) and len(schema_digest(a)) == 16
    assert schema_digest(a) not in hashlib.sha256(canonical.encode()).hexdigest()


def test_a_board_of_runs_on_two_schemas_of_one_table_says_so(tmp_path, tracking_uri):
    from dp_arena.report.leaderboard import build_leaderboard, load_runs
    from dp_arena.report.render import render_html, render_markdown
    from dp_arena.report.schema_notes import mixed_schema_notes
    from dp_arena.report.terminal import render_terminal
    from dp_arena.run.runner import run_one

    path, coarse = three_format_table(tmp_path, n=300)
    fine = tmp_path / "fine.json"
    params = json.loads(coarse.read_text())
    params["schema"]["fare"]["bins"] = [10, 15, 20, 25, 30, 35, 40]
    fine.write_text(json.dumps(params))
    for schema in (coarse, fine):
        out = run_one({"dataset": {"name": "csv", "path": str(path), "schema": str(schema),
                                   "label": "trips", "max_loss": 0.7},
                       "mechanism": {"name": "independent"}, "metrics": {"kmarginal": {}},
                       "privacy": {"epsilon": 1.0, "delta": 1e-6}, "trial": 0,
                       "tracking": {"uri": tracking_uri, "experiment": "loss"}})
        assert out.status == "FINISHED"
    runs = load_runs("loss", tracking_uri)
    assert runs["schema_digest"].nunique() == 2
    board = build_leaderboard(runs)
    note, = mixed_schema_notes(board)
    assert note.startswith("dataset 'trips': its runs used 2 different schemas")
    assert f"- {note}" in render_markdown(board).replace("\\", "")
    assert "2 different schemas" in render_html(board, "t")
    assert f"note: {note}" in " ".join(render_terminal(board).split())
    one = build_leaderboard(runs[runs["schema_digest"] == runs["schema_digest"].iloc[0]])
    assert mixed_schema_notes(one) == [] and "different schemas" not in render_markdown(one)


def test_rows_empty_where_the_schema_allows_none_name_allow_missing_as_the_fix():
    report = LoadReport((ColumnLoss("tips", "numeric", present=90, empty=10, dropped_rows=10),
                         ColumnLoss("fare", "numeric", present=100)), 100, 10)
    refusal = str(loss_refusal(report, 0.05, "trips"))
    assert "10 of 100 rows (10.0%) dropped: missing where the schema allows none (tips: 10)" \
        in refusal
    assert "- tips (numeric): 10 rows dropped as missing here (10 empty in the file); fix: " \
        "let it be missing ('allow_missing': true" in refusal
    assert "fare" not in refusal and "dataset.drop=[tips]" in refusal


def test_the_schema_quality_line_names_weak_columns_and_no_loading_fact():
    from dp_arena.data.conform import schema_quality
    from dp_arena.report.schema_notes import schema_notes

    source = SchemaSource("dp", 0.5, 1e-6, columns=(
        ("company", (("codes", 6), ("from", "dp"), ("keeps", 0.8), ("largest", 0.5))),
        ("tips", (("codes", 5), ("from", "dp"), ("keeps", 1.0), ("largest", 0.93))),
        ("fare", (("codes", 10), ("from", "hint"),))))
    text = schema_quality(source)
    # what the schema file holds (DP releases' post-processing), nothing loading found
    assert text == ("3 column(s) from a DP proposal (eps 0.5); weak: company keeps ~80%, tips "
                    "has ~93% in one code")
    assert schema_quality(None) == ""
    # a from-private schema's block carries no shares: only its source is said
    assert schema_quality(SchemaSource("private", math.inf)) == \
        "read from the private file (not DP)"
    board = pd.DataFrame({"dataset": ["t", "t"], "status": ["ok", "ok"],
                          "schema_digests": ["a", "a"], "schema_quality": [text, text]})
    assert schema_notes(board) == [f"schema of dataset 't': {text}"]
