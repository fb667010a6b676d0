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
out = {}
for old, new in json.loads(sys.argv[1]).items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = importlib.import_module(old)
        again = importlib.import_module(old)  # cached: silent
        same = first is importlib.import_module(new)
    out[old] = {"same": same, "warnings": [str(w.message) for w in caught
                                           if issubclass(w.category, DeprecationWarning)
                                           and old in str(w.message)]}
print(json.dumps(out))
"""
MOVED = {**MECHANISM_MOVED, **DATA_MOVED}


def test_an_old_module_name_is_the_new_module_with_one_warning():
    """Every moved name, in one fresh interpreter (each name's first import is the one that
    warns, so one process checks them all)."""
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(MOVED)], capture_output=True,
                         text=True, check=True)
    seen = json.loads(out.stdout)
    assert set(seen) == set(MOVED)
    for old, new in MOVED.items():
        assert seen[old]["same"], old
        assert len(seen[old]["warnings"]) == 1 and new in seen[old]["warnings"][0], old


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
