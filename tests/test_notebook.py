"""The Python API for notebooks (dp_arena.api, dp_arena/sweep/dataframe.py): README's example
runs and its board is the command line's board of the same runs; bad input is one error before
anything starts and leaves nothing behind; a schema read from the private file marks its board
rows; a DP schema's spend reaches the board as "eps schema" and "eps schema + mechanism
(basic)".

Tolerances: (a) the same means from the notebook API and from the command line's board,
read back from its CSV (pandas writes floats to round-trip, 17 significant digits; pandas may
reassociate the means' sums): rtol/rel=1e-12 is ~4,500 ulps, above both.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.api import read_board, run_competition
from dp_arena.cli.board import main as board_main
from dp_arena.cli.schema import main as schema_main
from dp_arena.data.datasets import PROJECT_ROOT
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import DPArenaError
from dp_arena.report.leaderboard import MARK_SCHEMA_PRIVATE
from dp_arena.report.render import SCHEMA_EPS, TOTAL_EPS, render_markdown
from dp_arena.sweep.dataframe import private_base


def readme_example() -> str:
    """README's Python API example: its first ``python`` code block that calls
    ``run_competition`` (found by content, so it follows the README wherever it moves)."""
    text = (PROJECT_ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    return next(b for b in blocks if "run_competition(" in b)


def frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"colour": rng.choice(["red", "green", None], n),
                         "size": rng.integers(0, 4, n),
                         "amount": rng.gamma(2, 10, n).round(2).clip(0, 200)})


SCHEMA = Schema((Column("colour", "categorical", "str", values=("green", "red"),
                        allow_missing=True),
                 Column("size", "categorical", "int64", values=(0, 1, 2, 3)),
                 Column("amount", "numeric", "float", min=0, max=200, bins=(10, 20, 40))))


def leftovers(name: str) -> list[Path]:
    return list((private_base() / "frames").glob(f"{name}*"))


@pytest.mark.slow
def test_readme_example_returns_the_command_lines_board(tracking_uri, tmp_path, capsys):
    namespace: dict = {}
    exec(readme_example(), namespace)  # noqa: S102 - README's own example
    board = namespace["board"]
    printed = capsys.readouterr().out
    assert "[6/6] done" in printed and "sweep finished: 6 of 6 runs succeeded" in printed
    assert isinstance(board, pd.DataFrame) and len(board) == 3
    assert board_main(["--experiment", "dp-arena/my_table", "--out", str(tmp_path / "lb")]) == 0
    cli = pd.read_csv(tmp_path / "lb" / "leaderboard.csv")
    cols = ["mechanism", "epsilon", "n", "mean"]
    ours = board[cols].sort_values("mechanism").reset_index(drop=True)
    theirs = cli[cols].sort_values("mechanism").reset_index(drop=True)
    assert ours["mechanism"].tolist() == theirs["mechanism"].tolist() == \
        ["independent", "mst", "uniform"]
    assert ours["epsilon"].tolist() == theirs["epsilon"].tolist() == [1.0, 1.0, 1.0]
    assert ours["n"].tolist() == theirs["n"].tolist() == [2, 2, 2]
    assert np.allclose(ours["mean"], theirs["mean"], rtol=1e-12)
    again = namespace["again"]
    assert np.allclose(again.sort_values("mechanism")["mean"], ours["mean"], rtol=1e-12)
    assert leftovers("my_table") == []


@pytest.mark.slow
def test_readme_example_runs_as_a_plain_script(tracking_uri, tmp_path):
    """README's example saved to a file and run with ``python file.py``, no ``__main__`` guard:
    the job worker must not re-run the script (it did: BrokenProcessPool, exit 1)."""
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    assert 'if __name__ == "__main__"' not in script.read_text()
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri}
    done = subprocess.run([sys.executable, str(script)], check=False, cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "BrokenProcessPool" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.count("] done") == 6  # 3 mechanisms x 1 epsilon x 2 trials, once each
    assert "sweep finished: 6 of 6 runs succeeded" in done.stdout
    assert leftovers("my_table") == []


@pytest.mark.parametrize("kwargs, words", [
    ({"mechanisms": ["independent", "nope"]}, "mechanisms: no option named 'nope'"),
    ({"mechanisms": ["independent"], "epsilons": [0.0]}, "epsilons must be finite numbers > 0"),
    ({"mechanisms": ["independent"], "epsilons": [float("inf")]}, "epsilons must be finite"),
    ({"mechanisms": ["independent"], "trials": 0}, "trials must be a count >= 1"),
    ({"mechanisms": ["independent"], "metrics": "nope"}, "metrics: no option named 'nope'"),
    ({"mechanisms": ["independent"], "mechanism_settings": {"independent": {"bogus": 1}}},
     "unknown setting mechanism.bogus"),
    ({"mechanisms": ["independent"], "delta": 0.5},
     "at or above 1/(number of persons"),
    ({"mechanisms": ["archetype"]}, "no mechanism applies to this data"),
    ({"mechanisms": ["independent"], "holdout_fraction": 1.5}, "holdout_fraction must be a share"),
    ({"mechanisms": ["independent"], "target": "nope"}, "dataset.target 'nope' is not a column"),
    ({"mechanisms": ["independent"], "tracking_uri": "foo://bar"},
     "MLflow cannot store runs at a foo:// address"),
])
def test_bad_input_is_one_error_before_anything_starts(no_store, tmp_path, kwargs, words):
    with pytest.raises(DPArenaError) as exc:
        run_competition(frame(), SCHEMA, name="bad_input", epsilons=kwargs.pop("epsilons", [1.0]),
                        trials=kwargs.pop("trials", 1), metrics=kwargs.pop("metrics",
                                                                          "kmarginal"),
                        progress=False, **kwargs)
    assert str(exc.value).count(words) == 1, str(exc.value)
    assert "fix" in str(exc.value)
    assert not (tmp_path / "mlflow.db").exists(), "an MLflow store was created"
    assert leftovers("bad_input") == []


def test_a_frame_that_does_not_fit_names_the_frame_never_its_values(no_store, tmp_path):
    bad = frame().assign(extra=1)
    bad.loc[:4, "colour"] = "secret-value"
    with pytest.raises(DPArenaError) as exc:
        run_competition(bad, SCHEMA, mechanisms=["independent"], epsilons=[1.0], trials=1,
                        name="bad_frame", progress=False)
    text = str(exc.value)
    assert text.startswith("the data DataFrame does not match the schema (2 problems)")
    assert "unexpected columns: ['extra']" in text and "colour: 5 value(s)" in text
    assert "secret" not in text and "/tmp" not in text
    assert not (tmp_path / "mlflow.db").exists()
    assert leftovers("bad_frame") == []


def test_wrong_argument_types_are_one_error(no_store):
    with pytest.raises(DPArenaError, match="data must be a pandas DataFrame"):
        run_competition(frame().to_dict(), SCHEMA, mechanisms=["independent"])
    with pytest.raises(DPArenaError, match="schema must be a Schema"):
        run_competition(frame(), 42, mechanisms=["independent"], progress=False)
    with pytest.raises(DPArenaError, match="name must be"):
        run_competition(frame(), SCHEMA, mechanisms=["independent"], name="../up")


def run_schema(argv: list[str]) -> None:
    try:
        assert schema_main(argv) == 0
    except SystemExit as exc:  # pragma: no cover - a refusal fails the test with its code
        raise AssertionError(f"dp-arena-schema exited {exc.code}") from None


@pytest.mark.slow
def test_from_private_schema_marks_its_board_rows_end_to_end(tracking_uri, tmp_path):
    csv = tmp_path / "private.csv"
    frame(400).to_csv(csv, index=False)
    run_schema([str(csv), "--out", str(tmp_path / "parameters.json"), "--from-private"])
    board = run_competition(pd.read_csv(csv), tmp_path / "parameters.json",
                            mechanisms=["independent"], epsilons=[1.0], trials=2,
                            metrics="kmarginal", name="from_private", progress=False)
    row, = board.to_dict("records")
    assert MARK_SCHEMA_PRIVATE in row["marks"] and row["n"] == 2
    assert math.isinf(row["schema_epsilon"]) and math.isinf(row["epsilon_total"])
    again = read_board("dp-arena/from_private")
    assert MARK_SCHEMA_PRIVATE in again["marks"].iloc[0]
    text = render_markdown(again)
    assert text.count(f"{MARK_SCHEMA_PRIVATE}:") == 1  # the legend
    assert "∞ (not private)" in text and TOTAL_EPS in text


@pytest.mark.slow
def test_dp_schema_spend_is_on_the_board_with_its_composition(tracking_uri, tmp_path):
    csv = tmp_path / "private.csv"
    frame(2000).to_csv(csv, index=False)
    params = tmp_path / "parameters.json"
    run_schema([str(csv), "--out", str(params), "--epsilon", "0.5"])
    ledger = json.loads((tmp_path / "parameters.ledger.json").read_text())
    board = run_competition(pd.read_csv(csv), params, mechanisms=["independent"],
                            epsilons=[1.0], trials=1, metrics="kmarginal", name="dp_schema",
                            progress=False)
    row, = board.to_dict("records")
    assert row["marks"] == ""
    assert row["schema_epsilon"] == pytest.approx(ledger["total"]["epsilon"], rel=1e-12)
    assert row["epsilon_total"] == pytest.approx(row["epsilon_spent"] + row["schema_epsilon"])
    text = render_markdown(board)
    assert re.search(rf"\|\s*{SCHEMA_EPS}\s*\|", text) and TOTAL_EPS in text
    assert "basic sequential composition" in text
    assert f"{row['epsilon_total']:.4g}" in text


def test_the_held_out_share_and_target_reach_the_utility_and_risk_views(tracking_uri):
    """run_competition takes the held-out share and the target (as dataset=csv does) and the
    owner's opt-in that puts held-out scores on the board: ML efficacy's macro-F1 on 'size'
    (4 classes) and membership's AUC."""
    board = run_competition(frame(600), SCHEMA, mechanisms=["independent"], epsilons=[1.0],
                            trials=1, metrics="heldout", name="heldout_api", progress=False,
                            holdout_fraction=0.25, target="size", log_heldout_scores=True)
    row = board[board["mechanism"] == "independent"].iloc[0]
    assert 0 <= row["ml_efficacy/score"] <= 1 and 0 <= row["membership/auc"] <= 1
    assert leftovers("heldout_api") == []
