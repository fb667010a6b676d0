"""A hostile contestant (standard library only) for tests/test_contestant_sandbox.py: it tries
what an attacker did to an unsandboxed run, and prints what it managed as one line
``HOSTILE {json}`` on its standard output (shown on stderr with ``DP_ARENA_DEBUG=1``).

Its task's ``options`` name the targets (a real attacker finds them in
``/proc/<ppid>/environ``; handing them over makes the attacker stronger, not weaker):
``key`` (the secret key file), ``state`` (the state folder), ``store`` (the MLflow SQLite
file), ``outside`` (a file to create outside its folder), ``linger`` (seconds a double-forked
``setsid`` grandchild waits before it writes the private table to ``outside`` + ``.late``),
``sleep`` (seconds the contestant itself then sleeps). It fails on purpose: a failure line
quoting a value in words, undeclared report tags, and exit code 113; except with ``link``: its
``synthetic.csv``, ``report.json`` and ``failure.txt`` are then symbolic links to that path (a
file of the harness's side it cannot read, but the harness could), and it exits 0.
"""

import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path


def attempt(fn) -> str:
    """``ok: <what>`` or the error's type (what the harness's tests look at)."""
    try:
        return f"ok: {fn()}"
    except Exception as exc:  # noqa: BLE001 - every failure is the finding
        return f"failed: {type(exc).__name__}"


def parent_environ() -> str:
    text = Path(f"/proc/{os.getppid()}/environ").read_bytes().decode(errors="replace")
    names = sorted(v.split("=")[0] for v in text.split("\0") if v.startswith(("DP_ARENA",
                                                                              "MLFLOW")))
    if not names:
        raise LookupError("no harness variable")
    return ",".join(names)


def any_harness_environ() -> str:
    """Any process of the machine whose environment names the key file."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"DP_ARENA_SECRET_FILE" in (entry / "environ").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    if not found:
        raise LookupError("none")
    return f"{len(found)} process(es)"


def tag_every_run(store: str) -> str:
    """What the attacker did: a tag on every run of the tracking store."""
    db = sqlite3.connect(f"file:{store}?mode=rw", uri=True)
    ids = [row[0] for row in db.execute("SELECT run_uuid FROM runs")]
    db.executemany("INSERT INTO tags (key, value, run_uuid) VALUES ('hostile', 'was here', ?)",
                   [(i,) for i in ids])
    db.commit()
    return f"{len(ids)} run(s) tagged"


def grandchild(private: Path, late: Path, seconds: float) -> None:
    """Double fork and ``setsid``: the grandchild outlives its parent and writes later."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    time.sleep(seconds)
    try:
        shutil.copyfile(private, late)
    finally:
        os._exit(0)


def main() -> None:
    folder = Path(sys.argv[1])
    task = json.loads((folder / "task.json").read_text())
    options = task["options"]
    private = folder / "private.csv"
    found = {"ran": True, "uid": os.getuid(),
             "parent_environ": attempt(parent_environ),
             "any_environ": attempt(any_harness_environ)}
    if options.get("key"):
        found["key"] = attempt(lambda: len(Path(options["key"]).read_bytes()))
    if options.get("state"):
        found["state"] = attempt(lambda: os.listdir(options["state"]))
    if options.get("store"):
        found["store_read"] = attempt(lambda: len(Path(options["store"]).read_bytes()))
        found["store_tag"] = attempt(lambda: tag_every_run(options["store"]))
    if options.get("outside"):
        found["outside"] = attempt(lambda: shutil.copyfile(private, options["outside"]))
        if options.get("linger"):
            grandchild(private, Path(options["outside"] + ".late"), float(options["linger"]))
    print("HOSTILE " + json.dumps(found), flush=True)
    if options.get("link"):
        for name in ("synthetic.csv", "report.json", "failure.txt"):
            os.symlink(options["link"], folder / name)
        return
    (folder / "failure.txt").write_text("row seventeen is one one one nine zero\n")
    (folder / "report.json").write_text(json.dumps({"tags": {f"x{i}": i for i in range(113)}}))
    time.sleep(float(options.get("sleep", 0)))
    sys.exit(113)


if __name__ == "__main__":
    main()
