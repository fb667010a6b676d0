"""The datasets a worker has loaded, kept in its memory and shared by its runs.

A sweep's joblib worker runs many runs on one dataset, and each run used to load it again
(for ``taxi_sim``: simulate both years again). :func:`cached_load` is
:func:`dp_arena.data.datasets.load_dataset` behind a bounded memo, so a worker loads each
dataset once and its runs (forked from it by :mod:`dp_arena.run.isolation`) inherit it.

Algorithms:

- **key** (:func:`dataset_key`): SHA-256 of the ``dataset`` config (canonical JSON: public
  settings only), the shared data folder's environment variable, and for every file the loader
  reads (:func:`source_files`: a CSV's data, schema and public file; a shared dataset's zip and
  domain file; the Chicago sample) its resolved path, size, inode, mtime and ctime (ns). An
  edited or replaced file is a new key, so a stale table is never handed out.
- **racy files**: a file modified less than :data:`RACY_SECONDS` ago may still be changing
  within one clock tick of the file system's timestamps (as git treats "racily clean"
  entries), so such a load bypasses the memo (loaded, not remembered).
- **memo** (:class:`DatasetMemo`): the last :data:`REMEMBERED` datasets by key, least recently
  used dropped first, and older ones only while their tables take at most
  :data:`REMEMBERED_MB` (:func:`dataset_mb`) besides the newest (a forked run inherits the
  worker's memory, which its memory limit counts). Each entry keeps a digest of the dataset's tables; a hit re-checks it
  and reloads if anything changed the shared object in place (a mechanism run without
  isolation mutating its table), so the memo changes when a run loads, never what it reads.
- ``DP_ARENA_DATA_CACHE=0`` (:data:`CACHE_ENV`) switches the memo off (every call loads), for
  benchmarks that measure what it saves.

Privacy: the memo holds private tables in the worker's memory only, as each run did while it
ran; nothing is written, logged or printed, and the digests are in-memory keys (never logged).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dp_arena.data.datasets import (
    CHICAGO_SAMPLE_FILE,
    DATA_DIR_ENV,
    SHARED_DATASETS,
    Dataset,
    load_dataset,
    shared_data_dir,
)
from dp_arena.errors import DPArenaError

#: How many datasets a worker keeps (a sweep over a few datasets or sizes; each entry holds a
#: whole dataset in memory, so the bound is small).
REMEMBERED = 4
#: And at most this many MB of tables besides the dataset in use: a run's child inherits the
#: worker's memory, and its resident pages count towards ``limits.memory_limit_mb``.
REMEMBERED_MB = 512.0
#: A source file modified this recently is not remembered (see the module docstring).
RACY_SECONDS = 2.0
#: ``DP_ARENA_DATA_CACHE=0`` (or ``false``, ``no``, ``off``) loads every time.
CACHE_ENV = "DP_ARENA_DATA_CACHE"


def cache_enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether :data:`CACHE_ENV` leaves the memo on (default on)."""
    value = (os.environ if environ is None else environ).get(CACHE_ENV, "1")
    return value.strip().lower() not in ("0", "false", "no", "off")


def source_files(cfg: dict[str, Any]) -> tuple[Path, ...]:
    """The files loading ``cfg`` reads (resolved; none for the simulated ``taxi_sim``)."""
    name = cfg.get("name")
    if name == "csv":
        return tuple(Path(str(cfg[k])).expanduser().resolve()
                     for k in ("path", "schema", "public_path") if cfg.get(k))
    if name in SHARED_DATASETS or name == "chicago_sample":
        try:
            folder = shared_data_dir(cfg.get("data_dir"))
        except DPArenaError:  # the load raises the same error, with its fix
            return ()
        names = ((CHICAGO_SAMPLE_FILE,) if name == "chicago_sample"
                 else (f"{name}.zip", f"{name}-domain.json"))
        return tuple((folder / n).resolve() for n in names)
    return ()


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file without reading it."""

    path: str
    size: int
    inode: int
    mtime_ns: int
    ctime_ns: int


def file_stamp(path: Path) -> FileStamp | None:
    """The file's stamp (None when it does not exist: the load will say so)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return FileStamp(str(path), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def dataset_key(cfg: dict[str, Any], stamps: tuple[FileStamp | None, ...]) -> bytes:
    """What a loaded dataset depends on: its config, the data folder variable, its files."""
    h = hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode())
    h.update(repr((os.environ.get(DATA_DIR_ENV), stamps)).encode())
    return h.digest()


def is_racy(stamps: tuple[FileStamp | None, ...], now_ns: int) -> bool:
    """Whether a file's content was modified within :data:`RACY_SECONDS` of ``now_ns`` (its
    mtime; a write sets it to the write's time)."""
    return any(s is not None and now_ns - s.mtime_ns < RACY_SECONDS * 1e9 for s in stamps)


def tables_digest(data: Dataset) -> bytes:
    """SHA-256 of the dataset's private, public and held-out tables. **Private**: an in-memory
    check only."""
    h = hashlib.sha256()
    for part in (data.private, data.public, data.heldout):
        if part is None:
            h.update(b"-")
            continue
        h.update(repr(list(part.columns)).encode())
        h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
    return h.digest()


def dataset_mb(data: Dataset) -> float:
    """The MB the dataset's tables hold (pandas' shallow count: object columns' strings are
    counted as pointers)."""
    parts = (data.private, data.public, data.heldout)
    return sum(float(p.memory_usage(index=True, deep=False).sum())
               for p in parts if p is not None) / 2**20


class DatasetMemo:
    """The last :data:`REMEMBERED` loaded datasets by :func:`dataset_key` (a bounded memo of
    a pure function of the config and the files' contents)."""

    def __init__(self, size: int = REMEMBERED,
                 loader: Callable[[dict[str, Any]], Dataset] = load_dataset,
                 older_mb: float = REMEMBERED_MB) -> None:
        self.size = size
        self.loader = loader
        self.older_mb = older_mb
        self.entries: OrderedDict[bytes, tuple[Dataset, bytes, float]] = OrderedDict()

    def get(self, cfg: dict[str, Any]) -> Dataset:
        """``loader(cfg)``, loaded once per key."""
        stamps = tuple(file_stamp(p) for p in source_files(cfg))
        if is_racy(stamps, time.time_ns()):
            return self.loader(cfg)
        key = dataset_key(cfg, stamps)
        if key in self.entries:
            data, digest, _mb = self.entries[key]
            if tables_digest(data) == digest:
                self.entries.move_to_end(key)
                return data
            del self.entries[key]  # changed in place: load it again
        data = self.loader(cfg)
        self.entries[key] = (data, tables_digest(data), dataset_mb(data))
        while len(self.entries) > self.size or (len(self.entries) > 1 and self.older_size()
                                                > self.older_mb):
            self.entries.popitem(last=False)
        return data

    def older_size(self) -> float:
        """MB held by every entry but the newest."""
        return sum(mb for _d, _g, mb in list(self.entries.values())[:-1])


#: The worker's memo (a process-wide cache of pure results, like
#: :data:`dp_arena.run.references.WORKER_MEMO`: it changes when a run loads, not what it reads).
WORKER_DATA = DatasetMemo()


def cached_load(cfg: dict[str, Any], memo: DatasetMemo = WORKER_DATA) -> Dataset:
    """The :class:`Dataset` ``cfg`` describes, from the worker's memo (loaded on first use;
    every time when :data:`CACHE_ENV` is ``0``)."""
    return memo.get(cfg) if cache_enabled() else memo.loader(cfg)
