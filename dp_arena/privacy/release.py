"""The release API: every privacy-relevant random draw of a mechanism, charged and drawn in one call.

A mechanism never draws privacy noise itself. It receives a :class:`Releaser` and asks it for
noisy answers; the releaser (1) asks its sampler backend what the draw certifiably costs,
(2) charges that cost to the run's :class:`~dp_arena.privacy.accounting.Ledger` (which refuses
anything over the budget, before any noise is drawn), (3) draws the noise, (4) reports the
release to an optional observer (the audit's release view; nothing is logged by default) and
returns the noisy values. The draw and the charge therefore cannot disagree.

Releases
--------
:meth:`Releaser.gaussian`
    ``values + N(0, sigma^2)`` per entry; ``sensitivity`` is the L2 sensitivity of the whole
    vector; charged as one Gaussian release (``mu = Delta_2 / sigma``, ``rho = mu^2 / 2``).
:meth:`Releaser.laplace`
    ``values + Laplace(b)`` per entry; ``sensitivity`` is the L1 sensitivity of the vector;
    charged as one ``Delta_1 / b``-DP release.
:meth:`Releaser.exponential`
    The exponential mechanism (report-noisy-max with Gumbel noise, McSherry & Talwar 2007):
    index ``i`` with probability proportional to ``exp(epsilon * scores[i] / (2 Delta))``,
    ``Delta`` the scores' sensitivity (L-infinity); charged as an ``epsilon``-DP release,
    ``epsilon^2 / 8``-zCDP (bounded range, Cesar & Rogers 2021). The one implementation of it
    in dp-arena (MST, AIM and ``tuning=dp_select`` use it). With ``admissible`` (a public
    predicate on candidate indices) it runs over the admitted candidates only; the ``numpy``
    sampler then tests candidates lazily, in decreasing order of their noisy scores, and
    returns the first admitted: the argmax of the Gumbel-perturbed scores over the admitted
    set, which is the exponential mechanism over that set exactly (the noise of the others is
    never looked at), at the cost of testing a few candidates instead of all.
:meth:`Releaser.laplace_above`
    Laplace counts of a sparse histogram, only those at or above a threshold kept (the prefix
    tree); empty cells by an exact shortcut (:mod:`dp_arena.privacy.thresholded`); charged as
    one ``Delta_1 / b``-DP release.
:meth:`Releaser.declared`
    No noise: one ``declared`` ledger charge for an ``(epsilon, delta)`` that the mechanism
    claims for releases made outside this API (an external contestant); composed by basic
    composition, never checked.
:meth:`Releaser.done`
    A mechanism calls it after its last noisy release; what follows is post-processing. In an
    audit of the releases (``stop_after_releases``) it ends the run there
    (:class:`ReleasesComplete`), so estimation and sampling are skipped.

Samplers (``privacy.sampler``)
------------------------------
``numpy`` (default)
    numpy's float samplers on a generator that only the releaser holds (the mechanism's own
    ``rng`` is for post-processing: clipping order, sampling rows from a released model).
    Fast; textbook floating-point Laplace and Gaussian sampling is open to the attacks of
    Mironov (2012) and Jin et al. (2022) in principle.
``opendp``
    OpenDP's vetted samplers, which are floating-point safe: integer-valued queries (counts)
    with integer sensitivity get the exact discrete Gaussian / discrete Laplace (Canonne,
    Kamath & Steinke 2020), other values OpenDP's float mechanisms (exact sampling on a
    lattice ``2^k``, rounded: :func:`lattice_k` chooses ``k`` so that the rounding OpenDP adds
    to the sensitivity, and charges, is below ``2^-60`` of it; OpenDP's default ``2^-1074``
    costs about 6x the time for no difference a float can show); the exponential mechanism is
    OpenDP's Gumbel report-noisy-max. The
    ledger is charged with the privacy OpenDP's own map certifies for the draw (never less
    than the nominal cost). OpenDP certifies Gaussian noise in zCDP only, so runs with this
    sampler account in zCDP (:func:`accountant_for`). OpenDP draws from the operating
    system's entropy and cannot be seeded: ``privacy.noise=replayable`` is refused with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from dp_arena.errors import ConfigError, DPArenaError

from .accounting import Accountant, Budget, Ledger, NoiseKind
from .thresholded import cell_keys, check_cells, draw_above

SamplerName = Literal["numpy", "opendp"]
SAMPLERS: tuple[str, ...] = ("numpy", "opendp")


class ReleasesComplete(DPArenaError):
    """Raised by :meth:`Releaser.done` when the releaser was told to stop after the last
    noisy release (the audit's release view): the rest of the run is post-processing."""

    def __init__(self) -> None:
        super().__init__("the mechanism's releases are complete", "")


@dataclass(frozen=True)
class ReleaseRecord:
    """What an observer sees of one release (never logged by default).

    ``true`` holds the noise-free values (for the exponential mechanism: the scores) and
    ``noisy`` the released values (for the exponential mechanism: the chosen index). ``query``
    names the query independently of the run (e.g. ``marginal A x B``): two releases with the
    same query key answer the same question of the data."""

    name: str
    kind: NoiseKind
    query: str
    sensitivity: float
    scale: float
    true: np.ndarray
    noisy: np.ndarray
    #: for :meth:`Releaser.laplace_above` (``None`` for every other release): its threshold;
    #: ``true`` then holds the counts of the non-empty cells ``cells`` and ``noisy`` the values
    #: of the kept cells ``kept`` (cell keys of :func:`dp_arena.privacy.thresholded.cell_keys`
    #: over the public family sizes ``families``); ``discrete``: integer (OpenDP) noise
    threshold: float | None = None
    cells: np.ndarray | None = None
    kept: np.ndarray | None = None
    families: np.ndarray | None = None
    discrete: bool = False


Observer = Callable[[ReleaseRecord], None]


class Sampler(Protocol):
    """A noise backend: it says what a draw certifiably costs, then draws it."""

    name: str

    def gaussian_cost(self, values: np.ndarray, sensitivity: float, sigma: float) -> float:
        """Certified L2 sensitivity to charge (>= ``sensitivity``)."""

    def gaussian(self, values: np.ndarray, sensitivity: float, sigma: float) -> np.ndarray: ...

    def laplace_cost(self, values: np.ndarray, sensitivity: float, scale: float) -> float:
        """Certified L1 sensitivity to charge (>= ``sensitivity``)."""

    def laplace(self, values: np.ndarray, sensitivity: float, scale: float) -> np.ndarray: ...

    def argmax_gumbel(self, scores: np.ndarray, sensitivity: float, scale: float) -> int: ...

    # optional: ``argmax_gumbel_among(scores, sensitivity, scale, admissible) -> int``, the
    # argmax over the candidates ``admissible`` accepts, testing as few as it can
    # (:meth:`NumpySampler.argmax_gumbel_among`); without it the releaser tests them all

    def laplace_above(self, sizes: np.ndarray, family: np.ndarray, child: np.ndarray,
                      counts: np.ndarray, sensitivity: float, scale: float, threshold: float,
                      tail: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The kept cells ``(family, child, value)`` of a thresholded release
        (:func:`dp_arena.privacy.thresholded.draw_above`, empty cells from ``tail``) and
        whether the noise is discrete."""


@dataclass
class NumpySampler:
    """numpy's float samplers on a generator private to the releaser."""

    rng: np.random.Generator
    name: str = "numpy"

    def gaussian_cost(self, values: np.ndarray, sensitivity: float, sigma: float) -> float:
        return sensitivity

    def gaussian(self, values: np.ndarray, sensitivity: float, sigma: float) -> np.ndarray:
        return values + self.rng.normal(0.0, sigma, size=values.shape)

    def laplace_cost(self, values: np.ndarray, sensitivity: float, scale: float) -> float:
        return sensitivity

    def laplace(self, values: np.ndarray, sensitivity: float, scale: float) -> np.ndarray:
        return values + self.rng.laplace(0.0, scale, size=values.shape)

    def argmax_gumbel(self, scores: np.ndarray, sensitivity: float, scale: float) -> int:
        return int(np.argmax(scores / scale + self.rng.gumbel(size=scores.size)))

    def argmax_gumbel_among(self, scores: np.ndarray, sensitivity: float, scale: float,
                            admissible: Callable[[int], bool]) -> int:
        """The argmax of ``scores / scale + Gumbel`` over the indices ``admissible`` accepts:
        candidates are tested in decreasing order of their noisy scores and the first
        accepted is returned (the same draw as perturbing the admitted scores alone)."""
        noisy = scores / scale + self.rng.gumbel(size=scores.size)
        for index in np.argsort(-noisy, kind="stable"):
            if admissible(int(index)):
                return int(index)
        raise none_admitted()

    def laplace_above(self, sizes, family, child, counts, sensitivity, scale, threshold, tail):
        return (*draw_above(lambda v: self.laplace(v, sensitivity, scale), sizes, family, child,
                            counts, scale, threshold, tail), False)


#: :func:`lattice_k`: the rounding of a float draw stays this many bits below its sensitivity.
LATTICE_MARGIN_BITS = 60
#: :func:`lattice_k`: never coarser than ``2^-100``, never finer than the smallest float.
LATTICE_K_RANGE = (-1074, -100)


def lattice_k(sensitivity: float, size: int) -> int:
    """The exponent ``k`` of the lattice ``2^k`` OpenDP's float Gaussian / Laplace rounds
    ``size`` values and samples on: the largest ``k`` in :data:`LATTICE_K_RANGE` with
    ``2^k * size <= 2^-LATTICE_MARGIN_BITS * sensitivity``. OpenDP's privacy map adds the
    rounding (``2^k`` per entry: ``2^k sqrt(size)`` in L2, ``2^k size`` in L1) to the
    sensitivity, so the certified cost stays the nominal one to float precision while the
    exact sampler works on ~100-200-bit integers instead of its default ``2^-1074``'s ~1,100."""
    lo, hi = LATTICE_K_RANGE
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        return lo
    k = (math.floor(math.log2(sensitivity)) - LATTICE_MARGIN_BITS
         - math.ceil(math.log2(max(size, 1))))
    return max(lo, min(hi, k))


def _integral(x: np.ndarray | float) -> bool:
    arr = np.asarray(x, dtype=float)
    return bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
                and np.all(np.abs(arr) < 2**52))


@dataclass
class OpenDPSampler:
    """OpenDP's floating-point-safe samplers (see the module docstring). Each draw builds
    the OpenDP measurement for its scale, charges what the measurement's privacy map
    certifies and invokes it."""

    name: str = "opendp"
    _dp: object = field(default=None, repr=False)
    #: the last measurement built and what it was built for: a release asks for its cost and
    #: then draws with the same arguments, and building one costs milliseconds
    _last: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        try:
            import opendp.prelude as dp
        except ImportError as exc:  # pragma: no cover - opendp is a dependency
            raise ConfigError("privacy.sampler=opendp needs the opendp package",
                              "pip install opendp (it is a dependency of dp-arena)") from exc
        dp.enable_features("contrib")
        self._dp = dp

    def _vector(self, integer: bool, size: int | None = None):
        dp = self._dp
        return dp.vector_domain(dp.atom_domain(T=int) if integer  # type: ignore[attr-defined]
                                else dp.atom_domain(T=float, nan=False),  # type: ignore[attr-defined]
                                size=size)

    def _measurement(self, kind: str, values: np.ndarray, sensitivity: float, scale: float):
        """OpenDP's Gaussian (zCDP) or Laplace (pure DP) measurement for ``values``: on the
        integers when values and sensitivity are integers (exact discrete noise), on floats
        otherwise; with the ``d_in`` its privacy map takes."""
        integer = _integral(values) and _integral(sensitivity)
        key = (kind, integer, int(values.size), float(sensitivity), float(scale))
        if self._last and self._last[0] == key:
            return self._last[1]
        built = self._build(kind, integer, int(values.size), sensitivity, scale)
        self._last = (key, built)
        return built

    def _build(self, kind: str, integer: bool, size: int, sensitivity: float, scale: float):
        dp = self._dp
        kind_t = int if integer else float
        gaussian = kind == "gaussian"
        metric = (dp.l2_distance if gaussian else dp.l1_distance)(T=kind_t)  # type: ignore[attr-defined]
        make = dp.m.make_gaussian if gaussian else dp.m.make_laplace  # type: ignore[attr-defined]
        if integer or size == 0:
            return make(self._vector(integer), metric, scale=float(scale)), kind_t(sensitivity)
        # floats: a lattice fine enough to cost nothing a float shows (needs the size known)
        return (make(self._vector(False, size), metric, scale=float(scale),
                     k=lattice_k(float(sensitivity), size)), float(sensitivity))

    def _draw(self, kind: str, values: np.ndarray, sensitivity: float,
              scale: float) -> np.ndarray:
        meas, _d_in = self._measurement(kind, values, sensitivity, scale)
        flat = values.ravel()
        integer = _integral(values) and _integral(sensitivity)
        out = meas([int(v) for v in flat] if integer else flat.tolist())
        return np.asarray(out, dtype=float).reshape(values.shape)

    def gaussian_cost(self, values: np.ndarray, sensitivity: float, sigma: float) -> float:
        meas, d_in = self._measurement("gaussian", values, sensitivity, sigma)
        return max(sensitivity, sigma * math.sqrt(2.0 * float(meas.map(d_in))))

    def gaussian(self, values: np.ndarray, sensitivity: float, sigma: float) -> np.ndarray:
        return self._draw("gaussian", values, sensitivity, sigma)

    def laplace_cost(self, values: np.ndarray, sensitivity: float, scale: float) -> float:
        meas, d_in = self._measurement("laplace", values, sensitivity, scale)
        return max(sensitivity, float(meas.map(d_in)) * scale)

    def laplace(self, values: np.ndarray, sensitivity: float, scale: float) -> np.ndarray:
        return self._draw("laplace", values, sensitivity, scale)

    def argmax_gumbel(self, scores: np.ndarray, sensitivity: float, scale: float) -> int:
        dp = self._dp
        meas = dp.m.make_noisy_max(  # type: ignore[attr-defined]
            self._vector(False), dp.linf_distance(T=float),  # type: ignore[attr-defined]
            output_measure=dp.zero_concentrated_divergence(),  # type: ignore[attr-defined]
            scale=float(scale))
        rho = float(meas.map(float(sensitivity)))
        if rho > (sensitivity / scale) ** 2 / 2.0 * (1 + 1e-9):  # eps^2/8 with eps = 2 Delta / scale
            raise DPArenaError(f"OpenDP certifies rho={rho:g} for a noisy max that dp-arena "
                               "charges as an exponential mechanism", "report this as a bug")
        return int(meas(scores.astype(float).tolist()))

    def laplace_above(self, sizes, family, child, counts, sensitivity, scale, threshold, tail):
        """Integer counts get OpenDP's discrete Laplace, so the empty cells get the discrete
        tail (:mod:`dp_arena.privacy.thresholded`): a continuous value among integers would
        tell an empty cell from a non-empty one."""
        discrete = _integral(counts) and _integral(sensitivity)
        return (*draw_above(lambda v: self.laplace(v, sensitivity, scale), sizes, family, child,
                            counts, scale, threshold, tail, discrete), discrete)


def check_sampler(name: str) -> None:
    if name not in SAMPLERS:
        raise ConfigError(f"privacy.sampler must be one of {list(SAMPLERS)} (got {name!r})",
                          "use privacy.sampler=numpy (fast, the default) or "
                          "privacy.sampler=opendp (floating-point safe)")


def accountant_for(sampler: str, accountant: Accountant) -> Accountant:
    """The accountant a run with ``sampler`` uses: OpenDP certifies Gaussian noise in zCDP
    only, so the ``opendp`` sampler accounts in zCDP (pure-DP runs are unaffected: both
    accountants report pure charges as their sum)."""
    return "zcdp" if sampler == "opendp" else accountant


def make_sampler(name: str, rng: np.random.Generator) -> Sampler:
    check_sampler(name)
    return OpenDPSampler() if name == "opendp" else NumpySampler(rng)


def none_admitted() -> DPArenaError:
    """The error of an exponential mechanism whose ``admissible`` accepts no candidate."""
    return DPArenaError("the exponential mechanism admitted no candidate",
                        "the mechanism must admit at least one candidate")


def _as_array(values) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise DPArenaError("a release's values must be finite",
                           "the mechanism must clip or impute before releasing")
    return arr


@dataclass
class Releaser:
    """The one door through which a run's noisy answers leave the private data.

    ``ledger`` accounts every release; ``sampler`` draws the noise (its generator is not the
    mechanism's); ``observer`` (optional) sees every :class:`ReleaseRecord`;
    ``stop_after_releases`` makes :meth:`done` end the run (audits of the releases)."""

    ledger: Ledger
    sampler: Sampler = field(default_factory=lambda: NumpySampler(np.random.default_rng(
        np.random.SeedSequence())))
    observer: Observer | None = None
    stop_after_releases: bool = False
    _tail_rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(
        np.random.SeedSequence()), repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.sampler, NumpySampler):  # one stream for all of the run's noise
            self._tail_rng = self.sampler.rng

    @classmethod
    def for_budget(cls, budget: Budget, accountant: Accountant = "gdp", unit: str = "record",
                   **kwargs) -> Releaser:
        """A releaser with a fresh ledger (fresh OS entropy for the numpy sampler)."""
        return cls(Ledger(budget, accountant, unit=unit), **kwargs)

    @property
    def accountant(self) -> Accountant:
        return self.ledger.accountant

    def _observe(self, name: str, kind: NoiseKind, query: str | None, sensitivity: float,
                 scale: float, true: np.ndarray, noisy: np.ndarray) -> None:
        if self.observer is not None:
            self.observer(ReleaseRecord(name, kind, query or name, float(sensitivity),
                                        float(scale), np.array(true, copy=True),
                                        np.array(noisy, copy=True)))

    def gaussian(self, name: str, values, sensitivity: float, sigma: float, *,
                 query: str | None = None, note: str = "") -> np.ndarray:
        """``values`` plus Gaussian noise of ``sigma``, charged as one release of L2
        sensitivity ``sensitivity`` (the whole vector's)."""
        return self._additive("gaussian", name, values, sensitivity, sigma, query, note)

    def laplace(self, name: str, values, sensitivity: float, scale: float, *,
                query: str | None = None, note: str = "") -> np.ndarray:
        """``values`` plus Laplace noise of scale ``scale``, charged as one release of L1
        sensitivity ``sensitivity`` (the whole vector's)."""
        return self._additive("laplace", name, values, sensitivity, scale, query, note)

    def _additive(self, kind: NoiseKind, name: str, values, sensitivity: float, scale: float,
                  query: str | None, note: str) -> np.ndarray:
        """Charge what the sampler certifies for the draw, then draw, then report it."""
        true = _as_array(values)
        if kind == "gaussian":
            cost_of, draw = self.sampler.gaussian_cost, self.sampler.gaussian
        else:
            cost_of, draw = self.sampler.laplace_cost, self.sampler.laplace
        self.ledger.charge(name, kind, cost_of(true, sensitivity, scale), scale, note=note)
        noisy = draw(true, sensitivity, scale)
        self._observe(name, kind, query, sensitivity, scale, true, noisy)
        return noisy

    def exponential(self, name: str, scores, sensitivity: float, epsilon: float, *,
                    query: str | None = None, note: str = "",
                    admissible: Callable[[int], bool] | None = None) -> int:
        """The index chosen by the ``epsilon``-DP exponential mechanism on ``scores`` of
        sensitivity ``sensitivity`` (higher is better). ``admissible``: the mechanism runs
        over the indices it accepts only (``sensitivity`` must bound theirs); it must be a
        function of public inputs and earlier releases, and accept at least one index. A
        sampler with ``argmax_gumbel_among`` tests the candidates lazily (module docstring);
        otherwise, and when an observer (the audit) records the release, every candidate is
        tested and the admitted scores alone are drawn from and recorded."""
        true = _as_array(scores)
        if true.ndim != 1 or true.size == 0:
            raise DPArenaError("the exponential mechanism needs a non-empty vector of scores",
                               "pass one score per candidate")
        scale = 2.0 * sensitivity / epsilon
        lazy = getattr(self.sampler, "argmax_gumbel_among", None)
        kept = None
        if admissible is not None and (lazy is None or self.observer is not None):
            kept = np.flatnonzero([admissible(i) for i in range(true.size)])
            if kept.size == 0:
                raise none_admitted()
            true = true[kept]
        self.ledger.charge(name, "exponential", sensitivity, scale, note=note)
        if admissible is not None and kept is None:
            return lazy(true, sensitivity, scale, admissible)  # type: ignore[misc]
        index = self.sampler.argmax_gumbel(true, sensitivity, scale)
        self._observe(name, "exponential", query, sensitivity, scale, true, np.array(index))
        return index if kept is None else int(kept[index])

    def laplace_above(self, name: str, family_sizes, family, child, counts,
                      sensitivity: float, scale: float, threshold: float, *,
                      query: str | None = None, note: str = ""
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Laplace counts of a histogram given sparsely, of which only those at or above
        ``threshold`` are kept (Chen et al.'s prefix-tree releases). Family ``f`` has cells
        ``0..family_sizes[f]-1``; ``(family, child)`` are the non-empty cells (sorted,
        distinct) with their true ``counts``; every other cell has count 0. One release of L1
        sensitivity ``sensitivity`` over all cells, empty ones included.

        Returns the kept cells ``(family, child, noisy value)`` sorted by (family, child).
        Empty cells are not noised one by one (:func:`dp_arena.privacy.thresholded.draw_above`
        proves the shortcut has the distribution of noising each, for ``threshold >= 0``);
        its draws, which empty cells passed included, come from the releaser's own noise
        generator (numpy under either sampler: they depend only on the public threshold and
        scale and on how many cells are empty, so their floating-point pattern reveals no
        count)."""
        if threshold < 0:
            raise DPArenaError(f"the empty-cell shortcut needs a threshold >= 0 (got {threshold:g})",
                               "the mechanism must pass a non-negative (public) threshold")
        true = _as_array(counts)
        sizes = np.asarray(family_sizes, dtype=np.int64)
        family, child = np.asarray(family, dtype=np.int64), np.asarray(child, dtype=np.int64)
        check_cells(sizes, family, child)
        cost = self.sampler.laplace_cost(true, sensitivity, scale)
        self.ledger.charge(name, "laplace", cost, scale, note=note)
        out_f, out_c, out_v, discrete = self.sampler.laplace_above(
            sizes, family, child, true, sensitivity, scale, threshold, self._tail_rng)
        if self.observer is not None:
            self.observer(ReleaseRecord(name, "laplace", query or name, float(sensitivity),
                                        float(scale), true.copy(), np.array(out_v, copy=True),
                                        float(threshold), cell_keys(family, child, sizes),
                                        cell_keys(out_f, out_c, sizes), sizes.copy(),
                                        bool(discrete)))
        return out_f, out_c, out_v

    def declared(self, name: str, epsilon: float, delta: float = 0.0, *,
                 note: str = "") -> None:
        """Charge ``(epsilon, delta)`` that the mechanism declares for releases made outside
        this API (an external contestant's own noise): one ``declared`` ledger charge
        (:meth:`Ledger.declare`), composed by basic composition and checked by nothing. No
        noise is drawn and no observer sees a release."""
        self.ledger.declare(name, epsilon, delta, note=note)

    def done(self) -> None:
        """Say that every noisy release of the run is made (the rest is post-processing)."""
        if self.stop_after_releases:
            raise ReleasesComplete()
