"""Location taxonomies for the noisy prefix tree: groups of specific locations (from a file in
``dp_arena/conf/taxonomy/``, from the data-independent ``blocks`` rule, or given inline). Public input:
nothing here reads private data."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dp_arena.errors import ConfigError
from dp_arena.resources import config_dir

#: Folder of the taxonomy files (group -> list of locations), inside the config folder.
TAXONOMY_FOLDER = "taxonomy"
#: ``taxonomy=auto``: taxonomy file per sequence kind (trips) or dataset name (column data);
#: anything else gets the data-independent ``blocks`` taxonomy.
AUTO_TAXONOMY: dict[str, str] = {"trips": "chicago_sides", "msnbc": "msnbc"}


# ===== taxonomy ===========================================================================
@dataclass(frozen=True)
class Taxonomy:
    """A two-level taxonomy over location codes ``0..A-1`` plus the end marker (code ``A``).

    Groups ``0..G-1`` are the taxonomy's; group ``G`` is the end group, whose only location is
    the end marker. ``member_table[g, j]`` is the code of group ``g``'s ``j``-th location (-1
    padding); ``group_of[c]`` and ``position[c]`` give a code's group and place in it.
    """

    names: tuple[str, ...]
    member_table: np.ndarray
    group_of: np.ndarray
    position: np.ndarray

    @property
    def n_groups(self) -> int:
        """G, the number of groups without the end group."""
        return len(self.names)

    @property
    def n_locations(self) -> int:
        return len(self.group_of) - 1

    @property
    def end_code(self) -> int:
        return self.n_locations

    @property
    def end_group(self) -> int:
        return self.n_groups

    @property
    def group_sizes(self) -> np.ndarray:
        """Locations per group, the end group (size 1) last."""
        return (self.member_table >= 0).sum(axis=1)

    @property
    def max_group_size(self) -> int:
        return int(self.member_table.shape[1])

    @property
    def fanout(self) -> float:
        """Mean number of locations per group (end group excluded)."""
        return self.n_locations / self.n_groups

    def groups(self, alphabet: Sequence[Any]) -> dict[str, list[Any]]:
        """``{group name: [location labels]}`` (end group excluded)."""
        return {name: [alphabet[c] for c in row[row >= 0]]
                for name, row in zip(self.names, self.member_table)}


def taxonomy_from_groups(groups: Mapping[str, Sequence[Any]],
                         alphabet: Sequence[Any]) -> Taxonomy:
    """The :class:`Taxonomy` of ``{group: [location labels]}`` over ``alphabet`` (the view's
    location labels). Every label must be in exactly one group."""
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError("mechanism.taxonomy must map group names to lists of locations",
                          "e.g. mechanism.taxonomy={a: [1, 2], b: [3]} or taxonomy=auto")
    code_of = {_plain(label): code for code, label in enumerate(alphabet)}
    seen: dict[Any, str] = {}
    problems, members = [], []
    for name, labels in groups.items():
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or not labels:
            problems.append(f"group {name!r} is not a non-empty list of locations")
            continue
        codes = []
        for label in labels:
            label = _plain(label)
            if label not in code_of:
                problems.append(f"group {name!r}: {label!r} is not a location of the data")
            elif label in seen:
                problems.append(f"location {label!r} is in groups {seen[label]!r} and {name!r}")
            else:
                seen[label] = str(name)
                codes.append(code_of[label])
        members.append(codes)
    missing = [label for label in code_of if label not in seen]
    if missing:
        problems.append(f"locations in no group: {missing[:10]}")
    if problems:
        raise ConfigError("taxonomy does not partition the location alphabet: "
                          + "; ".join(problems),
                          "list every location of the data in exactly one group")
    n_loc, width = len(alphabet), max(len(m) for m in members)
    table = np.full((len(members) + 1, width), -1, dtype=np.int64)
    group_of = np.empty(n_loc + 1, dtype=np.int64)
    position = np.empty(n_loc + 1, dtype=np.int64)
    for g, codes in enumerate(members):
        table[g, : len(codes)] = codes
        group_of[codes], position[codes] = g, np.arange(len(codes))
    table[len(members), 0] = n_loc  # the end group holds the end marker only
    group_of[n_loc], position[n_loc] = len(members), 0
    return Taxonomy(tuple(str(n) for n in groups), table, group_of, position)


def block_taxonomy(alphabet: Sequence[Any]) -> Taxonomy:
    """Data-independent default: consecutive blocks of ``ceil(sqrt(A))`` locations."""
    size = max(1, math.ceil(math.sqrt(len(alphabet))))
    groups = {f"block_{i // size}": list(alphabet[i: i + size])
              for i in range(0, len(alphabet), size)}
    return taxonomy_from_groups(groups, alphabet)


def load_taxonomy_file(name: str, folder: Path | None = None) -> dict[str, list[Any]]:
    """The ``groups`` of ``dp_arena/conf/taxonomy/NAME.yaml`` (or of ``folder/NAME.yaml``)."""
    folder = folder if folder is not None else config_dir() / TAXONOMY_FOLDER
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ConfigError(f"unknown taxonomy {name!r} (no {path})",
                          f"use taxonomy=auto, blocks, one of {known}, or an inline mapping")
    stat = path.stat()
    groups = _parsed_groups(str(path), stat.st_mtime_ns, stat.st_size)
    return {g: list(m) if isinstance(m, tuple) else m for g, m in groups.items()}


@functools.lru_cache(maxsize=32)
def _parsed_groups(path: str, mtime_ns: int, size: int) -> dict[str, tuple[Any, ...]]:
    """The parsed ``groups`` of a taxonomy file, cached per path and version (parsing the
    YAML took half of a small run's time; an audit makes tens of thousands of runs)."""
    import yaml

    raw = yaml.safe_load(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict):
        raise ConfigError(f"{path} has no 'groups' mapping", "write groups: {name: [locations]}")
    return {g: tuple(members) if isinstance(members, (list, tuple)) else members
            for g, members in raw["groups"].items()}


def resolve_taxonomy(spec: str | Mapping[str, Sequence[Any]], alphabet: Sequence[Any],
                     kind: str, dataset_name: str) -> Taxonomy:
    """The taxonomy a ``taxonomy`` setting names: ``auto`` (per sequence kind / dataset, see
    :data:`AUTO_TAXONOMY`), ``blocks``, a file name under ``dp_arena/conf/taxonomy/``, or a mapping."""
    if isinstance(spec, Mapping):
        return taxonomy_from_groups(spec, alphabet)
    if spec == "auto":
        spec = AUTO_TAXONOMY.get(kind if kind == "trips" else dataset_name, "blocks")
    if spec == "blocks":
        return block_taxonomy(alphabet)
    if not isinstance(spec, str):
        raise ConfigError(f"mechanism.taxonomy must be auto, blocks, a taxonomy name or a "
                          f"mapping (got {spec!r})", "set mechanism.taxonomy=auto")
    return taxonomy_from_groups(load_taxonomy_file(spec), alphabet)


# ===== budget =============================================================================


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
