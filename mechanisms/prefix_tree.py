"""``prefix_tree``: the noisy hybrid-granularity prefix tree of Chen, Fung, Desai & Sossou,
"Differentially private transit data publication: a case study on the Montreal transportation
system" (KDD 2012), for any dataset with a sequence view (:mod:`harness.data.sequences`).

Algorithm
---------
Input: one location sequence per person (the shared sequence view: an MSNBC row, or a taxi's
trips in time order mapped to pickup areas), a two-level location taxonomy (groups of specific
locations), the height ``h`` and the budget ``eps``.

0. *Symbols.* Each person's sequence is cut to its first ``h`` locations; a sequence shorter
   than ``h`` is followed by the end marker ``&``. Position ``i`` (1..h) of that symbol string
   is the person's symbol at tree level ``i``; after ``&`` the person has no symbol. The end
   marker is a location of its own, in a group of its own (the *end group*), so at every level
   the person's symbol is exactly one (group, location) pair: a length-``L`` sequence (``L <
   h``) puts ``&`` at level ``L + 1``, a sequence of ``h`` or more locations has no ``&`` (its
   end at level ``h + 1`` is implied: every depth-``h`` node is a leaf, nothing is measured).
1. *Noisy tree, level by level* (``i = 1..h``). The *frontier* is the kept specific nodes of
   depth ``i - 1`` other than ``&`` (the root at ``i = 1``). For each frontier node ``v``:

   a. every group ``u`` (the taxonomy's groups and the end group) is a *generalized* child of
      ``v``: ``c(u) = |tr(u)| + Lap(1 / eps1_i)`` where ``|tr(u)|`` is the number of persons
      whose prefix is ``v`` followed by a location of ``u``; ``u`` is kept if
      ``c(u) >= theta_g``;
   b. for each kept ``u``, every location ``w`` of ``u`` is a *specific* child:
      ``c(w) = |tr(w)| + Lap(1 / eps2_i)``, kept if ``c(w) >= theta_ng``. Kept specific nodes
      other than ``&`` form the next frontier.

   Children whose true count is 0 are not noised one by one: :func:`noisy_children` draws how
   many of them pass the threshold (a binomial), where (uniformly among them) and their values
   (the Laplace tail above the threshold); its docstring proves this has exactly the
   distribution of noising each of them.
2. *Consistency* (post-processing, :func:`consistent_counts`): weighted least squares under
   the tree's constraints, Hay et al. (PVLDB 2010) two-pass constrained inference adapted to the
   inequality constraints of a pruned tree. Bottom-up, a node whose noisy count is below the sum
   of its children's estimates is merged with that sum by inverse-variance weighting (the
   least-squares solution when its constraint is active); top-down, each family of children is
   projected, in the inverse-variance-weighted L2 norm, onto ``{children >= 0, sum <= parent}``
   (:func:`project_families`), and every generalized node becomes the sum of its specific
   children. Afterwards: child <= parent, sum of children <= parent, group = sum of specifics.
3. *Release* (:func:`release_from_tree`): for a specific node ``v`` of depth ``d < h`` the
   sequences that end at ``v`` are its ``&`` child's count (``ends=marker``), or that plus the
   part of ``c(v)`` its kept children do not account for, i.e. ``c(v)`` minus its non-``&``
   children (``ends=residual``, default: people whose continuation was pruned are released with
   their prefix instead of being dropped). A depth-``h`` node's whole count ends there. Counts
   are rounded at random (unbiased) and each node's prefix is emitted that many times, so the
   number of released sequences is noisy, never read from the data.
4. *Output.* Column data (MSNBC): one row per sequence, ``site_0..`` = the locations then the
   end value 0. Taxi data: one synthetic taxi per sequence; its first pickups are the sequence,
   its trip count is the sequence length when the sequence ended (``&``) and otherwise drawn
   from the public taxis with more trips; further pickups follow a public chain ``pickup |
   the taxi's first pickup, previous pickup`` (the first pickup anchors a taxi to its area: a
   plain first-order chain drifts, giving taxis 9.1 distinct pickup areas instead of the real
   5.4 and a 3x larger count-query error on taxi_sim), shifts a public chain ``shift |
   previous shift, pickup``, sorted within the taxi so that time order is sequence order, and
   the other columns come from public conditionals (:mod:`mechanisms.conditional_fill`, shared
   with ``archetype``).

Privacy argument
----------------
*Private:* ``data.private``. The unit is a person: a row of column data (record level), or a
taxi (``taxi_id``, user level) with all its trips. Neighbouring datasets add or remove one
person's whole sequence. The taxonomy, ``h`` and every hyperparameter are public; the public
part of a taxi dataset is public.

*Sensitivity per level:* only the first ``h`` symbols of a person are used. At level ``i`` a
person is counted in exactly one generalized candidate (the group of their ``i``-th symbol
under their length-``i - 1`` prefix) and at most one specific candidate (their ``i``-th symbol),
or in none once their sequence has ended. The vector of all candidate counts of one sub-level
(zeros included, over every possible prefix) therefore changes by at most 1 in L1 norm when a
person is added or removed: sensitivity 1, whatever the person's sequence or trip count.

*Budget:* level ``i`` gets ``eps_i`` (``allocation``: ``uniform`` = ``eps / h`` each, the
paper's choice; ``linear`` = proportional to ``i``, more for the sparser deep levels; or a list
of ``h`` positive weights), split into ``eps1_i = s * eps_i`` for the generalized sub-level and
``eps2_i = (1 - s) * eps_i`` for the specific one (``eps1_share`` = ``s``). Each sub-level is a
Laplace mechanism with scale ``1 / eps`` of its share on a sensitivity-1 vector, hence
``eps1_i``- resp. ``eps2_i``-DP; only the candidates whose parent was kept are looked at, and the
threshold test only discards noisy values, so both are post-processing of that Laplace release.
Which candidates exist at level ``i`` depends only on the releases of the levels before
(adaptive sequential composition), so the ``2 h`` releases compose to
``sum_i (eps1_i + eps2_i) = eps``-DP (pure, delta = 0). The ledger gets one Laplace charge per
sub-level (sensitivity 1, scale ``1 / eps1_i`` or ``1 / eps2_i``), ``2 h`` charges summing to
``eps``; a level whose frontier is empty (or a specific sub-level under no kept group) releases
nothing and is not charged (the tree stopped early; the spent epsilon is then below the budget).

Everything after the releases -- consistency, rounding, emission, the public Markov chains and
conditionals for taxi columns, fresh taxi ids -- reads only the noisy tree and public data.

Choices where the paper was ambiguous (details in ``conf/mechanism/prefix_tree.yaml``)
-------------------------------------------------------------------------------------
- ``eps1``/``eps2`` split: the seed notes give ``eps1 = 2 eps_i / f``, ``eps2 = (f - 2) eps_i /
  f`` for taxonomy fan-out ``f``; the paper's full text was not available here to check it.
  It is the default, ``eps1_share=fanout``, with ``f`` = the mean number of locations per group
  (3.4 for the MSNBC taxonomy: eps1 = 0.59 eps_i; 7.8 for Chicago's sides: 0.26 eps_i). The rule
  needs ``f > 2`` (the paper's own toy taxonomy has ``f = 2``, where it would leave the specific
  sub-level no budget; such taxonomies need a numeric share). On MSNBC and taxi_sim it scores
  within seed noise of the best fixed share (0.3 to 0.5); 0.15 is clearly worse.
- Thresholds: ``theta = m * sqrt(2) * b`` (``m`` noise standard deviations of ``Lap(b)``), ``m = 2``
  for both sub-levels by default; the seed notes' ``theta_g = 4 sqrt(2) / eps1`` is
  ``threshold_g_sd=4``. Thresholds must be >= 0 (the empty-child shortcut needs it). On MSNBC,
  ``m = 1`` for both lowers the count-query error by about 10% (0.461 -> 0.419 at eps 0.5, h 6);
  much lower thresholds let empty children through often enough (``exp(-m sqrt 2) / 2`` each)
  that the tree of false branches stops dying out.
- End marker: its own group and location, measured at both sub-levels like any other child,
  never expanded. A person's contribution is then exactly one node per level until their end.
- Where sequences end: ``residual`` by default; ``marker`` (only the end-marker counts) drops
  everyone whose continuation was pruned (22% of MSNBC's sequences at eps 0.5) and has a 40%
  larger count-query error.
- Consistency: the two-pass weighted least-squares estimator described above. (A full
  inequality-constrained least-squares solve over the tree is a quadratic program; the two
  passes are exact for each family given its parent, and exact overall where only equality
  constraints are active, as in Hay et al.)
- Height: MSNBC's error is dominated by pruning, not by the noise or by the cut at ``h``: the
  real sequences cut at support < 10 (no noise) already have a count-query error of 0.42
  (max |L| = 3), and ``h`` from 6 to 16 changes the tree's error by < 0.03. ``h = 6`` suits both
  MSNBC and taxi_sim (whose 3,000 taxis rarely fill more than 4 levels at eps 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from harness.data.datasets import PROJECT_ROOT, Dataset
from harness.errors import ConfigError
from harness.privacy.accounting import Budget, Ledger, laplace_scale
from harness.data.schema import Schema
from harness.data.sequences import (DAY_COLUMN, DROPOFF_COLUMN, FILL, HOUR_COLUMN, PICKUP_COLUMN,
                               SequenceSpec, SequenceView, detect_sequence_kind, sequence_view,
                               site_columns, trip_order)

from .base import Mechanism
from .conditional_fill import (FillStep, conform_to_schema, enforce_shift_times, fit_conditionals,
                               sample_conditionals, sorted_lookup, sprint3_fill_steps)

#: Where the taxonomy files (group -> list of locations) live.
TAXONOMY_DIR: Path = PROJECT_ROOT / "conf" / "taxonomy"
#: ``taxonomy=auto``: taxonomy file per sequence kind (trips) or dataset name (column data);
#: anything else gets the data-independent ``blocks`` taxonomy.
AUTO_TAXONOMY: dict[str, str] = {"trips": "chicago_sides", "msnbc": "msnbc"}
ALLOCATIONS = ("uniform", "linear")
ENDS = ("residual", "marker")
TREE_LOCATIONS = ("pickup", "dropoff")
SHIFT_COLUMN = "shift"
COMPANY_COLUMN = "company_id"
SQRT2 = math.sqrt(2.0)


# ===== taxonomy ===========================================================================
@dataclass(frozen=True)
class Taxonomy:
    """A two-level taxonomy over location codes ``0..A-1`` plus the end marker (code ``A``).

    Groups ``0..G-1`` are the taxonomy's; group ``G`` is the end group, whose only location is
    the end marker. ``member_table[g, j]`` is the code of group ``g``'s ``j``-th location (-1
    padding); ``group_of[c]`` and ``position[c]`` give a code's group and place in it.
    """

    names: tuple[str, ...]
    member_table: np.ndarray
    group_of: np.ndarray
    position: np.ndarray

    @property
    def n_groups(self) -> int:
        """G, the number of groups without the end group."""
        return len(self.names)

    @property
    def n_locations(self) -> int:
        return len(self.group_of) - 1

    @property
    def end_code(self) -> int:
        return self.n_locations

    @property
    def end_group(self) -> int:
        return self.n_groups

    @property
    def group_sizes(self) -> np.ndarray:
        """Locations per group, the end group (size 1) last."""
        return (self.member_table >= 0).sum(axis=1)

    @property
    def max_group_size(self) -> int:
        return int(self.member_table.shape[1])

    @property
    def fanout(self) -> float:
        """Mean number of locations per group (end group excluded)."""
        return self.n_locations / self.n_groups

    def groups(self, alphabet: Sequence[Any]) -> dict[str, list[Any]]:
        """``{group name: [location labels]}`` (end group excluded)."""
        return {name: [alphabet[c] for c in row[row >= 0]]
                for name, row in zip(self.names, self.member_table)}


def taxonomy_from_groups(groups: Mapping[str, Sequence[Any]],
                         alphabet: Sequence[Any]) -> Taxonomy:
    """The :class:`Taxonomy` of ``{group: [location labels]}`` over ``alphabet`` (the view's
    location labels). Every label must be in exactly one group."""
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError("mechanism.taxonomy must map group names to lists of locations",
                          "e.g. mechanism.taxonomy={a: [1, 2], b: [3]} or taxonomy=auto")
    code_of = {_plain(label): code for code, label in enumerate(alphabet)}
    seen: dict[Any, str] = {}
    problems, members = [], []
    for name, labels in groups.items():
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or not labels:
            problems.append(f"group {name!r} is not a non-empty list of locations")
            continue
        codes = []
        for label in labels:
            label = _plain(label)
            if label not in code_of:
                problems.append(f"group {name!r}: {label!r} is not a location of the data")
            elif label in seen:
                problems.append(f"location {label!r} is in groups {seen[label]!r} and {name!r}")
            else:
                seen[label] = str(name)
                codes.append(code_of[label])
        members.append(codes)
    missing = [label for label in code_of if label not in seen]
    if missing:
        problems.append(f"locations in no group: {missing[:10]}")
    if problems:
        raise ConfigError("taxonomy does not partition the location alphabet: "
                          + "; ".join(problems),
                          "list every location of the data in exactly one group")
    n_loc, width = len(alphabet), max(len(m) for m in members)
    table = np.full((len(members) + 1, width), -1, dtype=np.int64)
    group_of = np.empty(n_loc + 1, dtype=np.int64)
    position = np.empty(n_loc + 1, dtype=np.int64)
    for g, codes in enumerate(members):
        table[g, : len(codes)] = codes
        group_of[codes], position[codes] = g, np.arange(len(codes))
    table[len(members), 0] = n_loc  # the end group holds the end marker only
    group_of[n_loc], position[n_loc] = len(members), 0
    return Taxonomy(tuple(str(n) for n in groups), table, group_of, position)


def block_taxonomy(alphabet: Sequence[Any]) -> Taxonomy:
    """Data-independent default: consecutive blocks of ``ceil(sqrt(A))`` locations."""
    size = max(1, math.ceil(math.sqrt(len(alphabet))))
    groups = {f"block_{i // size}": list(alphabet[i: i + size])
              for i in range(0, len(alphabet), size)}
    return taxonomy_from_groups(groups, alphabet)


def load_taxonomy_file(name: str, folder: Path = TAXONOMY_DIR) -> dict[str, list[Any]]:
    """The ``groups`` of ``conf/taxonomy/NAME.yaml``."""
    import yaml

    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ConfigError(f"unknown taxonomy {name!r} (no {path})",
                          f"use taxonomy=auto, blocks, one of {known}, or an inline mapping")
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict):
        raise ConfigError(f"{path} has no 'groups' mapping", "write groups: {name: [locations]}")
    return raw["groups"]


def resolve_taxonomy(spec: str | Mapping[str, Sequence[Any]], alphabet: Sequence[Any],
                     kind: str, dataset_name: str) -> Taxonomy:
    """The taxonomy a ``taxonomy`` setting names: ``auto`` (per sequence kind / dataset, see
    :data:`AUTO_TAXONOMY`), ``blocks``, a file name under ``conf/taxonomy/``, or a mapping."""
    if isinstance(spec, Mapping):
        return taxonomy_from_groups(spec, alphabet)
    if spec == "auto":
        spec = AUTO_TAXONOMY.get(kind if kind == "trips" else dataset_name, "blocks")
    if spec == "blocks":
        return block_taxonomy(alphabet)
    if not isinstance(spec, str):
        raise ConfigError(f"mechanism.taxonomy must be auto, blocks, a taxonomy name or a "
                          f"mapping (got {spec!r})", "set mechanism.taxonomy=auto")
    return taxonomy_from_groups(load_taxonomy_file(spec), alphabet)


# ===== budget =============================================================================
def level_budgets(epsilon: float, h: int, allocation: str | Sequence[float]) -> np.ndarray:
    """Epsilon of each of the ``h`` levels; they sum to ``epsilon``.

    ``uniform``: ``epsilon / h`` each (the paper). ``linear``: proportional to the level
    ``1..h`` (deeper levels hold smaller counts, so they get more). A list of ``h`` positive
    weights: proportional to them."""
    if isinstance(allocation, str):
        if allocation not in ALLOCATIONS:
            raise ConfigError(f"mechanism.allocation must be one of {ALLOCATIONS} or a list of "
                              f"{h} weights (got {allocation!r})",
                              "set mechanism.allocation=uniform")
        weights = np.ones(h) if allocation == "uniform" else np.arange(1, h + 1, dtype=float)
    else:
        weights = np.asarray(list(allocation), dtype=float)
        if weights.shape != (h,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ConfigError(f"mechanism.allocation: a list needs {h} positive weights (one "
                              f"per level), got {list(allocation)!r}",
                              "give h positive numbers or use allocation=uniform")
    return epsilon * weights / weights.sum()


def generalized_share(rule: str | float, taxonomy: Taxonomy) -> float:
    """The share ``s`` of a level's epsilon spent on its generalized sub-level.

    ``fanout``: the seed notes' ``2 / f`` with ``f`` the taxonomy's fan-out (mean locations per
    group), defined for ``f > 2``. A number in (0, 1): that share."""
    if rule == "fanout":
        f = taxonomy.fanout
        if f <= 2:
            raise ConfigError(f"eps1_share=fanout gives eps1 = 2 eps / f, eps2 = (f - 2) eps / f,"
                              f" which needs a taxonomy fan-out f > 2 (this one has f = {f:g})",
                              "set mechanism.eps1_share to a number in (0, 1), e.g. 0.5")
        return 2.0 / f
    if isinstance(rule, bool) or not isinstance(rule, (int, float)) or not 0 < rule < 1:
        raise ConfigError(f"mechanism.eps1_share must be 'fanout' or a number in (0, 1) "
                          f"(got {rule!r})", "set mechanism.eps1_share=0.3")
    return float(rule)


def laplace_threshold(multiplier: float, scale: float) -> float:
    """``multiplier`` standard deviations (``sqrt(2) b``) of ``Lap(b)``."""
    return float(multiplier) * SQRT2 * scale


def laplace_tail_probability(threshold: float, scale: float) -> float:
    """``P(Lap(0, b) >= threshold)`` for ``threshold >= 0``: ``exp(-threshold / b) / 2``."""
    if threshold < 0:
        raise ValueError("the empty-child shortcut needs a threshold >= 0")
    return 0.5 * math.exp(-threshold / scale)


# ===== noisy children (with the empty-child shortcut) =====================================
def noisy_children(family_sizes: np.ndarray, family: np.ndarray, child: np.ndarray,
                   counts: np.ndarray, scale: float, threshold: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold-tested Laplace counts of every child of every family; returns the kept ones
    as ``(family, child, noisy count)`` sorted by (family, child).

    Family ``f`` has children ``0..family_sizes[f]-1``. The children with a non-zero true
    count are given as sorted, distinct ``(family, child)`` pairs with their ``counts``; every
    other child has true count 0.

    - Non-empty children: ``noisy = count + Lap(b)``, kept if ``noisy >= threshold``.
    - Empty children (the shortcut): per family, ``K ~ Binomial(n_empty, p)`` with
      ``p = P(Lap(b) >= threshold) = exp(-threshold / b) / 2``; ``K`` children drawn uniformly
      without replacement among the family's empty ones; each value ``threshold + Exp(b)``.

    *Why the shortcut has the distribution of noising every empty child.* Noising them one by
    one gives i.i.d. ``X_1..X_n ~ Lap(0, b)`` (their true counts are 0) and releases the set
    ``S = {j : X_j >= theta}`` with the values ``(X_j)_{j in S}``; nothing else is released
    (children below the threshold are dropped). (1) The events ``X_j >= theta`` are independent
    with probability ``p``, so ``|S| ~ Binomial(n, p)``. (2) The joint law of the ``X_j`` is
    exchangeable, so given ``|S| = k`` every k-subset is equally likely: ``S`` is a uniform
    k-subset. (3) Given ``S``, the ``X_j`` for ``j in S`` are independent (the ``X`` are), each
    with the law of ``X`` given ``X >= theta``; for ``theta >= 0`` and ``x >= theta`` the Laplace
    density is ``exp(-x / b) / (2b)``, so ``P(X >= x | X >= theta) = exp(-(x - theta) / b)``:
    ``X - theta`` given ``X >= theta`` is ``Exp(b)`` (scale ``b``), independent of which
    children passed. The shortcut draws exactly (1), (2), (3), and families are independent,
    so the released (set, values) has the same distribution. (``theta < 0`` is refused: the
    tail above a negative threshold is not exponential.)
    """
    family_sizes = np.asarray(family_sizes, dtype=np.int64)
    family, child = np.asarray(family, dtype=np.int64), np.asarray(child, dtype=np.int64)
    noisy = np.asarray(counts, dtype=float) + rng.laplace(0.0, scale, len(counts))
    keep = noisy >= threshold
    n_empty = family_sizes - np.bincount(family, minlength=len(family_sizes))
    k = rng.binomial(n_empty, laplace_tail_probability(threshold, scale))
    e_family, e_child = choose_empty_children(k, n_empty, family, child, rng)
    e_value = threshold + rng.exponential(scale, len(e_family))
    out_f = np.concatenate([family[keep], e_family])
    out_c = np.concatenate([child[keep], e_child])
    out_v = np.concatenate([noisy[keep], e_value])
    order = np.lexsort((out_c, out_f))
    return out_f[order], out_c[order], out_v[order]


def choose_empty_children(k: np.ndarray, n_empty: np.ndarray, family: np.ndarray,
                          child: np.ndarray, rng: np.random.Generator
                          ) -> tuple[np.ndarray, np.ndarray]:
    """``k[f]`` children of family ``f`` drawn uniformly without replacement among its empty
    ones (those not among the sorted non-empty pairs ``(family, child)``): random sort keys
    over the empty slots of the families with ``k > 0`` only."""
    chosen = np.flatnonzero(k > 0)
    if len(chosen) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    slots = n_empty[chosen]
    owner = np.repeat(np.arange(len(chosen)), slots)
    start = np.cumsum(slots) - slots
    rank = np.arange(len(owner)) - start[owner]
    order = np.lexsort((rng.random(len(owner)), owner))
    place = np.arange(len(owner)) - start[owner[order]]
    take = order[place < k[chosen][owner[order]]]
    take.sort()
    fam = chosen[owner[take]]
    return fam, empty_rank_to_child(fam, rank[take], family, child)


def empty_rank_to_child(fam: np.ndarray, rank: np.ndarray, family: np.ndarray,
                        child: np.ndarray) -> np.ndarray:
    """The ``rank``-th (0-based, ascending) empty child of family ``fam``, given the sorted
    non-empty pairs. With non-empty children ``e_0 < e_1 < ...`` of a family,
    ``a_j = e_j - j`` empty children come before ``e_j``, so the ``r``-th empty child is
    ``r + #{j : a_j <= r}`` (``a_j`` is non-decreasing: one ``searchsorted``)."""
    if len(family) == 0:
        return rank.astype(np.int64)
    first = np.searchsorted(family, family, side="left")
    before = child - (np.arange(len(family)) - first)
    width = int(max(before.max(), rank.max(initial=0))) + 2
    keys = family * width + before
    below = (np.searchsorted(keys, fam * width + rank, side="right")
             - np.searchsorted(keys, fam * width, side="left"))
    return (rank + below).astype(np.int64)


# ===== the noisy tree =====================================================================
@dataclass(frozen=True)
class Level:
    """The kept nodes of one depth ``d``: generalized nodes (children of the specific nodes
    of depth ``d - 1``; index 0 of depth 0 is the root) and specific nodes (children of this
    level's generalized nodes). Families are contiguous: generalized nodes are sorted by
    (parent, group), specific ones by (generalized node, place in its group)."""

    gen_parent: np.ndarray
    gen_group: np.ndarray
    gen_noisy: np.ndarray
    gen_var: float
    spec_gen: np.ndarray
    spec_code: np.ndarray
    spec_noisy: np.ndarray
    spec_var: float

    @property
    def spec_parent(self) -> np.ndarray:
        """Specific node of depth ``d - 1`` above each specific node."""
        return self.gen_parent[self.spec_gen]


@dataclass(frozen=True)
class NoisyTree:
    """The noisy hybrid-granularity prefix tree: ``levels[d - 1]`` is depth ``d``."""

    taxonomy: Taxonomy
    h: int
    levels: tuple[Level, ...]


def truncated_symbols(view: SequenceView, h: int, end_code: int) -> np.ndarray:
    """``n x h`` symbols: each sequence's first ``h`` location codes, then ``end_code`` if it
    is shorter than ``h``, then ``FILL`` (-1)."""
    n = view.n_sequences
    out = np.full((n, h), FILL, dtype=np.int32)
    width = min(h, view.max_len)
    out[:, :width] = view.codes[:, :width]
    short = np.flatnonzero(view.lengths < h)
    out[short, view.lengths[short]] = end_code
    return out


def build_noisy_tree(symbols: np.ndarray, taxonomy: Taxonomy, eps1: np.ndarray,
                     eps2: np.ndarray, threshold_g_sd: float, threshold_ng_sd: float,
                     ledger: Ledger, rng: np.random.Generator) -> NoisyTree:
    """Step 1 of the module docstring: the ``2 h`` Laplace releases, each charged to ``ledger``
    before it is drawn (sensitivity 1, scale ``1 / eps1[i]`` or ``1 / eps2[i]``)."""
    n, h = symbols.shape
    n_children = taxonomy.n_groups + 1  # generalized children per frontier node
    width = taxonomy.max_group_size
    node = np.zeros(n, dtype=np.int64)  # every person starts at the root (index 0)
    expandable = np.ones(1, dtype=bool)
    levels: list[Level] = []
    for d in range(1, h + 1):
        if not expandable.any():
            break  # no frontier: nothing left to measure, nothing charged
        column = symbols[:, d - 1]
        active = np.flatnonzero((node >= 0) & (column >= 0))
        symbol = column[active].astype(np.int64)
        # (a) generalized sub-level
        b1 = laplace_scale(float(eps1[d - 1]), 1.0)
        ledger.charge(f"prefix tree level {d}/{h}: generalized nodes", "laplace", 1.0, b1,
                      note=f"{int(expandable.sum())} frontier nodes x {n_children} groups, "
                           f"eps {eps1[d - 1]:.6g}")
        gkey = node[active] * n_children + taxonomy.group_of[symbol]
        keys, counts = np.unique(gkey, return_counts=True)
        g_parent, g_group, g_noisy = noisy_children(
            np.where(expandable, n_children, 0), keys // n_children, keys % n_children, counts,
            b1, laplace_threshold(threshold_g_sd, b1), rng)
        # (b) specific sub-level, under the kept generalized nodes
        b2 = laplace_scale(float(eps2[d - 1]), 1.0)
        if len(g_group):  # else there is no candidate: nothing released, nothing charged
            ledger.charge(f"prefix tree level {d}/{h}: specific nodes", "laplace", 1.0, b2,
                          note=f"{len(g_group)} generalized nodes kept, eps {eps2[d - 1]:.6g}")
        g_index = sorted_lookup(g_parent * n_children + g_group, gkey)
        inside = g_index >= 0
        skey = g_index[inside] * width + taxonomy.position[symbol[inside]]
        keys, counts = np.unique(skey, return_counts=True)
        s_gen, s_place, s_noisy = noisy_children(
            taxonomy.group_sizes[g_group], keys // width, keys % width, counts,
            b2, laplace_threshold(threshold_ng_sd, b2), rng)
        s_code = taxonomy.member_table[g_group[s_gen], s_place]
        levels.append(Level(g_parent, g_group, g_noisy, 2.0 * b1**2,
                            s_gen, s_code, s_noisy, 2.0 * b2**2))
        node = np.full(n, -1, dtype=np.int64)
        node[active[inside]] = sorted_lookup(s_gen * width + s_place, skey)
        expandable = s_code != taxonomy.end_code
    return NoisyTree(taxonomy, h, tuple(levels))


# ===== consistency (post-processing) ======================================================
def merge_with_children(noisy: np.ndarray, var: float | np.ndarray, child_sum: np.ndarray,
                        child_var: np.ndarray, has_children: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Bottom-up step: where a node's estimate is below the sum of its children's (its
    constraint ``node >= sum of children`` is active), the least-squares estimate of both is the
    inverse-variance weighted mean of the node's value and that sum; elsewhere it is unchanged.
    Returns (estimate, variance)."""
    var = np.broadcast_to(np.asarray(var, dtype=float), noisy.shape)
    active = has_children & (noisy < child_sum)
    safe_cv = np.where(has_children, child_var, 1.0)
    merged_var = 1.0 / (1.0 / var + 1.0 / safe_cv)
    merged = merged_var * (noisy / var + child_sum / safe_cv)
    return np.where(active, merged, noisy), np.where(active, merged_var, var)


def project_families(z: np.ndarray, var: np.ndarray, family: np.ndarray,
                     cap: np.ndarray) -> np.ndarray:
    """Weighted least-squares projection of each family's estimates onto
    ``{x >= 0, sum(x) <= cap[family]}``: minimise ``sum (x - z)^2 / var`` per family.

    If ``sum max(z, 0) <= cap`` the answer is ``max(z, 0)``; otherwise ``x = max(z - tau var, 0)``
    with the ``tau > 0`` that makes the sum equal ``cap`` (KKT). ``tau`` is found per family by
    sorting the children by ``z / var`` (where each hits 0): with the top ``k`` active,
    ``tau_k = (sum z - cap) / sum var`` over them, and the answer is the largest ``k`` whose
    ``k``-th child is still positive (``z_k / var_k > tau_k``), as in Duchi et al. (2008)'s
    simplex projection. ``family`` must be sorted; ``cap`` >= 0 may be ``inf``."""
    x = np.maximum(z, 0.0)
    if len(z) == 0:
        return x
    totals = np.bincount(family, weights=x, minlength=len(cap))
    over = totals > cap * (1.0 + 1e-12)
    if not over.any():
        return x
    idx = np.flatnonzero(over[family])
    zf, vf, ff = z[idx], var[idx], family[idx]
    order = np.lexsort((-(zf / vf), ff))
    zf, vf, ff, tf = zf[order], vf[order], ff[order], (zf / vf)[order]
    first = np.searchsorted(ff, ff, side="left")
    cz, cv = np.cumsum(zf), np.cumsum(vf)
    sum_z = cz - (cz[first] - zf[first])
    sum_v = cv - (cv[first] - vf[first])
    tau = (sum_z - cap[ff]) / sum_v
    valid = tf > tau
    rank = np.arange(len(ff)) - first
    best = np.full(len(cap), -1, dtype=np.int64)
    np.maximum.at(best, ff[valid], rank[valid])
    fam_start = np.zeros(len(cap), dtype=np.int64)
    fam_start[ff] = first  # the same value for every child of a family
    has = best[ff] >= 0
    tau_f = np.where(has, tau[np.where(has, fam_start[ff] + best[ff], 0)], np.inf)
    out = np.where(has, np.maximum(zf - tau_f * vf, 0.0), 0.0)
    x[idx[order]] = out
    return x


@dataclass(frozen=True)
class ConsistentLevel:
    """Consistent counts of one depth (aligned with the :class:`Level`'s nodes)."""

    gen: np.ndarray
    spec: np.ndarray


def sum_by(index: np.ndarray, values: np.ndarray | float, size: int) -> np.ndarray:
    """``out[i] = sum of values where index == i`` (length ``size``)."""
    weights = np.broadcast_to(np.asarray(values, dtype=float), index.shape)
    return np.bincount(index, weights=weights, minlength=size)


def bottom_up_estimates(tree: NoisyTree) -> list[tuple[np.ndarray, ...]]:
    """Per depth, ``(gen estimate, gen variance, spec estimate, spec variance)`` after the
    bottom-up pass (:func:`merge_with_children`, deepest level first)."""
    levels = tree.levels
    out: list[tuple[np.ndarray, ...]] = []
    below: tuple[np.ndarray, np.ndarray] | None = None  # (estimate, var) of the next depth's gens
    for d in range(len(levels) - 1, -1, -1):
        lv = levels[d]
        n_spec, n_gen = len(lv.spec_code), len(lv.gen_group)
        if below is not None:
            parent = levels[d + 1].gen_parent
            child_sum = sum_by(parent, below[0], n_spec)
            child_var = sum_by(parent, below[1], n_spec)
            has = np.bincount(parent, minlength=n_spec) > 0
        else:
            child_sum = child_var = np.zeros(n_spec)
            has = np.zeros(n_spec, dtype=bool)
        zs, vs = merge_with_children(lv.spec_noisy, lv.spec_var, child_sum, child_var, has)
        zg, vg = merge_with_children(lv.gen_noisy, lv.gen_var, sum_by(lv.spec_gen, zs, n_gen),
                                     sum_by(lv.spec_gen, vs, n_gen),
                                     np.bincount(lv.spec_gen, minlength=n_gen) > 0)
        out.append((zg, vg, zs, vs))
        below = (zg, vg)
    return out[::-1]


def consistent_counts(tree: NoisyTree) -> list[ConsistentLevel]:
    """Step 2 of the module docstring: bottom-up merge, then top-down projection; every
    generalized node ends as the sum of its specific children."""
    out: list[ConsistentLevel] = []
    parent_x = np.array([np.inf])  # the root: no measured count, no cap
    for lv, (zg, vg, zs, vs) in zip(tree.levels, bottom_up_estimates(tree)):
        gen_cap = project_families(zg, vg, lv.gen_parent, parent_x)
        spec = project_families(zs, vs, lv.spec_gen, gen_cap)
        out.append(ConsistentLevel(sum_by(lv.spec_gen, spec, len(lv.gen_group)), spec))
        parent_x = spec
    return out


# ===== release ============================================================================
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
@dataclass(frozen=True)
class PublicTaxiModel:
    """What the taxi output learns from public data: trip counts per taxi, the first-trip and
    next-trip chains, and the conditionals of the remaining columns."""

    trips_per_taxi: np.ndarray  # sorted
    first_location: Any  # ConditionalModel: location of first trips (marginal)
    next_location: Any  # ConditionalModel: location | first location, previous location
    first_shift: Any  # ConditionalModel: shift | location (first trips)
    next_shift: Any  # ConditionalModel: shift | previous shift, location
    fill: Any  # ConditionalModel: the other location, company, then the Sprint 3 chain


def public_trip_order(public: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """Public trips in the shared view's time order (:func:`harness.data.sequences.sequences_from_trips`:
    by taxi, day, hour, then row order), with each trip's position in its taxi's sequence."""
    ordered = public.iloc[trip_order(public, id_column)].reset_index(drop=True)
    ordered["_position"] = ordered.groupby(id_column, sort=False).cumcount().to_numpy()
    return ordered


def fit_public_taxi_model(public: pd.DataFrame, id_column: str, location: str,
                          other_location: str) -> PublicTaxiModel:
    """Public data only (no privacy cost): see :class:`PublicTaxiModel`."""
    ordered = public_trip_order(public, id_column)
    ids = ordered[id_column].to_numpy()
    first_row = np.r_[True, ids[1:] != ids[:-1]]
    later = np.flatnonzero(~first_row)
    if len(later) == 0:  # every public taxi has one trip: each trip follows itself
        later = np.arange(len(ordered))
    before = np.where(first_row[later], later, later - 1)
    loc = ordered[location].to_numpy()
    shift = ordered[SHIFT_COLUMN].to_numpy()
    first_loc = loc[np.maximum.accumulate(np.where(first_row, np.arange(len(ids)), 0))]
    transitions = pd.DataFrame({
        f"first_{location}": first_loc[later], f"prev_{location}": loc[before],
        location: loc[later], f"prev_{SHIFT_COLUMN}": shift[before], SHIFT_COLUMN: shift[later],
    })
    firsts = ordered[first_row]
    next_location = fit_conditionals(transitions, [FillStep(
        location, (f"first_{location}", f"prev_{location}"), fallbacks=((f"prev_{location}",),))])
    first_location = fit_conditionals(firsts, [FillStep(location)])
    first_shift = fit_conditionals(firsts, [FillStep(SHIFT_COLUMN, (location,))])
    next_shift = fit_conditionals(transitions, [FillStep(
        SHIFT_COLUMN, (f"prev_{SHIFT_COLUMN}", location),
        fallbacks=((f"prev_{SHIFT_COLUMN}",), (location,)))])
    loc_given = (SHIFT_COLUMN, location)
    steps = [FillStep(other_location, loc_given, fallbacks=((location,),)),
             FillStep(COMPANY_COLUMN, loc_given, fallbacks=((location,),)),
             *sprint3_fill_steps()]
    sizes = np.sort(public.groupby(id_column).size().to_numpy())
    return PublicTaxiModel(sizes, first_location, next_location, first_shift, next_shift,
                           fit_conditionals(public, steps))


def taxi_trip_counts(release: Release, h: int, public_sizes: np.ndarray,
                     rng: np.random.Generator, cap: int) -> np.ndarray:
    """Trips per released taxi: its sequence length if the sequence ended; else a public
    taxi's trip count drawn uniformly among those with at least ``L + 1`` trips (``h`` at
    depth ``h``), at least that bound when no public taxi has so many; at most ``cap``."""
    lengths = release.lengths
    need = np.where(release.is_open, np.where(lengths < h, lengths + 1, lengths), lengths)
    first = np.searchsorted(public_sizes, need, side="left")
    available = len(public_sizes) - first
    pick = first + np.floor(rng.random(len(need)) * np.maximum(available, 1)).astype(np.int64)
    drawn = np.where(available > 0, public_sizes[np.minimum(pick, len(public_sizes) - 1)], need)
    return np.minimum(np.where(release.is_open, np.maximum(drawn, need), lengths), cap)


def sample_chain(model: Any, frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """One draw of ``model``'s single step for each row of ``frame``."""
    column = model.steps[0].column
    return sample_conditionals(model, frame, rng)[column].to_numpy()


def taxi_locations_and_shifts(release: Release, trips: np.ndarray, labels: np.ndarray,
                              model: PublicTaxiModel, location: str,
                              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Flat (taxi-major, time-ordered) location labels and shifts of every trip: the released
    prefix, then the public location chain; shifts from the public shift chain, then sorted
    within each taxi (so time order and sequence order agree)."""
    n_taxis, total = len(trips), int(trips.sum())
    start = np.cumsum(trips) - trips
    loc = np.empty(total, dtype=labels.dtype)
    shift = np.empty(total, dtype=np.int64)
    taxi_of = np.repeat(np.arange(n_taxis), trips)
    position = np.arange(total) - start[taxi_of]
    from_tree = position < release.lengths[taxi_of]
    loc[from_tree] = labels[release.codes[taxi_of[from_tree], position[from_tree]]]
    prev_loc, prev_shift = f"prev_{location}", f"prev_{SHIFT_COLUMN}"
    first_loc = f"first_{location}"
    for t in range(int(trips.max(initial=0))):
        taxis = np.flatnonzero(trips > t)
        rows = start[taxis] + t
        chain = np.flatnonzero(~from_tree[rows])
        if len(chain) and t == 0:  # no released location at all (an empty release)
            loc[rows[chain]] = sample_chain(model.first_location,
                                            pd.DataFrame(index=range(len(chain))), rng)
        elif len(chain):
            loc[rows[chain]] = sample_chain(model.next_location, pd.DataFrame(
                {first_loc: loc[start[taxis[chain]]], prev_loc: loc[rows[chain] - 1]}), rng)
        if t == 0:
            shift[rows] = sample_chain(model.first_shift, pd.DataFrame({location: loc[rows]}), rng)
        else:
            shift[rows] = sample_chain(model.next_shift, pd.DataFrame(
                {prev_shift: shift[rows - 1], location: loc[rows]}), rng)
    order = np.lexsort((shift, taxi_of))  # sorted shifts, assigned in sequence order
    shift = shift[order]
    return loc, shift


def taxi_frame(release: Release, alphabet: Sequence[Any], data: Dataset, location: str,
               h: int, rng: np.random.Generator) -> pd.DataFrame:
    """Step 4 for taxi data: one synthetic taxi per released sequence, in the schema."""
    schema, public, id_column = data.schema, data.public, data.id_column
    assert public is not None and id_column is not None
    loc_col = PICKUP_COLUMN if location == "pickup" else DROPOFF_COLUMN
    other_col = DROPOFF_COLUMN if location == "pickup" else PICKUP_COLUMN
    model = fit_public_taxi_model(public, id_column, loc_col, other_col)
    cap = int(data.max_records_per_individual or model.trips_per_taxi.max(initial=1))
    trips = taxi_trip_counts(release, h, model.trips_per_taxi, rng, cap)
    keep = trips > 0
    release = Release(release.codes[keep], release.lengths[keep], release.is_open[keep])
    trips = trips[keep]
    if len(trips) == 0:  # nothing released: one public-chain taxi, so the table is not empty
        release = Release(np.full((1, h), FILL, dtype=np.int32), np.zeros(1, dtype=np.int64),
                          np.ones(1, dtype=bool))
        trips = np.ones(1, dtype=np.int64)
    loc, shift = taxi_locations_and_shifts(release, trips, np.asarray(alphabet), model,
                                           loc_col, rng)
    id_col = schema[id_column]
    span = int(id_col.max) - int(id_col.min) + 1  # type: ignore[arg-type]
    if len(trips) > span:
        raise ConfigError(f"{len(trips)} synthetic taxis do not fit the id range",
                          "lower the budget or widen the id column")
    first_id = int(id_col.min)  # type: ignore[arg-type]
    ids = first_id + rng.choice(span, size=len(trips), replace=False)
    frame = pd.DataFrame({id_column: np.repeat(ids, trips), loc_col: loc, SHIFT_COLUMN: shift})
    frame = sample_conditionals(model.fill, frame, rng)
    frame = enforce_shift_times(frame, rng)
    frame = order_times_within_taxis(frame, id_column)
    frame = conform_to_schema(frame, schema)[schema.names]
    # shuffle whole taxis, keeping each taxi's trips contiguous and in sequence order
    block = np.repeat(rng.permutation(len(trips)), trips)
    return frame.iloc[np.argsort(block, kind="stable")].reset_index(drop=True)


def order_times_within_taxis(frame: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """Give each taxi's trips (contiguous rows) its sorted (day, hour) values in row order.
    Shifts are already non-decreasing within a taxi, so only hours inside one shift move and
    ``shift = day * 3 + hour // 8`` still holds; the shared view then reads the trips in row
    order (it sorts by day, hour, then row)."""
    time_key = frame[DAY_COLUMN].to_numpy().astype(np.int64) * 24 + \
        frame[HOUR_COLUMN].to_numpy().astype(np.int64)
    # rows are grouped by taxi, so the i-th row of the (run, time)-sorted order is in the same
    # taxi as row i, at the same rank
    sorted_time = time_key[np.lexsort((time_key, taxi_runs(frame[id_column].to_numpy())))]
    frame = frame.copy()
    frame[HOUR_COLUMN] = sorted_time % 24
    frame[DAY_COLUMN] = sorted_time // 24
    return frame


def taxi_runs(ids: np.ndarray) -> np.ndarray:
    """Index of the run of equal consecutive ids each row belongs to."""
    return np.r_[0, np.cumsum(ids[1:] != ids[:-1])] if len(ids) else np.zeros(0, dtype=np.int64)


# ===== the mechanism ======================================================================
@dataclass
class PrefixTree(Mechanism):
    """Chen et al. (KDD 2012) noisy hybrid-granularity prefix tree; see the module docstring
    for the algorithm, the privacy argument and the choices.

    Hyperparameters: ``h`` (tree height = locations kept per person); ``allocation`` of the
    budget over levels (``uniform``, ``linear`` or ``h`` weights); ``eps1_share``, the share of
    a level's epsilon for its generalized sub-level (a number in (0, 1) or ``fanout`` = the seed
    notes' ``2 / f``); ``threshold_g_sd`` / ``threshold_ng_sd``, the thresholds in noise standard
    deviations; ``ends`` (``residual`` or ``marker``, see step 3); ``taxonomy`` (``auto``,
    ``blocks``, a ``conf/taxonomy`` name or a mapping group -> locations); ``location``
    (``pickup`` or ``dropoff``, taxi data).
    """

    h: int = 6
    allocation: Any = "uniform"
    eps1_share: Any = "fanout"
    threshold_g_sd: float = 2.0
    threshold_ng_sd: float = 2.0
    ends: str = "residual"
    taxonomy: Any = "auto"
    location: str = "pickup"
    name: ClassVar[str] = "prefix_tree"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        kind = self._check(data)
        spec = SequenceSpec(kind=kind, location=self.location)
        view = sequence_view(data.private, spec, data.schema)
        alphabet = list(view.alphabet)
        taxonomy = resolve_taxonomy(self.taxonomy, alphabet, kind, data.name)
        eps_level = level_budgets(budget.epsilon, self.h, self.allocation)
        share = generalized_share(self.eps1_share, taxonomy)
        eps1 = eps_level * share
        eps2 = eps_level - eps1
        symbols = truncated_symbols(view, self.h, taxonomy.end_code)
        del view
        tree = build_noisy_tree(symbols, taxonomy, eps1, eps2, self.threshold_g_sd,
                                self.threshold_ng_sd, ledger, rng)
        del symbols
        release = release_from_tree(tree, consistent_counts(tree), self.ends, rng)
        if kind == "trips":
            return taxi_frame(release, alphabet, data, self.location, self.h, rng)
        columns = site_columns(data.schema.names)
        return columns_frame(release, alphabet, columns, spec.end_value, data.schema,
                             data.public, rng)

    def _check(self, data: Dataset) -> str:
        """Validate the settings against the data; return the sequence kind."""
        if isinstance(self.h, bool) or not isinstance(self.h, int) or self.h < 1:
            raise ConfigError(f"mechanism.h must be an integer >= 1 (got {self.h!r})",
                              "set mechanism.h=6")
        for key in ("threshold_g_sd", "threshold_ng_sd"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value < 0:
                raise ConfigError(f"mechanism.{key} must be a number >= 0 (got {value!r})",
                                  f"set mechanism.{key}=2")
        if self.ends not in ENDS:
            raise ConfigError(f"mechanism.ends must be one of {ENDS} (got {self.ends!r})",
                              "set mechanism.ends=residual")
        if self.location not in TREE_LOCATIONS:
            raise ConfigError(f"mechanism.location must be one of {TREE_LOCATIONS} "
                              f"(got {self.location!r})", "set mechanism.location=pickup")
        level_budgets(1.0, self.h, self.allocation)  # validates the allocation
        kind = detect_sequence_kind(data.schema.names, data.id_column or "taxi_id")
        if kind is None:
            raise ConfigError(f"prefix_tree needs sequence data; dataset {data.name!r} has no "
                              "sequence view (no taxi id + pickup area, no site_<n> columns)",
                              "use dataset=taxi_sim or dataset=msnbc")
        if kind == "trips":
            if data.unit != "user" or not data.id_column:
                raise ConfigError("prefix_tree on trip data needs user-level privacy (a taxi "
                                  "is a person)", "use dataset.unit=user")
            if data.public is None or len(data.public) == 0:
                raise ConfigError("prefix_tree builds the columns of synthetic taxis from public "
                                  f"data, and dataset {data.name!r} has none",
                                  "use dataset=taxi_sim or set dataset.public_path")
        elif data.unit != "record":
            raise ConfigError("prefix_tree on column-style sequences needs record-level data "
                              "(one row = one person's sequence)", "use dataset.unit=record")
        elif self.h > len(site_columns(data.schema.names)):
            raise ConfigError(f"mechanism.h = {self.h} is more than the "
                              f"{len(site_columns(data.schema.names))} sequence columns",
                              "lower mechanism.h")
        return kind


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
