"""``dp-arena-board --out`` into a folder it cannot write: one message with the fix, exit 2,
before any run is read (tests run as root, who may write in any folder: a file on the way is
the honest obstacle here; the permission check is ``os.access``, tried with it saying no)."""

from __future__ import annotations

import os

import pytest

from dp_arena.cli import board
from dp_arena.cli.board import OUT_FIX, main, out_folder_problem


def one_message(err: str) -> list[str]:
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 2, err
    assert lines[1] == f"  fix: {OUT_FIX}"
    return lines


def test_a_file_on_the_way_is_one_message_before_any_run_is_read(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    # no store in this folder: reading runs would fail with another message
    assert main(["--out", "notes.txt/board"]) == 2
    lines = one_message(capsys.readouterr().err)
    assert lines[0] == (f"dp-arena-board: error: --out 'notes.txt/board': "
                        f"'{tmp_path / 'notes.txt'}' is a file, not a folder")
    assert main(["--out", "notes.txt"]) == 2
    assert "'notes.txt': " in one_message(capsys.readouterr().err)[0]
    assert not (tmp_path / "mlflow.db").exists()  # nothing created


def test_a_folder_this_user_cannot_write_is_named(tmp_path, monkeypatch):
    locked = tmp_path / "shared"
    locked.mkdir()
    said_no = []

    def access(path, mode):
        said_no.append((os.fspath(path), mode))
        return os.fspath(path) != str(locked)

    monkeypatch.setattr(board.os, "access", access)
    assert out_folder_problem(locked) == f"--out '{locked}': this user cannot write there"
    # the folder to make does not exist: the first existing one on the way is asked
    assert out_folder_problem(locked / "a" / "b") == (
        f"--out '{locked / 'a' / 'b'}': this user cannot write there (the folder "
        f"'{locked}' on the way)")
    assert said_no[-1] == (str(locked), os.W_OK | os.X_OK)
    assert out_folder_problem(tmp_path / "elsewhere") is None
    assert out_folder_problem(tmp_path) is None


def test_a_write_that_fails_anyway_is_one_message(tracking_uri, tmp_path, monkeypatch, capsys):
    from dp_arena.report import render
    from tests.support.default_board import store_runs, stored_runs

    store_runs(tracking_uri, stored_runs()[:4])

    def read_only(*_args, **_kwargs):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(render, "write_outputs", read_only)
    monkeypatch.setenv("DP_ARENA_BOARD", "markdown")
    assert main(["--out", str(tmp_path / "lb")]) == 2
    captured = capsys.readouterr()
    assert one_message(captured.err)[0] == (
        f"dp-arena-board: error: --out '{tmp_path / 'lb'}': cannot write the board there "
        "(Read-only file system)")
    assert captured.out == ""  # nothing rendered before the write
