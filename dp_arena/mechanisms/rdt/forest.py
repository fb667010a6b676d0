"""The random trees of :class:`~dp_arena.mechanisms.rdt.RDT`: growing a forest on
public-attribute codes (the structure reads no private value), routing rows to leaves, the
leaves' noisy label counts and their post-processing into per-node proportions, and sampling
labels from the ensemble. The privacy argument (what is charged for the counts) is the
mechanism's: :class:`~dp_arena.mechanisms.rdt.RDT`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_arena.privacy.release import Releaser


# ----- trees ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeStructure:
    """A random decision tree's shape; nodes are numbered in breadth-first order.

    ``split[i]`` is the node-attribute column node ``i`` splits on (-1: a leaf); its children
    are ``first_child[i] + v`` for every collapsed value ``v`` of that attribute. ``sd_count``
    is the number of SD records reaching each node (public).
    """

    split: np.ndarray
    first_child: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    sd_count: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.split)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.split < 0

    @property
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    def same_shape(self, other: TreeStructure) -> bool:
        """Whether two trees have the same nodes, splits and children."""
        return all(np.array_equal(getattr(self, f), getattr(other, f))
                   for f in ("split", "first_child", "parent", "depth"))


def grow_tree(sd_codes: np.ndarray, n_values: np.ndarray, weights: np.ndarray, n_B: int,
              max_depth: int, rng: np.random.Generator) -> TreeStructure:
    """Grow one tree from the structure data only (``sd_codes``: rows x node attributes,
    collapsed codes). A node splits on a random unused attribute (probability proportional to
    ``weights``; single-valued attributes never) while it holds at least ``n_B`` SD rows and
    its depth is below ``max_depth``."""
    n_attrs = sd_codes.shape[1]
    usable = (np.asarray(weights, float) > 0) & (np.asarray(n_values) > 1)
    split, first, parent, depth, count = [-1], [-1], [-1], [0], [len(sd_codes)]
    members: dict[int, np.ndarray] = {0: np.arange(len(sd_codes))}
    used: dict[int, np.ndarray] = {0: np.zeros(n_attrs, dtype=bool)}
    frontier = [0]
    while frontier:
        next_frontier: list[int] = []
        for node in frontier:
            rows, node_used = members.pop(node), used.pop(node)
            allowed = usable & ~node_used
            if len(rows) < n_B or depth[node] >= max_depth or not allowed.any():
                continue
            w = np.where(allowed, weights, 0.0)
            attr = int(rng.choice(n_attrs, p=w / w.sum()))
            k = int(n_values[attr])
            split[node], first[node] = attr, len(split)
            values = sd_codes[rows, attr]
            order = np.argsort(values, kind="stable")
            bounds = np.searchsorted(values[order], np.arange(k + 1))
            child_used = node_used.copy()
            child_used[attr] = True
            for v in range(k):
                child = len(split)
                split.append(-1), first.append(-1), parent.append(node)
                depth.append(depth[node] + 1)
                members[child] = rows[order[bounds[v]:bounds[v + 1]]]
                count.append(len(members[child]))
                used[child] = child_used
                next_frontier.append(child)
        frontier = next_frontier
    return TreeStructure(np.array(split), np.array(first), np.array(parent), np.array(depth),
                         np.array(count))


def grow_forest(sd_codes: np.ndarray, n_values: np.ndarray, weights: np.ndarray, m: int,
                n_B: int, max_depth: int, rng: np.random.Generator) -> list[TreeStructure]:
    """``m`` independent random trees grown from the structure data."""
    return [grow_tree(sd_codes, n_values, weights, n_B, max_depth, rng) for _ in range(m)]


def route_to_leaves(tree: TreeStructure, codes: np.ndarray) -> np.ndarray:
    """The leaf each row of ``codes`` (rows x node attributes, collapsed codes) reaches."""
    node = np.zeros(len(codes), dtype=np.int64)
    active = np.flatnonzero(tree.split[node] >= 0)
    while len(active):
        here = node[active]
        node[active] = tree.first_child[here] + codes[active, tree.split[here]]
        active = active[tree.split[node[active]] >= 0]
    return node


# ----- counts and their post-processing ---------------------------------------------------
def leaf_label_counts(tree: TreeStructure, leaves: np.ndarray, labels: np.ndarray,
                      n_labels: int) -> np.ndarray:
    """Raw (private) label counts per node (nodes x labels; internal nodes are 0)."""
    flat = np.bincount(leaves * n_labels + labels, minlength=tree.n_nodes * n_labels)
    return flat.reshape(tree.n_nodes, n_labels).astype(float)


def add_laplace_noise(counts: np.ndarray, tree: TreeStructure, scale: float, bound: float,
                      release: Releaser, name: str, note: str = "") -> np.ndarray:
    """Laplace(``scale``) noise on every leaf's every label count (one release of L1
    sensitivity ``bound``); internal rows set to 0. The number of draws depends on the tree's
    shape only."""
    noisy = np.zeros_like(counts, dtype=float)
    leaves = tree.is_leaf
    noisy[leaves] = release.laplace(name, counts[leaves], bound, scale, note=note)
    return noisy


def subtree_sums(tree: TreeStructure, leaf_values: np.ndarray) -> np.ndarray:
    """Every node's sum of ``leaf_values`` over the leaves below it (leaves keep their own)."""
    out = np.array(leaf_values, dtype=float, copy=True)
    out[~tree.is_leaf] = 0.0
    for d in range(int(tree.depth.max()), 0, -1):
        nodes = np.flatnonzero(tree.depth == d)
        np.add.at(out, tree.parent[nodes], out[nodes])
    return out


def node_proportions(tree: TreeStructure, noisy_leaf_counts: np.ndarray, scale: float,
                     prior: np.ndarray, shrinkage: float, min_count: float = 0.0) -> np.ndarray:
    """Label proportions of every node, from the *noisy* leaf counts only (post-processing).

    A node's noisy counts ``y`` are the sums of the noisy leaf counts below it, ``n = sum(y)``
    its noisy total and ``sigma^2 = 2 scale^2 L`` the noise variance of one of its counts
    (``L`` leaves below). Top-down, label ``k`` of the node gets
    ``w_k * y_k / n + (1 - w_k) * parent_k`` with the empirical-Bayes weight
    ``w_k = n^2 v_k / (n^2 v_k + shrinkage^2 sigma^2)``: the node's own share is trusted when
    its noise is small next to the spread ``v_k = parent_k (1 - parent_k)`` (floored at
    1e-4) a share may have around its parent's. The result is clamped at 0 and
    normalised. The root's parent is ``prior`` (the SD proportions); a node whose noisy total
    is ``<= 0`` ("empty") or whose *structure-data* count ``tree.sd_count`` is below
    ``min_count`` (the report's ``leafFreqMin``, tested as its pseudo-code does: "if count of
    SD observations ... >= leafFreqMin"; SD is public or DP output, so the test costs nothing)
    takes its parent's proportions. ``shrinkage = 0`` is the plain rule: clamped, normalised
    noisy counts, empty nodes falling back to the parent.
    """
    n_labels = noisy_leaf_counts.shape[1]
    counts = subtree_sums(tree, noisy_leaf_counts)
    leaves_below = subtree_sums(tree, tree.is_leaf[:, None].astype(float))[:, 0]
    total = counts.sum(axis=1)
    nonempty = (total > 0) & (tree.sd_count >= min_count)
    own = np.divide(counts, total[:, None], out=np.zeros_like(counts),
                    where=nonempty[:, None])
    noise = (shrinkage * scale) ** 2 * 2.0 * leaves_below[:, None]
    props = np.zeros_like(counts)
    for d in range(int(tree.depth.max()) + 1):
        nodes = np.flatnonzero(tree.depth == d)
        above = np.broadcast_to(prior, (len(nodes), n_labels)) if d == 0 \
            else props[tree.parent[nodes]]
        signal = np.clip(total[nodes], 0.0, None)[:, None] ** 2 * spread(above)
        w = np.where(nonempty[nodes, None],
                     signal / np.where(signal + noise[nodes] > 0, signal + noise[nodes], 1.0), 0.0)
        props[nodes] = normalised(np.clip(w * own[nodes] + (1.0 - w) * above, 0.0, None),
                                  fallback=above)
    return props


def spread(proportions: np.ndarray) -> np.ndarray:
    """Bernoulli variance of each share, floored at 1e-4 (the prior spread of a child's share)."""
    return np.maximum(proportions * (1.0 - proportions), 1e-4)


def normalised(rows: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1; rows summing to 0 are replaced by ``fallback``'s rows."""
    sums = rows.sum(axis=1, keepdims=True)
    return np.where(sums > 0, rows / np.where(sums > 0, sums, 1.0), fallback)


def ensemble_proportions(trees: list[TreeStructure], proportions: list[np.ndarray],
                         codes: np.ndarray) -> np.ndarray:
    """Per row of ``codes``: the leaf proportions averaged over the trees."""
    total = np.zeros((len(codes), proportions[0].shape[1]))
    for tree, props in zip(trees, proportions):
        total += props[route_to_leaves(tree, codes)]
    return total / len(trees)


def sample_labels(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row drawn from that row's probability vector."""
    probabilities = np.clip(probabilities, 0, None)
    cum = np.cumsum(probabilities, axis=1)
    u = rng.random(len(probabilities))[:, None] * cum[:, -1:]
    return np.minimum((cum <= u).sum(axis=1), probabilities.shape[1] - 1)
