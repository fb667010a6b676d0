"""Private-PGM estimation in NumPy: mirror descent on a junction tree, with no compilation.

Algorithms
----------
- :class:`JunctionTree`: the junction tree ``mbi`` builds for a set of cliques
  (``mbi.junction_tree.make_junction_tree``: greedy elimination, the maximal cliques of the
  triangulated graph, a maximum spanning tree over shared attributes), rooted per connected
  component, with the routing of every clique potential and every measurement to a node.
- :meth:`JunctionTree.calibrate`: sum-product belief propagation (two passes over each
  component) in linear space: each node's potential is exponentiated once relative to its
  maximum and every message is rescaled to a maximum of 1, so nothing overflows; the
  downward message divides the parent's belief by the child's upward message on their
  separator (HUGIN). Node beliefs are scaled to the model's total.
- :func:`mirror_descent`: Algorithm 1 of McKenna, Sheldon & Miklau (ICML 2019), step for
  step as ``mbi.estimation.MirrorDescent`` with its Armijo line search (step ``2 / (L N)``
  at first, ``L`` the loss gradient's Lipschitz constant from the measurements' metadata as
  ``mbi`` computes it; grown by 1% after an accepted step, halved after a rejected one) and
  its early stopping (``tol``: relative loss improvement per block of 50 iterations, twice
  in a row). The loss is ``sum_m ||Q_m mu_m - y_m||^2 / (2 sigma_m^2)`` with ``Q_m`` the
  identity or a diagonal (per-cell weights); potentials live on the maximal measured
  cliques, so a fit can warm-start the next one (AIM's rounds) exactly as ``mbi`` expands
  potentials.

Why not ``mbi``'s JAX estimator: every new clique structure compiles a new XLA program.
AIM fits a new structure every round, and compiling took about 99% of a fit (on adult, 11 s
of CPU to compile a fit that runs 200 iterations in 0.05 s); a privacy audit reruns AIM's
rounds thousands of times. NumPy starts at once; per iteration it is slower than compiled
code on very large models, which is why ``adaptive_grid`` (one fit per run of a large model
with structured queries) stays on ``mbi``.

Everything here is post-processing of noisy measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Clique = tuple[str, ...]
CALLBACK_EVERY = 50  # iterations per block of the early-stopping test (mbi's)


def _mbi():
    """``mbi``'s pure-Python junction-tree and clique helpers (no JAX work is done)."""
    from .mbi_setup import mbi_clique_utils, mbi_domain, mbi_junction_tree

    return mbi_junction_tree, mbi_clique_utils, mbi_domain


@dataclass
class JunctionTree:
    """A rooted junction tree over ``domain`` for ``cliques`` (see the module docstring).

    ``nodes`` are in ``mbi``'s canonical attribute order (the domain's), so a separator's
    attributes appear in the same order in both of its nodes; ``order`` is the elimination
    order (reversed, it is the order in which :func:`mechanisms.pgm.sample_codes` draws
    columns)."""

    domain: dict[str, int]
    cliques: tuple[Clique, ...]
    nodes: list[Clique] = field(init=False)
    order: list[str] = field(init=False)
    adj: dict[Clique, list[Clique]] = field(init=False)

    def __post_init__(self) -> None:
        junction_tree, _, mbi_domain = _mbi()
        jtree, order = junction_tree.make_junction_tree(mbi_domain(self.domain),
                                                        [tuple(c) for c in self.cliques])
        self.nodes = [tuple(n) for n in jtree.nodes]
        self.order = list(order)
        self.adj = {n: [tuple(m) for m in jtree.neighbors(n)] for n in self.nodes}
        self.shape = {n: tuple(self.domain[a] for a in n) for n in self.nodes}
        self.components: list[list[Clique]] = []
        self.parent: dict[Clique, Clique | None] = {}
        seen: set[Clique] = set()
        for n in self.nodes:
            if n in seen:
                continue
            bfs, i = [n], 0
            self.parent[n] = None
            while i < len(bfs):
                for m in self.adj[bfs[i]]:
                    if m not in self.parent:
                        self.parent[m] = bfs[i]
                        bfs.append(m)
                i += 1
            seen.update(bfs)
            self.components.append(bfs)
        self.children = {n: [m for m in self.nodes if self.parent[m] == n] for n in self.nodes}
        # upward message of n: sum n over the axes not shared with its parent, reshaped to
        # broadcast against the parent; the downward message the other way round
        self._up: dict[Clique, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._down: dict[Clique, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        for n in self.nodes:
            p = self.parent[n]
            if p is None:
                continue
            sep = set(n) & set(p)
            self._up[n] = (tuple(i for i, a in enumerate(n) if a not in sep),
                           tuple(self.domain[a] if a in sep else 1 for a in p))
            self._down[n] = (tuple(i for i, a in enumerate(p) if a not in sep),
                             tuple(self.domain[a] if a in sep else 1 for a in n))

    def host(self, clique: Sequence[str]) -> Clique:
        """The smallest node containing ``clique``."""
        found = [n for n in self.nodes if set(clique) <= set(n)]
        if not found:
            raise ValueError(f"no junction-tree node contains {tuple(clique)}")
        return min(found, key=lambda n: math.prod(self.shape[n]))

    def broadcast_shape(self, clique: Sequence[str], node: Clique) -> tuple[list[int], tuple]:
        """(transposition of a table over ``clique`` into ``node``'s attribute order, the
        shape that then broadcasts against ``node``)."""
        ordered = [a for a in node if a in clique]
        return ([list(clique).index(a) for a in ordered],
                tuple(self.domain[a] if a in clique else 1 for a in node))

    def calibrate(self, log_potentials: dict[Clique, np.ndarray], total: float
                  ) -> dict[Clique, np.ndarray]:
        """Node beliefs (each summing to ``total``) of the model with these node log
        potentials (see the module docstring)."""
        inner: dict[Clique, np.ndarray] = {}
        up: dict[Clique, np.ndarray] = {}
        beliefs: dict[Clique, np.ndarray] = {}
        for comp in self.components:
            for n in reversed(comp):
                table = np.exp(log_potentials[n] - log_potentials[n].max())
                for c in self.children[n]:
                    table = table * up[c]
                inner[n] = table
                if self.parent[n] is not None:
                    axes, shape = self._up[n]
                    msg = table.sum(axis=axes).reshape(shape) if axes else table.reshape(shape)
                    top = msg.max()
                    up[n] = msg / top if top > 0 else msg
            for n in comp:
                p = self.parent[n]
                if p is None:
                    belief = inner[n]
                else:
                    axes, shape = self._down[n]
                    pb = beliefs[p]
                    sep = pb.sum(axis=axes, keepdims=True) if axes else pb
                    down = np.divide(sep, up[n], out=np.zeros_like(sep), where=up[n] > 0)
                    belief = inner[n] * down.reshape(shape)
                mass = belief.sum()
                beliefs[n] = belief * (total / mass) if mass > 0 else np.full_like(
                    belief, total / belief.size)
        return beliefs


@dataclass
class FittedModel:
    """A fitted model: clique log-potentials over ``domain`` (as ``mbi``'s potentials),
    the junction tree, the calibrated node beliefs and the total."""

    domain: dict[str, int]
    potentials: dict[Clique, np.ndarray]
    total: float
    tree: JunctionTree
    beliefs: dict[Clique, np.ndarray]

    @property
    def cliques(self) -> list[Clique]:
        return list(self.potentials)


@dataclass
class _Routed:
    """A measurement routed to its host node: the axes to sum and the transposition into
    the measurement's own attribute order; ``w`` the diagonal query (or None)."""

    node: Clique
    axes: tuple[int, ...]
    perm: list[int]
    shape: tuple[int, ...]
    y: np.ndarray
    sigma: float
    w: np.ndarray | None

    def marginal(self, beliefs: dict[Clique, np.ndarray]) -> np.ndarray:
        table = beliefs[self.node]
        out = table.sum(axis=self.axes) if self.axes else table
        return np.transpose(out, self.perm).ravel()

    def residual(self, mu: np.ndarray) -> np.ndarray:
        pred = mu if self.w is None else self.w * mu
        return (pred - self.y) / self.sigma

def expand_potentials(old: dict[Clique, np.ndarray], cliques: Sequence[Clique],
                      domain: dict[str, int]) -> dict[Clique, np.ndarray]:
    """Potentials over ``cliques`` that define the same model as ``old`` (each old clique's
    table added, broadcast, into a clique containing it; ``mbi``'s ``expand``)."""
    out = {cl: np.zeros([domain[a] for a in cl]) for cl in cliques}
    for cl, table in old.items():
        host = next((c for c in cliques if set(cl) <= set(c)), None)
        if host is None:
            raise ValueError(f"warm start: no clique of the new model contains {cl}")
        ordered = [a for a in host if a in cl]
        arr = np.transpose(np.asarray(table, dtype=float), [list(cl).index(a) for a in ordered])
        out[host] = out[host] + arr.reshape([domain[a] if a in cl else 1 for a in host])
    return out


def lipschitz(domain: dict[str, int], cliques: Sequence[Clique], maximal: Sequence[Clique],
              sigmas: Sequence[float], weights: Sequence[np.ndarray | None]) -> float:
    """``mbi``'s metadata bound on the loss gradient's Lipschitz constant:
    ``max_C sum_{m -> C} ||Q_m||^2 / sigma_m^2 * |C| / |c_m|``."""
    _, clique_utils, mbi_domain = _mbi()
    routing = clique_utils.clique_mapping(list(maximal), list(cliques), mbi_domain(domain))
    blocks: dict[Clique, float] = {}
    for cl, sigma, w in zip(cliques, sigmas, weights):
        host = routing[tuple(cl)]
        q = 1.0 if w is None else float(np.max(np.asarray(w) ** 2))
        size = math.prod(domain[a] for a in host) / math.prod(domain[a] for a in cl)
        blocks[host] = blocks.get(host, 0.0) + q / max(float(sigma), 1e-12) ** 2 * size
    return max(blocks.values()) if blocks else 1.0


def mirror_descent(domain: dict[str, int], measurements: Sequence, iters: int, total: float,
                   warm_start: FittedModel | None = None, tol: float | None = None,
                   patience: int = 2) -> FittedModel:
    """Fit a model to ``measurements`` (objects with ``clique``, ``y``, ``sigma`` and
    ``query``: ``None`` or per-cell weights) with ``total`` records: at most ``iters``
    mirror-descent steps (see the module docstring)."""
    _, clique_utils, _ = _mbi()
    cliques = [tuple(m.clique) for m in measurements]
    maximal = [tuple(c) for c in clique_utils.maximal_subset(cliques)]
    tree = JunctionTree(domain, tuple(maximal))
    routed = []
    for m, cl in zip(measurements, cliques):
        node = tree.host(cl)
        kept = [a for a in node if a in cl]
        w = None if m.query is None else np.asarray(m.query, dtype=float)
        routed.append(_Routed(node, tuple(i for i, a in enumerate(node) if a not in cl),
                              [kept.index(a) for a in cl], tuple(domain[a] for a in cl),
                              np.asarray(m.y, dtype=float), float(m.sigma), w))
    placement = {cl: (tree.host(cl), tree.broadcast_shape(cl, tree.host(cl))) for cl in maximal}
    theta = (expand_potentials(warm_start.potentials, maximal, domain) if warm_start is not None
             else {cl: np.zeros([domain[a] for a in cl]) for cl in maximal})
    # each measurement's gradient goes, broadcast, into a maximal clique containing it (any
    # containing clique defines the same model)
    lift = []
    for cl in cliques:
        host = next(c for c in maximal if set(cl) <= set(c))
        ordered = [a for a in host if a in cl]
        lift.append((host, [list(cl).index(a) for a in ordered],
                     tuple(domain[a] if a in cl else 1 for a in host)))
    empty = {n: np.zeros(tree.shape[n]) for n in tree.nodes}

    def node_potentials(pot: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        psi: dict[Clique, np.ndarray] = {}
        for cl, table in pot.items():
            node, (perm, shape) = placement[cl]
            arr = np.transpose(table, perm).reshape(shape)
            psi[node] = psi[node] + arr if node in psi else arr
        return {n: psi[n] + empty[n] if n in psi else empty[n] for n in tree.nodes}

    def evaluate(pot: dict[Clique, np.ndarray]):
        beliefs = tree.calibrate(node_potentials(pot), total)
        mus = [r.marginal(beliefs) for r in routed]
        res = [r.residual(mu) for r, mu in zip(routed, mus)]
        return beliefs, mus, res, 0.5 * sum(float(x @ x) for x in res)

    def clique_gradient(res: list[np.ndarray]) -> dict[Clique, np.ndarray]:
        """d loss / d theta per maximal clique (arrays that broadcast against the clique)."""
        grad: dict[Clique, np.ndarray] = {}
        for (host, perm, shape), r, x in zip(lift, routed, res):
            g = (x if r.w is None else r.w * x) / r.sigma
            arr = np.transpose(g.reshape(r.shape), perm).reshape(shape)
            grad[host] = grad[host] + arr if host in grad else arr
        return grad

    L = lipschitz(domain, cliques, maximal, [r.sigma for r in routed], [r.w for r in routed])
    alpha = 2.0 / (L * total)
    beliefs, mus, res, loss = evaluate(theta)
    grad = clique_gradient(res)
    prev, stalls = math.inf, 0
    for block in range(math.ceil(iters / CALLBACK_EVERY)):
        for _ in range(CALLBACK_EVERY):
            cand = {cl: theta[cl] - alpha * grad[cl] for cl in maximal}
            beliefs2, mus2, res2, loss2 = evaluate(cand)
            descent = sum(float((x if r.w is None else r.w * x) @ (mu - mu2)) / r.sigma
                          for r, x, mu, mu2 in zip(routed, res, mus, mus2))
            if loss - loss2 >= 0.5 * alpha * descent:
                theta, beliefs, mus, res, loss = cand, beliefs2, mus2, res2, loss2
                grad = clique_gradient(res)
                alpha *= 1.01
            else:
                alpha *= 0.5
        if tol is not None:
            stalls = stalls + 1 if prev - loss <= tol * max(abs(loss), 1.0) else 0
            prev = loss
            if stalls >= patience:
                break
    return FittedModel(dict(domain), theta, float(total), tree, beliefs)
