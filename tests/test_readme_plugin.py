"""The "Adding a mechanism" example (docs/mechanisms.md, where README's "Adding a mechanism"
points), run as the page says: a module outside the package, registered through
``plugins=[...]`` with its config on ``hydra.searchpath``.

Tolerances: (c) the budget is spent to abs=1e-9 (the calibrations' root-finding target,
test_budget_edges.assert_spends_the_budget).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from mlflow import MlflowClient

from dp_arena.data.datasets import PROJECT_ROOT


#: The page and the section holding the example (README's "Adding a mechanism" links there).
PAGE = PROJECT_ROOT / "docs" / "mechanisms.md"
SECTION = ("## Adding a mechanism", "## Your own contestant in its own environment")


def readme_example() -> str:
    text = PAGE.read_text()
    section = text[text.index(SECTION[0]):text.index(SECTION[1])]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_example_runs_with_the_pages_command():
    """The command the page gives for a plugin is the one the test below runs."""
    section = PAGE.read_text()
    section = section[section.index(SECTION[0]):section.index(SECTION[1])]
    command = " ".join(section.replace("`", " ").split())
    assert ("dp-arena plugins=[my_pkg.noisy_histogram] hydra.searchpath=[file:///path/to/my_conf] "
            "mechanism=noisy_histogram") in command


@pytest.mark.slow
def test_the_readme_plugin_mechanism_runs_and_spends_exactly_its_budget(csv_dir):
    pkg = csv_dir / "my_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "noisy_histogram.py").write_text(readme_example())
    conf = csv_dir / "my_conf" / "mechanism"
    conf.mkdir(parents=True)
    (conf / "noisy_histogram.yaml").write_text("name: noisy_histogram\nn_rows: 500\n")
    env = {**os.environ, "MLFLOW_TRACKING_URI": "", "DP_ARENA_JOBS": "1",
           "PYTHONPATH": os.pathsep.join([str(csv_dir), str(PROJECT_ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "dp_arena.cli.main", "plugins=[my_pkg.noisy_histogram]",
         f"hydra.searchpath=[file://{csv_dir / 'my_conf'}]", "mechanism=noisy_histogram",
         "dataset=csv", "dataset.path=private.csv", "dataset.schema=parameters.json",
         "dataset.unit=record", "privacy.epsilon=1", "privacy.delta=0", "metrics=kmarginal",
         "trial=0"], cwd=csv_dir, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = MlflowClient(f"sqlite:///{csv_dir / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])
            if r.data.tags.get("kind", "run") == "run"]
    run, = runs
    assert run.info.status == "FINISHED"
    assert run.data.metrics["epsilon_spent"] == pytest.approx(1.0, abs=1e-9)
    assert run.data.metrics["epsilon_spent"] <= 1.0
