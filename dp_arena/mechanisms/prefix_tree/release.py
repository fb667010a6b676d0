"""From consistent tree counts to released sequences (post-processing): where sequences end,
unbiased randomized rounding, prefixes emitted per node, and column data (MSNBC layout)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sequences import FILL
from dp_arena.errors import ConfigError
from dp_arena.mechanisms.prefix_tree.consistency import ConsistentLevel, sum_by
from dp_arena.mechanisms.prefix_tree.tree import NoisyTree

ENDS = ("residual", "marker")


@dataclass(frozen=True)
class Release:
    """Released sequences: ``codes[i, :lengths[i]]`` (``FILL`` after); ``is_open[i]``: the
    sequence did not end there (it reached depth ``h``, or its continuation was pruned)."""

    codes: np.ndarray
    lengths: np.ndarray
    is_open: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)


def randomized_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``floor(x) + Bernoulli(frac(x))``: integers with expectation ``x`` (x >= 0)."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    low = np.floor(x)
    return (low + (rng.random(len(x)) < x - low)).astype(np.int64)


def terminal_counts(tree: NoisyTree, counts: list[ConsistentLevel], ends: str
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per depth, ``(ended, open)`` counts of each specific node: sequences that end at the
    node (its end-marker child) and sequences released there although they go on (the node's
    count not accounted for by its children, ``ends=residual`` only; every depth-``h`` node)."""
    if ends not in ENDS:
        raise ConfigError(f"mechanism.ends must be one of {ENDS} (got {ends!r})",
                          "set mechanism.ends=residual")
    end = tree.taxonomy.end_code
    out = []
    for d, (lv, x) in enumerate(zip(tree.levels, counts), start=1):
        n_spec = len(lv.spec_code)
        if d < len(tree.levels):
            nxt, nx = tree.levels[d], counts[d]
            children = sum_by(nxt.gen_parent, nx.gen, n_spec)
            is_end = nxt.spec_code == end
            ended = sum_by(nxt.spec_parent[is_end], nx.spec[is_end], n_spec)
        else:
            children = ended = np.zeros(n_spec)
        if d == tree.h:
            ended, still = np.zeros(n_spec), x.spec.copy()
        elif ends == "residual":
            still = np.maximum(x.spec - children, 0.0)
        else:
            still = np.zeros(n_spec)
        leaf_end = lv.spec_code == end  # their mass is released at their parent
        out.append((np.where(leaf_end, 0.0, ended), np.where(leaf_end, 0.0, still)))
    return out


def node_prefixes(tree: NoisyTree, depth: int, nodes: np.ndarray) -> np.ndarray:
    """``len(nodes) x depth`` location codes of the prefixes of specific nodes of ``depth``."""
    out = np.empty((len(nodes), depth), dtype=np.int32)
    current = np.asarray(nodes, dtype=np.int64)
    for d in range(depth, 0, -1):
        lv = tree.levels[d - 1]
        out[:, d - 1] = lv.spec_code[current]
        current = lv.spec_parent[current]
    return out


def release_from_tree(tree: NoisyTree, counts: list[ConsistentLevel], ends: str,
                      rng: np.random.Generator) -> Release:
    """Step 3: every specific node's prefix, as many times as its rounded terminal counts."""
    h = tree.h
    codes, lengths, is_open = [], [], []
    if tree.levels:  # sequences that are empty: the root's end-marker child
        first = tree.levels[0]
        empty = int(randomized_round(counts[0].spec[first.spec_code == tree.taxonomy.end_code],
                                     rng).sum())
        codes.append(np.full((empty, h), FILL, dtype=np.int32))
        lengths.append(np.zeros(empty, dtype=np.int64))
        is_open.append(np.zeros(empty, dtype=bool))
    for d, (ended, still) in enumerate(terminal_counts(tree, counts, ends), start=1):
        for values, flag in ((ended, False), (still, True)):
            copies = randomized_round(values, rng)
            nodes = np.flatnonzero(copies)
            block = np.full((len(nodes), h), FILL, dtype=np.int32)
            block[:, :d] = node_prefixes(tree, d, nodes)
            reps = copies[nodes]
            codes.append(np.repeat(block, reps, axis=0))
            lengths.append(np.full(int(reps.sum()), d, dtype=np.int64))
            is_open.append(np.full(int(reps.sum()), flag))
    if not codes:
        return Release(np.zeros((0, h), dtype=np.int32), np.zeros(0, dtype=np.int64),
                       np.zeros(0, dtype=bool))
    return Release(np.concatenate(codes), np.concatenate(lengths), np.concatenate(is_open))


# ===== output: column data ================================================================
def columns_frame(release: Release, alphabet: Sequence[Any], columns: Sequence[str],
                  end_value: Any, schema: Schema, public: pd.DataFrame | None,
                  rng: np.random.Generator) -> pd.DataFrame:
    """One row per released sequence (rows shuffled): ``columns`` hold its locations then
    ``end_value``; other schema columns are drawn from their public marginals."""
    n, width = len(release), len(columns)
    if release.codes.shape[1] > width:
        raise ConfigError(f"h = {release.codes.shape[1]} is more than the {width} sequence "
                          "columns", f"set mechanism.h to at most {width}")
    labels = np.asarray(alphabet)
    values = np.full((n, width), end_value, dtype=labels.dtype if len(labels) else np.int64)
    inside = release.codes >= 0
    values[:, : release.codes.shape[1]][inside] = labels[release.codes[inside]]
    order = rng.permutation(n)
    out = pd.DataFrame(values[order], columns=list(columns))
    others = [c for c in schema.attributes if c not in set(columns)]
    if others:
        if public is None or len(public) == 0:
            raise ConfigError(f"prefix_tree builds only the sequence columns; {others} need "
                              "public data to be drawn from", "give the dataset a public part")
        for col in others:
            out[col] = public[col].to_numpy()[rng.integers(0, len(public), n)]
    if schema.id_column is not None:
        first_id = int(schema[schema.id_column].min)  # type: ignore[arg-type]
        out[schema.id_column] = np.arange(n) + first_id
    return out[schema.names]


# ===== output: taxi data ==================================================================
