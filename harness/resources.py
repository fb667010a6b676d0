"""Where dp-arena's own files are: the Hydra config folder (``conf/``) and the source tree.

One rule for every caller (the CLI, the mechanism registry, the taxonomy loader, the source
fingerprint of a run):

- **checkout** (``pip install -e .`` or ``python -m harness.cli.main`` in a clone): the folder
  holding the ``harness`` package also holds ``pyproject.toml`` and ``conf/config.yaml``; its
  ``conf/`` is used, so edits to the configs take effect at once.
- **regular install** (``pip install .``, a wheel, an index): ``conf/`` ships inside the wheel
  as package data of ``harness._conf`` (``pyproject.toml``, ``[tool.setuptools.package-dir]``),
  i.e. the folder ``harness/_conf`` next to this module.

Ground floor: imports nothing from the project but :mod:`harness.errors`.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import DPArenaError

#: The config folder's root file (Hydra's primary config).
PRIMARY_CONFIG = "config.yaml"
#: Name of the packaged copy of ``conf/`` inside the ``harness`` package of a regular install.
PACKAGED_CONF = "_conf"


def source_root() -> Path:
    """The folder that holds the ``harness``, ``mechanisms`` and ``metrics`` packages: the
    checkout, or ``site-packages`` of a regular install."""
    return Path(__file__).resolve().parents[1]


def checkout_root() -> Path | None:
    """The checkout dp-arena runs from, or None when it runs from a regular install."""
    root = source_root()
    is_checkout = (root / "pyproject.toml").is_file() and (root / "conf" / PRIMARY_CONFIG).is_file()
    return root if is_checkout else None


def packaged_config_dir() -> Path:
    """Where a regular install keeps its copy of ``conf/`` (may be absent in a checkout)."""
    return Path(__file__).resolve().parent / PACKAGED_CONF


def config_dir() -> Path:
    """The Hydra config folder: the checkout's ``conf/``, else the packaged copy."""
    checkout = checkout_root()
    if checkout is not None:
        return checkout / "conf"
    packaged = packaged_config_dir()
    if (packaged / PRIMARY_CONFIG).is_file():
        return packaged
    raise DPArenaError(
        f"dp-arena's config folder is missing: neither a checkout's conf/ next to "
        f"{source_root()} nor the packaged copy {packaged} holds {PRIMARY_CONFIG}",
        "reinstall dp-arena (pip install --force-reinstall dp-arena, or pip install . in a "
        "checkout), or run from a clone of the repository",
    )
