"""Turning config values into dataclass instances, with one clear error for a bad value.

- :func:`structured`: a config mapping checked against a dataclass *schema* with OmegaConf
  (the structured configs Hydra uses): values converted to the field's type or refused,
  unknown keys refused, mandatory fields required. The schemas of dp-arena's config groups
  (privacy, tracking, limits, tuning, audit, and the root) go through it, and the same
  dataclasses are registered with Hydra's ConfigStore (:mod:`dp_arena.run.config_store`), so the
  command line and a config dict built in Python are checked by one description.
- :func:`config_problem`: an OmegaConf/Hydra error (an override or config file that does not
  fit its schema) as a :class:`ConfigError`: the setting, the problem and the fix.
- :func:`refuse_unknown_keys`: one message for keys a config part does not know, each with
  the closest known key (``did you mean``);
- :func:`build_dataclass`: ``cls(**values)`` refusing unknown keys and values that do not fit
  a field's annotation, for dataclasses whose field types OmegaConf cannot describe
  (mechanism and metric hyperparameters use ``Literal`` and unions of containers);
- **declared constraints** (scikit-learn's ``_parameter_constraints``): a class lists, per
  setting, what a value may be (:class:`Interval`, :class:`OneOf`, :class:`Satisfies`, a type,
  or ``None`` for null) in ``parameter_constraints``, and :func:`check_parameters` checks an
  instance against them, one :class:`ParameterError` for the first value outside; every
  mechanism and metric is checked so when it is built (:class:`dp_arena.mechanisms.base.Mechanism`,
  :class:`dp_arena.metrics.base.Metric`), which a sweep does for every job before launch.
- :func:`load_registered`: a registry entry ``"module:attribute"``, imported on first use.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .errors import ConfigError

T = TypeVar("T")
#: OmegaConf's marker of a mandatory value (``omegaconf.MISSING``).
OMEGACONF_MISSING = "???"

#: OmegaConf's type names (as in its messages) -> what a user would call them, with an example.
TYPE_WORDS = {"Float": ("a number", "1.5"), "Integer": ("an integer", "3"),
              "Boolean": ("true or false", "true"), "String": ("a string", "name")}


def refuse_unknown_keys(values: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Raise one :class:`ConfigError` naming the keys of ``values`` that are not in ``known``
    (each with the closest known key), listing the valid ones in the fix: a setting with a
    typo would otherwise be silently ignored."""
    known = sorted(known)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise unknown_settings([f"{where}.{k}" if where else k for k in unknown], known)


def refuse_unknown_fields(cls: type, values: Mapping[str, Any], where: str) -> None:
    """:func:`refuse_unknown_keys` with the init fields of the dataclass ``cls``."""
    refuse_unknown_keys(values, (f.name for f in dataclasses.fields(cls) if f.init), where)


def build_dataclass(cls: type[T], values: dict[str, Any], where: str) -> T:
    """``cls(**values)``, refusing keys that are not fields of ``cls`` (the message names the
    option, e.g. ``mechanism 'independent'``, and lists its settings) and values that do not
    fit a field's annotation (:func:`refuse_bad_values`)."""
    owner = getattr(cls, "name", None)
    known = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(values) - set(known))
    if unknown:
        error = unknown_settings([f"{where}.{k}" if where else k for k in unknown], sorted(known))
        if isinstance(owner, str) and owner not in where.split("."):
            kind = where.rpartition(".")[0] or where
            raise ConfigError(f"{error.problem} ({kind} {owner!r} has no such setting)",
                              error.fix.replace(f"valid settings of {where} are",
                                                f"the settings of {kind} {owner!r} are"))
        raise error
    refuse_bad_values(cls, values, where)  # the types first; the constraints when built
    try:
        return cls(**values)
    except ParameterError as error:  # said at the path the user wrote
        raise error.at(where) from None


def refuse_bad_values(cls: type, values: Mapping[str, Any], where: str) -> None:
    """One :class:`ConfigError` for the first value of ``values`` that does not fit its field's
    annotation in the dataclass ``cls``: a ``Literal`` choice, ``int``, ``float``, ``bool``,
    ``str``, ``None``, a list/tuple/dict, or a union of these. Other annotations are left to the
    class's declared constraints. This runs when a sweep is planned, so
    ``mechanism.noise=bogus`` is refused before any job starts."""
    hints = type_hints(cls)
    if hints is None:  # an annotation Python cannot resolve: left to the class
        return
    for key, value in values.items():
        hint = hints.get(key)
        if hint is not None and fits(value, hint) is False:
            raise ConfigError(f"{where}.{key} must be {describe_type(hint)} (got {value!r})",
                              f"e.g. {where}.{key}={example_of(cls, key, hint)}")


@functools.lru_cache(maxsize=None)
def type_hints(cls: type) -> dict[str, Any] | None:
    """``typing.get_type_hints(cls)``, once per class (it evaluates every annotation: a
    mechanism built thousands of times in an audit paid it each time); ``None`` when an
    annotation cannot be resolved. The dict is shared: read it, never change it."""
    import typing

    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation Python cannot resolve
        return None


def fits(value: Any, hint: Any) -> bool | None:
    """Whether ``value`` fits the annotation ``hint``; ``None`` when it cannot be told."""
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        answers = [fits(value, a) for a in args]
        return True if any(a is True for a in answers) else (
            None if any(a is None for a in answers) else False)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    container = origin or hint
    if container in (list, tuple, typing.Sequence, Iterable):
        return isinstance(value, (list, tuple))
    if container in (dict, Mapping):
        return isinstance(value, Mapping)
    return None


def describe_type(hint: Any) -> str:
    """An annotation in words: ``one of 'auto', 'gaussian'``, ``an integer``, ``none``..."""
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(describe_type(a) for a in args)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
             type(None): "null"}
    if hint in words:
        return words[hint]
    container = origin or hint
    return "a list" if container in (list, tuple) else "a mapping" if container is dict \
        else str(hint)


def example_of(cls: type, key: str, hint: Any) -> str:
    """The field's default as a command-line value, else a value of its type."""
    import typing

    default = next((f.default for f in dataclasses.fields(cls) if f.name == key), None)
    if default not in (None, dataclasses.MISSING):
        return str(default).lower() if isinstance(default, bool) else str(default)
    args = typing.get_args(hint)
    literal = next((a for a in args if typing.get_origin(a) is typing.Literal), None)
    if typing.get_origin(hint) is typing.Literal:
        return str(args[0])
    if literal is not None:
        return str(typing.get_args(literal)[0])
    return "null" if type(None) in args else "..."


# ----- declared constraints ---------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """A finite number in a range (scikit-learn's ``Interval``): ``Interval(int, 1, None)`` is
    an integer >= 1, ``Interval(float, 0, 1, closed="neither")`` a number in (0, 1). ``closed``
    says which ends belong to it. Booleans are never numbers here."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"

    def accepts(self, value: Any) -> bool:
        wanted = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, wanted) \
                or not math.isfinite(float(value)):
            return False
        low_ok = self.low is None or (value >= self.low if self.closed in ("both", "left")
                                      else value > self.low)
        high_ok = self.high is None or (value <= self.high if self.closed in ("both", "right")
                                        else value < self.high)
        return low_ok and high_ok

    def describe(self) -> str:
        word = "an integer" if self.kind is int else "a number"
        if self.low is not None and self.high is not None:
            left = "[" if self.closed in ("both", "left") else "("
            right = "]" if self.closed in ("both", "right") else ")"
            span = f"in {left}{self.low:g}, {self.high:g}{right}"
            return f"{word} {span}" if self.kind is int else span
        if self.low is not None:
            return f"{word} {'>=' if self.closed in ('both', 'left') else '>'} {self.low:g}"
        if self.high is not None:
            return f"{word} {'<=' if self.closed in ('both', 'right') else '<'} {self.high:g}"
        return word


@dataclass(frozen=True, init=False)
class OneOf:
    """One of a few values (scikit-learn's ``StrOptions``): ``OneOf("auto", "gaussian")``."""

    options: tuple[Any, ...]

    def __init__(self, *options: Any):
        object.__setattr__(self, "options", options)

    def accepts(self, value: Any) -> bool:
        return any(value == o and type(value) is type(o) for o in self.options)

    def describe(self) -> str:
        if len(self.options) == 1:
            return repr(self.options[0])
        return "one of " + ", ".join(repr(o) for o in self.options)


@dataclass(frozen=True)
class Satisfies:
    """Any value ``test`` accepts, described in words (for shapes the others cannot say, such
    as a non-empty list of attribute lists)."""

    test: Callable[[Any], bool]
    description: str

    def accepts(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except Exception:  # noqa: BLE001 - a value the test cannot read is not accepted
            return False

    def describe(self) -> str:
        return self.description


#: What a ``parameter_constraints`` entry may list: the above, a type, or ``None`` (null).
Constraint = Interval | OneOf | Satisfies | type | None
#: Types as constraints, in words.
TYPE_NAMES = {str: "a string", bool: "true or false", list: "a list", dict: "a mapping"}


def accepts(constraint: Constraint, value: Any) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.accepts(value)


def describe_constraint(constraint: Constraint) -> str:
    if constraint is None:
        return "null"
    if isinstance(constraint, type):
        return TYPE_NAMES.get(constraint, constraint.__name__)
    return constraint.describe()


class ParameterError(ConfigError):
    """A setting outside its declared constraints: ``<where>.<key> must be ... (got ...)``,
    with an example. :meth:`at` says it at another path (``mechanism.base_params``)."""

    def __init__(self, where: str, key: str, wanted: str, value: Any, example: str):
        self.where, self.key, self.wanted, self.value, self.example = \
            where, key, wanted, value, example
        name = f"{where}.{key}" if where else key
        super().__init__(f"{name} must be {wanted} (got {value!r})", f"e.g. {name}={example}")

    def at(self, where: str) -> ParameterError:
        return ParameterError(where, self.key, self.wanted, self.value, self.example)


def check_parameters(obj: Any, where: str) -> None:
    """Check ``obj``'s settings against its class's ``parameter_constraints`` (setting ->
    the constraints a value may meet, any one suffices); one :class:`ParameterError` for the
    first value that meets none."""
    for key, allowed in getattr(type(obj), "parameter_constraints", {}).items():
        value = getattr(obj, key)
        if not any(accepts(c, value) for c in allowed):
            wanted = " or ".join(describe_constraint(c) for c in allowed)
            raise ParameterError(where, key, wanted, value, example_value(type(obj), key))


def example_value(cls: type, key: str) -> str:
    """The field's default as a command-line value (``null`` for none)."""
    default = next((f.default for f in dataclasses.fields(cls) if f.name == key),
                   dataclasses.MISSING)
    if default is None or default is dataclasses.MISSING:
        return "null"
    return str(default).lower() if isinstance(default, bool) else str(default)


def structured(cls: type[T], values: Mapping[str, Any] | None, where: str = "") -> T:
    """``values`` checked against the dataclass schema ``cls`` and returned as a ``cls``
    instance (nested schemas as their dataclasses); ``where`` prefixes the settings named in
    errors (``"limits"`` -> ``limits.threads``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        merged = OmegaConf.merge(OmegaConf.structured(cls), dict(values or {}))
        return OmegaConf.to_object(merged)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        raise config_problem(exc, where) from None


def config_problem(exc: BaseException, where: str = "") -> ConfigError:
    """The first OmegaConf error in ``exc``'s chain (Hydra wraps them) as one
    :class:`ConfigError`; other errors as their first line."""
    from omegaconf.errors import (
        ConfigAttributeError,
        ConfigKeyError,
        MissingMandatoryValue,
        OmegaConfBaseException,
        ValidationError,
    )

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return ConfigError(first_line(exc), "check the setting named above")
    key = ".".join(k for k in (where, str(getattr(cause, "full_key", "") or "")) if k)
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)):
        return unknown_setting(key, getattr(cause, "object_type", None))
    if isinstance(cause, MissingMandatoryValue):
        return ConfigError(f"{key} is required but not set", f"add {key}=... to the command")
    if isinstance(cause, ValidationError):
        return wrong_type(key, first_line(cause), getattr(cause, "object_type", None))
    return ConfigError(f"{key}: {first_line(cause)}" if key else first_line(cause),
                       "check the setting named above")


def unknown_setting(key: str, schema: type | None) -> ConfigError:
    """An unknown key, naming the closest valid one of ``schema`` (a dataclass) if any."""
    known = sorted(f.name for f in dataclasses.fields(schema)) \
        if schema is not None and dataclasses.is_dataclass(schema) else []
    return unknown_settings([key], known)


def unknown_settings(keys: list[str], known: list[str]) -> ConfigError:
    """Unknown settings (full keys, one parent), each with the closest of ``known``."""
    named = []
    for key in keys:
        parent, _, name = key.rpartition(".")
        close = difflib.get_close_matches(name, known, n=1)
        named.append(key + (f" (did you mean {parent + '.' if parent else ''}{close[0]}?)"
                            if close else ""))
    parent = keys[0].rpartition(".")[0]
    where = f" of {parent}" if parent else ""
    return ConfigError(f"unknown setting{'s' if len(keys) > 1 else ''} {', '.join(named)}",
                       f"valid settings{where} are {', '.join(known)}" if known
                       else "remove it, or check its spelling")


def wrong_type(key: str, message: str, schema: type | None = None) -> ConfigError:
    """A value OmegaConf could not convert to its field's type (the example is the field's
    default in ``schema`` when it has one)."""
    found = re.search(r"Value '(.*)' of type '(\w+)' could not be converted to (\w+)", message)
    if found and found.group(3) in TYPE_WORDS:
        word, example = TYPE_WORDS[found.group(3)]
        example = field_default(schema, key.rpartition(".")[2], example)
        return ConfigError(f"{key} must be {word} (got {found.group(1)!r})",
                           f"e.g. {key}={example}")
    if "is not a ListConfig" in message:
        return ConfigError(f"{key} must be a list", f"e.g. {key}=[a,b] (or {key}=[] for none)")
    return ConfigError(f"{key}: {message}", f"check the value of {key}")


def field_default(schema: type | None, name: str, otherwise: str) -> str:
    """The default of field ``name`` of the dataclass ``schema`` as text, else ``otherwise``."""
    if schema is None or not dataclasses.is_dataclass(schema):
        return otherwise
    for f in dataclasses.fields(schema):
        if f.name == name and f.default not in (dataclasses.MISSING, None, OMEGACONF_MISSING):
            return str(f.default).lower() if isinstance(f.default, bool) else str(f.default)
    return otherwise


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def load_registered(registry: dict[str, str], name: str, kind: str) -> Any:
    """The object ``registry[name]`` names as ``"module:attribute"`` (imported on first use)."""
    if name not in registry:
        raise ConfigError(f"unknown {kind} {name!r}", f"use one of {sorted(registry)}")
    module, attribute = registry[name].split(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ConfigError(f"{kind} {name!r} is registered but its module {module} is missing",
                          f"choose another {kind}") from None
