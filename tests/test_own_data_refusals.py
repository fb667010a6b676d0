"""Refusals and limits on the own-data path: a "public" sample that is the
private table or a subset of it (:mod:`dp_arena.data.overlap`), from-private marks that survive
deleting the ``proposal`` block (:mod:`dp_arena.data.provenance`), and the memory limit checked
on an estimate of the loaded size before a CSV is read whole (:mod:`dp_arena.run.preflight`).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.cli.schema import main as schema_main
from dp_arena.data.conform import read_source
from dp_arena.data.overlap import (MAX_LOG_CHANCE, cell_hashes, copy_log_chance, fresh_key,
                                  new_row_chance, overlap_kind, row_digests)
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import DPArenaError

DIGITS = "1,2,3,4,5,6,7,8,9,0\n"


# ----- tables ---------------------------------------------------------------------------------
def mixed_table(n: int, seed: int) -> pd.DataFrame:
    """A table of (almost surely) distinct rows: fares to the cent, text, integers."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"fare": rng.gamma(2.0, 8.0, n).round(2),
                         "company": rng.choice(["Flash Cab", "Sun Taxi", "City Service"], n),
                         "miles": rng.gamma(1.0, 3.0, n).round(1),
                         "area": rng.integers(1, 78, n)})


def low_cardinality_table(n: int, seed: int) -> pd.DataFrame:
    """16 binary columns, each 1 with probability 0.1: a few hundred rows cover most of it."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame((rng.random((n, 16)) < 0.1).astype(int),
                        columns=[f"b{i}" for i in range(16)])


def schema_cli(tmp_path: Path, capsys, *argv: str) -> tuple[int, str]:
    """``dp-arena-schema ARGV`` -> (exit status, stderr)."""
    try:
        code = schema_main(list(argv))
    except SystemExit as exc:
        code = int(exc.code)
    return code, capsys.readouterr().err


# ----- normalisation and the rule, by hand ----------------------------------------------------
def test_cells_compare_as_read_whatever_the_file_made_of_them():
    same = pd.Series([7, "7", " 7.0 ", 7.0, "7e0"], dtype=object)
    assert len(set(cell_hashes(same).tolist())) == 1
    missing = pd.Series([None, np.nan, "", "   "], dtype=object)
    assert len(set(cell_hashes(missing).tolist())) == 1
    assert cell_hashes(pd.Series([" Flash Cab"]))[0] == cell_hashes(pd.Series(["Flash Cab"]))[0]
    distinct = pd.Series(["7", "7.5", "x", None, "0", "Flash Cab", "flash cab"], dtype=object)
    assert len(set(cell_hashes(distinct).tolist())) == len(distinct)
    # an int column read as floats (a missing value elsewhere) matches its integer reading
    assert (cell_hashes(pd.Series([1, 2, 3])) == cell_hashes(pd.Series([1.0, 2.0, 3.0]))).all()


def test_the_rule_on_hand_made_digests():
    distinct = np.arange(100, dtype=np.uint64)
    # add-one smoothed duplicate rate: (repeated rows + 1) / (rows + 2)
    assert new_row_chance(distinct) == pytest.approx(1 - 1 / 102)
    assert new_row_chance(np.array([1, 1, 2, 3], dtype=np.uint64)) == pytest.approx(1 - 3 / 6)
    assert overlap_kind(distinct, distinct) == "identical"
    # 20 rows of a 100-row table of distinct rows: an independent sample misses none of 20
    # with chance (1/102)^20 = e^-92
    assert overlap_kind(distinct[:20], distinct) == "subset"
    assert overlap_kind(distinct[::-1].copy(), distinct) == "subset"  # shuffled copy
    assert overlap_kind(np.arange(90, 110, dtype=np.uint64), distinct) is None  # half outside
    assert overlap_kind(np.arange(100, 200, dtype=np.uint64), distinct) is None
    # a copy of a constant table says nothing more than a constant public sample would
    constant = np.zeros(50, dtype=np.uint64)
    assert copy_log_chance(constant) == 0.0 and overlap_kind(constant, constant) is None
    # 5 rows of a table with 2 equally common rows: chance 2^-5 > e^-20 of reproducing them
    two = np.array([0, 1, 0, 1, 1], dtype=np.uint64)
    assert copy_log_chance(two) > MAX_LOG_CHANCE and overlap_kind(two, two) is None


# ----- dp-arena-schema --public -----------------------------------------------------------------
def test_public_file_equal_to_the_private_file_is_refused(tmp_path, capsys):
    raw, out = tmp_path / "raw.csv", tmp_path / "p.json"
    mixed_table(1500, 0).to_csv(raw, index=False)
    code, err = schema_cli(tmp_path, capsys, str(raw), "--public", str(raw), "--out", str(out))
    assert code == 2
    assert err.count("error:") == 1 and "holds the same rows as DATA" in err
    assert "labelled public" in err and "fix:" in err and "--epsilon" in err
    assert "1500" not in err and "Flash Cab" not in err  # no count, no value
    assert not out.exists()


def test_public_file_that_is_a_fifth_of_the_private_rows_is_refused(tmp_path, capsys):
    raw, sub, out = tmp_path / "raw.csv", tmp_path / "sub.csv", tmp_path / "p.json"
    table = mixed_table(1500, 1)
    table.to_csv(raw, index=False)
    part = table.sample(frac=0.2, random_state=3)
    # exported by another tool: integers as floats, text padded, columns reordered
    part = part.assign(area=part["area"].astype(float), company=" " + part["company"])
    part[["miles", "company", "area", "fare"]].to_csv(sub, index=False)
    code, err = schema_cli(tmp_path, capsys, str(raw), "--public", str(sub), "--out", str(out))
    assert code == 2
    assert err.count("error:") == 1
    assert "most rows of the --public sample are rows of DATA" in err
    assert "300" not in err and not out.exists()


def test_disjoint_half_of_a_low_cardinality_table_is_not_refused(tmp_path, capsys):
    table = low_cardinality_table(20_000, 5)
    half = np.random.default_rng(6).permutation(len(table)) < len(table) // 2
    public, private = table[half], table[~half]
    key = fresh_key()
    theirs, ours = row_digests(public, list(table.columns), key), \
        row_digests(private, list(table.columns), key)
    # the premise: almost every public row is a row of the private half (a naive "share of
    # rows found" rule would refuse it) ...
    assert np.isin(theirs, ours).mean() > 0.9
    # ... as the private half's own repeats predict
    assert 1 - new_row_chance(ours) > 0.9
    pub, raw, out = tmp_path / "public.csv", tmp_path / "raw.csv", tmp_path / "p.json"
    public.to_csv(pub, index=False)
    private.to_csv(raw, index=False)
    code, err = schema_cli(tmp_path, capsys, str(raw), "--public", str(pub), "--out", str(out))
    assert (code, err) == (0, "")
    assert json.loads(out.read_text())["proposal"]["source"] == "public"
    for seed in range(7, 12):  # other random halves: never refused
        half = np.random.default_rng(seed).permutation(len(table)) < len(table) // 2
        assert overlap_kind(row_digests(table[half], list(table.columns), key),
                            row_digests(table[~half], list(table.columns), key)) is None


def test_disjoint_sample_of_distinct_rows_is_not_refused(tmp_path, capsys):
    raw, pub, out = tmp_path / "raw.csv", tmp_path / "pub.csv", tmp_path / "p.json"
    mixed_table(1500, 2).to_csv(raw, index=False)
    mixed_table(400, 3).to_csv(pub, index=False)
    code, err = schema_cli(tmp_path, capsys, str(raw), "--public", str(pub), "--out", str(out))
    assert (code, err) == (0, "") and out.exists()


# ----- dataset=csv with dataset.public_path -----------------------------------------------------
def taxi_like_schema() -> Schema:
    return Schema((Column("fare", "numeric", "float", min=0.0, max=1000.0),
                   Column("company", "categorical", "str",
                          values=("City Service", "Flash Cab", "Sun Taxi")),
                   Column("miles", "numeric", "float", min=0.0, max=500.0),
                   Column("area", "numeric", "int64", min=1, max=77)))


def test_dataset_public_path_pointing_at_the_private_rows_is_refused(tmp_path):
    from dp_arena.data.datasets import load_csv_dataset

    table = mixed_table(1000, 4)
    raw, sub, other = tmp_path / "raw.csv", tmp_path / "sub.csv", tmp_path / "other.csv"
    table.to_csv(raw, index=False)
    table.sample(frac=0.2, random_state=0).to_csv(sub, index=False)
    mixed_table(500, 9).to_csv(other, index=False)
    schema = tmp_path / "parameters.json"
    taxi_like_schema().save(schema)
    with pytest.raises(DPArenaError) as same:
        load_csv_dataset(str(raw), str(schema), public_path=str(raw), holdout_fraction=0.0)
    assert "dataset.public_path holds the same rows as dataset.path" in same.value.problem
    # with the default holdout the private rows are split in two: still refused
    with pytest.raises(DPArenaError, match="rows of dataset.path"):
        load_csv_dataset(str(raw), str(schema), public_path=str(raw))
    assert "dataset.public_fraction" in same.value.fix
    with pytest.raises(DPArenaError, match="most rows of dataset.public_path are rows of"):
        load_csv_dataset(str(raw), str(schema), public_path=str(sub))
    ds = load_csv_dataset(str(raw), str(schema), public_path=str(other))
    assert len(ds.public) == 500


# ----- the Python API: a Proposal remembers its sample ------------------------------------------
def test_a_public_proposal_made_from_the_private_frame_is_refused_by_run_competition(no_store):
    from dp_arena.sweep.dataframe import refuse_private_as_public, run_competition
    from dp_arena.cli.schema import write_proposal
    from dp_arena.data.propose import ProposalSettings, propose

    frame = mixed_table(800, 5)
    proposal = propose(frame, ProposalSettings("public"))
    assert proposal.sample_digests  # remembered, in memory only ...
    assert "sample_digests" not in repr(proposal)
    written = write_proposal(proposal, Path(no_store.split("///")[1]).with_name("p.json"))
    text = written[0].read_text()
    assert not any(d.split("x")[0] in text for d in proposal.sample_digests)  # never written
    with pytest.raises(DPArenaError) as exc:
        run_competition(frame, proposal, mechanisms=["uniform"], epsilons=[1.0], trials=1,
                        progress=False)
    assert "the sample the Proposal was made from holds the same rows as the data DataFrame" \
        in exc.value.problem
    assert not Path(no_store.split("///")[1]).exists()  # refused before any run or store
    # a proposal from a fifth of the frame; a public frame that is a fifth of it
    part = frame.sample(frac=0.2, random_state=1)
    with pytest.raises(DPArenaError, match="most rows of the sample the Proposal was made from"):
        refuse_private_as_public(frame, None, propose(part, ProposalSettings("public")))
    with pytest.raises(DPArenaError, match="most rows of the public DataFrame are rows of"):
        refuse_private_as_public(frame, part, taxi_like_schema())
    # a sample of other rows passes
    other = mixed_table(300, 6)
    refuse_private_as_public(frame, other, propose(other, ProposalSettings("public")))


# ----- from-private marks -----------------------------------------------------------------------
@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    from dp_arena.data.provenance import STATE_ENV

    folder = tmp_path / "state"
    monkeypatch.setenv(STATE_ENV, str(folder))
    return folder


def from_private_schema(tmp_path: Path, capsys) -> tuple[Path, Path]:
    raw, out = tmp_path / "raw.csv", tmp_path / "parameters.json"
    mixed_table(600, 8).to_csv(raw, index=False)
    code, err = schema_cli(tmp_path, capsys, str(raw), "--from-private", "--out", str(out))
    assert (code, err) == (0, "")
    return raw, out


def without_block(path: Path, edit=None) -> Path:
    raw = json.loads(path.read_text())
    del raw["proposal"]
    if edit:
        edit(raw["schema"])
    path.write_text(json.dumps(raw, indent=1))
    return path


def test_from_private_schema_with_its_block_deleted_is_still_private(tmp_path, capsys,
                                                                     state_dir):
    from dp_arena.data.datasets import load_csv_dataset
    from dp_arena.data.provenance import registry_path

    raw, params = from_private_schema(tmp_path, capsys)
    assert read_source(params).source == "private"
    without_block(params)
    source = read_source(params)
    assert source is not None and source.source == "private" and source.epsilon == np.inf
    ds = load_csv_dataset(str(raw), str(params))
    assert ds.schema_source.source == "private"
    # the registry: digests only, owner-only modes
    registry = registry_path()
    assert registry.parent == state_dir
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    lines = registry.read_text().split()
    assert len(lines) == 4 and all(len(x) == 64 and int(x, 16) >= 0 for x in lines)
    text = registry.read_text()
    assert not any(word in text for word in ("fare", "company", "Flash Cab", "area"))


def test_marks_follow_the_content_not_the_file(tmp_path, capsys, state_dir, monkeypatch):
    from dp_arena.data.provenance import STATE_ENV

    _, params = from_private_schema(tmp_path, capsys)
    original = params.read_text()

    def one_edited(schema):  # one column edited: the others still carry private content
        schema["fare"]["max"] = 2000.0
    assert read_source(without_block(params, one_edited)).source == "private"

    def every_edited(schema):  # the user's own edit of every column: un-marked (documented)
        for entry in schema.values():
            if "values" in entry:
                entry["values"] = entry["values"][1:]
            else:
                entry["max"] = entry["max"] + 1
    params.write_text(original)
    assert read_source(without_block(params, every_edited)) is None
    # a hand-written schema is not marked ...
    hand = tmp_path / "hand.json"
    taxi_like_schema().save(hand)
    spec = json.loads(hand.read_text())
    spec["schema"]["company"]["values"].append("Other")
    hand.write_text(json.dumps(spec))
    assert read_source(hand) is None
    # ... unless a column is the same as one proposed from private data (documented: the
    # content is what is marked, whoever wrote it; here the three companies of the table)
    taxi_like_schema().save(hand)
    assert read_source(hand).source == "private"
    # the same schema under another registry (another machine) is not known
    params.write_text(original)
    without_block(params)
    monkeypatch.setenv(STATE_ENV, str(tmp_path / "elsewhere"))
    assert read_source(params) is None


# ----- the memory limit -------------------------------------------------------------------------
PEAK = textwrap.dedent("""
    import sys
    from pathlib import Path

    def status(key):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))

    def start():  # reset the peak resident size to the current one (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return status("VmRSS:")

    def growth(before):
        return status("VmHWM:") - before
""")

REFUSE = PEAK + textwrap.dedent("""
    from dp_arena.errors import ConfigError
    from dp_arena.run.preflight import check_file_fits
    before = start()
    try:
        check_file_fits("dataset.path", Path(sys.argv[1]), float(sys.argv[2]))
        message = "fits"
    except ConfigError as exc:
        message = str(exc)
    print(growth(before))
    print(message)
""")

READ = PEAK + textwrap.dedent("""
    import pandas as pd
    from dp_arena.run.preflight import estimated_loaded_bytes
    estimate = estimated_loaded_bytes(Path(sys.argv[1]))
    before = start()
    frame = pd.read_csv(sys.argv[1])
    print(estimate, growth(before))
""")


def run_isolated(script: str, *args: str) -> tuple[int, str]:
    """(peak resident growth in bytes, the rest of the output) of ``script`` in a fresh
    interpreter; skipped where the peak cannot be reset (not Linux)."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("needs Linux's /proc/self/clear_refs to measure a peak resident size")
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.strip().splitlines()
    return int(first.split()[-1]), "\n".join([*first.split()[:-1], *rest])


def test_a_csv_whose_loaded_size_exceeds_the_limit_is_refused_before_it_is_read(tmp_path):
    from dp_arena.run.preflight import loaded_bytes_at_least

    limit_mb = 100
    # 0.4 x the limit of one-digit integers: the size check passes, but each 2-byte field
    # loads as an 8-byte integer (4 x the text, 1.6 x the limit before the parser's peak)
    data = tmp_path / "digits.csv"
    rows = int(0.4 * limit_mb * 2**20) // len(DIGITS)
    data.write_text("a,b,c,d,e,f,g,h,i,j\n" + DIGITS * rows)
    assert loaded_bytes_at_least(data) < limit_mb * 2**20  # the naive check would pass
    growth, message = run_isolated(REFUSE, str(data), str(limit_mb))
    assert "dataset.path: the file, loaded, would be larger than limits.memory_limit_mb=100 MB" \
        in message
    assert "fix:" in message and "40" not in message  # no size of the file
    assert growth < limit_mb * 2**20  # refused without reading it whole
    # a limit the estimate allows: not refused
    assert run_isolated(REFUSE, str(data), str(20 * limit_mb))[1] == "fits"


@pytest.mark.parametrize("shape", ["digits", "mixed"])
def test_the_estimate_covers_the_peak_of_loading(tmp_path, shape):
    """The measured peak resident growth of ``pd.read_csv`` stays under the estimate, and the
    estimate is not a blanket refusal (within 3x of the measured peak)."""
    data = tmp_path / f"{shape}.csv"
    if shape == "digits":
        data.write_text("a,b,c,d,e,f,g,h,i,j\n" + DIGITS * 600_000)  # 12 MB
    else:
        mixed_table(250_000, 0).to_csv(data, index=False)  # about 7 MB
    growth, estimate = run_isolated(READ, str(data))
    assert growth <= int(estimate) <= 3 * growth


def test_the_schema_command_refuses_a_csv_over_its_memory_limit(tmp_path, capsys):
    # 0.5 MB of one-digit integers loads as about 4 x its text: over a 1 MB limit, though the
    # file itself is under it; a limit of 50 MB lets the same file through
    data = tmp_path / "digits.csv"
    data.write_text("a,b,c,d,e,f,g,h,i,j\n" + DIGITS * (2**19 // len(DIGITS)))
    out = tmp_path / "p.json"
    code, err = schema_cli(tmp_path, capsys, str(data), "--epsilon", "1", "--out", str(out),
                           "--memory-limit-mb", "1")
    assert code == 2, err
    assert "DATA: the file, loaded, would be larger than --memory-limit-mb=1 MB" in err
    assert not out.exists()
    code, err = schema_cli(tmp_path, capsys, str(data), "--epsilon", "1", "--out", str(out),
                           "--memory-limit-mb", "50")
    assert code == 0, err
