"""The held-out oracle attack: a submitter who never reads the data submits one guessed row, a
held-out person's record, and reads everything the tracking store holds for the run. In the
neighbouring world the same person's ``Survived`` code is another one ("flipped"; titanic's
discretised ``Survived`` has 3 codes), so there the guess is no one's record. Submitting the
true guess and the flipped guess on one table is the same comparison seen from the attacker's
side: what the store holds must not depend on which world is real. The held-out scores
(computed on held-out persons, whom no mechanism sees) stay on the owner's side.

Compared: every metric, param and tag of the run, its dataset input and every artifact's bytes,
except
- ``synthetic.parquet``: the submitter's own output (the guess itself, equal in both worlds);
- the resource figures (``seconds``, ``score_seconds``, ``peak_memory_mb``, ``fit_memory_mb``,
  ``wall_seconds``, also inside ``scores.json``): they vary from run to run with the machine's
  load, and the held-out scores do the same work whatever values the held-out rows hold
  (one-hot products and a linear model of fixed sizes), so they are not compared (and no test
  asserts a wall time);
- the keyed digests of the data (tags ``data_fingerprint``, ``run_key``, ``dataset_id`` and
  the dataset input's digest): HMACs under the owner's secret key, which tell two tables apart
  by design and nothing about their content without the key; and ``dataset.data_dir``, the
  folder each world's table is read from (the test's, not the data's);
- MLflow's run identity (run id, start and end times), which are not tags or params.

Everything else must be identical: exact equality, no tolerance (the guess changes no charged
release, since the double releases nothing, and every other logged score reads the training
persons only, which the two worlds share).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import MECHANISMS
from dp_arena.mechanisms.base import Mechanism

TARGETS = 20
HOLDOUT = 0.2
RESOURCES = ("seconds", "score_seconds", "peak_memory_mb", "fit_memory_mb", "wall_seconds",
             "cpu_seconds", "fit_cpu_seconds")
OWN_OUTPUT = ("synthetic.parquet",)
KEYED = ("data_fingerprint", "run_key", "dataset_id")
WORLD_PARAMS = ("dataset.data_dir",)


@dataclass
class GuessedRow(Mechanism):
    """A submission that never reads the data: releases the one row written in the JSON file
    ``guess_path`` (the same path for every run, so the runs' configurations are equal)."""

    guess_path: str = ""
    name: ClassVar[str] = "test_guessed_row"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        row = json.loads(Path(self.guess_path).read_text())
        return pd.DataFrame([row])[data.schema.names]


MECHANISMS["test_guessed_row"] = "tests.test_heldout_oracle:GuessedRow"


def config(guess: Path, uri: str, data_dir: Path | None = None) -> dict[str, Any]:
    return {
        "dataset": {"name": "titanic", "holdout_fraction": HOLDOUT,
                    "data_dir": str(data_dir) if data_dir else None},
        "mechanism": {"name": "test_guessed_row", "guess_path": str(guess)},
        "privacy": {"epsilon": 1.0, "delta": 1e-6, "accountant": "gdp"},
        "metrics": {"membership": {}, "ml_efficacy": {"models": ["linear"]},
                    "kmarginal": {"k": 2}},
        "trial": 0, "seed": 0, "resume": False, "plugins": ["tests.test_heldout_oracle"],
        "tracking": {"uri": uri, "experiment": "oracle"},
    }


def flip(code: int, data: Dataset) -> int:
    """Another code of ``Survived`` (the next one, cyclically)."""
    return (code + 1) % data.schema.domain()["Survived"]


def targets(data: Dataset) -> list[dict[str, int]]:
    """``TARGETS`` held-out persons (a seeded choice) whose record is unique among all rows
    and whose flipped record is no one's: a copy of either guess can only be this person's."""
    every = pd.concat([data.private, data.heldout])
    counts = every.value_counts()
    rng = np.random.default_rng(7)
    chosen = []
    for i in rng.permutation(len(data.heldout)):
        row = data.heldout.iloc[i]
        flipped = row.copy()
        flipped["Survived"] = flip(int(row["Survived"]), data)
        if counts.get(tuple(row), 0) == 1 and counts.get(tuple(flipped), 0) == 0:
            chosen.append({k: int(v) for k, v in row.items()})
        if len(chosen) == TARGETS:
            break
    return chosen


def readable(client, run_id: str) -> dict[str, Any]:
    """Everything a reader of the store sees of one run, but the exclusions above."""
    from mlflow.artifacts import download_artifacts

    run = client.get_run(run_id)
    seen: dict[str, Any] = {
        "metrics": {k: v for k, v in run.data.metrics.items() if k not in RESOURCES},
        "params": {k: v for k, v in run.data.params.items() if k not in WORLD_PARAMS},
        "tags": {k: v for k, v in run.data.tags.items() if k not in KEYED},
        "inputs": [(d.dataset.name, d.dataset.schema, d.dataset.source,
                    [(t.key, t.value) for t in d.tags]) for d in run.inputs.dataset_inputs],
        "status": run.info.status, "name": run.info.run_name}
    folder = Path(download_artifacts(run_id=run_id, tracking_uri=client.tracking_uri))
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if name in OWN_OUTPUT:
            continue
        content: Any = path.read_bytes()
        if name == "scores.json":
            content = json.loads(content)
            content["metrics"] = {k: v for k, v in content["metrics"].items()
                                  if k not in RESOURCES}
        seen[f"artifact:{name}"] = content
    return seen


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    for part in ("metrics", "params", "tags"):
        if part in out:
            out += [f"{part}.{k}" for k in sorted(set(a[part]) | set(b[part]))
                    if a[part].get(k) != b[part].get(k)]
    return out


def neighbour_folder(folder: Path, data: Dataset, shared: Path, person: dict[str, int]
                    ) -> Path:
    """A data folder holding titanic with ``person``'s ``Survived`` flipped (the row of the
    held-out part equal to ``person``; the split depends on the row count and seed only, so
    the row stays held out)."""
    raw = pd.read_csv(shared / "titanic.zip")
    match = (raw[list(person)] == pd.Series(person)).all(axis=1)
    assert match.sum() == 1
    raw.loc[match, "Survived"] = flip(person["Survived"], data)
    folder.mkdir()
    raw.to_csv(folder / "titanic.zip", index=False,
               compression={"method": "zip", "archive_name": "titanic.csv"})
    (folder / "titanic-domain.json").write_bytes((shared / "titanic-domain.json").read_bytes())
    return folder


def test_a_guessed_row_learns_nothing_about_a_heldout_person_from_the_store(
        shared_data, tracking_uri, tmp_path):
    from mlflow import MlflowClient

    from dp_arena.run.heldout import read_heldout_scores
    from dp_arena.run.runner import run_one

    data = load_shared_dataset("titanic", holdout_fraction=HOLDOUT)
    people = targets(data)
    assert len(people) == TARGETS
    client = MlflowClient(tracking_uri)
    guess = tmp_path / "guess.json"
    owner_told = 0
    for k, person in enumerate(people):
        guess.write_text(json.dumps(person))
        worlds = {"true": shared_data,
                  "flipped": neighbour_folder(tmp_path / f"world{k}", data, shared_data, person)}
        runs = {}
        for world, folder in worlds.items():
            out = run_one(config(guess, tracking_uri, folder))
            assert out.status == "FINISHED"
            assert not any(key.startswith(("membership/", "ml_efficacy/")) for key in out.scores)
            runs[world] = out.run_id
        true_view, flipped_view = readable(client, runs["true"]), readable(client, runs["flipped"])
        assert differences(true_view, flipped_view) == [], person
        assert "kmarginal/score" in true_view["metrics"]  # the store still holds scores
        # the owner's side holds the held-out scores, and they tell the worlds apart for a
        # person among the membership targets: the oracle exists, kept from the store
        mine = read_heldout_scores(runs["true"]), read_heldout_scores(runs["flipped"])
        assert "membership/copy_share_heldout" in mine[0]
        owner_told += mine[0]["membership/copy_share_heldout"] > \
            mine[1]["membership/copy_share_heldout"]
    assert owner_told > 0  # the attack has something to find; the store gives none of it


# ----- the pieces: who is given the held-out part, the owner's file ---------------------------
def reads_attribute(source: str, attribute: str) -> bool:
    """Whether ``source`` reads ``<something>.<attribute>`` (code, not docstrings)."""
    import ast

    return any(isinstance(node, ast.Attribute) and node.attr == attribute
               for node in ast.walk(ast.parse(source)))


def test_every_metric_that_reads_the_heldout_part_declares_it():
    import inspect

    from dp_arena.metrics import METRICS, metric_class

    declared = {name for name in METRICS if metric_class(name).reads_heldout}
    reading = {name for name in METRICS
               if reads_attribute(inspect.getsource(inspect.getmodule(metric_class(name))),
                                  "heldout")}
    assert reading == declared == {"attribute_inference", "membership", "ml_efficacy"}


def test_only_a_declaring_metric_is_given_the_heldout_part(small_dataset):
    from dp_arena.run.references import scoring_view
    from dp_arena.metrics import make_metric

    from dataclasses import replace

    held = replace(small_dataset, heldout=small_dataset.private.head(60))
    assert scoring_view(make_metric("membership", {}), held) is held
    assert scoring_view(make_metric("kmarginal", {}), held).heldout is None


def test_the_owner_file_is_owner_only_and_reads_back(throwaway_state_dir):
    import stat

    from dp_arena.run.heldout import heldout_scores_path, read_heldout_scores, split_scores, \
        write_heldout_scores

    store, owner = split_scores({"kmarginal/score": 1.0, "membership/auc": 0.5,
                                 "ml_efficacy/score": 0.7}, frozenset({"membership",
                                                                       "ml_efficacy"}))
    assert store == {"kmarginal/score": 1.0}
    path = write_heldout_scores("abc123", owner)
    assert path == heldout_scores_path("abc123")
    assert path.is_relative_to(throwaway_state_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_heldout_scores("abc123") == owner
    assert read_heldout_scores("nothing") == {}
    with pytest.raises(ValueError):
        heldout_scores_path("../elsewhere")


def test_tuning_by_a_heldout_score_is_refused_unless_the_owner_opted_in():
    """A setting chosen by a held-out score would carry it to the store."""
    from dp_arena.errors import ConfigError
    from dp_arena.run.config import build_components, parse_run_config
    from dp_arena.run.preflight import check_objective

    def checked(**tracking: object) -> None:
        rc = parse_run_config({"dataset": {"name": "csv"}, "mechanism": {"name": "independent"},
                               "privacy": {"epsilon": 1.0, "delta": 1e-6},
                               "metrics": {"ml_efficacy": {}, "kmarginal": {}},
                               "tuning": {"objective": "ml_efficacy/score"},
                               "tracking": tracking})
        check_objective(rc, build_components(rc)[1])

    with pytest.raises(ConfigError, match="held-out persons"):
        checked()
    checked(log_heldout_scores=True)


def test_the_owners_opt_in_logs_the_heldout_scores_and_tags_the_run(shared_data, tracking_uri,
                                                                    tmp_path):
    from mlflow import MlflowClient

    from dp_arena.run.heldout import OPT_IN_TAG, read_heldout_scores
    from dp_arena.run.runner import run_one

    data = load_shared_dataset("titanic", holdout_fraction=HOLDOUT)
    guess = tmp_path / "guess.json"
    guess.write_text(json.dumps(targets(data)[0]))
    cfg = config(guess, tracking_uri)
    cfg["tracking"]["log_heldout_scores"] = True
    out = run_one(cfg)
    run = MlflowClient(tracking_uri).get_run(out.run_id)
    logged = {k: v for k, v in run.data.metrics.items()
              if k.startswith(("membership/", "ml_efficacy/"))}
    assert logged and logged == {k: pytest.approx(v)
                                 for k, v in read_heldout_scores(out.run_id).items()}
    assert run.data.tags[OPT_IN_TAG].startswith("logged")
