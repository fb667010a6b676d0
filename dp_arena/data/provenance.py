"""From-private marks that survive deleting a schema's ``proposal`` block.

``dp-arena-schema --from-private`` reads values and ranges exactly from the private file and
says so in the schema's ``proposal`` block, which tags every run using it
(``schema_source=private``). A block can be deleted; the columns' content cannot be kept
without keeping what was read from the private data. So when such a schema is written, a
keyed digest of each column's data-derived content goes into a local registry, and a schema
without a block whose columns match it is still known as from-private
(:func:`dp_arena.data.conform.read_source`).

Algorithms
----------
1. **Content** (:func:`column_content`): the part of a column's schema entry read from the
   data: its name and kind, and the categorical ``values`` (as a sorted set; numbers as
   floats, so ``1`` and ``1.0`` agree), the numeric ``min``/``max``/``bins`` (floats), the
   datetime ``min``/``max``/``bins`` (text, with ``format`` and ``resolution``). What is not
   read from the data is left out (``dtype``, ``allow_missing``, value ``names``); id columns
   and datetime columns without a range carry nothing data-derived and are not registered.
2. **Digest** (:func:`column_digest`): HMAC-SHA256 of the canonical JSON of the content under
   the local secret (:func:`dp_arena.privacy.secret.keyed_digest`, purpose
   ``from-private column``). Without the key the digest says nothing about a schema: nobody can
   test "was this column proposed from private data" by hashing candidates.
3. **Registry** (:func:`registry_path`): ``$DP_ARENA_STATE_DIR/from-private-columns``, else
   ``~/.local/state/dp-arena/from-private-columns``; one hex digest per line, appended
   (:func:`register_from_private`), file mode 0600 in a folder of mode 0700. It holds digests
   only: no name, value, path or count.
4. **Lookup** (:func:`marked_columns`): the schema's columns whose digest is in the registry;
   without a registry file nothing is read (not even the secret).

Limits (documented): the registry is per machine and per secret key (another machine, or a
new key, does not know the marks); editing every matched column's content (its values, its
range or bins) un-marks the schema: that is the user's own edit of a schema, as writing one
by hand. A hand-written column identical to one once proposed from private data on this
machine (same name, kind and content) is marked too. A block that is present is taken at its
word (:func:`dp_arena.data.conform.read_source`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dp_arena.data.schema import Column, Schema
from dp_arena.errors import DPArenaError
from dp_arena.privacy.secret import keyed_digest

STATE_ENV = "DP_ARENA_STATE_DIR"
REGISTRY_NAME = "from-private-columns"
PURPOSE = "from-private column"


def registry_path() -> Path:
    """``$DP_ARENA_STATE_DIR/from-private-columns``, else under ``~/.local/state/dp-arena``."""
    raw = os.environ.get(STATE_ENV)
    folder = Path(raw).expanduser() if raw else Path.home() / ".local" / "state" / "dp-arena"
    return folder / REGISTRY_NAME


def _number(value: Any) -> float | str:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def column_content(col: Column) -> dict[str, Any] | None:
    """The data-derived part of a column's entry (module docstring, step 1); None when it has
    none."""
    content: dict[str, Any] = {"name": col.name, "kind": col.kind}
    if col.kind == "categorical" and col.values:
        content["values"] = sorted(({"n": v} if isinstance(v, float) else {"s": v}
                                    for v in map(_number, col.values)),
                                   key=lambda d: json.dumps(d, sort_keys=True))
    elif col.kind == "numeric":
        content.update(min=_number(col.min), max=_number(col.max),
                       bins=[_number(b) for b in col.bins] if col.bins else None)
    elif col.kind == "datetime" and (col.min is not None or col.bins):
        content.update(min=str(col.min), max=str(col.max), format=col.format,
                       resolution=col.resolution,
                       bins=[str(b) for b in col.bins] if col.bins else None)
    else:
        return None
    return content


def column_digest(col: Column, key: bytes | None = None) -> str | None:
    """The keyed digest of a column's content (step 2); None when it has no content."""
    content = column_content(col)
    if content is None:
        return None
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return keyed_digest(text.encode("utf-8"), PURPOSE, key)


def schema_digests(schema: Schema, key: bytes | None = None) -> dict[str, str]:
    """Column name -> digest, for the columns with data-derived content."""
    pairs = ((c.name, column_digest(c, key)) for c in schema.columns)
    return {name: digest for name, digest in pairs if digest is not None}


def registered(path: Path | None = None) -> frozenset[str]:
    """The digests in the registry (empty when it does not exist)."""
    path = path or registry_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        raise DPArenaError(f"cannot read the from-private registry {path} ({exc.strerror})",
                           f"make it readable by this user, or set {STATE_ENV} to another "
                           "folder") from None
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def append_digests(digests: Iterable[str], path: Path | None = None) -> None:
    """Append the digests not yet in the registry (step 3), creating it 0600 in a 0700
    folder."""
    path = path or registry_path()
    new = sorted(set(digests) - registered(path))
    if not new:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as handle:
            handle.write("".join(f"{d}\n" for d in new))
    except OSError as exc:
        raise DPArenaError(f"cannot record the from-private marks in {path} "
                           f"({exc.strerror or exc})",
                           f"set {STATE_ENV} to a folder this user can write") from None


def register_from_private(schema: Schema) -> int:
    """Record a from-private schema's columns (steps 1-3); returns how many columns carry
    data-derived content (a count of schema columns, not of private rows)."""
    digests = schema_digests(schema)
    append_digests(digests.values())
    return len(digests)


def marked_columns(schema: Schema, known: frozenset[str] | None = None) -> list[str]:
    """The schema's columns whose content is registered as read from private data (step 4)."""
    known = registered() if known is None else known
    if not known:
        return []
    return [name for name, digest in schema_digests(schema).items() if digest in known]


def marked_columns_of_file(path: str | Path) -> list[str]:
    """:func:`marked_columns` of a schema file; [] when it cannot be read as a schema (the
    loader reports that)."""
    known = registered()
    if not known:
        return []
    try:
        schema = Schema.load(path)
    except (DPArenaError, OSError, ValueError, TypeError, KeyError):
        return []
    return marked_columns(schema, known)
