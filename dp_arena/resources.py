"""Where dp-arena's own files are: the Hydra config folder and the source tree.

The config ships inside the package (``dp_arena/conf/``, package data), so a checkout and a
regular install find it the same way; a checkout (``pip install -e .``) reads its own copy, so
edits take effect at once. A checkout is told apart from an install by the ``pyproject.toml``
beside the package (used only to name the git commit a run came from).

Ground floor: imports nothing from the project but :mod:`dp_arena.errors`.
"""

from __future__ import annotations

from pathlib import Path

from dp_arena.errors import DPArenaError

#: The config folder's root file (Hydra's primary config).
PRIMARY_CONFIG = "config.yaml"


def source_root() -> Path:
    """The folder that holds the ``dp_arena`` package: the checkout, or ``site-packages``."""
    return Path(__file__).resolve().parents[1]


def checkout_root() -> Path | None:
    """The checkout dp-arena runs from, or None when it runs from a regular install."""
    root = source_root()
    return root if (root / "pyproject.toml").is_file() else None


def packaged_config_dir() -> Path:
    """The config folder inside the package."""
    return Path(__file__).resolve().parent / "conf"


def config_dir() -> Path:
    """The Hydra config folder (``dp_arena/conf``), checked to hold its primary config."""
    conf = packaged_config_dir()
    if (conf / PRIMARY_CONFIG).is_file():
        return conf
    raise DPArenaError(
        f"dp-arena's config folder is missing: {conf} holds no {PRIMARY_CONFIG}",
        "reinstall dp-arena (pip install --force-reinstall dp-arena, or pip install . in a "
        "checkout), or run from a clone of the repository",
    )
