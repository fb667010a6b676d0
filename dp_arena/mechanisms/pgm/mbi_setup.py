"""Private-PGM (``mbi``) imported once, configured for dp-arena.

JAX is set to 64-bit floats with its persistent compilation cache off before ``mbi`` is
imported (``mbi``'s import warnings silenced); :func:`mbi_domain` converts a plain
``{column: size}`` domain. :mod:`dp_arena.mechanisms.pgm`, :mod:`dp_arena.mechanisms.pgm.mirror_descent` and
:mod:`dp_arena.mechanisms.pgm.marginals` import ``mbi`` from here (its domain, clique and
junction-tree helpers: pure Python); no mechanism runs ``mbi``'s JAX estimator any more
(estimation is NumPy), but tests compare against it, so the configuration (64-bit floats,
which the comparison needs) precedes every use.
"""

from __future__ import annotations

import warnings

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import mbi  # noqa: F401 - re-exported
    from mbi import Domain, LinearMeasurement, WeightedQuery  # noqa: F401 - re-exported
    from mbi import clique_utils as mbi_clique_utils  # noqa: F401 - re-exported
    from mbi import junction_tree as mbi_junction_tree  # noqa: F401 - re-exported


def mbi_domain(domain: dict[str, int]) -> Domain:
    """``mbi``'s Domain for ``{column: size}`` (column order kept)."""
    return Domain(list(domain), [int(n) for n in domain.values()])
