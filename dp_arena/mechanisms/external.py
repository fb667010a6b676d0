"""``external``: a contestant that runs as a command in its own Python environment.

The protocol (charge, inputs, command, output, clean-up, claims) and the privacy argument:
:class:`External`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.params import Constraint, Interval, OneOf
from dp_arena.privacy.accounting import Budget, zcdp_rho
from dp_arena.privacy.release import Releaser
from dp_arena.data.provenance import STATE_ENV
from dp_arena.privacy.secret import secret_path
from dp_arena.processes import die_with_parent
from dp_arena.sandbox import (
    NO_ISOLATION,
    Sandbox,
    find_sandbox,
    interpreter_roots,
    owned_by_nobody,
    sandboxed,
)

from .base import Mechanism, assign_ids, finish, require_delta, with_output_facts
from .contestant_output import (
    own_file,
    read_output,
    report_tag_name_ok,
    report_tags,
)
from .contestants import ENVS, adapter_path, allowed_environment, env_python, manifest
from .contestants.claims import SHIPPED, Adapter, Claim, claim_from_config
from .contestants import protocol as protocol_module
from .contestants.protocol import SAMPLING
from .row_count import row_bounds

ENCODINGS = ("codes", "values")
#: smartnoise adapters: the share of rho kept for the noisy row count (``smartnoise_common``).
ROW_COUNT_SHARE = Interval(float, 0, 1, closed="neither")
#: The guardian (run by this interpreter): fork so the waiting process is re-parented away
#: from the run's process tree, new session, wait for EOF on stdin, remove the folder.
GUARDIAN = (
    "import os, shutil, sys\n"
    "if os.fork():\n"
    "    os._exit(0)\n"
    "os.setsid()\n"
    "try:\n"
    "    while os.read(0, 4096):\n"
    "        pass\n"
    "finally:\n"
    "    shutil.rmtree(sys.argv[1], ignore_errors=True)\n"
)
FOLDER_PREFIX = "dp-arena-contestant-"
#: What a contestant's failure may say (the ``contestant.failure`` tag -> its words).
FAILURES = {"nonzero_exit": "ended with a non-zero exit code",
            "signal": "was killed by a signal",
            "no_output": "wrote no synthetic.csv",
            "bad_output": "wrote a synthetic.csv that failed the checks",
            "time_limit": "passed the run's time limit",
            "memory_limit": "passed the run's memory limit",
            "refused": "was refused before it ran",
            "harness": "failed in the harness after it ran"}
#: The owner's file of contestant failures (in the state folder; mode 0600).
OWNER_LOG = "contestant-failures.log"


class ContestantFailed(DPArenaError):
    """A contestant's failure as one category of :data:`FAILURES` (``kind``)."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__(f"contestant {name!r} {FAILURES[kind]}",
                         f"the details are in {OWNER_LOG} in the state folder "
                         "(DP_ARENA_STATE_DIR; readable by its owner only)")
        self.kind = kind


@dataclass
class External(Mechanism):
    """Run ``python script FOLDER`` (the protocol below). ``python``: the interpreter of
    the contestant's environment (default: the environment ``env`` built by
    ``dp-arena-contestants install``, else this interpreter); ``script``: the contestant's
    script; ``args``: extra command-line arguments; ``table``: ``codes`` or ``values``;
    ``options``: handed to the script in ``task.json``; ``claim``: what the script claims
    (:func:`dp_arena.mechanisms.contestants.claims.claim_from_config`; the shipped adapters' is their
    manifest's); ``report_tags``: the ``report.json`` tag names it may report.

    Protocol (version 1; the contestant's side is :mod:`dp_arena.mechanisms.contestants.protocol`)
    -------------------------------------------------------------------------------------
    1. **Charge.** One ``declared`` ledger charge for the whole budget
       (:meth:`dp_arena.privacy.release.Releaser.declared`): the contestant's noise is drawn by its
       own library, which the ledger cannot see. The run is tagged ``accounting=declared`` and the
       board marks the row ("budget declared by the contestant, not checked by the ledger").
    2. **Inputs.** A private temporary folder (``tempfile.mkdtemp``: mode 0700; every file 0600)
       receives ``task.json`` (encoding, columns, domain sizes, budget: epsilon, delta, accountant
       and rho under zCDP, public row bounds, options), ``schema.json`` (the columns' schema: the
       contestant is given the domain, never infers it), ``private.csv`` (codes ``0..size-1`` or
       the schema's values, ``mechanism.table``) and ``public.csv`` when the dataset has a public
       part. The id column is never written (record-level data only).
    3. **Command.** ``PYTHON SCRIPT FOLDER [ARGS...]`` runs in the run's isolated child (so under
       ``limits.*``: a contestant past the time or memory limit is killed with the child and the
       run fails with that reason), in its own session, working directory and ``TMPDIR`` inside
       the folder, inside an operating-system sandbox (:mod:`dp_arena.sandbox`, bubblewrap: its own
       PID and network namespaces, so whatever it forks dies with it; as ``nobody`` when the
       harness is root; a read-only view of the system, its interpreter, its script and the
       protocol helper; the private folder its only writable place; no view of the harness's
       processes, home, key file, state folder, tracking store or checkout). Without a working
       sandbox the run is refused unless ``contestant.isolation=none`` says otherwise; every run
       of a contestant is tagged ``contestant.isolation`` with what it ran under. Its environment is an allow-list
       (:func:`dp_arena.mechanisms.contestants.allowed_environment`: ``PATH``, ``HOME``, locale, time zone,
       thread limits) plus the protocol's own (``TMPDIR``, ``PYTHONNOUSERSITE=1``,
       ``MPLBACKEND=Agg``, and ``PYTHONPATH`` = the folder of the protocol helper, so a script can
       ``from protocol import ...`` with no argument): no ``DP_ARENA_SECRET_FILE``, ``DP_ARENA_DATA`` or other ``DP_ARENA_*``,
       no ``MLFLOW_*`` (tracking URI, credentials), no cloud keys. Its output goes to a file in
       the folder, shown on stderr only with ``DP_ARENA_DEBUG=1`` (it may quote data).
    4. **Output.** ``synthetic.csv`` is validated before anything else reads it: exactly the
       columns, at most the public row cap (:func:`dp_arena.mechanisms.row_count.max_rows`), every code an
       integer in ``0..size-1`` (or, for values, the schema check every mechanism's output gets);
       each problem names the column and the count, never a value. Codes are decoded to schema
       values (numeric values drawn inside their bin from public values when there are any) and
       person ids come from public data only (:func:`dp_arena.mechanisms.base.finish`). A failure is one
       of the fixed categories of :data:`FAILURES` (:class:`ContestantFailed`: non-zero exit,
       killed by a signal, no output, bad output; the run's time and memory limits are two more),
       never the contestant's words or numbers: its exit code, its one-line reason
       (``failure.txt``) and the output checks' findings go to the owner's file only
       (:func:`owner_log`, mode 0600, in the state folder). ``report.json`` tags are kept only
       under the names the contestant declares (the shipped adapters' manifest
       :data:`dp_arena.mechanisms.contestants.claims.SHIPPED`, or ``mechanism.report_tags``), at most 10
       finite numbers, tagged ``contestant/<name>``; any other entry is dropped without a trace
       (not even a count, which the contestant would choose).
    5. **Clean-up.** The folder is removed when the command ends, fails or is stopped. So that a
       kill the harness cannot catch (the time limit's SIGKILL of the child, a crash) leaves
       nothing behind either, a *guardian* is started first: a detached process (own session,
       re-parented away from the run's process tree) that waits for the end of a pipe whose only
       writer is the process running this mechanism, then removes the folder.
    6. **Claims.** Every run of a contestant is tagged with its declared claim
       (:class:`dp_arena.mechanisms.contestants.claims.Claim`: ``claim.guarantee``, ``claim.accountant``,
       ``claim.reads_from_data``, ``claim.budget_checked``, ``claim.budget_path``,
       ``claim.note``); the shipped adapters' claims are fixed by their manifest, a user's script
       states its own in ``mechanism.claim`` (default: ``undeclared``, reads ``unknown``).

    Privacy argument
    ----------------
    Declared, not proven: the contestant receives the private table and the budget, and dp-arena
    records the budget as spent. What dp-arena guarantees is the rest: the inputs never leave the
    private folder, the folder is removed, the output is validated and decoded with public
    information only, the contestant's process runs sandboxed (it cannot read the key, the store
    or the state folder, write outside its folder, or outlive the run), and nothing it chooses
    reaches MLflow but the declared report tags and a fixed failure category. What the contestant itself claims (pure or approximate, its accountant, what it reads
    from the data outside its budget) tags every run (step 6) so a board can mark the row.
    ``dp-arena-audit`` (black-box view: it runs ``fit_sample``) measures an empirical lower bound
    on the contestant's epsilon as for any mechanism. Record-level only: an adapter that bounds contributions per person does not
    exist yet, so user-level datasets are ``n/a``.
    """

    name: ClassVar[str] = "external"
    units: ClassVar[tuple[str, ...]] = ("record",)
    accounting: ClassVar[str] = "declared"
    #: Options the script accepts from a closed list (checked before launch).
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: The script converts its budget to zCDP, which needs delta > 0 (refused before it runs).
    needs_delta: ClassVar[bool] = False
    #: A shipped adapter's manifest (its claim and report tag names); ``None``: a user's script.
    adapter: ClassVar[Adapter | None] = None

    python: str = ""
    script: str = ""
    args: list[str] = field(default_factory=list)
    env: str = ""
    table: str = "codes"
    options: dict[str, Any] = field(default_factory=dict)
    claim: dict[str, Any] = field(default_factory=dict)
    report_tags: list[str] = field(default_factory=list)
    #: ``contestant.isolation`` of the run (set by the run's config, not a setting of its own).
    isolation: ClassVar[str] = "sandbox"

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "table": [OneOf(*ENCODINGS)]}

    def __post_init__(self) -> None:
        """The declared constraints, then what this machine must have: the environment, the
        script and the interpreter."""
        super().__post_init__()
        for key, choices in self.option_choices.items():
            if key in self.options and self.options[key] not in choices:
                raise ConfigError(f"{self.name}: mechanism.options.{key} must be one of "
                                  f"{list(choices)} (got {self.options[key]!r})",
                                  f"use mechanism.options.{key}={choices[0]}")
        if self.adapter is not None and (self.claim or self.report_tags):
            raise ConfigError(f"{self.name} is a shipped adapter: its claim and report tags "
                              "are its manifest's (dp_arena/mechanisms/contestants/claims.py)",
                              "remove mechanism.claim and mechanism.report_tags (or run the "
                              "script as mechanism=external with your own claim)")
        self.declared_claim  # noqa: B018 - a bad mechanism.claim is refused when built
        bad = [t for t in self.report_tags if not report_tag_name_ok(t)]
        if bad:
            raise ConfigError(f"mechanism.report_tags must be identifiers of at most 40 "
                              f"characters (got {bad})", "use names like rows_dropped")
        if self.env and self.env not in ENVS:
            raise ConfigError(f"unknown contestant environment {self.env!r}",
                              f"use one of {sorted(ENVS)}")
        if not self.script:
            raise ConfigError(f"{self.name} needs a script",
                              "set mechanism.script=/path/to/my_synth.py")
        if not Path(self.script_path).is_file():
            raise ConfigError(f"contestant script not found: {self.script}",
                              "set mechanism.script to an existing file")
        if self.env and not self.python and manifest(self.env) is None:
            raise ConfigError(f"contestant {self.name!r} needs the environment "
                              f"{self.env!r}, which is not installed",
                              f"run: dp-arena-contestants install {self.env}")
        if not Path(self.interpreter).is_file() or not os.access(self.interpreter, os.X_OK):
            raise ConfigError(f"contestant interpreter not found or not executable: "
                              f"{self.interpreter}", "set mechanism.python to a venv's "
                              "bin/python (e.g. /path/to/venv/bin/python)")

    @property
    def declared_claim(self) -> Claim:
        """What this contestant claims (manifest, else ``mechanism.claim``)."""
        return self.adapter.claim if self.adapter is not None else claim_from_config(self.claim)

    @property
    def declared_report_tags(self) -> tuple[str, ...]:
        return self.adapter.report_tags if self.adapter is not None else tuple(self.report_tags)

    @property
    def interpreter(self) -> str:
        if self.python:
            return str(Path(self.python).expanduser())
        return str(env_python(self.env)) if self.env else sys.executable

    @property
    def script_path(self) -> str:
        path = Path(self.script).expanduser()
        return str(path.resolve() if path.exists() else adapter_path(self.script))

    def sandbox(self) -> Sandbox | None:
        """The sandbox this contestant runs in (``None``: ``contestant.isolation=none``);
        refuses (:class:`ConfigError`) when there is none, or when its view would show the
        key file, the state folder or the working folder (where a local store is)."""
        if self.isolation == "none":
            return None
        found = find_sandbox()
        if not found.available:
            raise ConfigError(f"contestant {self.name!r} needs an operating-system sandbox: "
                              f"{found.problem}", "install bubblewrap (apt-get install "
                              "bubblewrap), or run it unsandboxed knowingly with "
                              "contestant.isolation=none (tagged on the run)")
        shown = exposed(self.read_only(), (secret_path(), state_folder(), Path.cwd()))
        if shown:
            raise ConfigError(f"contestant {self.name!r}: its sandbox would show {shown}",
                              "keep the key file, the state folder and the working folder "
                              "(a local tracking store's) outside the contestant's "
                              "environment, script and arguments")
        return found

    def isolation_tag(self) -> dict[str, str]:
        """``contestant.isolation``: what this contestant runs under (run tag)."""
        if self.isolation == "none":
            return {"contestant.isolation": NO_ISOLATION}
        return {"contestant.isolation": find_sandbox().label}

    def read_only(self) -> list[Path]:
        """What the sandbox shows read-only: the interpreter's folders, the script, the
        protocol helper and the arguments that are existing absolute paths."""
        args = [Path(str(a)) for a in self.args if Path(str(a)).is_absolute()]
        return [*interpreter_roots(self.interpreter), Path(self.script_path), PROTOCOL_DIR,
                *(a for a in args if a.exists() and len(a.parts) > 1)]

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        if self.needs_delta:
            require_delta(self.name, budget, "1e-6", why="converts its budget to zCDP")
        sandbox = self.sandbox()
        release.declared(f"contestant {self.name}", budget.epsilon, budget.delta,
                         note="declared by the contestant; not checked by the ledger")
        with private_folder() as folder:
            write_inputs(folder, self, data, budget, release.accountant)
            command = self.command(folder)
            if sandbox is not None:
                command = sandboxed(command, folder, self.read_only(), sandbox)
                if sandbox.uid is not None:
                    owned_by_nobody(folder)
            run_command(command, folder, self.name)
            release.done()
            try:
                frame = read_output(folder, self.name, self.table, data, budget.epsilon)
            except DPArenaError as exc:
                kind = "no_output" if "wrote no synthetic.csv" in str(exc) else "bad_output"
                owner_note(self.name, kind, str(exc))
                raise ContestantFailed(self.name, kind) from None
            reported = report_tags(folder, self.declared_report_tags)
        if self.table == "codes":
            return with_output_facts(finish(data, frame, rng), reported)
        ids = assign_ids(len(frame), data, rng)
        if ids is not None:
            frame.insert(0, str(data.schema.id_column), ids)
        return with_output_facts(frame[data.schema.names], reported)

    def command(self, folder: Path) -> list[str]:
        return [self.interpreter, self.script_path, str(folder), *map(str, self.args)]

    def setting_tags(self) -> dict[str, str]:
        """The claim's tags (a fit's declared report tags travel with its output)."""
        return self.declared_claim.tags()


# ----- the private folder -------------------------------------------------------------------
@contextmanager
def private_folder() -> Iterator[Path]:
    """A fresh folder (mode 0700) that is removed on exit, and by a guardian process if this
    process dies first (:class:`External`, step 5)."""
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    writer = start_guardian(folder)
    try:
        (folder / "tmp").mkdir(mode=0o700)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(writer)  # the guardian sees EOF and exits (the folder is already gone)


def start_guardian(folder: Path) -> int:
    """Start the guardian of ``folder``; returns the pipe's write end (close it when done)."""
    read_end, write_end = os.pipe()  # not inheritable (PEP 446): only this process writes
    try:
        first = subprocess.Popen([sys.executable, "-c", GUARDIAN, str(folder)], stdin=read_end,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        first.wait()  # exits once the guardian proper is forked off
    except BaseException:
        os.close(write_end)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        os.close(read_end)
    return write_end


def private_write(path: Path, text: str) -> None:
    """Write ``text`` to a new file of mode 0600."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
        fh.write(text)


# ----- inputs -------------------------------------------------------------------------------
def task_document(mech: External, data: Dataset, budget: Budget, accountant: str) -> dict:
    """``task.json`` (public facts only: schema, budget, bounds, settings)."""
    schema = data.schema.drop_id()
    low, high = row_bounds(data, budget.epsilon)
    money: dict[str, Any] = {"epsilon": budget.epsilon, "delta": budget.delta,
                             "accountant": accountant}
    if accountant == "zcdp" and budget.delta > 0:
        money["rho"] = zcdp_rho(budget.epsilon, budget.delta)
    return {"protocol": 1, "mechanism": mech.name, "encoding": mech.table,
            "columns": schema.names, "domain": schema.domain(), "budget": money,
            "rows": {"min": low, "max": high}, "unit": data.unit,
            "files": {"private": "private.csv",
                      "public": "public.csv" if data.public is not None else None,
                      "output": "synthetic.csv", "report": "report.json",
                      "failure": "failure.txt"},
            "options": dict(mech.options)}


def table_text(frame: pd.DataFrame, data: Dataset, encoding: str) -> str:
    schema = data.schema.drop_id()
    out = schema.encode(frame) if encoding == "codes" else frame[schema.names]
    return out.to_csv(index=False)


def write_inputs(folder: Path, mech: External, data: Dataset, budget: Budget,
                 accountant: str) -> None:
    task = task_document(mech, data, budget, accountant)
    private_write(folder / "task.json", json.dumps(task, indent=1))
    params = data.schema.drop_id().to_parameters()
    private_write(folder / "schema.json", json.dumps(params, indent=1, default=str))
    private_write(folder / "private.csv", table_text(data.private, data, mech.table))
    if data.public is not None:
        private_write(folder / "public.csv", table_text(data.public, data, mech.table))


# ----- the command --------------------------------------------------------------------------
#: The folder of the contestant-side helper (``protocol.py``), on the command's ``PYTHONPATH``.
PROTOCOL_DIR = Path(protocol_module.__file__).resolve().parent

def contestant_env(folder: Path) -> dict[str, str]:
    """The command's environment (:class:`External`, step 3): the allow-list of this one, and
    the protocol's ``TMPDIR`` inside the private folder."""
    return allowed_environment(os.environ, {"TMPDIR": str(folder / "tmp"),
                                            "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg",
                                            "PYTHONPATH": str(PROTOCOL_DIR)})


def run_command(command: list[str], folder: Path, name: str) -> None:
    """Run the contestant; a non-zero exit is one :class:`ContestantFailed` (non-zero exit
    or signal), its exit code and one-line reason written to the owner's file only."""
    debug = bool(os.environ.get("DP_ARENA_DEBUG"))
    log_path = folder / "log.txt"
    log = None if debug else os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        proc = subprocess.Popen(command, cwd=folder, env=contestant_env(folder),
                                stdin=subprocess.DEVNULL,
                                stdout=sys.stderr if debug else log,
                                stderr=sys.stderr if debug else log, start_new_session=True,
                                preexec_fn=die_with_parent)  # no orphan if the run is killed
    finally:
        if log is not None:
            os.close(log)
    try:
        code = proc.wait()
    finally:
        if proc.poll() is None:  # stopped (SIGTERM as SystemExit, Ctrl-C): end its session
            kill_session(proc.pid)
            proc.wait()
    if code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        kind = "signal" if code < 0 or code > 128 else "nonzero_exit"  # bwrap: 128 + signal
        owner_note(name, kind, f"{how}; failure.txt: {failure_reason(folder)!r}")
        raise ContestantFailed(name, kind)


def kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def failure_reason(folder: Path, limit: int = 200) -> str:
    """The first line of ``failure.txt`` (the contestant's one-line reason, for the owner)."""
    fh = own_file(folder / "failure.txt")
    if fh is None:
        return ""
    with fh:
        lines = fh.read(4096).decode(errors="replace").strip().splitlines()
    text = "".join(ch for ch in (lines[0] if lines else "") if ch.isprintable())
    return text[:limit]


def state_folder() -> Path:
    """``$DP_ARENA_STATE_DIR``, else ``~/.local/state/dp-arena``."""
    raw = os.environ.get(STATE_ENV)
    return Path(raw).expanduser() if raw else Path.home() / ".local" / "state" / "dp-arena"


def owner_log() -> Path:
    """The owner's file of contestant failures (:data:`OWNER_LOG` in the state folder)."""
    return state_folder() / OWNER_LOG


def owner_note(name: str, kind: str, detail: str) -> None:
    """Append one failure's details (free text, may quote data) to :func:`owner_log`, a
    file of mode 0600 that nothing logs or uploads. A state folder that cannot be written
    loses the details, never the failure's category."""
    path = owner_log()
    line = " ".join(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {name} {kind}: {detail}".split())
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(line[:2000] + "\n")
    except OSError:
        pass


def exposed(shown: Iterable[Path], hidden: Iterable[Path]) -> list[str]:
    """The ``hidden`` paths that a read-only view of ``shown`` would contain."""
    roots = [Path(os.path.abspath(p)) for p in shown]
    return sorted(str(h) for h in map(lambda p: Path(os.path.abspath(p)), hidden)
                  if any(h == r or r in h.parents for r in roots))


def failure_category(exc: BaseException) -> str:
    """The :data:`FAILURES` category of an exception that ended a contestant's run."""
    kind = getattr(exc, "kind", "")
    if isinstance(exc, ContestantFailed) or kind in FAILURES:
        return kind
    if kind in ("time", "memory"):  # dp_arena.run.isolation.RunLimitExceeded
        return f"{kind}_limit"
    return "refused" if isinstance(exc, ConfigError) else "harness"


# ----- the shipped adapters ----------------------------------------------------------------
@dataclass
class OpenDPAIM(External):
    """OpenDP's AIM (``opendp.extras.mbi.AIM``, its defaults), adapter
    ``dp_arena/mechanisms/contestants/opendp_aim.py``, environment ``opendp``."""

    name: ClassVar[str] = "opendp_aim"
    adapter: ClassVar[Adapter | None] = SHIPPED["opendp_aim"]
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"sampling": SAMPLING}
    needs_delta: ClassVar[bool] = True
    script: str = "opendp_aim"
    env: str = "opendp"


@dataclass
class OpenDPMST(External):
    """OpenDP's MST (``opendp.extras.mbi.MST``), ``measure_split`` 0.5 while opendp#2789 (its
    default 0.9 fails its own budget check) is open, and a public dry run that shaves rho by
    parts per thousand until that check passes (``opendp_common.py``); adapter
    ``opendp_mst.py``."""

    name: ClassVar[str] = "opendp_mst"
    adapter: ClassVar[Adapter | None] = SHIPPED["opendp_mst"]
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"sampling": SAMPLING}
    needs_delta: ClassVar[bool] = True
    script: str = "opendp_mst"
    env: str = "opendp"
    options: dict[str, Any] = field(default_factory=lambda: {"measure_split": 0.5,
                                                             "dry_run": True})


@dataclass
class SmartNoise(External):
    """smartnoise-synth's synthesizers (``smartnoise_common.py``): the transformer fitted on
    the schema's domain, and ``options.row_count_share`` (default 1%) of smartnoise's rho kept
    by the adapter for a noisy row count (smartnoise's own is the exact private count)."""

    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"sampling": SAMPLING}
    needs_delta: ClassVar[bool] = True
    env: str = "smartnoise"

    def __post_init__(self) -> None:
        share = self.options.get("row_count_share")
        if "row_count_share" in self.options and not ROW_COUNT_SHARE.accepts(share):
            raise ConfigError(f"{self.name}: mechanism.options.row_count_share must be a "
                              f"number between 0 and 1 (got {share!r})",
                              "use mechanism.options.row_count_share=0.01")
        super().__post_init__()


@dataclass
class SmartNoiseMST(SmartNoise):
    """smartnoise-synth's MST (:class:`SmartNoise`), adapter ``smartnoise_mst.py``,
    environment ``smartnoise``."""

    name: ClassVar[str] = "smartnoise_mst"
    adapter: ClassVar[Adapter | None] = SHIPPED["smartnoise_mst"]
    script: str = "smartnoise_mst"


@dataclass
class SmartNoiseAIM(SmartNoise):
    """smartnoise-synth's AIM (:class:`SmartNoise`), adapter ``smartnoise_aim.py``."""

    name: ClassVar[str] = "smartnoise_aim"
    adapter: ClassVar[Adapter | None] = SHIPPED["smartnoise_aim"]
    script: str = "smartnoise_aim"
