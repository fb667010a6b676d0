"""Modules that moved into the families' packages (issue 42) still import by their old names:
the same module object, one DeprecationWarning per old name, nothing else changed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.data import MOVED as DATA_MOVED
from mechanisms import MOVED as MECHANISM_MOVED

PROBE = """
import importlib, json, sys, warnings
old, new = sys.argv[1], sys.argv[2]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    first = importlib.import_module(old)
    again = importlib.import_module(old)  # cached: silent
    same = first is importlib.import_module(new)
print(json.dumps({"same": same, "warnings": [str(w.message) for w in caught
                                             if issubclass(w.category, DeprecationWarning)
                                             and old in str(w.message)]}))
"""


@pytest.mark.parametrize("old, new", sorted({**MECHANISM_MOVED, **DATA_MOVED}.items()))
def test_an_old_module_name_is_the_new_module_with_one_warning(old, new):
    out = subprocess.run([sys.executable, "-c", PROBE, old, new], capture_output=True,
                         text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["same"]
    assert len(seen["warnings"]) == 1 and new in seen["warnings"][0]


def test_a_plugin_written_against_the_old_layout_subclasses_the_registered_class():
    """``from mechanisms.mst import MST`` (an old plugin) gives the class the registry builds."""
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "from mechanisms.mst import MST\n"
            "from mechanisms import mechanism_class\n"
            "print(mechanism_class('mst') is MST)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "True"


def test_unknown_names_are_not_answered():
    with pytest.raises(ModuleNotFoundError):
        __import__("mechanisms.no_such_family")
