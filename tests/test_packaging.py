"""A regular install works: the wheel ships dp_arena/conf/ (package data) and every package, and ``dp-arena`` runs from an empty folder with nothing but the wheel.

The slow test builds the wheel from a copy of the sources, installs it into a fresh venv and
runs a one-job sweep there. The fresh venv reuses this venv's dependencies through a ``.pth``
file listing this venv's site-packages: a folder added by a ``.pth`` file does not have its own
``.pth`` files processed, so the editable install's import hook is not loaded and ``dp_arena``
must come from the wheel (asserted); the old top-level names are not importable there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import dp_arena
from dp_arena import resources
from dp_arena.errors import DPArenaError

ROOT = Path(__file__).resolve().parents[1]
#: What a wheel is built from (the rest of the checkout is not product).
SOURCES = ("pyproject.toml", "README.md", "dp_arena")


def test_a_checkout_uses_its_own_conf():
    assert resources.checkout_root() == ROOT
    assert resources.config_dir() == ROOT / "dp_arena" / "conf"
    assert (resources.config_dir() / "mechanism" / "independent.yaml").is_file()


def test_an_install_without_its_conf_says_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "packaged_config_dir", lambda: tmp_path / "conf")
    with pytest.raises(DPArenaError, match="config folder is missing") as err:
        resources.config_dir()
    assert "reinstall dp-arena" in str(err.value)


def build_wheel(out: Path, work: Path) -> Path:
    """The project's wheel, built by pip from a clean copy of the sources (no stale build/)."""
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(source, src / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "-w", str(out), str(src)], check=False, capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = out.glob("dp_arena-*.whl")
    return wheel


def fresh_venv_with_wheel(wheel: Path, where: Path) -> Path:
    """A new venv holding the wheel; this venv's site-packages supply the dependencies."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_dp_arena_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                                "--no-deps", "--no-index", "--quiet", str(wheel)],
                               check=False, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return where


@pytest.mark.slow
def test_the_wheel_runs_a_sweep_from_an_empty_folder(tmp_path):
    wheel = build_wheel(tmp_path / "dist", tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    conf = ROOT / "dp_arena" / "conf"
    shipped = {n.removeprefix("dp_arena/conf/") for n in names if n.startswith("dp_arena/conf/")}
    assert shipped == {str(p.relative_to(conf)) for p in conf.rglob("*.yaml")}
    assert {"config.yaml", "taxonomy/chicago_sides.yaml", "hydra/launcher/local.yaml"} <= shipped
    packages = {str(Path(n).parent).replace("/", ".") for n in names if n.endswith("__init__.py")}
    in_tree = {".".join(i.parent.relative_to(ROOT).parts) for i in (ROOT / "dp_arena").rglob("__init__.py")}
    assert packages == in_tree  # every subpackage ships

    env_dir = fresh_venv_with_wheel(wheel, tmp_path / "venv")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI", "VIRTUAL_ENV")}
    env["DP_ARENA_JOBS"] = "1"
    where = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c",
         ("import importlib.util, dp_arena, dp_arena.mechanisms as m, dp_arena.metrics as s;"
          "from dp_arena.resources import config_dir;"
          "from dp_arena.report.tracking import code_version;"
          "old = [n for n in ('harness', 'mechanisms', 'metrics') if importlib.util.find_spec(n)];"
          "assert not old, old;"
          "print(dp_arena.__file__, m.__file__, s.__file__, config_dir(), code_version(), sep='\\n')")],
        check=False, cwd=empty, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr
    *modules, conf, version = where.stdout.split()
    for module in modules:  # imported from the wheel, not from the checkout's editable install
        assert Path(module).is_relative_to(env_dir), module
    assert Path(conf) == Path(modules[0]).parent / "conf"
    assert version == dp_arena.__version__  # the package version: no git outside a checkout

    db = tmp_path / "mlflow.db"
    sweep = subprocess.run(
        [str(env_dir / "bin" / "dp-arena"), "mechanism=independent", "privacy.epsilon=1",
         "dataset.n_private=2000", "dataset.n_public=2000", "metrics=kmarginal", "trial=0",
         f"tracking.uri=sqlite:///{db}"],
        check=False, cwd=empty, env=env, capture_output=True, text=True, timeout=600)
    assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
    assert "sweep finished: 1 of 1 runs succeeded" in sweep.stdout
    assert "## Leaderboard" in sweep.stdout and "| independent" in sweep.stdout
    assert db.is_file()
    assert not (empty / "mlflow.db").exists()
