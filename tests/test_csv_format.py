"""A CSV's delimiter and encoding, found before it is read: a tab- or semicolon-separated file
and a Latin-1 (Windows-1252) file are each refused with one message that names what the file
is and the exact setting that reads it (``--sep tab`` / ``dataset.sep=tab``, ``--encoding
cp1252`` / ``dataset.encoding=cp1252``), exit 2, nothing written and no cell value quoted;
with that setting the file reads as written (every column, every accent)."""

from __future__ import annotations

import codecs
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.csv_format import (
    check_csv_format,
    delimiter_of,
    encoding_problem,
    separator,
)
from dp_arena.data.datasets import load_csv_dataset, read_csv_file
from dp_arena.errors import ConfigError, DPArenaError
from tests.support.forked import run_forked
from tests.sweep_support import ENV

#: Private cell values that no message may quote.
CITIES = ("Zürich", "Genève", "Köln")


def table(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"city": rng.choice(CITIES, n), "size": rng.integers(0, 4, n),
                         "amount": rng.integers(0, 100, n)})


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The same table written five ways, and a schema proposed from the plain one."""
    df = table()
    df.to_csv(tmp_path / "good.csv", index=False)
    df.to_csv(tmp_path / "tab.csv", sep="\t", index=False)
    df.to_csv(tmp_path / "semi.csv", sep=";", index=False)
    df.to_csv(tmp_path / "latin.csv", index=False, encoding="cp1252")
    df.to_csv(tmp_path / "utf16.csv", index=False, encoding="utf-16")
    return tmp_path


# ----- the pieces -------------------------------------------------------------------------------
@pytest.mark.parametrize("header, found", [
    ("a,b,c", ","), ("a\tb\tc", "\t"), ("a;b;c", ";"), ("a|b", "|"), ("one", None),
    ("a;b,c;d", ";")])
def test_the_header_rows_delimiter(header, found):
    assert delimiter_of(header) == found


def test_encoding_problems_name_what_the_bytes_are():
    assert encoding_problem("Zürich,1\n".encode(), "utf-8") is None
    assert encoding_problem("Zürich,1\n".encode("cp1252"), "utf-8") == "it is not UTF-8 text"
    assert encoding_problem("Zürich,1\n".encode("cp1252"), "cp1252") is None
    assert "UTF-16" in encoding_problem("a,b\n".encode("utf-16"), "utf-8")
    assert "NUL bytes" in encoding_problem(bytes(range(256)), "utf-8")
    cut = "aü".encode()[:-1]  # a beginning cut inside a character is still UTF-8
    assert encoding_problem(cut, "utf-8") is None


@pytest.mark.parametrize("value, char", [("tab", "\t"), ("\\t", "\t"), ("Semicolon", ";"),
                                         (",", ","), ("pipe", "|")])
def test_sep_settings(value, char):
    assert separator(value) == char


def test_a_sep_that_is_not_a_delimiter_is_refused_with_the_choices():
    with pytest.raises(ConfigError, match="pass --sep comma, tab, semicolon or pipe"):
        separator("x", "--sep")


@pytest.mark.parametrize("name, sep, words, fix", [
    ("tab.csv", ",", "is tab-separated (its header row has 3 tab-separated names and no comma)",
     "pass dataset.sep=tab"),
    ("semi.csv", ",", "is semicolon-separated", "pass dataset.sep=semicolon"),
    ("good.csv", "\t", "is comma-separated", "pass dataset.sep=comma"),
    ("latin.csv", ",", "it is not UTF-8 text", "pass dataset.encoding=cp1252"),
    ("utf16.csv", ",", "it is UTF-16 text", "pass dataset.encoding=utf-16")])
def test_a_misread_file_is_refused_with_the_setting_that_reads_it(files, name, sep, words, fix):
    with pytest.raises(DPArenaError) as err:
        read_csv_file(files / name, "dataset.path", sep)
    text = str(err.value)
    assert words in err.value.problem and fix in err.value.fix
    assert "comma-separated file with a header row" not in text
    assert not any(city in text for city in CITIES)


@pytest.mark.parametrize("name, sep, encoding", [
    ("tab.csv", "\t", "utf-8"), ("semi.csv", ";", "utf-8"), ("latin.csv", ",", "cp1252"),
    ("utf16.csv", ",", "utf-16"), ("good.csv", ",", "utf-8")])
def test_with_the_setting_the_file_reads_as_written(files, name, sep, encoding):
    check_csv_format(files / name, "x", sep, encoding)
    df = read_csv_file(files / name, "x", sep, encoding)
    pd.testing.assert_frame_equal(df, table())


def test_a_latin1_byte_past_the_examined_beginning_still_names_the_encoding(tmp_path):
    path = tmp_path / "late.csv"
    path.write_bytes(b"city,n\n" + b"plain,1\n" * 20_000 + "Köln,2\n".encode("cp1252"))
    with pytest.raises(DPArenaError) as err:
        read_csv_file(path, "DATA", options=("--sep", "--encoding"))
    assert "it is not UTF-8 text (after its first 64 KB)" in err.value.problem
    assert "--encoding cp1252" in err.value.fix


def test_the_csv_dataset_takes_sep_and_encoding(files):
    assert run_forked(["dp-arena-schema", "good.csv", "--out", "p.json", "--from-private"],
                      files, ENV).returncode == 0
    ds = load_csv_dataset(str(files / "latin.csv"), str(files / "p.json"), encoding="cp1252")
    assert set(ds.private["city"]) == set(CITIES)
    ds = load_csv_dataset(str(files / "semi.csv"), str(files / "p.json"), sep="semicolon")
    assert list(ds.private.columns) == ["city", "size", "amount"]
    with pytest.raises(DPArenaError, match="dataset.sep=tab"):
        load_csv_dataset(str(files / "tab.csv"), str(files / "p.json"))


# ----- as a user runs them -----------------------------------------------------------------------
def refused(proc, words: str, fix: str) -> None:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text and text.count("fix:") == 1, text
    assert words in text and fix in text, text
    assert not any(city in text for city in CITIES), text


@pytest.mark.parametrize("name, words, fix", [
    ("tab.csv", "DATA: tab.csv is tab-separated", "fix: pass --sep tab"),
    ("semi.csv", "DATA: semi.csv is semicolon-separated", "fix: pass --sep semicolon"),
    ("latin.csv", "DATA: cannot read latin.csv as CSV: it is not UTF-8 text",
     "pass --encoding cp1252 (or latin-1)")])
def test_dp_arena_schema_names_the_delimiter_or_encoding(files, name, words, fix):
    proc = run_forked(["dp-arena-schema", name, "--out", "p.json", "--from-private"], files,
                      ENV)
    refused(proc, words, fix)
    assert not (files / "p.json").exists()


@pytest.mark.parametrize("name, option, setting", [
    ("tab.csv", ("--sep", "tab"), "dataset.sep=tab"),
    ("latin.csv", ("--encoding", "cp1252"), "dataset.encoding=cp1252")])
def test_dp_arena_schema_reads_with_the_option_and_says_the_setting_for_the_sweep(
        files, name, option, setting):
    proc = run_forked(["dp-arena-schema", name, "--out", "p.json", "--from-private", *option],
                      files, ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].endswith(setting)
    assert "proposed 3 column(s)" in proc.stdout, proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name, words, fix", [
    ("tab.csv", "dataset.path: tab.csv is tab-separated", "fix: pass dataset.sep=tab"),
    ("latin.csv", "it is not UTF-8 text", "pass dataset.encoding=cp1252")])
def test_dp_arena_names_the_delimiter_or_encoding(files, empty_mlflow_store, name, words, fix):
    shutil.copyfile(empty_mlflow_store, files / "mlflow.db")
    assert run_forked(["dp-arena-schema", "good.csv", "--out", "p.json", "--from-private"],
                      files, ENV).returncode == 0
    proc = run_forked(["dp-arena", "dataset=csv", f"dataset.path={name}",
                       "dataset.schema=p.json", "mechanism=independent", "privacy.epsilon=1",
                       "privacy.delta=1e-6", "trial=0", "metrics=kmarginal"], files, ENV)
    refused(proc, words, fix)
    assert not (files / "multirun").exists() and not (files / "mlruns").exists()


def test_utf8_with_a_byte_order_mark_keeps_its_first_columns_name(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(codecs.BOM_UTF8 + b"city,n\nx,1\n")
    assert list(read_csv_file(path, "x").columns) == ["city", "n"]
