"""A throwaway PostgreSQL server for the tests of the shared tracking store: Debian's server
binaries (``apt-get install postgresql``; ``.ci/run`` installs them on CI), a fresh cluster in
a temporary folder, listening on a free port of 127.0.0.1 (and a socket in that folder), with
a password (scram-sha-256) for the database user, stopped and removed at the end.

PostgreSQL refuses to run as root: as root the cluster belongs to the ``postgres`` system user
the package creates, and the server runs as that user. Without the binaries a test skips with
the reason; on CI (``CI=true``) it fails instead, since CI must run it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mlflow_server import free_port

#: Where Debian puts the server binaries (one folder per major version).
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin"
READY_TIMEOUT_S = 60
#: The database user, its password and the database the tests' MLflow store lives in.
USER, PASSWORD, DATABASE = "dparena", "s3cret-Pa55word", "mlflow"


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int

    def uri(self, password: bool = True) -> str:
        """The SQLAlchemy URI of the tests' database (with the password, unless asked not)."""
        auth = f"{USER}:{PASSWORD}" if password else USER
        return f"postgresql://{auth}@{self.host}:{self.port}/{DATABASE}"


def server_binaries() -> Path | None:
    """The folder of ``initdb`` and ``postgres`` (the newest Debian version), else ``None``."""
    found = sorted(Path("/").glob(DEBIAN_BINARIES.lstrip("/")),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    found = [p for p in found if (p / "initdb").is_file() and (p / "postgres").is_file()]
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("postgres") else None


def binaries_or_skip() -> Path:
    """The server binaries; skip without them (fail on CI, where ``.ci/run`` installs them)."""
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    found = server_binaries()
    if found is not None:
        return found
    problem = f"no PostgreSQL server binaries ({DEBIAN_BINARIES}/initdb, or initdb on the PATH)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must test the shared store on a real PostgreSQL: {problem}")
    pytest.skip(f"{problem}: apt-get install postgresql")


def server_user() -> str | None:
    """The user the server runs as: ``postgres`` when this process is root, else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root, but there is no 'postgres' user to run PostgreSQL as "
                    "(Debian's postgresql package creates it)")
    return "postgres"


def run_as(cmd: list[str], user: str | None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, user=user, check=False, capture_output=True, text=True,
                          timeout=120, **kwargs)


def wait_ready(port: int, server: subprocess.Popen, log: Path) -> None:
    """Poll a password login until it works, the server dies, or the wait runs out."""
    import psycopg

    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"postgres exited early ({server.returncode}):\n{log.read_text()}")
        try:
            psycopg.connect(host="127.0.0.1", port=port, user=USER, password=PASSWORD,
                            dbname="postgres", connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            time.sleep(0.3)
    pytest.fail(f"postgres not ready after {READY_TIMEOUT_S} s:\n{log.read_text()}")


def create_database(port: int) -> None:
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=port, user=USER, password=PASSWORD,
                         dbname="postgres", autocommit=True) as con:
        con.execute(f"CREATE DATABASE {DATABASE}")


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster on a free loopback port; always stopped and removed.

    Durability is off (``fsync``, ``synchronous_commit``, ``full_page_writes``): a test's
    database is thrown away, and the tests check what concurrent clients see, not crashes of
    the server itself."""
    binaries = binaries_or_skip()
    user = server_user()
    # under /tmp, not pytest's tmp_path: the server's user must reach it, and the socket's
    # path must stay short
    root = Path(tempfile.mkdtemp(prefix="dppg", dir="/tmp"))
    data, log, secret = root / "data", root / "server.log", root / "pw"
    secret.write_text(PASSWORD)
    if user is not None:
        shutil.chown(root, user)
        shutil.chown(secret, user)
    port = free_port()
    server = None
    try:
        init = run_as([str(binaries / "initdb"), "-D", str(data), "-U", USER,
                       f"--pwfile={secret}", "--auth=scram-sha-256", "--encoding=UTF8",
                       "--no-sync"], user, cwd=root)
        if init.returncode != 0:
            pytest.fail(f"initdb failed ({init.returncode}):\n{init.stdout}{init.stderr}")
        secret.unlink()
        with open(log, "w") as out:
            if user is not None:
                shutil.chown(log, user)
            server = subprocess.Popen(
                [str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
                 "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                 "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off"],
                cwd=root, user=user, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        wait_ready(port, server, log)
        create_database(port)
        yield Postgres("127.0.0.1", port)
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(root, ignore_errors=True)


def stop(server: subprocess.Popen) -> None:
    """Fast shutdown (SIGINT: clients disconnected, server ended); SIGKILL after a wait."""
    try:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
