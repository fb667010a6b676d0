"""Marginals of a fitted ``mbi`` model and records drawn from it, in NumPy (post-processing).

- :class:`TreeMarginals`: any marginal of an estimated model, computed on the model's junction
  tree (calibrated once; no per-query JIT compilation, which would dominate AIM's run time) by
  eliminating the subtree covering the clique towards a root, with per-attribute holder sets,
  rooted trees and (bounded) memos of messages and component parts shared across queries,
  and bounded working memory (a marginal whose messages would exceed ``WORK_CELLS`` is
  computed one value of some clique attributes at a time; a contraction whose planned
  intermediates would, one value of a target attribute at a time);
- :func:`sample_codes`: seeded sampling of records from the model along the junction tree's
  elimination order, stratified within groups of conditioning values by default
  (``balanced``), or ``mbi``'s ``round`` / ``sample`` draws; one binary search per column.

Nothing here reads private data: the model is fitted to noisy measurements only.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from dp_arena.errors import ConfigError

from .mbi_setup import mbi_junction_tree
from .mirror_descent import FittedModel

Clique = tuple[str, ...]

# ----- model marginals in NumPy -----------------------------------------------------------
class TreeMarginals:
    """Exact marginals of an ``mbi`` model for any clique, in NumPy.

    The model's junction tree is calibrated once (``mbi`` message passing); a marginal inside
    one tree node is a projection, otherwise it is computed by eliminating, towards a root,
    the smallest subtree covering the clique (``prod mu_C / prod mu_S`` restricted to the
    subtree). Disconnected components are independent (outer product / total).

    Per query, only nodes holding a clique attribute are looked at (per-attribute holder
    sets); the rooted trees, inverse separators, messages between nodes, projections of a
    root's table and the marginals of a clique's part in one component (which recur across
    AIM's candidates) are remembered, the last three within :data:`MEMO_CELLS` cells
    (:class:`Memo`: the least recently used forgotten first). A remembered array is the one
    the same operations would compute again, so results do not depend on the order of the
    queries; every order (of children, of a message's attributes) is fixed, so they do not
    depend on string hashing either. Besides the model and the memos, one marginal holds at
    most :data:`WORKING_CELLS` cells and its result (tables of the model aside).
    """

    def __init__(self, model):
        self.total = float(model.total)
        if isinstance(model, FittedModel):  # calibrated already
            self.sizes = dict(model.domain)
            self.order = list(model.tree.order)
            nodes = list(model.tree.nodes)
            self.nodes = nodes
            self.adj = dict(model.tree.adj)
            self.tables = dict(model.beliefs)
        else:
            domain = model.domain
            self.sizes = dict(zip(domain.attributes, domain.shape))
            jtree, order = mbi_junction_tree.make_junction_tree(
                domain, [tuple(c) for c in model.cliques])
            self.order = list(order)
            nodes = [tuple(n) for n in jtree.nodes]
            self.nodes = nodes
            self.adj = {n: [tuple(m) for m in jtree.neighbors(n)] for n in nodes}
            potentials = {tuple(cl): np.asarray(model.potentials[cl].values, dtype=float)
                          for cl in model.potentials.cliques}
            self.tables = self._calibrate(potentials)
        self.component: dict[Clique, int] = {}
        for i, comp in enumerate(_components(nodes, self.adj)):
            for n in comp:
                self.component[n] = i
        self.home: dict[str, list[Clique]] = {}
        for n in nodes:
            for a in n:
                self.home.setdefault(a, []).append(n)
        # for the queries, built once: each attribute's holders (positions in ``nodes``) and
        # each node's attribute set; filled as queries come: the tree rooted at a node, the
        # inverse separator marginal of an edge, and the memos (MEMO_CELLS cells in all)
        position = {n: i for i, n in enumerate(nodes)}
        self._holders = {a: frozenset(map(position.get, ns)) for a, ns in self.home.items()}
        self._attr_sets = {n: frozenset(n) for n in nodes}
        self._rooted: dict[Clique, tuple[dict, dict[Clique, int]]] = {}
        self._inverses: dict[tuple[Clique, Clique], tuple[Clique, np.ndarray]] = {}
        self._memo = Memo(MEMO_CELLS)
        self._cache: dict[Clique, np.ndarray] = {}

    def _calibrate(self, potentials: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Sum-product (log space) on the junction tree: node marginals summing to total."""
        psi = {n: np.zeros([self.sizes[a] for a in n]) for n in self.nodes}
        for cl, arr in potentials.items():
            host = min((n for n in self.nodes if set(cl) <= set(n)), key=lambda n: psi[n].size)
            psi[host] = psi[host] + _broadcast(arr, cl, host)
        msgs: dict[tuple[Clique, Clique], tuple[Clique, np.ndarray]] = {}

        def send(src: Clique, dst: Clique) -> None:
            belief = psi[src]
            for other in self.adj[src]:
                if other != dst:
                    attrs, arr = msgs[(other, src)]
                    belief = belief + _broadcast(arr, attrs, src)
            sep = tuple(a for a in src if a in dst)
            axes = tuple(i for i, a in enumerate(src) if a not in sep)
            msgs[(src, dst)] = (sep, logsumexp(belief, axis=axes) if axes else belief)

        for comp in _components(self.nodes, self.adj):
            parent, order = _bfs(comp[0], self.adj)
            for n in reversed(order[1:]):
                send(n, parent[n])  # type: ignore[arg-type]
            for n in order[1:]:
                send(parent[n], n)  # type: ignore[arg-type]
        tables = {}
        for n in self.nodes:
            belief = psi[n]
            for other in self.adj[n]:
                attrs, arr = msgs[(other, n)]
                belief = belief + _broadcast(arr, attrs, n)
            belief = belief - logsumexp(belief)
            tables[n] = np.exp(belief) * self.total
        return tables

    def marginal(self, clique: Sequence[str], keep: bool = True) -> np.ndarray:
        """Flattened marginal of ``clique`` (row-major in the given order), summing to the
        model total. ``keep=False`` computes it without remembering it (AIM scores every
        candidate once per round: remembered, the marginals of 25,000 candidates hold as
        much memory as their answers)."""
        clique = tuple(clique)
        if clique in self._cache:
            return self._cache[clique]
        table = self._compute(clique).ravel()
        if keep:
            self._cache[clique] = table
        return table

    def _compute(self, clique: Clique) -> np.ndarray:
        if not clique:
            return np.array([self.total])
        # one component: _connected (a projection when one node holds the clique)
        groups: dict[int, list[str]] = {}
        for a in clique:
            groups.setdefault(self.component[self.home[a][0]], []).append(a)
        if len(groups) > 1:
            parts = [(tuple(g), self._group(tuple(g))) for g in groups.values()]
            attrs, out = parts[0]
            for g, arr in parts[1:]:
                out = np.multiply.outer(out, arr)
                attrs += g
            out = out / self.total ** (len(parts) - 1)
            return _transpose(out, attrs, clique)
        return self._connected(clique)

    def _group(self, group: Clique) -> np.ndarray:
        """:meth:`_connected`, remembered (within the memo budget): the part of a clique
        in one component recurs with every choice of the attributes in other components."""
        table = self._memo.get(("group", group))
        if table is None:
            table = self._connected(group)
            self._memo.put(("group", group), table)
        return table

    def _host(self, clique: Clique) -> Clique | None:
        """The first tree node (in ``nodes`` order) holding all of ``clique``, if any: the
        smallest position common to its attributes' holders."""
        common = frozenset.intersection(*(self._holders[a] for a in clique))
        return self.nodes[min(common)] if common else None

    def _connected(self, clique: Clique) -> np.ndarray:
        """Marginal of ``clique`` whose attributes lie in one tree component.

        Inside one node: a projection. Otherwise the root is the node sharing the most
        attributes with the clique (the smallest table among ties, then the first in
        ``nodes`` order; only nodes holding a clique attribute can share any), and the
        subtree kept joins the root to the shallowest holder of every attribute the root
        lacks; eliminated towards the root (:meth:`_eliminate`), from the subtree's cheapest
        root when the default one's work is over :data:`REROOT_CELLS`, and by slices of one
        or more clique attributes (:meth:`_by_slices`) when its messages would hold more than
        :data:`WORK_CELLS` cells."""
        host = self._host(clique)
        if host is not None:
            return _project(self.tables[host], host, clique)
        q = set(clique)
        near = sorted(frozenset().union(*(self._holders[a] for a in clique)))
        root = max((self.nodes[i] for i in near),
                   key=lambda n: (len(q & self._attr_sets[n]), -self.tables[n].size))
        parent, depth = self._rooted_at(root)
        children = self._covering_subtree(root, clique, parent, depth)
        work = self._work(root, children, q)
        if work > REROOT_CELLS:
            root, parent, children, work = self._cheapest_root(root, children, clique)
        if work > WORK_CELLS:  # the messages' cells are at most the work
            fixed = self._fixed_attributes(root, parent, children, clique)
            if fixed:
                return self._by_slices(root, parent, children, clique, fixed)
        return self._eliminate(root, parent, children, clique, {})

    def _eliminate(self, root: Clique, parent: dict, children: dict[Clique, list[Clique]],
                   clique: Clique, evidence: dict[str, int]) -> np.ndarray:
        """The marginal of ``clique`` over its attributes not in ``evidence`` (clique order),
        with each attribute of ``evidence`` held at its value (every table sliced there):
        leaves first, each kept node sends its parent its table times its children's
        messages divided by the separator marginal (:meth:`_inverse_separator`), summed to
        the separator and the clique attributes gathered below; the root sums to the
        clique."""
        free = tuple(a for a in clique if a not in evidence)

        def upward(node: Clique, below: list[tuple[tuple, Clique, np.ndarray]]
                   ) -> tuple[tuple, Clique, np.ndarray]:
            """(memo key, attributes, array) of the message ``node`` sends its parent (at
            the root: the marginal), from its children's (``below``, in ``children``
            order). The key names the computation: node, target, the keys of the
            children's messages, in operand order, and the values held in ``node``'s
            table."""
            messages = [(t, arr) for _, t, arr in below]
            if node == root:  # the root's table summed first to what the query needs
                inflow = set(clique).union(*(t for _, t, _ in below))
                kept = tuple(a for a in root if a in inflow)
                table = _held(kept, self._projection(root, kept), evidence)
                return (), free, _einsum([table, *messages], free)
            sep, inv = _held(*self._inverse_separator(node, parent[node]), evidence)
            gathered = self._attr_sets[node].union(*(t for _, t, _ in below))
            target = sep + tuple(a for a in free if a in gathered and a not in sep)
            own = tuple((a, evidence[a]) for a in node if a in evidence)
            # a message's key starts with a node (a tuple), the memo's other keys with a word
            key = (node, parent[node], target, tuple(k for k, _, _ in below), own)
            message = self._memo.get(key)
            if message is None:
                table = _held(node, self.tables[node], evidence)
                message = _einsum([table, *messages, (sep, inv)], target)
                self._memo.put(key, message)
            return key, target, message

        sent: dict[Clique, tuple[tuple, Clique, np.ndarray]] = {}  # each held until used
        for node in _post_order(root, children):
            sent[node] = upward(node, [sent.pop(child) for child in children[node]])
        return sent[root][2]

    def _by_slices(self, root: Clique, parent: dict, children: dict[Clique, list[Clique]],
                   clique: Clique, fixed: Clique) -> np.ndarray:
        """The marginal of ``clique`` assembled from one :meth:`_eliminate` per combination
        of values of ``fixed``: each slice's messages lack those attributes."""
        out = np.empty([self.sizes[a] for a in clique])
        for values in itertools.product(*(range(self.sizes[a]) for a in fixed)):
            evidence = dict(zip(fixed, values))
            out[tuple(evidence.get(a, slice(None)) for a in clique)] = self._eliminate(
                root, parent, children, clique, evidence)
        return out

    def _message_cells(self, root: Clique, parent: dict,
                       children: dict[Clique, list[Clique]], clique: Clique,
                       fixed: frozenset[str]) -> int:
        """Cells of all the messages :meth:`_eliminate` sends with the attributes of
        ``fixed`` held: each carries its separator and the clique attributes gathered
        below it, less those held."""
        free = set(clique) - fixed

        below: dict[Clique, tuple[set[str], int]] = {}
        for node in _post_order(root, children):
            gathered, total = self._attr_sets[node] & free, 0
            for child in children[node]:
                attrs, n = below.pop(child)
                gathered |= attrs
                total += n
            if node != root:
                sep = (self._attr_sets[node] & self._attr_sets[parent[node]]) - fixed
                total += math.prod(self.sizes[a] for a in sep | gathered)
            below[node] = gathered, total
        return below[root][1]

    def _fixed_attributes(self, root: Clique, parent: dict,
                          children: dict[Clique, list[Clique]], clique: Clique) -> Clique:
        """The clique attributes to hold, one value at a time, so that the messages of a
        marginal fit in :data:`WORK_CELLS` cells: greedily the one that shrinks them most
        (first in clique order among equals), while holding one more shrinks them. Empty
        when they fit already."""
        fixed: Clique = ()
        cells = self._message_cells(root, parent, children, clique, frozenset())
        while cells > WORK_CELLS:
            options = [(self._message_cells(root, parent, children, clique,
                                            frozenset((*fixed, a))), i, a)
                       for i, a in enumerate(clique) if a not in fixed]
            if not options or min(options)[0] >= cells:
                break
            cells, _, a = min(options)
            fixed += (a,)
        return fixed

    def _rooted_at(self, root: Clique) -> tuple[dict, dict[Clique, int]]:
        """Parent and depth of every node of ``root``'s component, the tree rooted at
        ``root`` (one BFS per root, remembered: a few roots serve every query)."""
        if root not in self._rooted:
            parent, order = _bfs(root, self.adj)
            depth = {root: 0}
            for n in order[1:]:
                depth[n] = depth[parent[n]] + 1
            self._rooted[root] = (parent, depth)
        return self._rooted[root]

    def _covering_subtree(self, root: Clique, clique: Clique, parent: dict,
                          depth: dict[Clique, int]) -> dict[Clique, list[Clique]]:
        """The children of each node of the subtree joining ``root`` to the shallowest holder
        (first in ``home`` order among equals) of each clique attribute the subtree does not
        hold yet, attributes in clique order; children in the order they join."""
        q = set(clique)
        children: dict[Clique, list[Clique]] = {root: []}
        covered = self._attr_sets[root] & q
        for a in clique:
            if a in covered:
                continue
            n = min((n for n in self.home[a] if n in depth), key=lambda n: depth[n])
            path = []
            while n not in children:
                path.append(n)
                covered |= self._attr_sets[n] & q
                n = parent[n]
            for n in reversed(path):  # top down: every node joins after its parent
                children[n] = []
                children[parent[n]].append(n)
        return children

    def _work(self, root: Clique, children: dict[Clique, list[Clique]], q: set[str]) -> int:
        """Cells the elimination from ``root`` touches, about: each kept node's table times
        the clique attributes its message must carry besides its own (those gathered below
        it that it lacks). A message carries its separator times those attributes, so two
        clique attributes far from the root on one branch multiply the separators on the
        way (measured: a 153-million-cell message for one 3-way marginal on a 48-column
        model)."""
        gathered: dict[Clique, tuple[set[str], int]] = {}
        for node in _post_order(root, children):
            below, work = set(), 0
            for child in children[node]:
                attrs, w = gathered.pop(child)
                below |= attrs
                work += w
            own = self._attr_sets[node]
            extra = math.prod(self.sizes[a] for a in below - own)
            gathered[node] = below | (own & q), work + self.tables[node].size * extra
        return gathered[root][1]

    def _cheapest_root(self, root: Clique, children: dict[Clique, list[Clique]],
                       clique: Clique) -> tuple[Clique, dict, dict[Clique, list[Clique]], int]:
        """The node of the covering subtree from which eliminating touches the fewest cells
        (:meth:`_work`), with its rooted tree, covering subtree and work: asked only when the
        default root's work is over :data:`REROOT_CELLS`, so small queries pay nothing.
        Every root gives the same marginal (up to rounding)."""
        q = set(clique)
        best = None
        for node in sorted(children, key=self.nodes.index):
            parent, depth = self._rooted_at(node)
            subtree = self._covering_subtree(node, clique, parent, depth)
            work = self._work(node, subtree, q)
            if best is None or work < best[0]:
                best = (work, node, parent, subtree)
        assert best is not None
        return best[1], best[2], best[3], best[0]

    def _projection(self, node: Clique, kept: Clique) -> np.ndarray:
        """``node``'s table summed over the attributes not in ``kept`` (in ``node``'s order),
        remembered within the memo budget: late in an AIM run a root can hold hundreds of
        thousands of cells, and the candidates it serves need a few of its attributes
        (the same few for many of them), so each sum over the big table is done once."""
        if kept == node:
            return self.tables[node]
        table = self._memo.get(("projection", node, kept))
        if table is None:
            table = _project(self.tables[node], node, kept)
            self._memo.put(("projection", node, kept), table)
        return table

    def _inverse_separator(self, node: Clique, up: Clique) -> tuple[Clique, np.ndarray]:
        """The separator of tree edge ``node``-``up`` (in ``node``'s attribute order) and
        ``1 / mu_sep`` from ``node``'s table (0 where ``mu_sep`` is 0), remembered per edge."""
        if (node, up) not in self._inverses:
            sep = tuple(a for a in node if a in up)
            mu_sep = _project(self.tables[node], node, sep)
            inv = np.divide(1.0, mu_sep, out=np.zeros_like(mu_sep), where=mu_sep > 0)
            self._inverses[(node, up)] = (sep, inv)
        return self._inverses[(node, up)]


class Memo:
    """Arrays remembered within ``cells`` cells in all, the least recently used forgotten
    first (an array larger than the whole budget is not kept). A key names the computation
    that made its array, so a remembered array is the one computing again would give."""

    def __init__(self, cells: int):
        self.cells = cells
        self.used = 0
        self._items: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: tuple) -> np.ndarray | None:
        table = self._items.get(key)
        if table is not None:
            self._items.move_to_end(key)
        return table

    def put(self, key: tuple, table: np.ndarray) -> None:
        if table.size > self.cells:
            return
        while self.used + table.size > self.cells:
            self.used -= self._items.popitem(last=False)[1].size
        self._items[key] = table
        self.used += table.size


def _components(nodes: list[Clique], adj: dict[Clique, list[Clique]]) -> list[list[Clique]]:
    seen, out = set(), []
    for n in nodes:
        if n in seen:
            continue
        _, order = _bfs(n, adj)
        seen |= set(order)
        out.append(order)
    return out


def _post_order(root: Clique, children: dict[Clique, list[Clique]]) -> list[Clique]:
    """The nodes of the tree ``children`` describes, each after its children (children in
    their order, each subtree whole before the next): the order a recursion from ``root``
    visits them in. A loop, not a recursive closure: a nested function that calls itself is
    a reference cycle, which would keep everything it closes over (the ``TreeMarginals``,
    its tables and memos) alive after the last reference is dropped, until the cyclic garbage
    collector runs."""
    out: list[Clique] = []
    stack: list[tuple[Clique, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children[node]))
    return out


def _bfs(root: Clique, adj: dict[Clique, list[Clique]]) -> tuple[dict, list[Clique]]:
    parent: dict[Clique, Clique | None] = {root: None}
    order = [root]
    i = 0
    while i < len(order):
        n = order[i]
        i += 1
        for m in adj[n]:
            if m not in parent:
                parent[m] = n
                order.append(m)
    return parent, order


def _broadcast(arr: np.ndarray, attrs: Clique, host: Clique) -> np.ndarray:
    """``arr`` over ``attrs`` reshaped to broadcast against an array over ``host``."""
    order = [a for a in host if a in attrs]
    arr = _transpose(arr, tuple(attrs), tuple(order))
    return arr.reshape([arr.shape[order.index(a)] if a in attrs else 1 for a in host])


def _project(table: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    axes = tuple(i for i, a in enumerate(attrs) if a not in target)
    out = table.sum(axis=axes) if axes else table
    kept = tuple(a for a in attrs if a in target)
    return _transpose(out, kept, target)


def _transpose(arr: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    if tuple(attrs) == tuple(target):
        return arr
    return np.transpose(arr, [attrs.index(a) for a in target])


def _held(attrs: Clique, table: np.ndarray,
          evidence: dict[str, int]) -> tuple[Clique, np.ndarray]:
    """``table`` over ``attrs`` at the values of ``evidence`` (a view), and its remaining
    attributes."""
    if not any(a in evidence for a in attrs):
        return attrs, table
    return (tuple(a for a in attrs if a not in evidence),
            table[tuple(evidence.get(a, slice(None)) for a in attrs)])


def _einsum(operands: list[tuple[Clique, np.ndarray]], target: Clique) -> np.ndarray:
    """The sum over the attributes not in ``target`` of the product of ``operands``
    (attributes, array). A planned contraction whose largest intermediate array would hold
    more than :data:`WORK_CELLS` cells (and more than its largest operand) is done one value
    of the target's largest attribute at a time; every intermediate then lacks the target's
    attributes, so splitting ends at most at the operands' size."""
    letters: dict[str, int] = {}
    sizes: dict[str, int] = {}
    args: list = []
    for attrs, arr in operands:
        args.append(arr)
        args.append([letters.setdefault(a, len(letters)) for a in attrs])
        sizes.update(zip(attrs, arr.shape))
    args.append([letters[a] for a in target])
    # a contraction order pays off on large products; planning one costs ~0.2 ms, more than
    # the naive loop over a product of at most NAIVE_EINSUM_CELLS cells
    product = math.prod(sizes.values())
    if len(operands) <= 2 or product <= NAIVE_EINSUM_CELLS:
        return np.einsum(*args, optimize=False)
    if product <= WORK_CELLS:  # no intermediate can be larger
        return np.einsum(*args, optimize=True)
    path = np.einsum_path(*args, optimize="greedy")[0]
    largest = _largest_intermediate([list(attrs) for attrs, _ in operands], path, target, sizes)
    if largest <= max(WORK_CELLS, *(arr.size for _, arr in operands)) or not target:
        return np.einsum(*args, optimize=path)
    split = max(target, key=lambda a: (sizes[a], -target.index(a)))
    at = target.index(split)
    rest = target[:at] + target[at + 1:]
    out = np.empty([sizes[a] for a in target])
    for v in range(sizes[split]):
        out[(slice(None),) * at + (v,)] = _einsum(
            [_held(attrs, arr, {split: v}) for attrs, arr in operands], rest)
    return out


def _largest_intermediate(operands: list[list[str]], path: list, target: Clique,
                          sizes: dict[str, int]) -> int:
    """Cells of the largest array that contracting ``operands`` (their attribute lists) in
    the order of ``path`` (``np.einsum_path``'s pairs) creates: each step's result keeps the
    attributes still needed by the other operands or the target."""
    operands = list(operands)
    largest = 0
    for step in path[1:]:
        taken = [operands.pop(i) for i in sorted(step, reverse=True)]
        needed = set(target).union(*operands)
        kept = {a for t in taken for a in t if a in needed}
        largest = max(largest, math.prod(sizes[a] for a in kept))
        operands.append(sorted(kept))
    return largest


#: Largest product of an einsum's index sizes computed without planning a contraction order.
NAIVE_EINSUM_CELLS = 2**16
#: Most cells of messages, component parts and root projections a :class:`TreeMarginals`
#: remembers (float64: 128 MB; least recently used forgotten first), so that
#: ``marginal(..., keep=False)`` over every candidate stays within a bound. Measured on a
#: full AIM run's round-40 model on a 55-column table (epsilon 10, 24,807 candidates
#: scored in attribute order, :func:`dp_arena.mechanisms.pgm.aim.model_errors`): 7.8 s of CPU with
#: 2^21 cells (16 MB), 5.4 s with 2^23, 4.5 s with 2^24, 3.8 s with no bound (450 MB used);
#: ``benchmarks/bench_aim_scoring.py`` prints the memo before this one beside today's.
MEMO_CELLS = 2**24
#: Work (cells touched, :meth:`TreeMarginals._work`) above which a marginal looks for a
#: cheaper root: 2^22 cells (~10 ms of einsum); below it the search would cost more.
REROOT_CELLS = 2**22
#: Most cells (float64: 16 MB) of the messages of one marginal, and of one contraction's
#: largest intermediate array beyond its operands', before the marginal is computed by
#: slices (:meth:`TreeMarginals._by_slices`) or the contraction split (:func:`_einsum`):
#: the working memory of a marginal is bounded, not only its memos (one 3-way marginal
#: late in a full ``aim`` run sent a 62 MB message and peaked at 124 MB).
WORK_CELLS = 2**21
#: Most cells one marginal's computation holds besides the model, the memos and the
#: marginal itself: its messages (at most :data:`WORK_CELLS`), a contraction's largest
#: intermediate and the one before it, and a transposed copy of an operand (each at most
#: :data:`WORK_CELLS` or a tree node's table, which the model's size bounds). Measured on
#: two late AIM rounds (happiness, epsilon 10), memo growth included: each candidate's
#: marginal peaked at most at 29 and 34 MB (unsliced: 124 MB, with a 62 MB message).
WORKING_CELLS = 4 * WORK_CELLS


# ----- sampling and decoding --------------------------------------------------------------
SAMPLING_METHODS: tuple[str, ...] = ("round", "balanced", "sample")


def sample_codes(model, n_rows: int, rng: np.random.Generator, attrs: Sequence[str],
                 marginals: TreeMarginals | None = None, method: str = "balanced"
                 ) -> pd.DataFrame:
    """``n_rows`` records drawn from the model, column by column in the reverse of the
    junction tree's elimination order (as ``mbi``'s ``synthetic_data``): each column from its
    conditional distribution given the columns already drawn that share a tree node with it
    (all inside one node, by the elimination order). A row's value is found by one binary
    search in the conditional CDF table, offset by the row's group (its conditioning
    values), so all groups share one search and nothing loops over groups. Methods, by the
    uniform number ``u`` each row feeds to its CDF:

    ``balanced`` (default)
        Within each group, the rows are sorted by the other columns already drawn
        (lexicographically, in a random order of those columns, as many as fit in a 62-bit
        key; random order among ties) and the ``r``-th row gets ``u = frac(U_g + r phi)``
        (``phi`` the golden ratio's fractional part, ``U_g`` uniform per group): a Weyl
        sequence, whose every run of consecutive terms is spread evenly over [0, 1). So the
        counts of a value within the group, and within every run of rows that agree on the
        leading sort columns, are close to their expectation, while each row's ``u`` is
        still uniform: the sample follows the model with much less sampling noise
        (on adult, MST's 3-way TVD to the exact model 0.023 instead of 0.030 for ``round``
        and 0.035 for ``sample``).
    ``round``
        ``mbi``'s and the reference implementation's default: rows in random order within
        the group, the ``r``-th of ``n_g`` gets ``u = (r + U) / n_g``.
    ``sample``
        i.i.d. uniforms (``mbi``'s ``method="sample"``).

    ``balanced`` and ``round`` sort once per column. Post-processing; ``rng`` is the
    mechanism's.
    """
    if method not in SAMPLING_METHODS:
        raise ConfigError(f"unknown sampling method {method!r}",
                          f"use one of {', '.join(SAMPLING_METHODS)}")
    tree = marginals if marginals is not None else TreeMarginals(model)
    n = int(n_rows)
    nodes = [set(node) for node in tree.nodes]
    drawn: dict[str, np.ndarray] = {}
    for col in tree.order[::-1]:
        parents = tuple(a for a in drawn if any(col in nd and a in nd for nd in nodes))
        k = tree.sizes[col]
        table = tree.marginal(parents + (col,)).reshape(-1, k)
        group = (np.ravel_multi_index([drawn[a] for a in parents],
                                      [tree.sizes[a] for a in parents])
                 if parents else np.zeros(n, dtype=np.int64))
        order_key = None
        if method == "balanced":
            order_key = _balancing_key(group, int(table.shape[0]), [
                (drawn[a], tree.sizes[a]) for a in rng.permutation(
                    [a for a in drawn if a not in parents]).tolist()])
        drawn[col] = _draw_conditional(table, group, rng, method, order_key)
    return pd.DataFrame({a: drawn[a].astype(np.int64) for a in attrs})


_PHI = (math.sqrt(5.0) - 1.0) / 2.0  # the golden ratio's fractional part (Weyl sequence step)


def _balancing_key(group: np.ndarray, n_groups: int,
                   others: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """An int64 sort key: the group first, then as many of the ``others`` columns (codes,
    size) as fit in 62 bits, in the given order."""
    key = group.astype(np.int64)
    span = max(n_groups, 1)
    for codes, size in others:
        if span * size >= 2**62:
            break
        key = key * size + codes
        span *= size
    return key


def _draw_conditional(table: np.ndarray, group: np.ndarray, rng: np.random.Generator,
                      method: str, order_key: np.ndarray | None = None) -> np.ndarray:
    """One value per row from row ``group[i]`` of the (unnormalised) ``table``."""
    n_groups, k = table.shape
    mass = table.sum(axis=1, keepdims=True)
    cond = np.divide(table, mass, out=np.full_like(table, 1.0 / k), where=mass > 0)
    cdf = np.cumsum(np.maximum(cond, 0.0), axis=1)
    cdf /= cdf[:, -1:]
    if method == "sample":
        u = rng.random(group.size)
    elif method == "balanced":
        rank, _ = _ranks_within_groups(group, n_groups, group if order_key is None
                                       else order_key, rng)
        u = np.mod(rng.random(n_groups)[group] + rank * _PHI, 1.0)
    else:
        rank, counts = _ranks_within_groups(group, n_groups, group, rng)
        u = (rank + rng.random(group.size)) / counts[group]
    keys = (np.arange(n_groups, dtype=float)[:, None] + cdf).ravel()
    index = np.searchsorted(keys, group + u, side="right") - group * k
    return np.clip(index, 0, k - 1)


def _ranks_within_groups(group: np.ndarray, n_groups: int, key: np.ndarray,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each row's rank within its group, rows ordered by ``key`` (ties in random order), and
    the size of every group."""
    order = rng.permutation(group.size)
    order = order[np.argsort(key[order], kind="stable")]
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(group.size, dtype=np.int64)
    rank[order] = np.arange(group.size) - starts[group[order]]
    return rank, counts
