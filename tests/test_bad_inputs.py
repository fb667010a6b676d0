"""Bad inputs, retried as a newcomer makes them: each command, run as a user runs it
(its own process, forked by :func:`tests.support.forked.run_forked`, in a folder holding the
``csv_dir`` files and an empty MLflow store), must end
with exactly one message that names the problem and the fix (one ``fix:`` line, no
traceback), exit status 2, and leave the folder as it was (no ``multirun/``, ``mlruns/``,
schema, ledger or board files; the MLflow store that was there may be opened, no other).

The ``dp-arena`` cases fail while the sweep is planned or composed (a second or so each:
marked ``slow``); the ``dp-arena-schema`` and ``dp-arena-board`` cases are cheap.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.forked import run_forked
from tests.support.planning import without_planning
from tests.sweep_support import ENV

#: The csv_dir dataset, one job.
CSV = ("dataset=csv", "dataset.path=private.csv", "dataset.schema=parameters.json",
       "mechanism=independent", "privacy.epsilon=1", "privacy.delta=1e-6", "trial=0",
       "metrics=kmarginal")


def csv(**changes: str) -> tuple[str, ...]:
    """:data:`CSV` with settings replaced or added (``a__b`` is ``a.b``)."""
    keys = {k.replace("__", "."): v for k, v in changes.items()}
    kept = [o for o in CSV if o.split("=", 1)[0] not in keys]
    return (*kept, *(f"{k}={v}" for k, v in keys.items()))


def extra_files(folder: Path) -> None:
    """The malformed inputs a newcomer passes, beside the good ones."""
    (folder / "empty.csv").write_text("")
    (folder / "header.csv").write_text("pid,color,size,amount\n")
    (folder / "repeated.csv").write_text("a,a,b\n" + "".join(f"{i % 2},{i % 3},{i % 4}\n"
                                                             for i in range(60)))
    (folder / "one.csv").write_text("a\n" + "".join(f"{i % 3}\n" for i in range(60)))
    (folder / "one.json").write_text('{"a": 3}')  # a domain.json
    (folder / "notjson.json").write_text("color: red\n")
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (folder / "bad.yaml").write_text("amount: {kind: numeric, min: 0\n")
    readonly = folder / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)


#: (id, command, words the message must hold).
SWEEP_CASES = [
    ("wrong dataset name", ("dataset=nosuch",), ("dataset", "nosuch", "choose from")),
    ("missing CSV", csv(dataset__path="missing.csv"), ("file not found", "missing.csv")),
    ("empty CSV", csv(dataset__path="empty.csv"), ("empty.csv",)),
    ("CSV with only a header", csv(dataset__path="header.csv"), ("header.csv",)),
    ("target column that does not exist", csv(dataset__target="nosuch"),
     ("dataset.target", "nosuch")),
    ("epsilon=0", csv(privacy__epsilon="0"), ("privacy.epsilon", "> 0")),
    ("epsilon=-1", csv(privacy__epsilon="-1"), ("privacy.epsilon", "> 0")),
    ("epsilon=abc", csv(privacy__epsilon="abc"), ("privacy.epsilon", "number")),
    ("delta=1", csv(privacy__delta="1"), ("privacy.delta", "[0, 1)")),
    ("trials=abc", csv(trial="abc"), ("trial", "integer")),
    ("mechanism typo", csv(mechanism="indepndent"), ("indepndent", "choose from")),
    ("metrics typo", csv(metrics="kmargnal"), ("kmargnal", "choose from")),
    ("privacy typo", csv(privacy="zcpd"), ("zcpd", "choose from")),
    ("unknown setting", (*csv(), "mechanism.nosuch=1"), ("mechanism.nosuch",)),
    ("Hydra syntax error", (*csv(), "mechanism.k=[1,2"), ("mechanism.k=[1,2", "quotes")),
    ("tracking.uri foo://", csv(tracking__uri="foo://bar"), ("foo://",)),
    pytest.param("tracking.uri in a read-only folder",
                 csv(tracking__uri="sqlite:///readonly/sub/mlflow.db"), ("readonly",),
                 marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")),
    ("schema file that is not JSON", csv(dataset__schema="notjson.json"),
     ("notjson.json", "JSON")),
    ("schema file missing", csv(dataset__schema="missing.json"), ("missing.json",)),
    ("dataset=csv without a path", ("dataset=csv", "mechanism=independent", "trial=0"),
     ("dataset.path",)),
    ("negative time limit", csv(limits__time_limit_s="-5"), ("limits.time_limit_s",)),
    ("kmarginal k=0", csv(metrics__kmarginal__k="0"), ("metrics.kmarginal.k",)),
    ("max_loss above 1", csv(dataset__max_loss="2"), ("dataset.max_loss",)),
    ("one-column table under k=2",
     csv(dataset__path="one.csv", dataset__schema="one.json", metrics__kmarginal__k="2"),
     ("metrics.kmarginal.k",)),
    ("binary file as CSV", csv(dataset__path="binary.csv"), ("binary.csv",)),
    ("SLURM without sbatch", (*csv(), "hydra/launcher=slurm"), ("sbatch",)),
]

SCHEMA_CASES = [
    ("--hint with bad YAML", ("private.csv", "--out", "p.json", "--public", "public.csv",
                              "--hint", "amount={kind: numeric, min: 0"),
     ("--hint", "amount", "YAML")),
    ("--hints file with bad YAML", ("private.csv", "--out", "p.json", "--public", "public.csv",
                                    "--hints", "bad.yaml"), ("bad.yaml",)),
    ("--hint for a column that does not exist",
     ("private.csv", "--out", "p.json", "--public", "public.csv", "--hint",
      "nosuch={kind: numeric, min: 0, max: 1}"), ("nosuch",)),
    ("missing CSV", ("missing.csv", "--out", "p.json", "--public", "public.csv"),
     ("missing.csv",)),
    ("no source", ("private.csv", "--out", "p.json"), ("--public", "--epsilon")),
    ("--epsilon -1", ("private.csv", "--out", "p.json", "--epsilon", "-1"), ("--epsilon",)),
    ("--epsilon abc", ("private.csv", "--out", "p.json", "--epsilon", "abc"),
     ("--epsilon", "abc")),
    ("--delta 1", ("private.csv", "--out", "p.json", "--epsilon", "1", "--delta", "1"),
     ("--delta",)),
    ("empty CSV", ("empty.csv", "--out", "p.json", "--from-private"), ("empty.csv",)),
    ("CSV with only a header", ("header.csv", "--out", "p.json", "--from-private"),
     ("column",)),
    ("duplicated column names", ("repeated.csv", "--out", "p.json", "--from-private"),
     ("'a'", "more than once")),
    ("binary file as CSV", ("binary.csv", "--out", "p.json", "--from-private"),
     ("binary.csv",)),
    ("public sample with other columns", ("private.csv", "--out", "p.json", "--public",
                                          "repeated.csv"), ("--public",)),
    ("--public is the private file", ("private.csv", "--out", "p.json", "--public",
                                      "private.csv"), ("same rows",)),
    ("misspelt option", ("private.csv", "--out", "p.json", "--form-private"),
     ("--form-private",)),
]

BOARD_CASES = [
    ("unknown experiment", ("--experiment", "nosuch"), ("nosuch",)),
    ("tracking URI foo://", ("--tracking-uri", "foo://bar"), ("foo://",)),
    ("no store in the folder", ("--tracking-uri", "sqlite:///elsewhere.db"), ("elsewhere",)),
    ("misspelt option", ("--experimnet", "x"), ("--experimnet",)),
    ("--alpha out of range", ("--alpha", "2"), ("--alpha",)),
]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (the read-only folder too) with a hash of its content."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


def run_bad(folder: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return run_forked(argv, folder, {**ENV, "COLUMNS": "120"})


def check_one_message(folder: Path, argv: list[str], words: tuple[str, ...]) -> None:
    extra_files(folder)
    before = snapshot(folder)
    try:
        proc = run_bad(folder, argv)
    finally:
        (folder / "readonly").chmod(0o755)
    text = (proc.stderr + proc.stdout).strip()
    # a long plan may say it is alive ("planning: checking job k of n: JOB (12s)"); nothing else
    message = "\n".join(without_planning(text))
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{text}"
    assert "Traceback" not in text and "usage:" not in text, text
    assert message.count("fix:") == 1, message  # one problem, one fix
    assert message.startswith("dp-arena"), message  # the command names itself first
    for word in words:
        assert word in message, f"{word!r} not in:\n{message}"
    after = snapshot(folder)
    # the MLflow store that was there may be opened (MLflow checks its tables; the harness
    # locks it the first time, leaving the empty lock file beside it), never another file
    for files in (before, after):
        files.pop("readonly", None), files.pop("mlflow.db.lock", None)
        files["mlflow.db"] = "the store"
    assert after == before, f"left behind: {sorted(set(after) - set(before))}"


def params(cases: list) -> list:
    """(id, argv, words) cases as pytest params (a case may already be one, with marks)."""
    return [pytest.param(*c.values[1:], id=c.values[0], marks=c.marks)
            if hasattr(c, "values") else pytest.param(*c[1:], id=c[0]) for c in cases]


@pytest.mark.slow
@pytest.mark.parametrize(("overrides", "words"), params(SWEEP_CASES))
def test_dp_arena_bad_input_is_one_message_exit_2_nothing_left(csv_dir, overrides, words):
    check_one_message(csv_dir, ["dp-arena", *overrides], words)


@pytest.mark.parametrize(("args", "words"), params(SCHEMA_CASES))
def test_dp_arena_schema_bad_input_is_one_message_exit_2_nothing_left(csv_dir, args, words):
    check_one_message(csv_dir, ["dp-arena-schema", *args], words)


@pytest.mark.parametrize(("args", "words"), params(BOARD_CASES))
def test_dp_arena_board_bad_input_is_one_message_exit_2_nothing_left(csv_dir, args, words):
    check_one_message(csv_dir, ["dp-arena-board", *args], words)


def test_there_are_at_least_25_cases():
    assert len(SWEEP_CASES) + len(SCHEMA_CASES) + len(BOARD_CASES) >= 25
