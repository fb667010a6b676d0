"""``prefix_tree``: the noisy hybrid-granularity prefix tree of Chen, Fung, Desai & Sossou,
"Differentially private transit data publication: a case study on the Montreal transportation
system" (KDD 2012), for any dataset with a sequence view (:mod:`dp_arena.data.taxi.sequences`).

The algorithm, the privacy argument and the choices where the paper was ambiguous:
:class:`PrefixTree`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sequences import (
    SequenceSpec,
    detect_sequence_kind,
    sequence_view,
    site_columns,
)
from dp_arena.errors import ConfigError, NotApplicable
from dp_arena.params import Constraint, Interval, OneOf
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms.base import Mechanism
from dp_arena.mechanisms.prefix_tree.consistency import consistent_counts
from dp_arena.mechanisms.prefix_tree.release import ENDS, columns_frame, release_from_tree
from dp_arena.mechanisms.prefix_tree.taxi import taxi_frame
from dp_arena.mechanisms.prefix_tree.taxonomy import resolve_taxonomy
from dp_arena.mechanisms.prefix_tree.tree import (
    build_noisy_tree,
    generalized_share,
    level_budgets,
    truncated_symbols,
)

TREE_LOCATIONS = ("pickup", "dropoff")


@dataclass
class PrefixTree(Mechanism):
    """Chen et al. (KDD 2012) noisy hybrid-granularity prefix tree.

    Hyperparameters: ``h`` (tree height = locations kept per person); ``allocation`` of the
    budget over levels (``uniform``, ``linear`` or ``h`` weights); ``eps1_share``, the share of
    a level's epsilon for its generalized sub-level (a number in (0, 1) or ``fanout`` = the seed
    notes' ``2 / f``); ``threshold_g_sd`` / ``threshold_ng_sd``, the thresholds in noise standard
    deviations; ``ends`` (``residual`` or ``marker``, see step 3); ``taxonomy`` (``auto``,
    ``blocks``, a ``dp_arena/conf/taxonomy`` name or a mapping group -> locations); ``location``
    (``pickup`` or ``dropoff``, taxi data).

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

       Children whose true count is 0 are not noised one by one: the release API draws how
       many of them pass the threshold (a binomial), where (uniformly among them) and their values
       (the Laplace tail above the threshold); :mod:`dp_arena.privacy.thresholded` proves this has
       exactly the distribution of noising each of them.
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
       the other columns come from public conditionals (:mod:`dp_arena.mechanisms.conditional_fill`, shared
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

    Choices where the paper was ambiguous (details in ``dp_arena/conf/mechanism/prefix_tree.yaml``)
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

    h: int = 6
    allocation: Any = "uniform"
    eps1_share: Any = "fanout"
    threshold_g_sd: float = 2.0
    threshold_ng_sd: float = 2.0
    ends: str = "residual"
    taxonomy: Any = "auto"
    location: str = "pickup"
    name: ClassVar[str] = "prefix_tree"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "h": [Interval(int, 1)], "eps1_share": [OneOf("fanout"), Interval(float, 0, 1, "neither")],
        "threshold_g_sd": [Interval(float, 0)],
        "threshold_ng_sd": [Interval(float, 0)], "ends": [OneOf(*ENDS)],
        "location": [OneOf(*TREE_LOCATIONS)]}

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
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
                                self.threshold_ng_sd, release)
        release.done()
        del symbols
        released = release_from_tree(tree, consistent_counts(tree), self.ends, rng)
        if kind == "trips":
            return taxi_frame(released, alphabet, data, self.location, self.h, rng)
        columns = site_columns(data.schema.names)
        return columns_frame(released, alphabet, columns, spec.end_value, data.schema,
                             data.public, rng)

    def check_applicable(self, data: Dataset) -> None:
        self.sequence_kind(data)

    @staticmethod
    def sequence_kind(data: Dataset) -> str:
        """``trips`` (user-level taxi trips with a public part) or ``columns`` (record-level
        ``site_<n>`` sequences); :class:`NotApplicable` for any other dataset."""
        kind = detect_sequence_kind(data.schema.names, data.id_column or "taxi_id")
        if kind is None:
            raise NotApplicable(f"prefix_tree needs sequence data; dataset {data.name!r} has no "
                                "sequence view (no taxi id + pickup area, no site_<n> columns)",
                                "use dataset=taxi_sim or dataset=msnbc")
        if kind == "trips":
            if data.unit != "user" or not data.id_column:
                raise NotApplicable("prefix_tree on trip data needs user-level privacy (a taxi "
                                    "is a person)", "use dataset.unit=user")
            if data.public is None or len(data.public) == 0:
                raise NotApplicable("prefix_tree builds the columns of synthetic taxis from "
                                    f"public data, and dataset {data.name!r} has none",
                                    "use dataset=taxi_sim or set dataset.public_path")
        elif data.unit != "record":
            raise NotApplicable("prefix_tree on column-style sequences needs record-level data "
                                "(one row = one person's sequence)", "use dataset.unit=record")
        return kind

    def _check(self, data: Dataset) -> str:
        """Validate the settings against the data; return the sequence kind."""
        level_budgets(1.0, self.h, self.allocation)  # validates the allocation
        kind = self.sequence_kind(data)
        if kind == "columns" and self.h > len(site_columns(data.schema.names)):
            raise ConfigError(f"mechanism.h = {self.h} is more than the "
                              f"{len(site_columns(data.schema.names))} sequence columns",
                              "lower mechanism.h")
        return kind
