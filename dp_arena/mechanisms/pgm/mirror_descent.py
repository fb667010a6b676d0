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
  separator (HUGIN; a parent's separators are summed with shared passes,
  :func:`shared_sums`). Node beliefs are scaled to the model's total.
- :func:`mirror_descent`: Algorithm 1 of McKenna, Sheldon & Miklau (ICML 2019), step for
  step as ``mbi.estimation.MirrorDescent`` with its Armijo line search (step ``2 / (L N)``
  at first, ``L`` the loss gradient's Lipschitz constant from the measurements' metadata as
  ``mbi`` computes it, or :func:`unit_norm_lipschitz` with structured queries; grown by 1%
  after an accepted step, halved after a rejected one) and its early stopping (``tol``:
  relative loss improvement per block of 50 iterations, twice in a row). The loss is
  ``sum_m ||Q_m mu_m - y_m||^2 / (2 sigma_m^2)`` with ``Q_m`` the identity, a diagonal
  (per-cell weights) or a structured query that evaluates itself and its gradient from the
  model's marginals (``batch_loss``: adaptive grid); potentials live on the maximal measured
  cliques, so a fit can warm-start the next one (AIM's rounds) exactly as ``mbi`` expands
  potentials.
- :func:`marginal_plan` / :func:`read_marginals`: every marginal the loss reads, larger
  cliques first, each summed from the smallest larger one already computed rather than from
  its (often much larger) junction-tree node; the marginals read from one node share their
  passes over it (:func:`shared_sums`).

Why not ``mbi``'s JAX estimator: every new clique structure compiles a new XLA program.
AIM fits a new structure every round, and compiling took about 99% of a fit (on adult, 11 s
of CPU to compile a fit that runs 200 iterations in 0.05 s); a privacy audit reruns AIM's
rounds thousands of times. ``adaptive_grid``'s large model (2.5M cells at epsilon 10 on the
taxi schema) was the last to run on JAX: there NumPy on one thread takes 14 s per 200-step
fit against 40 s of wall time (68 s of CPU on two threads) with ``mbi``, compilation
included (one run each at seed 0 and 1 on 50,000 simulated trips, same marginals and
row counts to the printed digits). Calibration works in place on arrays it owns.

Everything here is post-processing of noisy measurements.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

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
    order (reversed, it is the order in which :func:`dp_arena.mechanisms.pgm.sample_codes` draws
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
        # broadcast against the parent; the downward message: the parent's belief summed to
        # the separator (attributes in the parent's order), reshaped to broadcast against n
        self._up: dict[Clique, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._down: dict[Clique, tuple[int, ...]] = {}
        self._separator: dict[Clique, Clique] = {}
        for n in self.nodes:
            p = self.parent[n]
            if p is None:
                continue
            sep = set(n) & set(p)
            self._up[n] = (tuple(i for i, a in enumerate(n) if a not in sep),
                           tuple(self.domain[a] if a in sep else 1 for a in p))
            self._down[n] = tuple(self.domain[a] if a in sep else 1 for a in n)
            self._separator[n] = tuple(a for a in p if a in sep)

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
                table = log_potentials[n] - log_potentials[n].max()  # a new array,
                np.exp(table, out=table)  # updated in place from here on
                for c in self.children[n]:
                    table *= up[c]
                inner[n] = table
                if self.parent[n] is not None:
                    axes, shape = self._up[n]
                    msg = table.sum(axis=axes).reshape(shape) if axes else table.reshape(shape)
                    top = msg.max()
                    up[n] = msg / top if top > 0 else msg
            seps: dict[Clique, tuple[dict[Clique, np.ndarray], Counter]] = {}
            for n in comp:
                p = self.parent[n]
                if p is None:
                    belief = inner[n]
                else:
                    key = self._separator[n]
                    if p not in seps:  # every child's separator from one set of passes
                        wanted = [self._separator[c] for c in self.children[p]]
                        seps[p] = (shared_sums(beliefs[p], p, wanted), Counter(wanted))
                    tables, left = seps[p]
                    sep = tables[key].reshape(up[n].shape)
                    left[key] -= 1
                    if not left[key]:  # freed once the last child with it has it
                        del tables[key]
                    down = np.divide(sep, up[n], out=np.zeros_like(sep), where=up[n] > 0)
                    belief = inner[n] * down.reshape(self._down[n])
                mass = belief.sum()
                if mass > 0:
                    belief *= total / mass  # belief is this pass's own array (inner or new)
                else:
                    belief = np.full_like(belief, total / belief.size)
                beliefs[n] = belief
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
    iterations: int = 0  # mirror-descent steps taken (accepted or not) by the fit
    step: float | None = None  # the step size the fit ended with (a warm start's first)
    loss: float = math.nan  # the loss of the returned potentials
    block_losses: tuple[float, ...] = ()  # the loss at the end of each block of steps

    @property
    def cliques(self) -> list[Clique]:
        return list(self.potentials)

    def warm_start(self) -> FittedModel:
        """This model without its beliefs: all a warm-started fit reads (potentials and step
        size), so that the beliefs can be freed before the next fit builds its own (one copy of
        the junction tree less at the peak: benchmarks/bench_aim_memory.py)."""
        return replace(self, beliefs={})

    def matched_to(self, clique: Clique, target: np.ndarray, current: np.ndarray,
                   smoothing: float) -> FittedModel:
        """This model with ``log((t + c) / (m + c))`` added to the potential of ``clique``
        (``t`` the non-negative part of ``target``, ``m`` = ``current``, the model's marginal
        of ``clique``, both flat in the clique's order and scaled to the same total; ``c`` =
        ``smoothing``): one smoothed iterative-proportional-fitting step, after which the
        model's marginal of ``clique`` is close to ``target`` wherever the counts are well
        above ``c`` (exactly ``(t + c) / (m + c)`` times the old one, renormalised).
        A start for the next fit (its potentials only; beliefs dropped): a new noisy
        measurement is then fitted from the first step instead of over hundreds of steps.
        Reads the model and a released measurement only: post-processing."""
        shape = [self.domain[a] for a in clique]
        t = np.maximum(np.asarray(target, dtype=float), 0.0)
        m = np.asarray(current, dtype=float)
        t = t * (m.sum() / t.sum()) if t.sum() > 0 else m
        step = np.log((t + smoothing) / (m + smoothing)).reshape(shape)
        potentials = dict(self.potentials)
        potentials[clique] = potentials[clique] + step if clique in potentials else step
        return replace(self, potentials=potentials, beliefs={})


@dataclass
class _Reader:
    """A clique whose marginal the loss reads: its host node (the clique's attributes in the
    node's order, ``kept``, and the transposition from them into the clique's own order) and
    the maximal clique its gradient is added to (transposition and broadcast shape)."""

    clique: Clique
    node: Clique
    kept: Clique
    perm: list[int]
    shape: tuple[int, ...]
    host: Clique
    lift_perm: list[int]
    lift_shape: tuple[int, ...]

    def lift(self, g: np.ndarray) -> np.ndarray:
        return np.transpose(g.reshape(self.shape), self.lift_perm).reshape(self.lift_shape)


def marginal_plan(cliques: Sequence[Clique], domain: dict[str, int]
                  ) -> list[tuple[int, tuple[int, ...], list[int]] | None]:
    """Where each clique's marginal is summed from: ``None`` (its junction-tree node) or
    ``(j, axes, perm)``: sum ``axes`` of the marginal of ``cliques[j]`` (the smallest larger
    clique in the list), then transpose by ``perm``. Marginals of a calibrated tree agree, so
    any containing marginal gives the same table; the smallest costs least."""
    size = {cl: math.prod(domain[a] for a in cl) for cl in cliques}
    plan: list[tuple[int, tuple[int, ...], list[int]] | None] = [None] * len(cliques)
    for i, cl in enumerate(cliques):
        larger = [j for j, other in enumerate(cliques)
                  if len(other) > len(cl) and set(cl) <= set(other)]
        if larger:
            j = min(larger, key=lambda j: size[cliques[j]])
            kept = [a for a in cliques[j] if a in cl]
            plan[i] = (j, tuple(k for k, a in enumerate(cliques[j]) if a not in cl),
                       [kept.index(a) for a in cl])
    return plan


def shared_sums(table: np.ndarray, attrs: Clique, wanted: Sequence[Clique]
                ) -> dict[Clique, np.ndarray]:
    """The marginal of ``table`` (axes ``attrs``) onto each of ``wanted`` (subsets of
    ``attrs``), each in ``attrs``' order, with the passes over large tables shared: attributes
    no wanted set holds are summed out at once; then the attribute the fewest wanted sets
    hold, if at least two lack it, is summed out once for all of those (the rest continue
    from the table as it is); else each is summed directly. By induction on the sets, the
    cells read are at most what one direct sum per set reads (a pass shared by ``k >= 2``
    sets costs one pass plus theirs over a table at least halved, ``1 + k / 2 <= k``, for
    attributes of two values or more)."""
    out: dict[Clique, np.ndarray] = {}
    unused = [i for i, a in enumerate(attrs) if not any(a in w for w in wanted)]
    if unused:
        table = table.sum(axis=tuple(unused))
        attrs = tuple(a for a in attrs if any(a in w for w in wanted))
    rest = []
    for w in dict.fromkeys(wanted):
        if set(w) == set(attrs):
            out[w] = table
        else:
            rest.append(w)
    if not rest:
        return out
    held = {a: sum(a in w for w in rest) for a in attrs}
    a = min(attrs, key=lambda a: (held[a], -table.shape[attrs.index(a)]))
    lacking = [w for w in rest if a not in w]
    if len(lacking) < 2:  # no attribute is missing from two sets: no pass to share
        for w in rest:
            out[w] = table.sum(axis=tuple(i for i, b in enumerate(attrs) if b not in w))
        return out
    out.update(shared_sums(table.sum(axis=attrs.index(a)), tuple(b for b in attrs if b != a),
                           lacking))
    having = [w for w in rest if a in w]
    if having:
        out.update(shared_sums(table, attrs, having))
    return out


def read_marginals(readers: Sequence[_Reader], plan: Sequence, beliefs: dict[Clique, np.ndarray]
                   ) -> list[np.ndarray]:
    """The flat marginal of every reader's clique: those of no larger clique in the list from
    their junction-tree node (the readers of one node sharing its passes,
    :func:`shared_sums`), then each smaller one summed from the smallest larger one
    (:func:`marginal_plan`), larger cliques first."""
    tables: dict[int, np.ndarray] = {}
    by_node: dict[Clique, list[int]] = {}
    for i, step in enumerate(plan):
        if step is None:
            by_node.setdefault(readers[i].node, []).append(i)
    for node, members in by_node.items():
        sums = shared_sums(beliefs[node], node, [readers[i].kept for i in members])
        for i in members:
            tables[i] = np.ascontiguousarray(np.transpose(sums[readers[i].kept],
                                                          readers[i].perm))
    for i in sorted(range(len(readers)), key=lambda i: -len(readers[i].clique)):
        if plan[i] is not None:
            j, axes, perm = plan[i]
            tables[i] = np.ascontiguousarray(np.transpose(tables[j].sum(axis=axes), perm))
    return [tables[i].ravel() for i in range(len(readers))]


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
    def term(cl: Clique, host: Clique, sigma: float, w: np.ndarray | None) -> float:
        q = 1.0 if w is None else float(np.max(np.asarray(w) ** 2))
        size = math.prod(domain[a] for a in host) / math.prod(domain[a] for a in cl)
        return q / max(float(sigma), 1e-12) ** 2 * size

    return heaviest_host(domain, cliques, maximal, term, sigmas, weights)


def heaviest_host(domain: dict[str, int], cliques: Sequence[Clique], maximal: Sequence[Clique],
                  term, *per_clique: Sequence) -> float:
    """``max_C sum_{m -> C} term(c_m, C, *per_clique[m])`` over the maximal cliques ``C``
    that ``mbi`` routes each measured clique ``c_m`` to (1.0 with no measurements)."""
    _, clique_utils, mbi_domain = _mbi()
    routing = clique_utils.clique_mapping(list(maximal), list(cliques), mbi_domain(domain))
    blocks: dict[Clique, float] = {}
    for cl, *args in zip(cliques, *per_clique):
        host = routing[tuple(cl)]
        blocks[host] = blocks.get(host, 0.0) + term(tuple(cl), host, *args)
    return max(blocks.values()) if blocks else 1.0


def unit_norm_lipschitz(domain: dict[str, int], measurements: Sequence) -> float:
    """``max_C sum_{m -> C} 1 / sigma_m^2``: the bound for unit-norm queries on their own
    clique, used instead of :func:`lipschitz` when some queries are structured (adaptive
    grid). ``mbi``'s metadata bound multiplies each term by the host clique's size over the
    measured clique's size; with large host cliques (1.4M cells for the taxi marginals) it is
    so conservative that mirror descent barely moves in hundreds of steps. The constant only
    sets the first step size: the Armijo line search halves a step that is too long."""
    _, clique_utils, _ = _mbi()
    cliques = [tuple(m.clique) for m in measurements]
    return heaviest_host(domain, cliques, clique_utils.maximal_subset(cliques),
                         lambda cl, host, sigma: 1.0 / float(sigma) ** 2,
                         [m.sigma for m in measurements])


def stalled(block_losses: Sequence[float], tol: float, patience: int) -> bool:
    """The stopping rule: true when each of the last ``patience`` blocks lowered the loss by
    at most ``tol`` relative to the loss (``prev - now <= tol * max(|now|, 1)``; ``mbi``
    2.0's ``tol`` / ``patience``). ``block_losses`` are the losses at the end of each block
    (the first block is never compared with the starting loss, as in ``mbi``). The loss is a function of the noisy measurements and the model
    only, so stopping on it is post-processing: it reads no private value."""
    if patience < 1 or len(block_losses) <= patience:
        return False
    tail = block_losses[-patience - 1:]
    return all(prev - now <= tol * max(abs(now), 1.0) for prev, now in itertools.pairwise(tail))


def mirror_descent(domain: dict[str, int], measurements: Sequence, iters: int, total: float,
                   warm_start: FittedModel | None = None, tol: float | None = None,
                   patience: int = 2, lipschitz_constant: float | None = None,
                   window: int = CALLBACK_EVERY, warm_step: bool = False,
                   from_start: bool = False) -> FittedModel:
    """Fit a model to ``measurements`` with ``total`` records: at most ``iters`` mirror-descent
    steps (see the module docstring). A measurement has ``clique``, ``y``, ``sigma`` and
    ``query``: ``None`` (identity), per-cell weights, or a structured query (``structured``
    true: ``type(query).batch_loss(items, marginals)`` returns the loss of all such
    ``(query, y, sigma)`` items and its gradient per marginal it reads, as
    :class:`dp_arena.mechanisms.pgm.grid_query.GridQuery` does). ``lipschitz_constant`` replaces
    ``mbi``'s metadata bound (it only sets the first step size).

    Stopping: with ``tol`` the fit ends once :func:`stalled` holds for the losses at the
    end of each block of ``window`` steps (at most ``iters`` steps in any case; ``tol=None``
    runs all of them). ``warm_step``: a warm-started fit begins with the step size the warm
    start ended with (the Armijo search halves it if it is too long for the new
    measurements) instead of ``2 / (L N)``. ``from_start``: the loss the fit starts from
    counts as the first block's, so a fit whose start is already close (a warm start matched
    to the new measurement, :meth:`FittedModel.matched_to`) can stop after one block. The
    rules read only the loss, a function of the released (noisy) measurements:
    post-processing, no privacy cost."""
    _, clique_utils, _ = _mbi()
    cliques = [tuple(m.clique) for m in measurements]
    maximal = [tuple(c) for c in clique_utils.maximal_subset(cliques)]
    tree = JunctionTree(domain, tuple(maximal))
    readers: dict[Clique, int] = {}
    reader_list: list[_Reader] = []

    def reader(cl: Clique) -> int:
        if cl not in readers:
            node = tree.host(cl)
            kept = [a for a in node if a in cl]
            host = next(c for c in maximal if set(cl) <= set(c))
            ordered = [a for a in host if a in cl]
            readers[cl] = len(reader_list)
            reader_list.append(_Reader(
                cl, node, tuple(kept), [kept.index(a) for a in cl], tuple(domain[a] for a in cl), host,
                [list(cl).index(a) for a in ordered],
                tuple(domain[a] if a in cl else 1 for a in host)))
        return readers[cl]

    plain = [(reader(cl), np.asarray(m.y, dtype=float), float(m.sigma),
              None if m.query is None else np.asarray(m.query, dtype=float))
             for m, cl in zip(measurements, cliques) if not getattr(m, "structured", False)]
    structured = [m for m in measurements if getattr(m, "structured", False)]
    batch = None
    if structured:
        kind = type(structured[0].query)
        items = [(m.query, np.asarray(m.y, dtype=float), float(m.sigma)) for m in structured]
        needed = sorted({c for m in structured for c in m.query.required_cliques()},
                        key=lambda c: (len(c), c))
        batch = (kind, items, [(c, reader(tuple(c))) for c in needed])
    plan = marginal_plan([r.clique for r in reader_list], domain)
    placement = {cl: (tree.host(cl), tree.broadcast_shape(cl, tree.host(cl))) for cl in maximal}
    theta = (expand_potentials(warm_start.potentials, maximal, domain) if warm_start is not None
             else {cl: np.zeros([domain[a] for a in cl]) for cl in maximal})

    def node_potentials(pot: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Each node's log potential over the node's full shape (a clique's own table,
        transposed, when it is the only one placed there and spans the node: calibration
        reads these and never writes to them; the sums of several are built in place, in
        the same order of additions as before)."""
        psi: dict[Clique, np.ndarray] = {}
        owned: set[Clique] = set()  # nodes whose array this call allocated: added to in place
        for cl, table in pot.items():
            node, (perm, shape) = placement[cl]
            arr = np.transpose(table, perm).reshape(shape)
            if node in owned:
                psi[node] += arr
            elif node in psi:
                psi[node] = psi[node] + arr
                owned.add(node)
            elif shape == tree.shape[node]:
                psi[node] = arr
            else:
                psi[node] = np.empty(tree.shape[node])
                psi[node][...] = arr
                owned.add(node)
        for n in tree.nodes:
            if n not in psi:
                psi[n] = np.zeros(tree.shape[n])
        return psi

    def evaluate(pot: dict[Clique, np.ndarray]):
        """Beliefs, the marginals read, the loss and its gradient per marginal read."""
        beliefs = tree.calibrate(node_potentials(pot), total)
        margs = read_marginals(reader_list, plan, beliefs)
        grads: list[np.ndarray | None] = [None] * len(reader_list)
        loss = 0.0
        for i, y, sigma, w in plain:
            res = ((margs[i] if w is None else w * margs[i]) - y) / sigma
            loss += 0.5 * float(res @ res)
            g = (res if w is None else w * res) / sigma
            grads[i] = g if grads[i] is None else grads[i] + g
        if batch is not None:
            kind, items, needed = batch
            value, by_clique = kind.batch_loss(items, {c: margs[i] for c, i in needed})
            loss += float(value)
            for c, i in needed:
                g = by_clique.get(c)
                if g is not None:
                    g = np.asarray(g, dtype=float)
                    grads[i] = g if grads[i] is None else grads[i] + g
        return beliefs, margs, grads, loss

    def clique_gradient(grads: list[np.ndarray | None]) -> dict[Clique, np.ndarray]:
        """d loss / d theta per maximal clique (arrays that broadcast against the clique;
        any clique containing a marginal defines the same model)."""
        out: dict[Clique, np.ndarray] = {cl: np.zeros(1) for cl in maximal}
        for r, g in zip(reader_list, grads):
            if g is not None:
                out[r.host] = out[r.host] + r.lift(g)
        return out

    if lipschitz_constant is None:
        lipschitz_constant = lipschitz(
            domain, [reader_list[i].clique for i, *_ in plain], maximal,
            [sigma for _, _, sigma, _ in plain], [w for *_, w in plain])
    alpha = 2.0 / (lipschitz_constant * total)
    if warm_step and warm_start is not None and warm_start.step is not None:
        alpha = warm_start.step
    beliefs, margs, grads, loss = evaluate(theta)
    grad = clique_gradient(grads)
    history: list[float] = [loss] if from_start else []
    steps = 0
    while steps < iters:
        for _ in range(min(window, iters - steps)):
            steps += 1
            cand = {cl: theta[cl] - alpha * grad[cl] for cl in maximal}
            beliefs2, margs2, grads2, loss2 = evaluate(cand)
            descent = sum(float(g @ (a - b)) for g, a, b in zip(grads, margs, margs2)
                          if g is not None)
            if loss - loss2 >= 0.5 * alpha * descent:
                theta, beliefs, margs, grads, loss = cand, beliefs2, margs2, grads2, loss2
                grad = clique_gradient(grads)
                alpha *= 1.01
            else:
                alpha *= 0.5
        history.append(loss)
        if tol is not None and stalled(history, tol, patience):
            break
    return FittedModel(dict(domain), theta, float(total), tree, beliefs, steps, alpha,
                       float(loss), tuple(history[1:] if from_start else history))
