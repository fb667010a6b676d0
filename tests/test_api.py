"""The front door (dp_arena/api.py): one import gives what a notebook, a script
or a plugin needs; the package root re-exports it without importing it; the old addresses
still work; what the Python API used to borrow from the command line lives on lower floors
(writing a proposal in dp_arena.data, reading a board in dp_arena.report, each room's Hydra
schema registered by that room)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

import dp_arena
from dp_arena import api
from dp_arena.audit.entry import audit_config
from dp_arena.data.proposal_file import write_proposal
from dp_arena.data.propose import ProposalSettings, propose
from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.report.experiments import latest_experiment, read_board

#: What the front door is to hold (the audit under a name that is not the
#: ``dp_arena.audit`` package's).
ASKED = {"run_competition", "read_board", "propose", "ProposalSettings", "audit_mechanism",
         "Mechanism", "Metric", "Releaser", "Budget", "Ledger", "DPArenaError", "ConfigError",
         "SchemaError"}


def run_python(code: str) -> str:
    """``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"colour": rng.choice(["red", "green"], n),
                         "amount": rng.gamma(2, 10, n).round(1)})


def test_the_front_door_holds_what_the_issue_asks_for():
    assert ASKED <= set(api.__all__)
    assert len(api.__all__) == len(set(api.__all__))
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing
    from dp_arena.privacy.release import Releaser
    from dp_arena.mechanisms.base import Mechanism
    from dp_arena.metrics.base import Metric

    assert (api.Mechanism, api.Metric, api.Releaser) == (Mechanism, Metric, Releaser)
    assert issubclass(api.ConfigError, api.DPArenaError)
    assert issubclass(api.SchemaError, api.DPArenaError)


def test_the_package_root_reexports_the_front_door_as_the_same_objects():
    assert set(dp_arena.__all__) - {"__version__"} == set(api.__all__)
    different = [name for name in api.__all__ if getattr(dp_arena, name) is not getattr(api, name)]
    assert not different
    assert set(api.__all__) <= set(dir(dp_arena))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        dp_arena.not_a_name  # noqa: B018


def test_import_dp_arena_loads_nothing_until_a_front_door_name_is_used():
    """``import dp_arena`` stays cheap: no submodule but the one-line version module and no
    heavy library is imported until a front-door name is read; reading one imports dp_arena.api (and gives its object)."""
    out = run_python(
        "import sys, dp_arena\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dp_arena.', "
        "'pandas', 'hydra', 'mlflow'))))\n"
        "r = dp_arena.Releaser\n"
        "import dp_arena.api\n"
        "print('dp_arena.api' in sys.modules, r is dp_arena.api.Releaser)\n")
    first, second = out.splitlines()
    assert first == "['dp_arena.version']"
    assert second == "True True"


def test_each_room_registers_its_own_schema_and_the_run_config_composes_without_the_cli():
    out = run_python(
        "import sys\n"
        "from hydra.core.config_store import ConfigStore\n"
        "from omegaconf import OmegaConf\n"
        "import dp_arena.run.config_store\n"
        "names = lambda: sorted(k for k in ConfigStore.instance().repo if 'dp_arena' in k)\n"
        "print(names(), OmegaConf.has_resolver('dp_arena_sweep'))\n"
        "from dp_arena.sweep.dataframe import compose_jobs\n"
        "rc, = compose_jobs([['mechanism=independent', 'privacy.epsilon=2.0']])\n"
        "print(type(rc).__name__, rc.budget.epsilon)\n"
        "import dp_arena.audit.config_store\n"
        "print(names())\n"
        "print(sorted(m for m in sys.modules if m.startswith('dp_arena.cli')))\n")
    lines = out.splitlines()
    assert lines[0] == "['dp_arena_schema.yaml'] True"
    assert lines[1] == "RunConfig 2.0"
    assert lines[2] == "['dp_arena_audit_schema.yaml', 'dp_arena_schema.yaml']"
    assert lines[3] == "[]"


def test_the_audits_config_is_the_commands_config_with_the_overrides():
    cfg = audit_config(["audit.runs=20", "privacy.epsilon=2", "mechanism=independent"])
    assert cfg["audit"]["runs"] == 20
    assert cfg["privacy"]["epsilon"] == 2.0
    assert cfg["mechanism"]["name"] == "independent"
    assert "hydra" not in cfg


@pytest.mark.parametrize("overrides, words", [
    (["mechanism=nope"], ["mechanism/nope", "choose from", "independent"]),
    (["audit.runs=abc"], ["audit.runs", "integer"]),
    ("mechanism=independent", ["list of key=value"]),
])
def test_a_bad_audit_override_is_one_config_error_before_any_run(overrides, words):
    with pytest.raises(ConfigError) as err:
        api.audit_mechanism(overrides, echo=lambda line: pytest.fail(f"audit started: {line}"))
    for word in words:
        assert word in str(err.value)


def test_a_dp_proposal_round_trips_through_its_two_files(tmp_path):
    proposal = propose(table(), ProposalSettings("dp", epsilon=1.0, delta=1e-6, bins=5))
    written = write_proposal(proposal, tmp_path / "parameters.json")
    assert written == [tmp_path / "parameters.json", tmp_path / "parameters.ledger.json"]
    params = json.loads(written[0].read_text())
    block = params["proposal"]
    assert block["source"] == "dp"
    assert (block["epsilon_spent"], block["delta_spent"]) == proposal.spent()
    assert block["ledger"] == "parameters.ledger.json"
    assert set(block["columns"]) == set(proposal.schema.names)
    assert all(block["columns"][c]["from"] == "dp" for c in proposal.schema.names)
    assert Schema.load(written[0]) == proposal.schema
    assert json.loads(written[1].read_text()) == \
        json.loads(json.dumps(proposal.ledger, default=str))


def test_a_public_proposal_writes_one_file_and_no_ledger(tmp_path):
    proposal = propose(table(seed=1), ProposalSettings("public", bins=5))
    written = write_proposal(proposal, tmp_path / "schema.json", holdout={"fraction": 0.2})
    assert written == [tmp_path / "schema.json"]
    block = json.loads(written[0].read_text())["proposal"]
    assert block["source"] == "public" and "ledger" not in block
    assert block["holdout"] == {"fraction": 0.2}
    assert Schema.load(written[0]) == proposal.schema


def test_a_proposal_that_cannot_be_written_leaves_nothing(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    proposal = propose(table(), ProposalSettings("dp", epsilon=1.0, bins=5))
    with pytest.raises(DPArenaError, match="cannot write"):
        write_proposal(proposal, tmp_path / "a_file" / "parameters.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_the_latest_experiment_is_the_newest_dp_arena_one(tracking_uri):
    client = MlflowClient(tracking_uri)
    with pytest.raises(DPArenaError, match="no dp-arena experiments"):
        latest_experiment(tracking_uri)
    for name in ("dp-arena/older", "dp-arena/newer", "someone-else"):
        client.create_experiment(name)
        time.sleep(0.01)  # creation times are in milliseconds: keep them apart
    assert latest_experiment(tracking_uri) == "dp-arena/newer"
    with pytest.raises(DPArenaError, match="has no dp-arena runs"):
        read_board(tracking_uri=tracking_uri)


@pytest.mark.parametrize("name, value, words", [
    ("DP_ARENA_JOBS", "0", "DP_ARENA_JOBS='0'"),
    ("DP_ARENA_DATA_CACHE", "maybe", "DP_ARENA_DATA_CACHE='maybe' is not one of"),
    ("DP_ARENA_BOARD", "html", "DP_ARENA_BOARD='html' is not one of text, markdown"),
])
def test_run_competition_checks_the_environment_as_the_command_does(no_store, monkeypatch,
                                                                    name, value, words):
    """A bad DP_ARENA_* value is the command's one message, before anything is written: no
    store, no private folder (a job would have met it later, as a traceback or not at all)."""
    monkeypatch.setenv(name, value)
    schema = propose(table(seed=1), ProposalSettings("public", bins=5)).schema
    before = sorted(p.name for p in Path.cwd().iterdir())
    with pytest.raises(ConfigError) as exc:
        api.run_competition(table(200), schema, mechanisms=["uniform"], epsilons=[1.0],
                            trials=1, progress=False)
    assert words in exc.value.problem and name in exc.value.fix
    assert sorted(p.name for p in Path.cwd().iterdir()) == before  # no mlflow.db, nothing


def test_reading_a_board_checks_alpha_before_touching_a_store(no_store, tmp_path):
    with pytest.raises(ConfigError, match="alpha must be in"):
        api.read_board("dp-arena/x", tracking_uri=no_store, alpha=1.5)
    assert not (tmp_path / "mlflow.db").exists()
    with pytest.raises(DPArenaError):  # a store that does not exist is not created
        latest_experiment(no_store)
    assert not (tmp_path / "mlflow.db").exists()
