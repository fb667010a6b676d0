"""dp_arena/mechanisms/pgm/cliques.py: the junction-tree size mbi builds, computed per connected
component (model_size_mb), for a model plus one clique (ModelGraph) and for the 1-way
marginals plus one clique (singletons_plus_one_mb), each against mbi's own
``hypothetical_model_size`` or against model_size_mb. Sizes are integer cell counts times
8 / 2^20, so equal cell counts give equal floats: the comparisons are exact."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dp_arena.mechanisms import pgm
from dp_arena.mechanisms.pgm.cliques import (
    ModelGraph,
    components,
    greedy_elimination_cells,
    neighbour_sets,
)


def random_model(rng: np.random.Generator, n_attrs: int, n_cliques: int):
    domain = {f"a{i}": int(rng.integers(2, 12)) for i in range(n_attrs)}
    attrs = list(domain)
    cliques = [tuple(rng.choice(attrs, size=int(rng.integers(1, 4)), replace=False))
               for _ in range(n_cliques)]
    return domain, cliques


def mbi_size(domain, cliques) -> float:
    return pgm.mbi_junction_tree.hypothetical_model_size(pgm.mbi_domain(domain), cliques)


@pytest.mark.parametrize("n_attrs, n_cliques", [(6, 3), (10, 4), (10, 12), (14, 6)])
def test_model_size_per_component_is_mbis(n_attrs, n_cliques):
    """Sparse models (several components, isolated attributes) and dense ones, where a
    whole-graph greedy elimination and the per-component one must agree with mbi."""
    rng = np.random.default_rng(n_attrs * 100 + n_cliques)
    for _ in range(15):
        domain, cliques = random_model(rng, n_attrs, n_cliques)
        assert pgm.model_size_mb(domain, cliques) == mbi_size(domain, cliques), cliques


def test_a_spanning_tree_is_its_edges_and_a_forest_is_greedy():
    domain = {"a": 2, "b": 50, "c": 2, "d": 50}
    # a path b-a-c-d is a tree: cliques are the edges, 100 + 4 + 100 cells
    assert pgm.model_size_mb(domain, [("a", "b"), ("a", "c"), ("c", "d")]) * 2**20 / 8 == 204
    # drop the last edge: d is alone and a-b, a-c are eliminated greedily; mbi agrees
    forest = [("a", "b"), ("a", "c")]
    assert pgm.model_size_mb(domain, forest) == mbi_size(domain, forest)


def test_components_in_attribute_order():
    nbrs = {"a": {"c"}, "b": set(), "c": {"a", "d"}, "d": {"c"}, "e": set()}
    assert components(nbrs) == [["a", "c", "d"], ["b"], ["e"]]
    assert greedy_elimination_cells({k: 3 for k in nbrs}, {"b": set()}) == 3
    assert nbrs["a"] == {"c"}  # not changed


def test_a_model_plus_one_clique_is_model_size_of_both():
    rng = np.random.default_rng(7)
    for _ in range(20):
        domain, measured = random_model(rng, 9, int(rng.integers(0, 6)))
        measured += [(a,) for a in domain]
        graph, memo = ModelGraph.of(domain, measured), {}
        assert sum(graph.cells) * 8 / 2**20 == pgm.model_size_mb(domain, measured)
        for clique in itertools.islice(itertools.combinations(domain, 3), 0, None, 7):
            expected = pgm.model_size_mb(domain, [*measured, clique])
            assert graph.size_with_mb(clique, memo) == expected, (measured, clique)
            assert graph.size_with_mb(clique, memo) == expected  # served from the memo
        assert memo  # merged components were remembered


def test_one_clique_joining_everything_into_a_tree():
    domain = {"a": 3, "b": 4, "c": 5}
    graph = ModelGraph.of(domain, [("a", "b")])
    assert graph.size_with_mb(("b", "c"), {}) == pgm.model_size_mb(domain, [("a", "b"),
                                                                             ("b", "c")])
    assert graph.size_with_mb(("b", "c"), {}) * 2**20 / 8 == 12 + 20


@pytest.mark.parametrize("seed", range(20))
def test_a_clique_completing_a_spanning_tree_and_others_are_mbis(seed):
    """A random spanning tree less one edge (plus random extra cliques in half the cases):
    the missing edge, a random 3-way clique and a 1-way one, each added by
    ModelGraph.size_with_mb (the bit-mask tree test, else greedy elimination), give mbi's
    hypothetical_model_size exactly."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    domain = {f"a{i}": int(rng.integers(2, 6)) for i in range(n)}
    attrs = list(domain)
    perm = rng.permutation(n)
    edges = [(attrs[perm[i]], attrs[perm[int(rng.integers(0, i))]]) for i in range(1, n)]
    missing = int(rng.integers(0, len(edges)))
    measured = [e for i, e in enumerate(edges) if i != missing] + [(a,) for a in attrs]
    if seed % 2 and n > 3:
        measured += [tuple(rng.choice(attrs, size=3, replace=False)) for _ in range(2)]
    graph = ModelGraph.of(domain, measured)
    for clique in (edges[missing], tuple(rng.choice(attrs, size=min(3, n), replace=False)),
                   (attrs[0],)):
        assert graph.size_with_mb(clique, {}) == mbi_size(domain, [*measured, clique]), clique


def test_singletons_plus_one_clique_in_closed_form():
    rng = np.random.default_rng(3)
    domain = {f"a{i}": int(rng.integers(2, 30)) for i in range(7)}
    ones = [(a,) for a in domain]
    for k in (1, 2, 3):
        for clique in itertools.combinations(domain, k):
            assert pgm.singletons_plus_one_mb(domain, clique) == \
                pgm.model_size_mb(domain, [*ones, clique]), clique
    two = {"x": 3, "y": 7}  # a pair over two attributes is the spanning-tree case
    assert pgm.singletons_plus_one_mb(two, ("x", "y")) == \
        pgm.model_size_mb(two, [("x",), ("y",), ("x", "y")]) == 21 * 8 / 2**20


@pytest.mark.parametrize("seed", range(40))
def test_greedy_elimination_sums_the_cliques_no_other_contains(seed):
    """greedy_elimination_cells finds the maximal cliques by a linear-time rule (a clique is
    not maximal iff a later one has its attribute as parent and one attribute more): against
    the definition (no other elimination clique strictly contains it), on the orders greedy
    elimination makes, eliminated here step by step with sets."""
    rng = np.random.default_rng(seed)
    domain, cliques = random_model(rng, int(rng.integers(3, 14)), int(rng.integers(1, 12)))
    nbrs = neighbour_sets(list(domain), cliques)
    expected_input = {a: set(v) for a, v in nbrs.items()}
    order, later = [], []
    remaining = list(nbrs)
    while remaining:  # greedy elimination, as greedy_elimination_cells
        best = min(remaining, key=lambda a: (np.prod([domain[b] for b in nbrs[a] | {a}]),
                                             remaining.index(a)))
        order.append(best)
        later.append(set(nbrs[best]))
        for b in nbrs[best]:
            nbrs[b] |= nbrs[best] - {b}
            nbrs[b].discard(best)
        remaining.remove(best)
    cliques_ = [frozenset({order[i], *later[i]}) for i in range(len(order))]
    by_definition = sum(int(np.prod([domain[a] for a in c])) for c in cliques_
                        if not any(c < d for d in cliques_))
    assert greedy_elimination_cells(domain, expected_input) == by_definition
