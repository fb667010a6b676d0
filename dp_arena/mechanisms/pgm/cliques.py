"""Choosing cliques by public facts: their downward closure, spanning forests of attribute
pairs, pairs chosen by domain size, and the size of the junction tree a set of cliques induces.

- :func:`downward_closure`: every non-empty subset of a set of cliques;
- :func:`kruskal_forest`: Kruskal's algorithm over pairs given best-first (used with pair sizes
  by :func:`smallest_pairs_forest` and with public mutual information by adaptive_grid's
  Chow-Liu tree);
- :func:`sized_pairs`: a forest of the smallest pairs, then more pairs within a model budget;
- :func:`model_size_mb`: the float64 size of the junction tree ``mbi`` builds (AIM's cap),
  per connected component (:func:`greedy_elimination_cells`, on bit masks:
  :func:`masked_elimination_cells`); :class:`ModelGraph` the same for a model plus one more
  clique, recomputing only the components it joins;
  :func:`singletons_plus_one_mb` the closed form for the 1-way marginals plus one clique.

Everything here reads domain sizes (public) only, never data.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


def neighbour_sets(attrs: Sequence[str], cliques: Iterable[Sequence[str]]
                   ) -> dict[str, set[str]]:
    """The graph the cliques induce on ``attrs``: each attribute's neighbours."""
    nbrs: dict[str, set[str]] = {a: set() for a in attrs}
    for cl in cliques:
        for a in cl:
            nbrs[a].update(b for b in cl if b != a)
    return nbrs


def greedy_elimination_cells(domain: dict[str, int], nbrs: dict[str, set[str]]) -> int:
    """Cells of the maximal cliques greedy elimination makes on the graph ``nbrs`` (its keys,
    in their order: ties go to the first): eliminate the attribute whose closed neighbourhood
    has the fewest cells, connect its neighbours, repeat; as ``mbi.junction_tree.greedy_order``
    does. ``nbrs`` is not changed. Computed on bit masks (:func:`masked_elimination_cells`)."""
    index = {a: i for i, a in enumerate(nbrs)}
    return masked_elimination_cells([domain[a] for a in nbrs],
                                    {index[a]: _mask(index[b] for b in nbrs[a]) for a in nbrs})


def masked_elimination_cells(sizes: Sequence[int], masks: dict[int, int],
                             cells: dict[int, int] | None = None) -> int:
    """:func:`greedy_elimination_cells` of the graph on the attributes ``masks`` holds:
    attribute ``i`` has ``sizes[i]`` values and the neighbours set in the bit mask
    ``masks[i]`` (ties go to the lowest ``i``); ``cells``, if given: each attribute's closed
    neighbourhood's cells (``sizes[i]`` times its neighbours' sizes), else computed. One
    integer per neighbourhood instead of a set: AIM tests up to 25,000 candidates a round on
    a 55-column table this way (:meth:`ModelGraph.size_with_mb`)."""
    adj = dict(masks)
    # a heap of (cells, attribute); an entry whose cells changed is stale and skipped: only
    # the eliminated attribute's neighbours change, so each step updates their cells alone
    # (by the attribute that left and those that joined each neighbourhood)
    current = dict(cells) if cells is not None else {
        i: sizes[i] * _product(mask, sizes) for i, mask in adj.items()}
    heap = [(c, i) for i, c in current.items()]
    heapq.heapify(heap)
    parented: set[int] = set()
    # a clique is not maximal iff a later clique has its attribute as parent (the first of
    # its neighbours eliminated) and one attribute more (Blair & Peyton, "An introduction to
    # chordal graphs and clique trees", 1993, Lemma 4.5: the order is a perfect elimination
    # order of the filled graph); ``waiting[b]``: the cliques with b among their
    # neighbours whose parent is not known yet; linear in the cliques' sizes
    total = 0
    waiting: dict[int, list[tuple[int, int]]] = {}
    while heap:
        c, best = heapq.heappop(heap)
        if current.get(best) != c:
            continue
        del current[best]
        bit, near = 1 << best, adj[best]
        width = near.bit_count()
        maximal = True
        for j, j_width in waiting.pop(best, ()):
            if j in parented:
                continue
            parented.add(j)
            if j_width == width + 1:
                maximal = False
        if maximal:
            total += c  # the clique {best} | near: ``c`` cells
        rest = near
        while rest:
            low = rest & -rest
            rest ^= low
            b = low.bit_length() - 1
            waiting.setdefault(b, []).append((best, width))
            added = near & ~adj[b] & ~low
            adj[b] = (adj[b] | added) & ~bit
            # exact: the product held sizes[best]
            current[b] = current[b] // sizes[best] * (_product(added, sizes) if added else 1)
            heapq.heappush(heap, (current[b], b))
    return total


def _mask(bits: Iterable[int]) -> int:
    out = 0
    for i in bits:
        out |= 1 << i
    return out


def _product(mask: int, sizes: Sequence[int]) -> int:
    """The product of ``sizes[i]`` over the bits ``i`` set in ``mask``."""
    out = 1
    while mask:
        low = mask & -mask
        mask ^= low
        out *= sizes[low.bit_length() - 1]
    return out


def _bits(mask: int) -> list[int]:
    """The positions of the bits set in ``mask``, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        mask ^= low
        out.append(low.bit_length() - 1)
    return out


def reachable(nbrs: dict[str, set[str]] | dict[str, frozenset[str]], start: str) -> set[str]:
    """The attributes connected to ``start`` in the graph ``nbrs`` (depth-first search)."""
    seen, stack = {start}, [start]
    while stack:
        for b in nbrs[stack.pop()] - seen:
            seen.add(b)
            stack.append(b)
    return seen


def components(nbrs: dict[str, set[str]]) -> list[list[str]]:
    """The connected components of the graph ``nbrs``, each in ``nbrs``' order, ordered by
    their first attribute."""
    seen: set[str] = set()
    out = []
    for start in nbrs:
        if start not in seen:
            comp = reachable(nbrs, start)
            seen |= comp
            out.append([a for a in nbrs if a in comp])
    return out


def model_size_mb(domain: dict[str, int], cliques: Sequence[Sequence[str]]) -> float:
    """Megabytes (float64) of the junction tree ``mbi`` builds for ``cliques``
    (``mbi.junction_tree.hypothetical_model_size``): a graph that is one spanning tree is
    eliminated in a perfect order (its cliques are its edges); otherwise greedy elimination
    by smallest clique size (:func:`greedy_elimination_cells`), summing the maximal cliques.
    Greedy elimination never mixes components (an attribute's cost reads only its own
    component, and the order within a component is the same alone), so it runs per
    connected component: a wide, sparse model costs the size of its components, not of the
    whole graph."""
    graph = ModelGraph.of(domain, cliques)
    tree = spanning_tree_cells(graph.sizes, dict(enumerate(graph.masks)))
    return (sum(graph.cells) if tree is None else tree) * 8 / 2**20


def spanning_tree_cells(sizes: Sequence[int], graph: dict[int, int]) -> int | None:
    """The cells of the edges of ``graph`` (attribute positions to neighbour masks) if it is
    one spanning tree over all ``len(sizes)`` attributes, with an edge: ``mbi`` eliminates
    such a graph in a perfect order, its cliques are its edges. Else ``None``."""
    n_edges = sum(m.bit_count() for m in graph.values()) // 2
    if len(graph) != len(sizes) or not n_edges or n_edges != len(graph) - 1:
        return None
    seen, frontier = 0, 1 << next(iter(graph))
    while frontier:  # connected: n - 1 edges then make a tree
        seen |= frontier
        reached = 0
        for p in _bits(frontier):
            reached |= graph[p]
        frontier = reached & ~seen
    if seen.bit_count() != len(graph):
        return None
    return sum(sizes[p] * sizes[q] for p, m in graph.items() for q in _bits(m) if q > p)


def singletons_plus_one_mb(domain: dict[str, int], clique: Sequence[str]) -> float:
    """:func:`model_size_mb` of every 1-way marginal plus ``clique``, in closed form: the
    clique is one complete component (its cells), every other attribute its own (its
    domain size); a pair over a two-attribute domain is the spanning-tree case, same cells."""
    inside = set(clique)
    cells = math.prod(domain[a] for a in inside) + sum(
        d for a, d in domain.items() if a not in inside)
    return cells * 8 / 2**20


@dataclass(frozen=True)
class ModelGraph:
    """A model's graph split into connected components, each with its junction-tree cells,
    so the size of the model plus one more clique recomputes only the components the clique
    joins (AIM's per-round check of every candidate). Attributes are their positions in
    ``domain``, neighbourhoods bit masks. Domain sizes and cliques only."""

    domain: dict[str, int]
    pos: dict[str, int]
    sizes: tuple[int, ...]
    masks: tuple[int, ...]
    closed: tuple[int, ...]
    comp_of: dict[str, int]
    members: tuple[tuple[int, ...], ...]
    cells: tuple[int, ...]

    @classmethod
    def of(cls, domain: dict[str, int], cliques: Sequence[Sequence[str]]) -> ModelGraph:
        nbrs = neighbour_sets(list(domain), cliques)
        comps = components(nbrs)
        pos = {a: i for i, a in enumerate(domain)}
        sizes = tuple(domain.values())
        masks = tuple(_mask(pos[b] for b in nbrs[a]) for a in domain)
        return cls(domain, pos, sizes, masks,
                   tuple(size * _product(m, sizes) for size, m in zip(sizes, masks)),
                   {a: i for i, comp in enumerate(comps) for a in comp},
                   tuple(tuple(pos[a] for a in comp) for comp in comps),
                   tuple(masked_elimination_cells(sizes, {pos[a]: masks[pos[a]] for a in comp})
                         for comp in comps))

    def size_with_mb(self, clique: Sequence[str],
                     memo: dict[tuple[int, int], int]) -> float:
        """:func:`model_size_mb` of the model's cliques plus ``clique`` (exactly: a test
        compares). ``memo``: cells of merged components by their neighbourhoods (a run's,
        public)."""
        touched = sorted({self.comp_of[a] for a in clique})
        graph = {p: self.masks[p] for i in touched for p in self.members[i]}
        cells = {p: self.closed[p] for p in graph}
        joined = _mask(self.pos[a] for a in clique)
        for a in clique:
            p = self.pos[a]
            added = joined & ~graph[p] & ~(1 << p)
            graph[p] |= added
            cells[p] *= _product(added, self.sizes)
        rest = sum(self.cells) - sum(self.cells[i] for i in touched)
        tree = spanning_tree_cells(self.sizes, graph)
        if tree is not None:
            return tree * 8 / 2**20
        width, packed = len(self.sizes), 0
        for p, m in graph.items():  # the merged graph, one integer (its masks side by side)
            packed |= m << (p * width)
        key = (_mask(graph), packed)
        if key not in memo:
            memo[key] = masked_elimination_cells(self.sizes, graph, cells)
        return (rest + memo[key]) * 8 / 2**20
