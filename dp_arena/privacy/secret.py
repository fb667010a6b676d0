"""The local secret: a key that never leaves the machine(s) that hold the private data.

Two things need a secret that readers of the MLflow store do not have:

- **keyed fingerprints** of private tables (:func:`keyed_digest`): an HMAC-SHA256 under the
  secret, so the ``data_fingerprint`` tag identifies a dataset (resume, board grouping) without
  letting anyone test "is this record in the data" by hashing candidate tables;
- **replayable noise** (``privacy.noise=replayable``, :mod:`dp_arena.privacy.noise`): a noise seed
  derived from the secret and the run's content key, for science that must re-run a release.

Where the key lives: ``$DP_ARENA_SECRET_FILE`` if set, else ``~/.config/dp-arena/secret.key``.
It is 32 bytes from the OS's entropy source, created on first use with mode 0600 (owner read and
write only) in a folder of mode 0700; an existing key file that its group or others may read
is refused with the fix (``chmod 600``). It is never logged, never put in a param, tag, artifact or
error message. Who may read it: exactly the people who may read the private data (anyone with
the key and the store can replay ``replayable`` runs' noise and so undo their privacy). On a
cluster every worker must read the same key file (same path or ``DP_ARENA_SECRET_FILE``),
otherwise fingerprints differ between workers and resuming treats them as different datasets.
Deleting the key makes every earlier fingerprint unlinkable (resume then redoes those runs).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from dp_arena.errors import DPArenaError

SECRET_ENV = "DP_ARENA_SECRET_FILE"
SECRET_BYTES = 32


def secret_path() -> Path:
    """``$DP_ARENA_SECRET_FILE``, else ``~/.config/dp-arena/secret.key``."""
    raw = os.environ.get(SECRET_ENV)
    if raw:
        return Path(raw).expanduser()
    return Path.home() / ".config" / "dp-arena" / "secret.key"


def local_secret(path: Path | None = None) -> bytes:
    """The secret key, created (0600) on first use. A key file that exists but is unreadable or
    of the wrong size is an error (never silently replaced: that would orphan every
    fingerprint made with it)."""
    path = path or secret_path()
    if not path.exists():
        _create_secret(path)
    refuse_shared_key(path)
    try:
        key = path.read_bytes()
    except OSError as exc:
        raise DPArenaError(f"cannot read the dp-arena secret key {path} ({exc.strerror})",
                           f"make it readable by this user, or point {SECRET_ENV} at another "
                           "key file") from None
    if len(key) != SECRET_BYTES:
        raise DPArenaError(f"the dp-arena secret key {path} has {len(key)} bytes, not "
                           f"{SECRET_BYTES}",
                           "restore the original key file, or move it away to start a new key "
                           "(earlier fingerprints then no longer match)")
    return key


def refuse_shared_key(path: Path) -> None:
    """A key file that its group or others may read (or write) is refused, with the fix:
    anyone who can read it can link fingerprints and undo replayable noise. (POSIX modes
    only; a file whose mode cannot be read is left to :func:`local_secret`.)"""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if os.name == "posix" and mode & 0o077:
        raise DPArenaError(f"the dp-arena secret key {path} is readable or writable by its "
                           f"group or others (mode {mode & 0o777:o})",
                           f"restrict it to its owner: chmod 600 {path}")


def _create_secret(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another worker created it a moment ago
        return
    except OSError as exc:
        raise DPArenaError(f"cannot create the dp-arena secret key {path} ({exc.strerror})",
                           f"set {SECRET_ENV} to a writable path") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(secrets.token_bytes(SECRET_BYTES))


def keyed_digest(payload: bytes, purpose: str, key: bytes | None = None) -> str:
    """HMAC-SHA256 of ``payload`` under the local secret, domain-separated by ``purpose``
    (hex, 64 characters). Without the key it is a pseudorandom string: it cannot be linked to
    a candidate table or value."""
    key = local_secret() if key is None else key
    return hmac.new(key, purpose.encode() + b"\0" + payload, hashlib.sha256).hexdigest()
