"""What a sweep needs from its surroundings, checked in the launching process before the
parent run is created, each in seconds, each as one :class:`ConfigError` with the fix.

- :func:`check_launcher`: the launcher the command chose can start jobs here: SLURM
  (``hydra/launcher=slurm``) needs ``sbatch`` on the PATH; Ray (``ray_cluster``) needs Ray
  importable; submitit's launchers need ``hydra_plugins.hydra_submitit_launcher``.
- :func:`check_launcher_jobs`: the joblib launcher's ``n_jobs`` is a non-zero integer;
- :func:`check_sweep_folder`: the sweep folder can be created and written (a read-only folder
  used to fail after the parent run started, leaving it RUNNING); the check leaves no folder
  behind, so it runs before the plan.
- :func:`check_tracking_store`: a local SQLite store can be written within
  :data:`STORE_WAIT_S` (one held by another process used to end in hundreds of lines of
  tracebacks and a hang; a read-only one in an SQL dump), is an SQLite file, and can be
  created where it does not exist yet; a database server's store has its driver and answers
  (PostgreSQL's also takes the login).
- :func:`check_tracking_server`: the tracking URI's scheme is one MLflow stores runs in
  (``foo://bar`` got MLflow's model-registry message after the sweep folder existed); an
  ``http(s)`` tracking URI answers within a few seconds
  (MLflow's client retries a refused connection for minutes and then prints a long exception).
  Messages name the URI without credentials (:func:`dp_arena.redact.without_credentials`).
- :func:`nothing_runs`: the message for a sweep whose every job is n/a or a duplicate.
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from dp_arena.errors import ConfigError
from dp_arena.redact import without_credentials
from dp_arena.sweep.records import SweepPlan

#: Seconds the tracking server has to answer the pre-check.
SERVER_TIMEOUT_S = 5.0
#: Seconds a local store may stay locked by another process before the sweep is refused (a
#: concurrent sweep's writes hold it for milliseconds).
STORE_WAIT_S = 10.0


def check_launcher(target: str | None) -> None:
    """Refuse a launcher that cannot start jobs on this machine (see the module docstring)."""
    target = target or ""
    if "submitit" in target and importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") \
            is None:
        raise ConfigError("the submitit launcher (hydra/launcher=slurm or slurm_local) is not "
                          "installed", "pip install hydra-submitit-launcher")
    if "SlurmLauncher" in target and shutil.which("sbatch") is None:
        raise ConfigError("hydra/launcher=slurm needs SLURM, but there is no sbatch on this "
                          "machine's PATH",
                          "run on a SLURM login node, or try the same code path here with "
                          "hydra/launcher=slurm_local (or drop hydra/launcher for the default)")
    if "ray_launcher" in target and importlib.util.find_spec("ray") is None:
        raise ConfigError("hydra/launcher=ray_cluster needs Ray, which is not installed",
                          'pip install "dp-arena[ray]" (or drop hydra/launcher for the default)')


def check_launcher_jobs(n_jobs: object) -> None:
    """The joblib launcher's ``n_jobs`` (``hydra.launcher.n_jobs``, from ``DP_ARENA_JOBS`` by
    default) must be a non-zero integer (negative: joblib's count back from all cores); 0 used
    to fail in joblib after the parent run had started, leaving it RUNNING."""
    if n_jobs is None:
        return
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ConfigError(f"hydra.launcher.n_jobs={n_jobs!r} is not a number of runs at a time "
                          "(a whole number, not 0)",
                          "set hydra.launcher.n_jobs=2 (or DP_ARENA_JOBS=2), or leave it out for "
                          "the default 2")


def check_sweep_folder(sweep_dir: Path) -> None:
    """The sweep folder can be created and a file written in it; what the check created (the
    probe, folders that did not exist) is removed again."""
    missing = [p for p in (sweep_dir, *sweep_dir.parents) if not p.exists()]
    probe = sweep_dir / f".write-check-{uuid.uuid4().hex[:8]}"
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot write the sweep folder {sweep_dir} "
                          f"({exc.strerror or type(exc).__name__})",
                          "run from a folder you can write to, or set "
                          "hydra.sweep.dir=/a/writable/folder") from None
    finally:
        remove_empty(missing)


def remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) where they exist and are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            continue


def sqlite_file(uri: str) -> Path | None:
    """The file of a local SQLite tracking URI (``sqlite:///path``, as the harness opens it),
    else ``None``."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


#: The fix that applies to every store problem: another store.
OTHER_STORE = "or use another store: tracking.uri=sqlite:///a/writable/folder/mlflow.db"


def check_tracking_store(uri: str, wait_s: float = STORE_WAIT_S) -> None:
    """A local SQLite store (``uri`` resolved) must take a write within ``wait_s`` (tried in a
    transaction that is rolled back: nothing is written), or be creatable where it does not
    exist yet (nothing is created). A database server's store: :func:`check_database_server`;
    an ``http(s)`` one is left to :func:`check_tracking_server`."""
    path = sqlite_file(uri)
    if path is None:
        check_database_server(uri, min(wait_s, SERVER_TIMEOUT_S))
        return
    if "?" in path.name:
        name, _, options = path.name.partition("?")
        raise ConfigError(f"tracking.uri {without_credentials(uri)!r} carries SQLite options "
                          f"({options}), which dp-arena does not pass on (it would create a "
                          "file of that name)",
                          f"drop them: tracking.uri=sqlite:///{path.with_name(name)}")
    if not path.exists():
        check_store_folder(path)
        return
    if not path.is_file():
        raise ConfigError(f"the MLflow store {path} is a folder, not an SQLite file",
                          f"point tracking.uri at a file in it: sqlite:///{path / 'mlflow.db'}")
    problem = store_write_problem(path, wait_s)
    if problem == "locked":
        raise ConfigError(f"the MLflow store {path} is locked by another process (it took no "
                          f"write for {wait_s:.0f} s)",
                          f"end or finish the process holding it (`fuser -v {path}` names it: an "
                          f"open sqlite3 shell, a stuck sweep), {OTHER_STORE}")
    if problem == "read-only":
        raise ConfigError(f"the MLflow store {path} is read-only: runs cannot be written to it",
                          f"make it and its folder writable (chmod u+w {path}), {OTHER_STORE}")
    if problem:
        raise ConfigError(f"the MLflow store {path} cannot be used ({problem})",
                          f"move the file away (MLflow creates a new store), {OTHER_STORE}")


#: Database schemes MLflow's SQL store takes: (driver modules, one of which SQLAlchemy needs;
#: the pip package; the default port).
DATABASES = {"postgresql": (("psycopg2", "psycopg"), "psycopg2-binary", 5432),
             "mysql": (("MySQLdb", "pymysql"), "pymysql", 3306),
             "mssql": (("pyodbc", "pymssql"), "pyodbc", 1433)}
#: SQLAlchemy's driver name -> (the module it imports, the pip package that has it).
DRIVERS = {"psycopg": ("psycopg", '"psycopg[binary]"'),
           "psycopg2": ("psycopg2", "psycopg2-binary"),
           "pg8000": ("pg8000", "pg8000"), "mysqldb": ("MySQLdb", "mysqlclient"),
           "pymysql": ("pymysql", "pymysql"), "pyodbc": ("pyodbc", "pyodbc"),
           "pymssql": ("pymssql", "pymssql")}


def database_driver(uri: str, scheme: str) -> tuple[tuple[str, ...], str]:
    """(driver modules, pip package) ``uri`` needs: the driver it names (``+psycopg2``) or
    SQLAlchemy's default for the scheme (for ``postgresql``: psycopg from SQLAlchemy 2.1 on,
    psycopg2 before), else any of :data:`DATABASES`'s."""
    try:
        from sqlalchemy.engine.url import make_url

        driver = make_url(uri).get_dialect().driver
    except Exception:  # noqa: BLE001 - an unknown driver or a URI SQLAlchemy cannot parse
        driver = urllib.parse.urlsplit(uri).scheme.lower().partition("+")[2]
    if driver in DRIVERS:
        module, package = DRIVERS[driver]
        return (module,), package
    modules, package, _ = DATABASES[scheme]
    return modules, package


def check_database_server(uri: str, timeout_s: float = SERVER_TIMEOUT_S) -> None:
    """A ``postgresql``/``mysql``/``mssql`` tracking URI needs a database driver installed and
    its server accepting connections within ``timeout_s`` (a missing driver was a bare
    ``ModuleNotFoundError``); a PostgreSQL server must also take the URI's login
    (:func:`check_database_login`). Named without credentials."""
    import socket

    parts = urllib.parse.urlsplit(uri)
    scheme = parts.scheme.lower().partition("+")[0]
    if scheme not in DATABASES:
        return
    port = DATABASES[scheme][2]
    shown = without_credentials(uri)
    wanted, package = database_driver(uri, scheme)
    if all(importlib.util.find_spec(m) is None for m in wanted):
        raise ConfigError(f"tracking.uri {shown}: the {scheme} driver is not installed "
                          f"({' or '.join(wanted)})",
                          f"pip install {package} (or leave tracking.uri unset for the local "
                          "store mlflow.db)")
    try:
        socket.create_connection((parts.hostname or "localhost", parts.port or port),
                                 timeout=timeout_s).close()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the {scheme} server of tracking.uri {shown} does not answer "
                          f"({getattr(exc, 'strerror', None) or type(exc).__name__})",
                          "start it, or fix tracking.uri (leave it unset for the local store "
                          "mlflow.db)") from None
    if scheme == "postgresql":
        check_database_login(uri, timeout_s)


def check_database_login(uri: str, timeout_s: float = SERVER_TIMEOUT_S) -> None:
    """The PostgreSQL server of ``uri`` takes its user, password (from the URI, ``PGPASSWORD``
    or ``~/.pgpass``) and database: a wrong one used to end in MLflow's retries and a long
    traceback. The server's reason is passed on scrubbed (no values; it never quotes the
    password)."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    from dp_arena.redact import scrubbed

    engine = sqlalchemy.create_engine(uri, poolclass=NullPool,
                                      connect_args={"connect_timeout": max(1, int(timeout_s))})
    try:
        engine.connect().close()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        reason = scrubbed(str(getattr(exc, "orig", exc)).splitlines()[0] if str(exc) else "")
        raise ConfigError(f"the postgresql server of tracking.uri {without_credentials(uri)} "
                          f"refuses the login ({reason or type(exc).__name__})",
                          "fix the user, password or database in tracking.uri (or put the "
                          "password in ~/.pgpass or PGPASSWORD), or create the database "
                          "(createdb)") from None
    finally:
        engine.dispose()


def store_write_problem(path: Path, wait_s: float) -> str | None:
    """``locked``, ``read-only``, SQLite's own reason, or ``None`` when a write transaction on
    the SQLite file ``path`` can begin and write within ``wait_s`` (then rolled back)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=wait_s,
                              isolation_level=None)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("CREATE TABLE dp_arena_write_check (x)")  # needs a writable file
        con.execute("ROLLBACK")
    except sqlite3.Error as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return "locked"
        if "readonly" in text or "read-only" in text:
            return "read-only"
        return str(exc)
    finally:
        con.close()
    return None


def check_store_folder(path: Path) -> None:
    """The folder of a store that does not exist yet can be created and written (nothing is
    left behind: the probe of :func:`check_sweep_folder`)."""
    try:
        check_sweep_folder(path.parent)
    except ConfigError:
        raise ConfigError(f"cannot create the MLflow store {path}: its folder "
                          f"{path.parent} cannot be created or written",
                          OTHER_STORE.removeprefix("or ")) from None


#: URI schemes MLflow stores runs in (a database scheme may name its driver: ``+driver``).
TRACKING_SCHEMES = ("file", "sqlite", "postgresql", "mysql", "mssql", "http", "https",
                    "databricks", "databricks-uc", "uc")


def tracking_scheme_problem(uri: str | None) -> str | None:
    """Why MLflow cannot store runs at ``uri`` (an unknown scheme such as ``foo://``), or
    ``None``: a plain path (no scheme, or a one-letter drive) is a folder."""
    if not uri:
        return None
    scheme = urllib.parse.urlsplit(uri).scheme.lower()
    if len(scheme) <= 1 or scheme.split("+")[0] in TRACKING_SCHEMES:
        return None
    return f"tracking.uri {without_credentials(uri)!r}: MLflow cannot store runs at a " \
           f"{scheme}:// address"


def check_tracking_server(uri: str | None, timeout_s: float = SERVER_TIMEOUT_S) -> None:
    """A tracking URI of a scheme MLflow has no store for is refused
    (:func:`tracking_scheme_problem`; MLflow's own message is about its model registry and
    came after the sweep folder existed); an ``http(s)`` tracking URI must answer MLflow's
    health endpoint within ``timeout_s`` (any HTTP answer counts: an authentication error is
    the server answering)."""
    problem = tracking_scheme_problem(uri)
    if problem:
        raise ConfigError(problem, "use sqlite:///path/to/mlflow.db, file:///a/folder or the "
                          "http(s)://host:port of an MLflow server (leave tracking.uri unset "
                          "for the local store mlflow.db)")
    if not uri or not uri.startswith(("http://", "https://")):
        return
    shown = without_credentials(uri)
    try:
        # any answer counts, so the request needs no credentials
        urllib.request.urlopen(f"{shown.rstrip('/')}/health", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return  # the server is there
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"the MLflow tracking server at {shown} does not answer "
                          f"({getattr(reason, 'strerror', None) or type(reason).__name__})",
                          "start it (mlflow server --host ... --port ...) or fix tracking.uri "
                          "(leave it unset for the local store mlflow.db)") from None


def nothing_runs(plan: SweepPlan) -> str | None:
    """Why nothing of a planned sweep can run, or ``None`` when some job runs."""
    if plan.total is None or plan.total > 0:
        return None
    return (f"nothing to run: every one of the sweep's {len(plan.jobs)} jobs is n/a "
            f"({len(plan.of('n/a'))}) or repeats another job\n  fix: choose a mechanism that "
            f"applies to the dataset (the n/a lines above say why each does not)")
