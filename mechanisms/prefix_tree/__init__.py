"""``prefix_tree``: the noisy hybrid-granularity prefix tree of Chen et al. (KDD 2012).

One concept per module, in the order of the algorithm:

- :mod:`~mechanisms.prefix_tree.taxonomy`: two-level location taxonomies (public input);
- :mod:`~mechanisms.prefix_tree.tree`: level budgets, thresholds and the noisy tree (the only
  part that touches private data, through Laplace releases charged to the ledger);
- :mod:`~mechanisms.prefix_tree.consistency`: weighted least-squares consistency
  (post-processing);
- :mod:`~mechanisms.prefix_tree.release`: released sequences from consistent counts
  (post-processing);
- :mod:`~mechanisms.prefix_tree.taxi`: decoding sequences into synthetic taxis with public data;
- :mod:`~mechanisms.prefix_tree.mechanism`: the :class:`PrefixTree` mechanism, with the full
  algorithm and its privacy argument in its module docstring.

May import: :mod:`mechanisms.base`, :mod:`mechanisms.conditional_fill`, :mod:`harness.data`,
:mod:`harness.privacy` and the ground floor.
"""

from mechanisms.prefix_tree.consistency import consistent_counts, project_families
from mechanisms.prefix_tree.mechanism import PrefixTree
from mechanisms.prefix_tree.release import Release, release_from_tree
from mechanisms.prefix_tree.taxi import taxi_frame
from mechanisms.prefix_tree.taxonomy import (Taxonomy, block_taxonomy, load_taxonomy_file,
                                             resolve_taxonomy, taxonomy_from_groups)
from mechanisms.prefix_tree.tree import (build_noisy_tree, empty_rank_to_child,
                                         generalized_share, laplace_threshold, level_budgets,
                                         noisy_children, truncated_symbols)

__all__ = ["PrefixTree", "Taxonomy", "Release", "block_taxonomy", "build_noisy_tree",
           "consistent_counts", "empty_rank_to_child", "generalized_share", "laplace_threshold",
           "level_budgets", "load_taxonomy_file", "noisy_children", "project_families",
           "release_from_tree", "resolve_taxonomy", "taxi_frame", "taxonomy_from_groups",
           "truncated_symbols"]
