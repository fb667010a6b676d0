"""``prefix_tree``: the noisy hybrid-granularity prefix tree of Chen et al. (KDD 2012).

One concept per module, in the order of the algorithm:

- :mod:`~dp_arena.mechanisms.prefix_tree.taxonomy`: two-level location taxonomies (public input);
- :mod:`~dp_arena.mechanisms.prefix_tree.tree`: level budgets, thresholds and the noisy tree (the only
  part that touches private data, through Laplace releases charged to the ledger);
- :mod:`~dp_arena.mechanisms.prefix_tree.consistency`: weighted least-squares consistency
  (post-processing);
- :mod:`~dp_arena.mechanisms.prefix_tree.release`: released sequences from consistent counts
  (post-processing);
- :mod:`~dp_arena.mechanisms.prefix_tree.taxi`: decoding sequences into synthetic taxis with public data;
- :mod:`~dp_arena.mechanisms.prefix_tree.mechanism`: the :class:`PrefixTree` mechanism, with the full
  algorithm and its privacy argument in its module docstring.

May import: :mod:`dp_arena.mechanisms.base`, :mod:`dp_arena.mechanisms.conditional_fill`, :mod:`dp_arena.data`,
:mod:`dp_arena.privacy` and the ground floor.
"""

from dp_arena.mechanisms.prefix_tree.consistency import consistent_counts, project_families
from dp_arena.mechanisms.prefix_tree.mechanism import PrefixTree
from dp_arena.mechanisms.prefix_tree.release import Release, release_from_tree
from dp_arena.mechanisms.prefix_tree.taxi import taxi_frame
from dp_arena.mechanisms.prefix_tree.taxonomy import (Taxonomy, block_taxonomy, load_taxonomy_file,
                                             resolve_taxonomy, taxonomy_from_groups)
from dp_arena.mechanisms.prefix_tree.tree import (build_noisy_tree, empty_rank_to_child,
                                         generalized_share, laplace_threshold, level_budgets,
                                         noisy_children, truncated_symbols)

__all__ = ["PrefixTree", "Taxonomy", "Release", "block_taxonomy", "build_noisy_tree",
           "consistent_counts", "empty_rank_to_child", "generalized_share", "laplace_threshold",
           "level_budgets", "load_taxonomy_file", "noisy_children", "project_families",
           "release_from_tree", "resolve_taxonomy", "taxi_frame", "taxonomy_from_groups",
           "truncated_symbols"]
