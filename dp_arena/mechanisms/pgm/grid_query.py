"""The adaptive grid's query matrices (Minutemen, NIST Sprint 3:
``../shared/seeds/003_d42b7547ebc55825.txt``), as :mod:`dp_arena.mechanisms.pgm.adaptive_grid` measures
them.

- :class:`GridQuery`: the query ``Q`` of one clique, never materialised: identity rows for
  the cells whose parents' noisy estimates passed the threshold, then each parent's query on
  the parent-marginal of the other cells, scaled by ``1/sqrt(#parents)``; every column has
  unit L2 norm (the measurement's sensitivity is the contribution bound). ``Q x`` and, inside
  the estimator, its value and gradient from a model's marginals
  (:meth:`GridQuery.batch_loss`).
- :func:`plausible_cells`: which cells of a clique get identity rows (every parent's estimate
  above the threshold).
- :func:`fold_measurements`: measurements without identity rows replaced by what they observe
  exactly, their parents' query answers, and repeated observations merged by inverse-variance
  weighting (the least-squares objective changes by a constant only).
- :func:`query_key`: a digest naming a query by its cells (public: released structure only).

Everything here is a function of noisy answers and domain sizes: post-processing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import pgm


@dataclass(eq=False)
class GridQuery:
    """The query ``Q`` of one clique: identity rows for the cells in ``ident``, then for each
    parent clique (the clique minus the attribute on ``axis``) that parent's query applied to
    the parent-marginal of the remaining cells (``rest`` mask), scaled by ``1/sqrt(#parents)``.

    ``Q`` is never materialised. :meth:`apply` evaluates ``Q x`` for a histogram ``x`` of the
    clique. :meth:`evaluate` evaluates it inside the estimator from the model's marginals:
    since ``P_c (rest * x) = x_c - P_c (ident part of x)``, the block of parent ``c`` is
    ``coef * (Q_c x_c - G_c x[ident])`` with ``G_c`` a small sparse matrix, so each clique's
    ``Q x`` is computed once from its own marginal and its parents' ``Q_c x_c``.
    """

    key: int
    clique: tuple[str, ...]
    shape: tuple[int, ...]
    ident: np.ndarray
    rest: np.ndarray
    parents: tuple[tuple[int, GridQuery], ...] = ()
    _columns: dict = field(default_factory=dict, repr=False)
    _lifts: list | None = field(default=None, repr=False)

    @property
    def coef(self) -> float:
        return 1.0 / math.sqrt(len(self.parents)) if self.parents else 0.0

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.shape))

    @property
    def n_rows(self) -> int:
        return len(self.ident) + sum(p.n_rows for _, p in self.parents)

    def projection(self, axis: int, cells: np.ndarray) -> np.ndarray:
        """Flat parent-cell index (parent = clique minus ``axis``) of flat ``cells``."""
        idx = np.unravel_index(cells, self.shape)
        kept = [c for i, c in enumerate(idx) if i != axis]
        parent_shape = tuple(n for i, n in enumerate(self.shape) if i != axis)
        return np.ravel_multi_index(kept, parent_shape) if kept else np.zeros(len(cells), np.int64)

    # ----- Q x for a histogram of the clique (NumPy) -----------------------------------
    def apply(self, x: np.ndarray, xp: Any = np) -> np.ndarray:
        parts = [x[self.ident]]
        if self.parents:
            remaining = (x * self.rest).reshape(self.shape)
            for axis, parent in self.parents:
                parts.append(self.coef * parent.apply(remaining.sum(axis=axis).ravel(), xp))
        return xp.concatenate(parts)

    # ----- Q x from a model's marginals, with the gradient (for the estimator) ----------
    def required_cliques(self) -> set[tuple[str, ...]]:
        """Cliques whose marginals :meth:`batch_loss` reads for this query."""
        out = {self.clique} if len(self.ident) else set()
        for _, parent in self.parents:
            out |= parent.required_cliques()
        return out

    def lifts(self):
        """``G_c = Q_c P_c E^T`` per parent (sparse, rows of ``Q_c`` x identity cells): the
        parent-query image of the identity cells, which the parent block leaves out."""
        from scipy import sparse

        if self._lifts is None:
            self._lifts = []
            for axis, parent in self.parents:
                rows, cols, vals = [], [], []
                for i, j in enumerate(self.projection(axis, self.ident)):
                    r, v = parent.column(int(j))
                    rows.append(r)
                    cols.append(np.full(len(r), i, dtype=np.int64))
                    vals.append(v)
                cat = (lambda a, dt: np.concatenate(a).astype(dt) if a else np.zeros(0, dt))
                self._lifts.append(sparse.csr_matrix(
                    (cat(vals, np.float64), (cat(rows, np.int64), cat(cols, np.int64))),
                    shape=(parent.n_rows, len(self.ident))))
        return self._lifts

    def evaluate(self, marginals: dict, cache: dict) -> np.ndarray:
        """``Q x`` from the marginals of this clique and its ancestors: the block of parent
        ``c`` is ``coef * (Q_c x_c - G_c x[ident])`` because
        ``P_c (rest * x) = x_c - P_c (identity part of x)``."""
        if self.key not in cache:
            parts = []
            g = marginals[self.clique][self.ident] if len(self.ident) else None
            if g is not None:
                parts.append(g)
            for (_, parent), lift in zip(self.parents, self.lifts()):
                block = parent.evaluate(marginals, cache)
                parts.append(self.coef * (block - lift @ g if g is not None else block))
            cache[self.key] = np.concatenate(parts)
        return cache[self.key]

    @staticmethod
    def batch_loss(items, marginals: dict) -> tuple[float, dict]:
        """``sum ||Q x - y||^2 / (2 sigma^2)`` over ``(query, y, sigma)`` items and its
        gradient with respect to each marginal in ``marginals`` (reverse mode by hand)."""
        cache: dict[int, np.ndarray] = {}
        adjoint: dict[int, np.ndarray] = {}
        queries: dict[int, GridQuery] = {}
        loss = 0.0
        for query, y, sigma in items:
            diff = query.evaluate(marginals, cache) - y
            loss += 0.5 * float(diff @ diff) / sigma**2
            adjoint[query.key] = adjoint.get(query.key, 0.0) + diff / sigma**2
            queries[query.key] = query

        def collect(q: GridQuery) -> None:
            queries[q.key] = q
            for _, parent in q.parents:
                collect(parent)

        for q in list(queries.values()):
            collect(q)
        grads = {c: np.zeros_like(v) for c, v in marginals.items()}
        for q in sorted(queries.values(), key=lambda q: -len(q.clique)):
            a = adjoint.get(q.key)
            if a is None:
                continue
            n_g = len(q.ident)
            a_g = np.array(a[:n_g], dtype=float)
            offset = n_g
            for (_, parent), lift in zip(q.parents, q.lifts()):
                block = a[offset:offset + parent.n_rows]
                offset += parent.n_rows
                adjoint[parent.key] = adjoint.get(parent.key, 0.0) + q.coef * block
                if n_g:
                    a_g -= q.coef * (lift.T @ block)
            if n_g:
                grads[q.clique][q.ident] += a_g
        return loss, grads

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Column ``j`` of ``Q`` as (row indices, values)."""
        if j not in self._columns:
            pos = np.searchsorted(self.ident, j)
            if pos < len(self.ident) and self.ident[pos] == j:
                col = (np.array([pos], dtype=np.int64), np.array([1.0]))
            else:
                rows, vals, offset = [], [], len(self.ident)
                for axis, parent in self.parents:
                    r, v = parent.column(int(self.projection(axis, np.array([j]))[0]))
                    rows.append(r + offset)
                    vals.append(self.coef * v)
                    offset += parent.n_rows
                col = ((np.concatenate(rows), np.concatenate(vals)) if rows
                       else (np.zeros(0, np.int64), np.zeros(0)))
            self._columns[j] = col
        return self._columns[j]

    # ----- checks ---------------------------------------------------------------------
    def column_norms_sq(self) -> np.ndarray:
        """Squared L2 norm of every column of ``Q`` (computed recursively, not materialised)."""
        out = np.zeros(self.n_cells)
        out[self.ident] += 1.0
        cells = np.arange(self.n_cells)
        for axis, parent in self.parents:
            out += self.rest * self.coef**2 * parent.column_norms_sq()[
                self.projection(axis, cells)]
        return out

    def matrix(self):
        """``Q`` as a SciPy sparse matrix (for tests on small domains)."""
        from scipy import sparse

        n = self.n_cells
        blocks = [sparse.csr_matrix((np.ones(len(self.ident)),
                                     (np.arange(len(self.ident)), self.ident)),
                                    shape=(len(self.ident), n))]
        for axis, parent in self.parents:
            marg = sparse.csr_matrix((self.rest.astype(float),
                                      (self.projection(axis, np.arange(n)), np.arange(n))),
                                     shape=(parent.n_cells, n))
            blocks.append(self.coef * (parent.matrix() @ marg))
        return sparse.vstack(blocks).tocsr()


def query_key(query: GridQuery) -> str:
    """A name for a grid query that equal queries share (its identity cells, the rest mask
    and its parents', recursively): the audit pairs releases of the same query by it."""
    digest = hashlib.sha1(np.asarray(query.ident).tobytes() + np.asarray(query.rest).tobytes())
    for axis, parent in query.parents:
        digest.update(f"{axis}:{query_key(parent)}".encode())
    return digest.hexdigest()[:12]


def fold_measurements(measurements: list[pgm.Measurement]) -> list[pgm.Measurement]:
    """An equivalent, smaller set of measurements for estimation (post-processing).

    When a query has no identity cells, its parent blocks observe the parents' own query
    answers exactly: ``block_c = coef * Q_c x_c + noise``, i.e. an observation of
    ``Q_c x_c`` with noise ``sigma / coef``. Such measurements are pushed down (recursively)
    and all observations of the same query are merged by inverse-variance weighting, which
    changes the least-squares objective only by a constant. Cliques that carried no cell-level
    information then drop out of the model, which keeps it small when few cells are above
    the threshold (as with tens of thousands of records).
    """
    observations: dict[int, list[tuple[np.ndarray, float]]] = {}
    by_key: dict[int, tuple[tuple[str, ...], GridQuery | None]] = {}

    def push(clique, query: GridQuery | None, y: np.ndarray, sigma: float) -> None:
        if query is not None and len(query.ident) == 0 and query.parents:
            offset = 0
            for _, parent in query.parents:
                block = y[offset:offset + parent.n_rows]
                offset += parent.n_rows
                push(parent.clique, parent, block / query.coef, sigma / query.coef)
            return
        key = -1 - len(by_key) if query is None else query.key
        if query is None:
            key = next((k for k, (c, q) in by_key.items() if q is None and c == clique), key)
        identity = query is None or (not query.parents and len(query.ident) == query.n_cells)
        by_key.setdefault(key, (clique, None if identity else query))
        observations.setdefault(key, []).append((np.asarray(y, dtype=float), float(sigma)))

    for m in measurements:
        push(m.clique, m.query, m.y, m.sigma)  # type: ignore[arg-type]
    out = []
    for key, obs in observations.items():
        clique, query = by_key[key]
        precision = sum(1.0 / s**2 for _, s in obs)
        y = sum(v / s**2 for v, s in obs) / precision
        out.append(pgm.Measurement(clique, y, 1.0 / math.sqrt(precision), query))
    return out


def plausible_cells(shape: tuple[int, ...], parents: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Flat mask of the cells all of whose parent cells are plausible (all cells if none)."""
    mask = np.ones(shape, dtype=bool)
    for axis, parent_mask in parents:
        parent_shape = tuple(n for i, n in enumerate(shape) if i != axis)
        mask &= np.expand_dims(parent_mask.reshape(parent_shape), axis)
    return mask.ravel()


# ----- the mechanism ----------------------------------------------------------------------
