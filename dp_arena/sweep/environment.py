"""The ``DP_ARENA_*`` environment variables the harness reads, checked in one place before a
sweep starts: a bad value is one :class:`~dp_arena.errors.ConfigError` naming the variable, the
value and the fix (``DP_ARENA_JOBS=0`` used to end in joblib's traceback with the sweep's
parent run left RUNNING; ``DP_ARENA_JOBS=abc`` in a bare ``ValueError``).

- ``DP_ARENA_JOBS``: parallel runs of the local launcher, a whole number of at least 1;
- ``DP_ARENA_BOARD``: ``text`` or ``markdown``;
- ``DP_ARENA_DATA_CACHE``: on (``1``, ``true``, ``yes``, ``on``) or off (``0``, ``false``,
  ``no``, ``off``);
- ``DP_ARENA_DATA``, ``DP_ARENA_STATE_DIR``, ``DP_ARENA_CONTESTANTS``: folders (a missing one
  is reported where it is needed; an existing file is refused here);
- ``DP_ARENA_SECRET_FILE``: a file (an existing folder is refused here);
- ``DP_ARENA_DEBUG``: any non-empty value turns tracebacks on; nothing to check.

An empty value counts as unset, except ``DP_ARENA_JOBS``'s (the launcher's config reads it
as is: ``unset DP_ARENA_JOBS`` for the default). Values are the user's own settings, not data: messages quote
them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from dp_arena.errors import ConfigError

#: Values of an on/off variable.
SWITCH_VALUES = ("1", "true", "yes", "on", "0", "false", "no", "off")
#: Variables naming a folder, and what the folder holds.
FOLDER_VARIABLES = {"DP_ARENA_DATA": "the shared benchmark data",
                    "DP_ARENA_STATE_DIR": "dp-arena's state (the from-private column marks)",
                    "DP_ARENA_CONTESTANTS": "the contestants' environments"}
#: Variables naming a file, and what the file holds.
FILE_VARIABLES = {"DP_ARENA_SECRET_FILE": "the secret key"}


def jobs_problem(value: str) -> ConfigError | None:
    """``DP_ARENA_JOBS`` must be a whole number of at least 1."""
    try:
        jobs = int(value)
    except ValueError:
        jobs = None
    if jobs is not None and jobs >= 1:
        return None
    return ConfigError(f"DP_ARENA_JOBS={value!r}: the number of runs at a time must be a "
                       "whole number of at least 1",
                       "set DP_ARENA_JOBS=2 (or another count), or run `unset DP_ARENA_JOBS` "
                       "for the default 2")


def choice_problem(name: str, value: str, choices: tuple[str, ...]) -> ConfigError | None:
    """``name`` must be one of ``choices`` (case and surrounding spaces ignored)."""
    if value.strip().lower() in choices:
        return None
    return ConfigError(f"{name}={value!r} is not one of {', '.join(choices)}",
                       f"set {name}={choices[0]} (or another of these), or unset it")


def path_problem(name: str, value: str, folder: bool, holds: str) -> ConfigError | None:
    """``name`` names a folder (or a file) for ``holds``: an existing path of the other kind
    is refused."""
    path = Path(value).expanduser()
    wrong = path.is_file() if folder else path.is_dir()
    if not wrong:
        return None
    kind, other = ("folder", "file") if folder else ("file", "folder")
    return ConfigError(f"{name}={value} is a {other}, but it names the {kind} of {holds}",
                       f"point {name} at a {kind}, or unset it for the default")


def environment_problems(environ: Mapping[str, str] | None = None) -> list[ConfigError]:
    """Every bad ``DP_ARENA_*`` value of ``environ`` (default: this process's environment)."""
    env = os.environ if environ is None else environ
    given = {k: v for k, v in env.items() if k.startswith("DP_ARENA_") and v.strip()}
    found = []
    if "DP_ARENA_JOBS" in env:  # set but empty too: the launcher's config decodes it
        found.append(jobs_problem(env["DP_ARENA_JOBS"]))
    if "DP_ARENA_BOARD" in given:
        found.append(choice_problem("DP_ARENA_BOARD", given["DP_ARENA_BOARD"],
                                    ("text", "markdown")))
    if "DP_ARENA_DATA_CACHE" in given:
        found.append(choice_problem("DP_ARENA_DATA_CACHE", given["DP_ARENA_DATA_CACHE"],
                                    SWITCH_VALUES))
    for names, folder in ((FOLDER_VARIABLES, True), (FILE_VARIABLES, False)):
        found += [path_problem(name, given[name], folder, holds)
                  for name, holds in names.items() if name in given]
    return [p for p in found if p is not None]


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Raise the first of :func:`environment_problems`, if any."""
    problems = environment_problems(environ)
    if problems:
        raise problems[0]
