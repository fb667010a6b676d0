"""``rdt``: private attributes synthesized with random decision trees (the family's package:
this module is the mechanism, :mod:`~dp_arena.mechanisms.rdt.forest` its random trees,
:mod:`~dp_arena.mechanisms.rdt.attributes` its attribute handling (collapsing rare values,
regrouping codes), :mod:`~dp_arena.mechanisms.rdt.leaf_size` the report's n_B
study; it may import ``dp_arena.data``, ``dp_arena.privacy`` and ``mechanisms``).

After the Duke report "Differentially private synthetic attribute generation using variable
depth random decision trees", whose trees follow Jagannathan, Pillaipakkamnatt & Wright
(Transactions on Data Privacy 5, 2012).

Roles, the algorithm, the settings and the privacy argument: :class:`RDT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema, decode_column
from dp_arena.errors import BudgetExceededError, ConfigError, NotApplicable
from dp_arena.params import Constraint, Interval, OneOf
from dp_arena.privacy.accounting import Budget, Charge, Ledger, compose, laplace_scale
from dp_arena.privacy.release import Releaser

from ..base import Mechanism, bounded_private, contribution_bound
from .attributes import (  # noqa: F401  (re-exported: dp_arena.mechanisms.rdt's public helpers)
    DEFAULT_PRIVATE_ATTRIBUTES,
    SD_ASSOCIATION,
    attribute_collapse,
    attribute_weight_vector,
    budget_shares,
    code_values,
    collapse_below_count,
    collapse_rare_values,
    encode_columns,
    mutual_information,
    per_attribute_setting,
    regroup_codes,
    report_collapse_method,
    resolve_predictors,
    resolve_private_attributes,
    sd_association_weights,
    sd_proportions,
)
from .forest import (
    TreeStructure,
    add_laplace_noise,
    ensemble_proportions,
    grow_forest,
    leaf_label_counts,
    node_proportions,
    route_to_leaves,
    sample_labels,
)


# ----- budget --------------------------------------------------------------------------
def tree_epsilon(ledger: Ledger, shares: list[float], m: int) -> float:
    """The epsilon the trees may spend: the largest total ``E`` such that ``m`` Laplace trees
    of epsilon ``shares[j] * E / m`` per private attribute, on top of the charges already
    recorded (the base mechanism's), keep the ledger's composition within its budget
    (:meth:`Ledger.remaining_pure_epsilon`, solved on the accountant's own ``compose``)."""
    per_tree = [s / m for s in shares for _ in range(m)]
    left = ledger.remaining_pure_epsilon(per_tree)
    if not left > ledger.budget.epsilon * 1e-9:
        raise BudgetExceededError(
            f"the base mechanism spent the whole budget (epsilon {ledger.budget.epsilon:g}); "
            "nothing is left for the trees", "lower mechanism.base_share")
    return left


def per_tree_epsilon(ledger: Ledger, n_trees: int, epsilon_per_tree: float,
                     bound: float) -> float:
    """The report's reading: every tree spends ``epsilon_per_tree``; check that the
    ``n_trees`` Laplace trees (sensitivity ``bound``) it implies fit on top of what the ledger
    already holds, under the ledger's own composition, and return ``epsilon_per_tree``.
    Refused with the total it implies otherwise (nothing is charged)."""
    scale = laplace_scale(epsilon_per_tree, bound)
    plan = [Charge("plan", "laplace", bound, scale) for _ in range(n_trees)]
    eps, delta = compose([*ledger.charges, *plan], ledger.budget.delta, ledger.accountant)
    if eps > ledger.budget.epsilon or delta > ledger.budget.delta:
        total = n_trees * epsilon_per_tree
        raise BudgetExceededError(
            f"rdt reads epsilon per tree (the Duke report's reading): {n_trees} trees x "
            f"epsilon {epsilon_per_tree:g} = {total:g} in total, with what is already charged "
            f"epsilon {eps:.6g}, over the run's budget epsilon {ledger.budget.epsilon:g}",
            f"set privacy.epsilon to at least {eps:.6g} (the total this reading implies), lower "
            "mechanism.epsilon_per_tree or mechanism.m, or set mechanism.epsilon_per_tree=null "
            "(the run's epsilon divided over the trees: this project's adaptation)")
    return float(epsilon_per_tree)


# ----- the mechanism ----------------------------------------------------------------------
@dataclass
class ForestFit:
    """One private attribute's forest: its shapes, noisy leaf counts and node proportions."""

    attribute: str
    node_attributes: list[str]
    trees: list[TreeStructure]
    noisy_counts: list[np.ndarray]
    proportions: list[np.ndarray]
    noise_scale: float
    epsilon: float


@dataclass
class RDTFit:
    """A run's output table, its forests, the collapse maps and the trees' total epsilon."""

    synthetic: pd.DataFrame
    forests: dict[str, ForestFit]
    collapse: dict[str, np.ndarray]
    tree_epsilon: float


@dataclass
class RDTPlan:
    """Validated settings: private attributes (in order), predictors, budget shares and the
    base mechanism (``None``: targets and SD are the public part)."""

    private: list[str]
    predictors: list[str]
    shares: list[float]
    base: Mechanism | None


@dataclass
class RDT(Mechanism):
    """Random decision trees for private attributes.

    Roles
    -----
    - **Predictors X**: public attributes (``predictors``; default every attribute that is neither
      private nor the id column).
    - **Private attributes P** (``private_attributes``; default ``["sex", "race"]`` when the
      schema has them, else ``[dataset.target]``, else n/a), synthesized in the order given.
    - **AD**, the private data: ``data.private`` (X and P).
    - **SD**, the structure data: records with X that are public or already differentially
      private: the public part (``base=public``) or the output of the base mechanism.
    - **Targets**: the records whose X is kept and whose P is synthesized: the public part's rows
      (``base=public``, the default) or the rows of another registered mechanism's output
      (``base=mst``, ``base=independent``, ...). The output is a complete table in the schema.

    Algorithm (one forest per private attribute, in order)
    ------------------------------------------------------
    1. *Collapse.* An attribute with more than ``collapse_above`` values keeps at most
       ``collapse_above - 1`` of them, the most frequent in SD among those with at least
       ``collapse_min_count`` SD records (default ``n_B``); all others become one shared value.
       Per attribute, the report's rules replace it: ``regroup_widths`` ({attribute: width}: a
       numeric attribute's values in ``width``-wide bands, "Pay in $10k units") and
       ``collapse_min_counts`` ({attribute: count}: every value with fewer SD records combined,
       "Agency < 500"); see :mod:`dp_arena.mechanisms.rdt.attributes`. Computed from SD only.
    2. *Structure.* Each of the ``m`` trees is grown from SD alone: at a node, a random
       not-yet-used node attribute is drawn with probability proportional to
       ``attribute_weights`` (default 1 each; ``sd_association``: each attribute's mutual
       information with ``P[j]`` in SD, relative to the largest, floored at 0.05; attributes with
       a single collapsed value are never drawn), with one child per collapsed value. A node
       keeps splitting while SD has at least ``n_B`` records on it and its depth is below
       ``max_depth`` (default: half the number of node attributes, rounded up, as in Jagannathan
       et al.; ``all``: every node attribute, the report's); otherwise it is a leaf. Node
       attributes of the forest for ``P[j]`` are X plus the private attributes synthesized before
       it (``race`` splits on ``sex``). Targets use their synthesized values; AD records use their
       real ones (``chain=authentic``, the default) or, as the report does, a value synthesized
       for each AD record from the earlier forest (``chain=synthesized``: each AD record goes down
       that forest like a target and draws its value from the averaged leaf proportions).
    3. *Leaves.* The label counts of ``P[j]`` of the AD records reaching each leaf get Laplace
       noise (every leaf, every label, whether or not a record reached it).
    4. *Proportions (post-processing).* A node's noisy counts are the sums of the noisy leaf
       counts below it. Top-down from the root, whose parent is the SD proportions of ``P[j]``,
       each node's proportions are its noisy shares shrunk towards its parent's, label by label,
       with the empirical-Bayes weight of :func:`node_proportions` (own share trusted when the
       node's noise is small next to how far a share may stray from the parent's), then clamped
       at 0 and normalised. A node whose noisy total is ``<= 0`` ("empty") or whose count in the
       structure data is below ``leaf_min_count`` (the report's ``leafFreqMin``, tested on SD's
       count as its pseudo-code does) takes its parent's proportions. ``shrinkage=0`` gives the report's plain rule: clamped, normalised
       noisy counts, empty leaves falling back to the parent.
    5. *Synthesis.* Each target record goes down every tree; the leaf proportions are averaged
       over the ``m`` trees and ``P[j]`` is drawn from the average.

    Hyperparameters (``dp_arena/conf/mechanism/rdt.yaml``)
    ---------------------------------------------
    ``m`` trees per private attribute (default 3; under the total reading every tree costs
    ``eps/m`` and more trees means noisier ones), ``epsilon_per_tree`` (``null``: the run's epsilon
    is the total, divided over the trees, this project's adaptation; a number: the report's reading,
    every tree spends that epsilon and the total is ``m x |P| x epsilon_per_tree``; ``rdt_report``
    sets 0.1), ``n_B`` (1000), ``max_depth``,
    ``attribute_weights``, ``collapse_above`` (``null``: no generic collapse) / ``collapse_min_count``, ``collapse_min_counts`` /
    ``regroup_widths`` (per attribute), ``leaf_min_count`` (0), ``chain`` (``authentic``;
    ``synthesized``: the report's; the default because the two are indistinguishable on Adult
    at epsilon 0.1 and 0.4 in ``bench_rdt_report.py``, so earlier results stay reproducible),
    ``budget_split`` (shares
    of the trees' epsilon per private attribute), ``shrinkage`` (1; 0 = plain clamped
    proportions), ``private_attributes``, ``predictors``, ``base`` (``public`` or a registered
    mechanism name) with ``base_params`` and ``base_share``, ``structure`` (``base``: SD = the
    targets; ``public``: SD = the public part even when the targets come from a base mechanism),
    ``max_contrib`` (rows kept per person for user-level data). Measured on Adult
    under the total reading (the version of ``bench_rdt_report.py`` before the report's text was
    read, 5 trials; its Method 1 was not the report's): shrinkage 1 beats the report's plain proportions on the (sex, race, attribute) panels at
    epsilon 0.1 and ties at 0.4; depth half vs all ties; ``attribute_weights=sd_association``
    beats uniform on every panel at both budgets (the default is still uniform: see docs/mechanisms.md).

    Privacy argument
    ----------------
    Private: ``data.private`` (AD). Each person contributes at most ``C`` rows: ``C = 1`` for
    record-level data; for user-level data each person's rows are clipped to ``C = max_contrib``
    rows chosen at random (default: the dataset's ``max_records_per_individual``).

    - The collapse maps, the tree structures, ``max_depth`` and the SD proportions are functions
      of SD, the settings and a random generator drawn before AD is read. SD is public (the
      public part) or the output of a differentially private base mechanism whose releases are
      charged to the same ledger, so reading it is free (post-processing).
    - The only access to AD is the label-count vector of each tree's leaves. Every AD row
      reaches exactly one leaf of a tree, so adding or removing one person changes a tree's
      whole leaf-count table by at most ``C`` in L1 (parallel composition across the leaves):
      Laplace noise of scale ``C / eps_tree`` on every count makes one tree ``eps_tree``-DP.
    - Budget, the report's reading (``epsilon_per_tree`` set): the report's Laplace parameter is
      ``lambda = epsilon / Delta f`` for the leaf queries of one tree, whose leaves are disjoint
      ("total accumulated epsilon should be epsilon" per tree), and it speaks of "adding trees ...
      (with additional epsilon consumption)": each tree is ``epsilon_per_tree``-DP and the ``m``
      trees of each of the ``|P|`` private attributes compose sequentially, so the run is
      ``m x |P| x epsilon_per_tree``-DP (plus the base mechanism's charges). All ``m x |P|``
      Laplace charges go to the ledger at that epsilon, the run's spend is their composition, and
      the run is refused before any noise is drawn (:func:`per_tree_epsilon`) when the run's budget
      cannot hold them: the guarantee is the total, never the per-tree figure. ``budget_split``
      does not apply (every tree the same epsilon, as in the report).
    - Budget, the total reading (``epsilon_per_tree=null``, an adaptation: the report never states
      a total): the base mechanism (if any) runs with ``base_share`` of the budget. The trees get
      ``eps_trees``: the largest total the ledger's accountant admits on top of what is already
      charged (the whole epsilon with ``base=public``, otherwise what the base left), solved on
      the accountant's own composition by :meth:`Ledger.remaining_pure_epsilon` (under ``gdp``
      a mix of Gaussian and pure charges is bounded by the smaller of two bounds, so what is left
      is not ``epsilon - spent``), a hair (``2e-13`` relative) below the budget, never above.
      Private attribute ``j`` gets ``budget_split[j] * eps_trees`` (default equal shares) and each
      of its ``m`` trees ``eps_tree = budget_split[j] * eps_trees / m`` (sequential composition);
      the ``m * |P|`` Laplace charges sum to ``eps_trees``.
    - ``chain=synthesized``: the value of ``P[j]`` substituted into each AD record is drawn from
      the released (noisy) forest's proportions at that record's own node attributes, with
      randomness independent per record. Given the earlier forests' release, each record's row
      still reaches exactly one leaf of each later tree (its contribution is a randomized function
      of its own row only), so the L1 bound ``C`` and the Laplace argument above hold unchanged
      (the count vector's law is a product over records; removing a person removes only their
      factors). The substituted values are never written anywhere.
    - Everything after the noisy counts (aggregating them up the tree, clamping, normalising,
      shrinking towards the parent or the SD proportions, averaging, sampling, decoding) reads only
      noisy counts, SD and the targets' X, so it is post-processing: the raw counts are never used
      again, in particular not by the fallback for empty leaves.
    - ``leaf_min_count`` (leafFreqMin) is tested on the structure data's count of a node, as in
      the report's pseudo-code ("count of SD observations subset using obsIndicesSD >=
      leafFreqMin"). In this project SD is the public part or a DP base mechanism's output, so the
      test reads no private data and spends nothing. Every leaf's counts are still released (the
      number of Laplace draws depends on the shape only; a leaf below the minimum takes its
      parent's proportions, which are sums of released noisy counts), so the rule changes no
      sensitivity and no charge. (Were SD private, testing its counts would be a further query;
      the project never lets SD be private: ``structure`` is ``base`` or ``public``.)
    - Targets' X and ids come from the public part or the base mechanism's output (no cost).
    """

    private_attributes: list[str] | None = None
    predictors: list[str] | None = None
    m: int = 3
    n_B: int = 1000
    max_depth: int | Literal["all"] | None = None
    attribute_weights: dict[str, float] | str | None = None
    collapse_above: int | None = 16
    collapse_min_count: int | None = None
    collapse_min_counts: dict[str, int] | None = None
    regroup_widths: dict[str, float] | None = None
    leaf_min_count: float = 0.0
    epsilon_per_tree: float | None = None
    chain: Literal["authentic", "synthesized"] = "authentic"
    budget_split: list[float] | None = None
    shrinkage: float = 1.0
    base: str = "public"
    base_params: dict[str, Any] | None = None
    base_share: float = 0.5
    structure: Literal["base", "public"] = "base"
    max_contrib: int | None = None
    name: ClassVar[str] = "rdt"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "m": [Interval(int, 1)], "n_B": [Interval(int, 1)],
        "max_depth": [None, Interval(int, 0), OneOf("all")],
        "collapse_above": [None, Interval(int, 2)], "collapse_min_count": [None, Interval(int, 0)],
        "leaf_min_count": [Interval(float, 0)],
        "epsilon_per_tree": [None, Interval(float, 0, None, "neither")], "chain": [OneOf("authentic", "synthesized")],
        "shrinkage": [Interval(float, 0)], "base_share": [Interval(float, 0, 1, "neither")],
        "structure": [OneOf("base", "public")]}

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        return self.fit(data, budget, release, rng).synthetic

    def epsilon_reading(self) -> str:
        """How this run reads epsilon, as the ledger notes and run tags say it."""
        if self.epsilon_per_tree is None:
            return "epsilon read as the run's total, divided over the trees (adaptation)"
        return "epsilon per tree, the Duke report's reading"

    def setting_tags(self) -> dict[str, str]:
        return {"rdt_epsilon_reading": "per tree (report)" if self.epsilon_per_tree is not None
                else "total (adaptation)"}

    # -- checks ---------------------------------------------------------------------------
    def check_applicable(self, data: Dataset) -> None:
        super().check_applicable(data)
        needs_public = self.base == "public" or self.structure == "public"
        if needs_public and data.public is None:
            raise NotApplicable(
                f"rdt with base=public (or structure=public) needs a public part, and dataset "
                f"{data.name!r} has none",
                "set dataset.public_fraction (e.g. 0.5) or dataset.public_path, or take the "
                "predictors from another mechanism: mechanism.base=mst")
        if self.base not in ("public", self.name):
            from .. import make_mechanism

            base = make_mechanism(self.base, self.base_params, "mechanism.base_params")
            base.check_applicable(data)

    def check_settings(self, data: Dataset) -> RDTPlan:
        """Validate every setting against the dataset (before anything is run)."""
        private = resolve_private_attributes(data.schema, self.private_attributes, data.target)
        predictors = resolve_predictors(data.schema, private, self.predictors)
        shares = budget_shares(self.budget_split, private)
        if self.epsilon_per_tree is not None and self.budget_split is not None:
            raise ConfigError(
                "mechanism.budget_split splits a total budget, and mechanism.epsilon_per_tree "
                "gives every tree the same epsilon (the report's reading): they cannot both be set",
                "set mechanism.budget_split=null, or mechanism.epsilon_per_tree=null to split "
                "the run's epsilon")
        for key, positive_int, example in (("collapse_min_counts", True, "{occupation: 200}"),
                                           ("regroup_widths", False, "{age: 10}")):
            rules = per_attribute_setting(key, getattr(self, key), predictors + private[:-1],
                                          positive_int, example)
            if key == "regroup_widths":
                for attr in rules:
                    code_values(data.schema[attr])  # numeric values, or one clear error
        attribute_weight_vector(self.attribute_weights, predictors + private[:-1],
                                predictors + private[:-1])
        self.check_applicable(data)
        base = self.make_base(data) if self.base != "public" else None
        return RDTPlan(private, predictors, shares, base)

    def make_base(self, data: Dataset) -> Mechanism:
        """The mechanism whose output supplies the targets' X (and SD)."""
        from .. import make_mechanism

        if self.base == self.name:
            raise ConfigError("mechanism.base cannot be rdt itself",
                              "use base=public or another mechanism, e.g. base=mst")
        base = make_mechanism(self.base, self.base_params, "mechanism.base_params")
        if base.reference == "ceiling":
            raise ConfigError(f"mechanism.base={self.base} reads private rows without noise "
                              "(not differentially private)",
                              "use a DP mechanism (mst, aim, independent, ...) or base=public")
        return base

    # -- the run --------------------------------------------------------------------------
    def fit(self, data: Dataset, budget: Budget, release: Releaser,
            rng: np.random.Generator) -> RDTFit:
        """Run the mechanism and keep the forests (for inspection and tests)."""
        plan = self.check_settings(data)
        private, predictors, shares = plan.private, plan.predictors, plan.shares
        schema = data.schema
        # Independent streams, drawn before any data is read: the structure stream never
        # depends on AD, and the noise stream's draws depend on the trees' shapes only.
        structure_rng, clip_rng, _unused, sample_rng, base_rng, chain_rng = rng.spawn(6)

        if plan.base is None:
            targets = data.public.reset_index(drop=True)  # type: ignore[union-attr]
        else:
            base_out = plan.base.fit_sample(data, budget.split(self.base_share),
                                                       release, base_rng)
            targets = schema.validate(base_out, where=f"output of base mechanism {self.base!r}")
            targets = targets[schema.names].reset_index(drop=True)
        sd = targets if self.structure == "base" \
            else data.public.reset_index(drop=True)  # type: ignore[union-attr]
        public_frames = {id(f) for f, public in ((targets, plan.base is None),
                                                 (sd, plan.base is None or self.structure
                                                  == "public")) if public}

        def encode(frame: pd.DataFrame, attrs: list[str]) -> np.ndarray:
            """Codes of ``frame``; the public part's from the per-process cache."""
            if id(frame) in public_frames:
                return public_codes(schema, data.public, attrs).copy()  # type: ignore[arg-type]
            return encode_columns(schema, frame, attrs)


        bound = contribution_bound(data, self.max_contrib)
        ad = bounded_private(data, bound, clip_rng)
        if self.epsilon_per_tree is None:  # the total reading (this project's adaptation)
            eps_trees = tree_epsilon(release.ledger, shares, self.m)
            eps_tree_of = [share * eps_trees / self.m for share in shares]
        else:  # the report's reading: epsilon per tree, the total follows
            eps_tree_of = [per_tree_epsilon(release.ledger, self.m * len(private),
                                            self.epsilon_per_tree, float(bound))] * len(private)
            eps_trees = self.m * len(private) * float(self.epsilon_per_tree)

        node_attrs_all = predictors + private
        sizes = {a: schema[a].size for a in node_attrs_all}
        sd_raw = encode(sd, node_attrs_all)
        min_count = self.n_B if self.collapse_min_count is None else self.collapse_min_count
        own_min = self.collapse_min_counts or {}
        widths = self.regroup_widths or {}
        collapse = {a: attribute_collapse(schema[a], sd_raw[:, i], self.collapse_above, min_count,
                                          own_min.get(a), widths.get(a))
                    for i, a in enumerate(node_attrs_all)}
        sd_codes = collapsed(sd_raw, node_attrs_all, collapse)
        ad_codes = collapsed(encode_columns(schema, ad, node_attrs_all), node_attrs_all, collapse)
        target_labels = encode(targets, node_attrs_all)  # P overwritten below
        target_codes = collapsed(target_labels, node_attrs_all, collapse)
        ad_labels = encode_columns(schema, ad, private)
        sd_labels = encode(sd, private)

        forests: dict[str, ForestFit] = {}
        for j, attr in enumerate(private):
            cols = list(range(len(predictors) + j))  # X, then P synthesized before attr
            node_attrs = [node_attrs_all[c] for c in cols]
            n_values = np.array([collapse[a].max() + 1 for a in node_attrs])
            weights = attribute_weight_vector(self.attribute_weights, node_attrs,
                                              predictors + private[:-1])
            if self.attribute_weights == SD_ASSOCIATION:
                weights = sd_association_weights(sd_codes[:, cols], n_values, sd_labels[:, j],
                                                 sizes[attr])
            depth = tree_depth(self.max_depth, len(node_attrs))
            eps_tree = eps_tree_of[j]
            scale = laplace_scale(eps_tree, float(bound))
            n_labels = sizes[attr]
            trees = grow_forest(sd_codes[:, cols], n_values, weights, self.m, self.n_B, depth,
                                structure_rng)
            prior = sd_proportions(sd_labels[:, j], n_labels)
            noisy_all, props_all = [], []
            for t, tree in enumerate(trees):
                counts = leaf_label_counts(tree, route_to_leaves(tree, ad_codes[:, cols]),
                                           ad_labels[:, j], n_labels)
                noisy = add_laplace_noise(
                    counts, tree, scale, float(bound), release,
                    f"rdt {attr}: tree {t + 1}/{self.m} leaf label counts",
                    f"{tree.n_leaves} leaves x {n_labels} labels, epsilon {eps_tree:.6g} "
                    f"({self.epsilon_reading()})")
                del counts  # nothing below reads raw counts
                noisy_all.append(noisy)
                props_all.append(node_proportions(tree, noisy, scale, prior, self.shrinkage,
                                                  self.leaf_min_count))
            if self.chain == "synthesized" and j + 1 < len(private):
                # The report's procedure: AD's own attr replaced by a synthesized one (drawn
                # from the released forest, per record) before the next forests read AD.
                ad_codes[:, len(predictors) + j] = collapse[attr][sample_labels(
                    ensemble_proportions(trees, props_all, ad_codes[:, cols]), chain_rng)]
            probs = ensemble_proportions(trees, props_all, target_codes[:, cols])
            labels = sample_labels(probs, sample_rng)
            target_labels[:, len(predictors) + j] = labels
            target_codes[:, len(predictors) + j] = collapse[attr][labels]
            forests[attr] = ForestFit(attr, node_attrs, trees, noisy_all, props_all, scale,
                                      self.m * eps_tree)
        release.done()

        out = targets[schema.names].copy()
        for j, attr in enumerate(private):
            ref = data.public[attr] if data.public is not None else None
            out[attr] = decode_column(schema[attr], target_labels[:, len(predictors) + j],
                                      sample_rng, ref)
        return RDTFit(out, forests, collapse, eps_trees)


#: Codes of public frames by (id of the frame, schema, attributes): the public part is
#: encoded once per process, not once per run (an audit makes tens of thousands of runs).
_PUBLIC_CODES: dict[tuple[int, int, tuple[str, ...]], tuple[Any, np.ndarray]] = {}


def public_codes(schema: Schema, public: pd.DataFrame, attrs: list[str]) -> np.ndarray:
    """:func:`encode_columns` of the public part, cached per process (read-only: copy it
    before writing). Public data: caching it reveals nothing."""
    import weakref

    key = (id(public), id(schema), tuple(attrs))
    hit = _PUBLIC_CODES.get(key)
    if hit is not None and hit[0]() is public:
        return hit[1]
    codes = encode_columns(schema, public, attrs)
    codes.setflags(write=False)
    if len(_PUBLIC_CODES) > 64:
        _PUBLIC_CODES.clear()
    _PUBLIC_CODES[key] = (weakref.ref(public), codes)
    return codes


def tree_depth(max_depth: int | str | None, n_node_attributes: int) -> int:
    """The depth limit: ``max_depth``; ``all`` = every node attribute (the report); ``None`` =
    half of them, rounded up (Jagannathan et al.)."""
    if max_depth == "all":
        return n_node_attributes
    return math.ceil(n_node_attributes / 2) if max_depth is None else int(max_depth)


def collapsed(codes: np.ndarray, attrs: list[str], collapse: dict[str, np.ndarray]) -> np.ndarray:
    """Apply each attribute's collapse map to its column of ``codes``."""
    out = np.empty_like(codes)
    for i, a in enumerate(attrs):
        out[:, i] = collapse[a][codes[:, i]]
    return out
