"""Modules that moved, still importable by their old names, with one DeprecationWarning.

:func:`keep_old_names` puts a finder on ``sys.meta_path`` that answers only for the old names
it is given: importing ``mechanisms.aim`` (now ``mechanisms.pgm.aim``) imports the new module,
warns once (the old name then stays in ``sys.modules``, so later imports are silent) and binds
the old name to the same module object, so a plugin written against the old layout keeps
working and sees the same classes and registry. Every other import is untouched.

Ground floor: imports nothing from the project.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from importlib.machinery import ModuleSpec
from types import ModuleType


class OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A finder and loader for ``old name -> new name`` (see the module docstring)."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import {new} (the old name will go)",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The new module is already executed."""


def keep_old_names(moved: Mapping[str, str]) -> None:
    """Make each old module name of ``moved`` import its new module (once per process)."""
    if not any(isinstance(f, OldNames) and f.moved == dict(moved) for f in sys.meta_path):
        sys.meta_path.append(OldNames(moved))
