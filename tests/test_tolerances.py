"""Every literal tolerance in the suite says where it comes from (a constant that
held on one CPU failed on another), and the shared helpers of :mod:`tests.support.tolerances`
compute what their docstrings say.

The lint (:func:`unexplained_tolerances`) is cheap: a literal ``rel=``, ``abs=``, ``atol=``,
``rtol=``, ``rel_tol=`` or ``abs_tol=`` keyword must have a comment on its line or the line
above, or sit in a test whose
docstring speaks of its tolerance, or in a module with a ``Tolerances:`` note. It cannot
check that the note is right, nor tolerances written as names or expressions of names, nor
bounds written as comparisons (``< 1e-9``), nor pytest.approx's default.

Tolerances: none here are numerical but the helpers' checks, which are hand-computed values
known to 4 digits (abs=5e-4 is half a unit of the 4th digit) or exact arithmetic (default
approx, 1e-6 relative, far above rounding).
"""

from __future__ import annotations

import ast
import io
import math
import tokenize
from pathlib import Path

import numpy as np
import pytest

from tests.support.tolerances import (
    binomial_se,
    laplace_sum_tail,
    mean_se,
    sd_rel_se,
    statistical,
    ulps,
    z_quantile,
)

TESTS = Path(__file__).resolve().parent
KEYWORDS = frozenset({"rel", "abs", "atol", "rtol", "rel_tol", "abs_tol"})
MODULE_NOTE = "Tolerances:"


def is_literal(node: ast.expr) -> bool:
    """A number written in the source, or arithmetic on such numbers (``5 * 1e-9``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return is_literal(node.left) and is_literal(node.right)
    return False


def comment_lines(source: str) -> frozenset[int]:
    """The line numbers that carry a ``#`` comment."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return frozenset(t.start[0] for t in tokens if t.type == tokenize.COMMENT)


def has_module_note(tree: ast.Module, source: str) -> bool:
    """The module's docstring or one of its comments holds a ``Tolerances:`` note."""
    doc = ast.get_docstring(tree) or ""
    return MODULE_NOTE in doc or f"# {MODULE_NOTE}" in source


def explained_by_docstring(tree: ast.Module) -> frozenset[int]:
    """The lines inside functions whose docstring speaks of a tolerance."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = (ast.get_docstring(node) or "").lower()
            if "toleran" in doc:
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


def unexplained_tolerances(source: str) -> list[int]:
    """The lines of ``source`` with a literal tolerance keyword and no note of where it comes
    from (see the module docstring for what counts as a note)."""
    tree = ast.parse(source)
    if has_module_note(tree, source):
        return []
    comments = comment_lines(source)
    documented = explained_by_docstring(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg in KEYWORDS and is_literal(keyword.value):
                line = keyword.value.lineno
                if not ({line, line - 1} & comments) and line not in documented:
                    found.append(line)
    return sorted(found)


def test_every_literal_tolerance_in_the_suite_says_where_it_comes_from():
    """Each test module's literal tolerances carry a derivation (a comment, the test's
    docstring or the module's ``Tolerances:`` note)."""
    missing = {path.name: lines for path in sorted(TESTS.glob("test_*.py"))
               if (lines := unexplained_tolerances(path.read_text()))}
    assert missing == {}


@pytest.mark.parametrize("source, expected", [
    ("def test_a():\n    assert x == approx(1.0, rel=1e-9)\n", [2]),
    ("def test_a():\n    assert x == approx(1.0, abs=-1e-9 * 5)\n", [2]),
    ("def test_a():\n    np.testing.assert_allclose(a, b,\n        atol=1e-12)\n", [3]),
    ("def test_a():\n    assert x == approx(1.0, rel=1e-9)  # 4 ulps\n", []),
    ("def test_a():\n    # rounding of 3 operations\n    assert x == approx(1.0, rel=1e-9)\n", []),
    ('def test_a():\n    """Tolerance: 5 ulps."""\n    assert x == approx(1.0, rel=1e-9)\n', []),
    ('"""Tolerances: rounding."""\ndef test_a():\n    assert x == approx(1.0, rel=1e-9)\n', []),
    ("def test_a():\n    assert x == approx(1.0, rel=tol)\n", []),
    ("def test_a():\n    assert x == approx(1.0)\n", []),
    ("def test_a():\n    assert math.isclose(x, 1.0, abs_tol=1e-6)\n", [2]),
])
def test_the_lint_flags_a_literal_tolerance_without_a_note(source, expected):
    """Hand-written probes: the lint finds the bare literal (on the keyword's own line), and
    accepts each kind of note, a named tolerance and approx's default."""
    assert unexplained_tolerances(source) == expected


def test_the_helpers_compute_what_they_say():
    """ulps is numpy's spacing; the 1e-6 two-sided normal quantile is 4.8916 (tables), the
    5% one 1.95996; the standard errors are the textbook formulas, by hand."""
    assert ulps(1.0, 4) == 4 * 2.0 ** -52
    assert ulps(-3.0, 1) == 2.0 ** -51
    assert z_quantile(1e-6) == pytest.approx(4.8916, abs=5e-5)
    assert z_quantile(0.05) == pytest.approx(1.95996, abs=5e-6)
    assert binomial_se(0.5, 100) == 0.05
    assert mean_se(2.0, 400) == 0.1
    assert sd_rel_se(50) == 0.1
    assert sd_rel_se(125, excess_kurtosis=3.0) == pytest.approx(0.1)
    assert statistical(0.1, 0.05) == pytest.approx(0.195996, abs=5e-7)


def test_the_laplace_sum_tail_bounds_the_tail_it_states():
    """One draw: P(X > t) = exp(-t / b) / 2 exactly, so the bound's t must leave at most
    beta there. More draws: a larger t, and a simulated sum of 12 draws (400,000 of them,
    seeded) passes it no more often than beta = 1e-3 allows (the share passing has mean at
    most 1e-3 and its binomial standard error; z = 4.89 standard errors above)."""
    b, beta = 40.0, 1e-6
    one = laplace_sum_tail(1, b, beta)
    exact = b * math.log(1 / (2 * beta))
    assert exact <= one
    assert laplace_sum_tail(12, b, beta) > laplace_sum_tail(3, b, beta) > one
    t = laplace_sum_tail(12, b, 1e-3)
    sums = np.random.default_rng(0).laplace(0.0, b, size=(400_000, 12)).sum(axis=1)
    assert (sums > t).mean() <= 1e-3 + statistical(binomial_se(1e-3, sums.size))


def test_the_normal_quantile_bounds_the_false_failures_it_states():
    """Seeded: of 10^6 normal draws, the share beyond z_quantile(1e-3) is 1e-3 within 5
    binomial standard errors (5 * sqrt(1e-3 / 1e6) = 1.6e-4)."""
    draws = np.random.default_rng(7).standard_normal(1_000_000)
    share = np.mean(np.abs(draws) > z_quantile(1e-3))
    assert abs(share - 1e-3) <= 5 * binomial_se(1e-3, 1_000_000)
