"""Choosing cliques by public facts: their downward closure, spanning forests of attribute
pairs, pairs chosen by domain size, and the size of the junction tree a set of cliques induces.

- :func:`downward_closure`: every non-empty subset of a set of cliques;
- :func:`kruskal_forest`: Kruskal's algorithm over pairs given best-first (used with pair sizes
  by :func:`smallest_pairs_forest` and with public mutual information by adaptive_grid's
  Chow-Liu tree);
- :func:`sized_pairs`: a forest of the smallest pairs, then more pairs within a model budget;
- :func:`model_size_mb`: the float64 size of the junction tree ``mbi`` builds (AIM's cap).

Everything here reads domain sizes (public) only, never data.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

Clique = tuple[str, ...]


def downward_closure(cliques: Iterable[Sequence[str]], order: Sequence[str]) -> list[Clique]:
    """Every non-empty subset of every clique, attributes in ``order``, sorted by size then by
    first appearance."""
    pos = {a: i for i, a in enumerate(order)}
    seen: dict[Clique, None] = {}
    for cl in cliques:
        cl = tuple(sorted(set(cl), key=pos.__getitem__))
        for k in range(1, len(cl) + 1):
            for sub in itertools.combinations(cl, k):
                seen.setdefault(sub, None)
    return sorted(seen, key=len)


def smallest_pairs_forest(domain: dict[str, int], max_cells: int) -> list[tuple[str, str]]:
    """A spanning forest of the attributes chosen by domain size only (public): Kruskal's
    algorithm over the pairs with at most ``max_cells`` cells, fewest cells first (ties in
    schema order). At most ``d - 1`` pairs; an attribute every pair of which is too large
    is left out (it gets a 1-way marginal)."""
    pairs = sorted((p for p in itertools.combinations(domain, 2)
                    if domain[p[0]] * domain[p[1]] <= max_cells),
                   key=lambda p: domain[p[0]] * domain[p[1]])
    return kruskal_forest(list(domain), pairs)


def kruskal_forest(attrs: Sequence[str], pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Kruskal's algorithm: the pairs, in the given (best-first) order, that join two
    components not yet joined (a spanning forest of ``attrs``)."""
    comp = {a: a for a in attrs}

    def find(a: str) -> str:
        while comp[a] != a:
            a = comp[a]
        return a

    edges = []
    for a, b in pairs:
        if find(a) != find(b):
            comp[find(a)] = find(b)
            edges.append((a, b))
    return edges


def sized_pairs(domain: dict[str, int], max_cells: int, model_mb: float) -> list[tuple[str, str]]:
    """Pairs chosen by domain size only (public): the :func:`smallest_pairs_forest`, then
    every other pair of at most ``max_cells`` cells, fewest cells first, that keeps the
    junction tree of the chosen pairs within ``model_mb`` (:func:`model_size_mb`)."""
    chosen = smallest_pairs_forest(domain, max_cells)
    rest = sorted((p for p in itertools.combinations(domain, 2)
                   if domain[p[0]] * domain[p[1]] <= max_cells and p not in set(chosen)),
                  key=lambda p: domain[p[0]] * domain[p[1]])
    for pair in rest:
        if model_size_mb(domain, [*chosen, pair]) <= model_mb:
            chosen.append(pair)
    return chosen


def model_size_mb(domain: dict[str, int], cliques: Sequence[Sequence[str]]) -> float:
    """Megabytes (float64) of the junction tree ``mbi`` builds for ``cliques``: greedy
    elimination by smallest clique size, as ``mbi.junction_tree.greedy_order`` does, summing
    the maximal elimination cliques."""
    attrs = list(domain)
    nbrs: dict[str, set[str]] = {a: set() for a in attrs}
    for cl in cliques:
        for a in cl:
            nbrs[a].update(b for b in cl if b != a)
    n_edges = sum(len(v) for v in nbrs.values()) // 2
    if n_edges and n_edges == len(attrs) - 1 and is_connected(nbrs):
        # mbi eliminates a tree graph in a perfect order: its cliques are the edges
        cells = sum(domain[a] * domain[b] for a in attrs for b in nbrs[a] if a < b)
        return cells * 8 / 2**20
    remaining = list(attrs)
    elim_cliques: list[frozenset[str]] = []
    while remaining:
        best, best_cost = None, None
        for a in remaining:
            cost = domain[a]
            for b in nbrs[a]:
                cost *= domain[b]
            if best_cost is None or cost < best_cost:
                best, best_cost = a, cost
        assert best is not None
        elim_cliques.append(frozenset(nbrs[best] | {best}))
        for b in nbrs[best]:
            nbrs[b] |= nbrs[best] - {b}
            nbrs[b].discard(best)
        remaining.remove(best)
    maximal = [c for c in set(elim_cliques) if not any(c < d for d in elim_cliques)]
    cells = sum(math.prod(domain[a] for a in c) for c in maximal)
    return cells * 8 / 2**20


def is_connected(nbrs: dict[str, set[str]]) -> bool:
    """Whether the graph given by its neighbour sets is connected (depth-first search)."""
    if not nbrs:
        return True
    start = next(iter(nbrs))
    seen, stack = {start}, [start]
    while stack:
        for b in nbrs[stack.pop()] - seen:
            seen.add(b)
            stack.append(b)
    return len(seen) == len(nbrs)
