"""Every command example in README.md is exercised by a test or a
documented check.

:func:`readme_commands` extracts every shell command README shows: each command of a ``bash``
code block (continuation lines joined, comments dropped) and each inline code span whose first
word is a command (``dp-arena``, ``dp-arena-*``, ``mlflow``, ``python3.11``). :data:`CHECKS`
maps each one to how it is exercised:

- ``Run``: run here, cheaply, from an empty folder (our console scripts in a forked child, as
  :mod:`tests.support.forked` explains; ``mlflow`` as a subprocess): ``--help``,
  ``--cfg job`` (Hydra composes
  the command's overrides and prints a job's config: a misspelt group option or key fails), or
  the command itself on tiny data (``dp-arena-schema`` on a 60-row table,
  ``dp-arena-simulate --trips 1000``, ``dp-arena-score`` on two simulated 1,000-trip tables,
  ``dp-arena-contestants list``);
- ``Covered``: the test (``tests/file.py::test_name``) or documented check that runs it, which
  must exist (the file, and the test function in it).

A README command with no entry fails :func:`test_every_readme_command_has_a_check`; an entry
for a command README no longer shows fails too (the map follows README).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.forked import SCRIPTS, run_forked

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: The first word of an inline code span that is a command.
COMMAND_WORD = re.compile(r"^(dp-arena(-[a-z]+)?|mlflow|python3(\.\d+)?|\.venv/bin/\S+)$")


@dataclass(frozen=True)
class Run:
    """Run ``argv`` (its first word a console script of this environment) in a fresh folder;
    exit 0 and every string of ``expect`` in its output. ``setup``: files to write first
    (``table``: ``data.csv`` and ``public.csv``; ``taxi``: ``TRUTH.csv`` and ``SUBMISSION.csv``,
    two simulated taxi tables)."""
    argv: tuple[str, ...]
    expect: tuple[str, ...] = ()
    setup: str = ""


@dataclass(frozen=True)
class Covered:
    """Exercised elsewhere: ``where`` is ``tests/file.py::test_name`` or a repository file."""
    where: tuple[str, ...]
    why: str


def cfg(command: str, *expect: str) -> Run:
    """``command --cfg job``: Hydra composes every override and prints the first job's config."""
    return Run((*shlex.split(command), "--cfg", "job"), expect)


def helped(script: str, *expect: str) -> Run:
    return Run((script, "--help"), expect)


QUICKSTART_RUN = ("python3.11 -m venv .venv && .venv/bin/pip install -e . && "
                  ".venv/bin/dp-arena")
QUICKSTART_TEST = ('python3.11 -m venv .venv && .venv/bin/pip install -e ".[test]" && '
                   ".venv/bin/python -m pytest")
EXTERNAL = ("dp-arena dataset=titanic mechanism=external mechanism.python=/path/to/venv/bin/python "
            "mechanism.script=my_synth.py privacy.epsilon=1 privacy.delta=1e-6")

EXTERNAL_TEST = ("tests/test_external.py::"
                 "test_readmes_command_needs_no_args_the_protocol_helper_is_on_the_path")

#: README command -> how it is exercised (a list: all of them).
CHECKS: dict[str, list[Run | Covered]] = {
    # ----- Quickstart
    QUICKSTART_RUN: [
        Covered((".ci/run",), "CI installs the checkout the same way (pip install -e) and runs "
                "the suite, in which the sweeps below run"),
        Covered(("docs/running.md",), "the default competition itself (60 runs, about 3 "
                "minutes) is a documented check: docs/running.md, 'The quickstart, measured'"),
        Run(("dp-arena", "--cfg", "job"), ("name: taxi_sim", "n_private: 50000")),
        Covered(("tests/test_packaging.py::test_the_wheel_runs_a_sweep_from_an_empty_folder",
                 "tests/test_cli.py::test_sweep_prints_a_ranked_leaderboard_and_board_reads_it_back"),
                "a sweep from an empty folder ending with its board"),
    ],
    QUICKSTART_TEST: [
        Covered((".ci/run",
                 "tests/test_readme_links.py::test_ci_runs_the_readmes_test_command_verbatim"),
                ".ci/run runs this line verbatim (a test checks it is README's line)"),
    ],
    # ----- Your own table
    "dp-arena-schema data.csv --out parameters.json --public public.csv": [
        Run(("dp-arena-schema", "data.csv", "--out", "parameters.json", "--public",
             "public.csv"), ("parameters.json",), setup="table"),
    ],
    ("dp-arena dataset=csv dataset.path=data.csv dataset.schema=parameters.json "
     "tracking.log_heldout_scores=true"): [
        Run(("dp-arena", "dataset=csv", "dataset.path=data.csv",
             "dataset.schema=parameters.json", "tracking.log_heldout_scores=true", "--cfg",
             "job"),
            ("path: data.csv", "schema: parameters.json", "log_heldout_scores: true"),
            setup="table"),
        Covered(("tests/test_cli.py::test_sweep_prints_a_ranked_leaderboard_and_board_reads_it_back",
                 ("tests/test_own_table.py::"
                  "test_readmes_own_table_commands_end_with_the_utility_and_risk_views")),
                "a sweep on a CSV with its schema; README's two commands on titanic"),
    ],
    "dp-arena dataset=csv ...": [cfg("dp-arena dataset=csv", "name: csv")],
    # ----- How to read the board, commands and configs
    "dp-arena-board": [
        helped("dp-arena-board", "--experiment"),
        Covered((("tests/test_cli.py::"
                 "test_sweep_prints_a_ranked_leaderboard_and_board_reads_it_back"),),
                "the board of a finished sweep printed again")],
    "dp-arena [overrides]": [helped("dp-arena", "default sweep")],
    "dp-arena --dry-run [overrides]": [
        helped("dp-arena", "--dry-run"),
        Covered(("tests/test_cost_estimate.py::"
                 "test_dry_run_prices_from_a_real_run_and_starts_nothing",),
                "a sweep priced from a real run's figures; nothing started or written")],
    "dp-arena-board [--experiment E] [--metric M] [--out DIR]": [
        helped("dp-arena-board", "--experiment", "--metric", "--out")],
    "dp-arena-across [--experiment E] [--metric M] [--out DIR]": [
        helped("dp-arena-across", "--experiment", "--metric", "--out"),
        Covered(("tests/test_across_datasets.py::"
                 "test_a_tiny_suite_ends_with_the_board_across_datasets",),
                "reads a tiny suite's experiment back")],
    "dp-arena competition=crc": [
        cfg("dp-arena competition=crc", "name: acs", "features: demographic", "name: crc",
            "sdnist"),
        Covered(("tests/test_crc_scale.py::"
                 "test_the_crc_board_shows_both_in_markdown_and_at_80_columns",),
                "its board's archive rows and sample column"),
        Covered(("benchmarks/RESULTS.md",), "the board itself, measured: 'NIST's ACS excerpt "
                 "on SDNist's scale'")],
    "dp-arena competition=suite": [
        cfg("dp-arena competition=suite", "name: adult", "holdout_fraction: 0.2",
            "name: suite"),
        Covered(("tests/test_across_datasets.py::"
                 "test_a_tiny_suite_ends_with_the_board_across_datasets",),
                "a suite of two tables (a shipped one and a user's CSV) ending with the board "
                "across datasets"),
        Covered(("docs/running.md",), "the suite itself is a documented check: "
                 "docs/running.md, 'A suite across datasets'")],
    "dp-arena-schema data.csv --out parameters.json ...": [
        helped("dp-arena-schema", "--out", "--public", "--epsilon", "--from-private")],
    "dp-arena-audit [overrides]": [helped("dp-arena-audit", "audit.")],
    "dp-arena-score TRUTH.csv SUBMISSION.csv --epsilon 1": [
        Run(("dp-arena-score", "TRUTH.csv", "SUBMISSION.csv", "--epsilon", "1"),
            ("overall score:",), setup="taxi"),
        Covered(("tests/test_challenge_metric.py",), "scores submissions as the challenge did")],
    "dp-arena-simulate --trips N --out DIR": [
        Run(("dp-arena-simulate", "--trips", "1000", "--out", "sim"),
            ("sim/private.csv", "sim/public.csv", "sim/parameters.json"))],
    "dp-arena-prepare chicago Taxi_Trips.csv DIR": [
        helped("dp-arena-prepare", "chicago"),
        Covered(("tests/test_prepare.py",), "a City of Chicago export turned into the schema")],
    "dp-arena-contestants install|list|doctor": [
        Run(("dp-arena-contestants", "list"), ("opendp", "smartnoise", "isolation")),
        helped("dp-arena-contestants", "install", "list", "doctor")],
    "mlflow ui --backend-store-uri sqlite:///mlflow.db": [
        Run(("mlflow", "ui", "--help"), ("--backend-store-uri",))],
    "dp-arena --help": [helped("dp-arena", "default sweep")],
    "dp-arena --cfg job ...": [Run(("dp-arena", "--cfg", "job"), ("dataset:", "mechanism:"))],
    "dp-arena dataset=adult dataset.public_fraction=0.5": [
        cfg("dp-arena dataset=adult dataset.public_fraction=0.5", "name: adult",
            "public_fraction: 0.5")],
    "dp-arena mechanism=archetype mechanism.k=5,10,20": [
        cfg("dp-arena mechanism=archetype mechanism.k=5,10,20", "name: archetype", "k: 5",
            "differ in mechanism.k")],
    "dp-arena privacy=zcdp privacy.epsilon=0.5,1,2": [
        cfg("dp-arena privacy=zcdp privacy.epsilon=0.5,1,2", "accountant: zcdp",
            "epsilon: 0.5")],
    "dp-arena metrics=kmarginal metrics.kmarginal.k=3": [
        cfg("dp-arena metrics=kmarginal metrics.kmarginal.k=3", "k: 3")],
    "dp-arena competition=sprint3": [cfg("dp-arena competition=sprint3", "n_private: 3600000")],
    "dp-arena tuning=dp_select space=archetype mechanism=archetype": [
        cfg("dp-arena tuning=dp_select space=archetype mechanism=archetype",
            "name: archetype", "dp_select")],
    "dp-arena mechanism=independent trial=0,1,2,3,4": [
        cfg("dp-arena mechanism=independent trial=0,1,2,3,4", "name: independent", "trial")],
    "dp-arena limits.time_limit_s=1800": [
        cfg("dp-arena limits.time_limit_s=1800", "time_limit_s: 1800")],
    "dp-arena tracking.uri=http://mlflow.internal:5000": [
        cfg("dp-arena tracking.uri=http://mlflow.internal:5000",
            "uri: http://mlflow.internal:5000")],
    "dp-arena competition=sprint3 hydra/launcher=slurm": [
        cfg("dp-arena competition=sprint3 hydra/launcher=slurm", "n_private: 3600000"),
        Covered(("tests/test_early_refusals.py", "tests/test_launch_checks.py"),
                "with no sbatch on the PATH the sweep is refused with the fix")],
    "dp-arena resume=false": [cfg("dp-arena resume=false", "resume: false")],
    # ----- Privacy, adding a mechanism, adding a contestant
    "dp-arena-audit dataset=titanic mechanism=independent privacy.epsilon=1": [
        cfg("dp-arena-audit dataset=titanic mechanism=independent privacy.epsilon=1",
            "name: titanic", "name: independent", "epsilon: 1.0")],
    EXTERNAL: [
        cfg(EXTERNAL, "name: external", "script: my_synth.py", "delta: 1.0e-06"),
        Covered((EXTERNAL_TEST,),
                "the external mechanism with only a script, as README's command passes it")],
}


# ----- extraction -------------------------------------------------------------------------------
def block_commands(text: str) -> list[str]:
    """Every command of README's ``bash`` blocks: continuation lines joined, comment lines and
    trailing comments dropped, white space collapsed."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(" ".join(line.split()))
    return out


def inline_commands(text: str) -> list[str]:
    """Every inline code span (outside code blocks) whose first word is a command."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    out = []
    for span in re.findall(r"`([^`]+)`", prose):
        span = " ".join(span.replace("\\|", "|").split())  # a table's escaped pipe
        if COMMAND_WORD.match(span.split()[0]) and span not in out:
            out.append(span)
    return out


def readme_commands(text: str | None = None) -> list[str]:
    text = README.read_text() if text is None else text
    seen: list[str] = []
    for command in [*block_commands(text), *inline_commands(text)]:
        if command not in seen:
            seen.append(command)
    return seen


def test_extraction_by_hand():
    text = ("intro `dp-arena a=1` and `dp-arena: stopped.` and `key=value`\n"
            "```bash\n# a comment\ndp-arena-schema x.csv --out p.json   # trailing\n"
            "dp-arena b=2 \\\n    c=3\n```\n```python\nprint('`dp-arena no`')\n```\n"
            "`dp-arena plugins=[m]\n  mechanism=n` twice `dp-arena a=1`")
    assert readme_commands(text) == ["dp-arena-schema x.csv --out p.json", "dp-arena b=2 c=3",
                                     "dp-arena a=1", "dp-arena plugins=[m] mechanism=n"]


def test_readme_shows_commands():
    commands = readme_commands()
    assert QUICKSTART_RUN in commands and QUICKSTART_TEST in commands and EXTERNAL in commands
    assert len(commands) >= 25


# ----- the map ----------------------------------------------------------------------------------
def test_every_readme_command_has_a_check():
    missing = [c for c in readme_commands() if not CHECKS.get(c)]
    assert missing == [], ("README commands with no test or documented check (add each to "
                           f"CHECKS in {Path(__file__).name}): {missing}")


def test_every_check_is_for_a_command_readme_shows():
    stale = sorted(set(CHECKS) - set(readme_commands()))
    assert stale == [], f"CHECKS entries for commands README no longer shows: {stale}"


COVERED = sorted({w for checks in CHECKS.values() for c in checks if isinstance(c, Covered)
                  for w in c.where})


@pytest.mark.parametrize("where", COVERED)
def test_the_covering_test_or_file_exists(where):
    path, _, name = where.partition("::")
    assert (ROOT / path).is_file(), where
    if name:
        assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), re.MULTILINE), \
            where


# ----- the cheap runs ---------------------------------------------------------------------------
def write_taxi(folder: Path, env: dict[str, str]) -> None:
    """``TRUTH.csv`` and ``SUBMISSION.csv``: the private and public tables
    ``dp-arena-simulate --trips 1000`` writes (the submission a table of the same schema)."""
    proc = run_forked(("dp-arena-simulate", "--trips", "1000", "--out", "sim"), folder, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder / "sim" / "private.csv").rename(folder / "TRUTH.csv")
    (folder / "sim" / "public.csv").rename(folder / "SUBMISSION.csv")


def write_table(folder: Path) -> None:
    """A 60-row private table and a 60-row public sample of the same columns."""
    for name, shift in (("data.csv", 0), ("public.csv", 1)):
        rows = ["payment,passengers,fare"] + [
            f"{('card', 'cash')[(i + shift) % 2]},{1 + (i + shift) % 4},{5 + (i * 7 + shift) % 40}"
            for i in range(60)]
        (folder / name).write_text("\n".join(rows) + "\n")


RUNS = [pytest.param(command, k, check, id=f"{command[:60]}#{k}")
        for command, checks in CHECKS.items() for k, check in enumerate(checks)
        if isinstance(check, Run)]


@pytest.mark.parametrize(("command", "k", "check"), RUNS)
def test_the_cheap_run_of_each_command(command, k, check, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["COLUMNS"] = "120"
    if check.setup == "table":
        write_table(tmp_path)
    elif check.setup == "taxi":
        write_taxi(tmp_path, env)
    if check.argv[0] in SCRIPTS:  # ours: in a forked child (the imports are done once)
        proc = run_forked(check.argv, tmp_path, env)
    else:
        proc = subprocess.run([str(BIN / check.argv[0]), *check.argv[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{shlex.join(check.argv)} exited {proc.returncode}:\n{out}"
    for expected in check.expect:
        assert expected in out, f"{shlex.join(check.argv)}: {expected!r} not in\n{out}"
    if check.argv[0] == "dp-arena-schema" and "--out" in check.argv:
        assert (tmp_path / "parameters.json").is_file()
    # a --help, a --cfg job or a listing leaves the folder as it was (Hydra writes no outputs)
    if "--help" in check.argv or "--cfg" in check.argv or check.argv[-1] == "list":
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == (["data.csv", "public.csv"] if check.setup == "table" else []), left
