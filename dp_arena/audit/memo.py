"""Work the release view's replay need not redo: post-processing whose inputs are identical in
the run and in its replay.

The replay (:mod:`dp_arena.audit.releases`) runs the mechanism again on the other world with the
same public coins and the recorded releases. Everything a mechanism computes from its public
coins and its releases alone (a graphical model fitted to the noisy measurements, AIM's model
after each round, MST's model before its selections) is then computed again from the same
inputs, only to get the same result. :class:`PostProcessingMemo` keeps the results of the run's
calls to the functions of :data:`MEMOIZED` and hands them back to the replay's calls **whose
arguments are identical** (a digest of their pickled bytes, dataclasses by their compared
fields; an object a memoized call returned, such as a model used to warm-start the next fit,
stands for itself), so the replay skips the
fits (and, for JAX fits, their compilations) and still asks exactly its own queries. A call
whose arguments differ, or cannot be pickled, runs as usual: the memo can make the replay
faster, never different. Only deterministic functions belong in :data:`MEMOIZED`. A function
may draw from a generator it is given (the public coins): its state is part of the digest, and
a served call leaves the replay's generator in the state the run's call left it in, so every
later draw is the run's.

The functions are replaced by the memo's wrappers only inside :meth:`PostProcessingMemo.record`
and :meth:`PostProcessingMemo.serve`, in the audit's worker process, and restored after.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: ``(module, function)``: deterministic functions of public inputs, released values and
#: public coins, worth reusing: graphical-model fits (MST, AIM) and archetype's public models
#: (a Gaussian mixture refitted every run).
MEMOIZED: tuple[tuple[str, str], ...] = (
    ("dp_arena.mechanisms.pgm", "estimate"),
    ("dp_arena.mechanisms.archetype", "fit_public_archetypes"),
    ("dp_arena.mechanisms.archetype", "fit_conditionals"),
)
#: Of those, the functions of public data alone (the same in every run): their results are
#: also kept across the runs of a process (:data:`_ACROSS_RUNS`).
ACROSS_RUNS: frozenset[str] = frozenset({"dp_arena.mechanisms.archetype.fit_conditionals"})
_ACROSS_RUNS: dict[bytes, Any] = {}


class _Pickler(pickle.Pickler):
    def __init__(self, buffer: io.BytesIO, known: dict[int, int]):
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.known = known
        self.referred = False  # whether an earlier result stands for itself in the digest
        # no memo: equal values give equal bytes whichever objects they share (the run and
        # the replay share different objects, e.g. a replayed value is a copy)
        self.fast = True

    def persistent_id(self, obj: Any) -> Any:  # noqa: D401 - pickle's hook
        index = self.known.get(id(obj))
        if index is None:
            return None
        self.referred = True
        return ("memo", index)

    def reducer_override(self, obj: Any) -> Any:
        """A dataclass counts by its compared fields only (not by caches such as a
        measurement's ``mbi`` query, which a fit fills in)."""
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return _value_of, (type(obj).__qualname__,
                               tuple(getattr(obj, f.name) for f in dataclasses.fields(obj)
                                     if f.compare))
        return NotImplemented


def _value_of(*_parts: Any) -> None:
    """Stands for a dataclass in a digest (never called: digests are not unpickled)."""


class PostProcessingMemo:
    """Results of one run's memoized calls, by digest of their arguments."""

    def __init__(self, functions: tuple[tuple[str, str], ...] = MEMOIZED):
        self.functions = functions
        self.results: dict[bytes, tuple[Any, list]] = {}
        self.known: dict[int, int] = {}  # id of a returned object -> its index
        self.kept: list[Any] = []  # the returned objects (their ids stay valid)
        self.served = 0

    def digest(self, name: str, args: tuple, kwargs: dict) -> tuple[bytes | None, bool]:
        """The digest of a call, and whether it refers to an earlier result (then it means
        something in this run only)."""
        digest = hashlib.sha256(name.encode())
        referred = False
        for part in (*args, *sorted(kwargs.items())):
            buffer = io.BytesIO()
            pickler = _Pickler(buffer, self.known)
            try:
                pickler.dump(part)
            except Exception:  # noqa: BLE001 - anything unpicklable: no memo for this call
                return None, False
            referred = referred or pickler.referred
            digest.update(len(buffer.getvalue()).to_bytes(8, "little") + buffer.getvalue())
        return digest.digest(), referred

    def _keep(self, key: bytes | None, result: Any, generators: list) -> Any:
        if key is not None:
            self.results[key] = (result, [g.bit_generator.state for g in generators])
        self.known.setdefault(id(result), len(self.kept))
        self.kept.append(result)
        return result

    def _wrapper(self, name: str, fn: Callable, serving: bool) -> Callable:
        def call(*args, **kwargs):
            key, referred = self.digest(name, args, kwargs)
            generators = [a for a in (*args, *kwargs.values())
                          if isinstance(a, np.random.Generator)]
            shared = name in ACROSS_RUNS and key is not None and not referred and not generators
            if shared and key in _ACROSS_RUNS:
                self.served += 1
                return _ACROSS_RUNS[key]
            if serving and key is not None and key in self.results:
                result, states = self.results[key]
                for generator, state in zip(generators, states):
                    generator.bit_generator.state = state
                self.served += 1
                return result
            result = self._keep(key, fn(*args, **kwargs), generators)
            if shared:
                if len(_ACROSS_RUNS) >= 8:
                    _ACROSS_RUNS.clear()
                _ACROSS_RUNS[key] = result  # type: ignore[index]
            return result
        return call

    @contextmanager
    def _patched(self, serving: bool) -> Iterator[None]:
        saved = []
        for module_name, attr in self.functions:
            module = sys.modules.get(module_name)  # only where the mechanism imported it
            fn = getattr(module, attr, None) if module is not None else None
            if fn is None:
                continue
            saved.append((module, attr, fn))
            setattr(module, attr, self._wrapper(f"{module_name}.{attr}", fn, serving))
        try:
            yield
        finally:
            for module, attr, fn in saved:
                setattr(module, attr, fn)

    def record(self) -> Any:
        """Context: the run; memoized calls run and their results are kept."""
        return self._patched(serving=False)

    def serve(self) -> Any:
        """Context: the replay; a memoized call with identical arguments gets the run's
        result, any other runs."""
        return self._patched(serving=True)
