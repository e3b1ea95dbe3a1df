"""pytest plugin: a PostgreSQL server for the store tests (session fixture ``pg_dsn``).

Load it from ``tests/conftest.py`` with ``pytest_plugins = ["tests.pg"]``.

Where the server comes from, in order:

1. ``AGENTCLI_TEST_PG_DSN`` (set by ``.ci/run``): a superuser-ish DSN (it creates databases);
2. a throwaway server started here with ``initdb`` / ``pg_ctl`` when they are on PATH (or under
   ``/usr/lib/postgresql/*/bin``): a temp data directory, 127.0.0.1 on a free port, password
   authentication over TCP, run as a non-root user (``postgres`` or ``nobody``) when we are
   root, since initdb refuses root;
   stopped and removed at the end of the session;
3. otherwise the PostgreSQL tests are skipped, except when ``CI`` is set: then they fail,
   because CI must never skip them silently.

``start_server()`` / ``PgServer`` are also used by ``bench/bench_lookup.py``.
"""

from __future__ import annotations

import atexit
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

ENV_DSN = "AGENTCLI_TEST_PG_DSN"


def find_pg_bin() -> Path | None:
    """The directory holding initdb and pg_ctl (PATH first, then Debian's layout)."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
                    if p.split("/")[-2].isdigit() else 0, reverse=True):
        if os.access(os.path.join(d, "initdb"), os.X_OK) and os.access(os.path.join(d, "pg_ctl"), os.X_OK):
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> str | None:
    """The non-root user to run the server as (None: we are not root)."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


def _ram_dir() -> str | None:
    """/dev/shm when it is a writable tmpfs: a cluster without fsync is thrown away anyway, and
    on a busy disk its ~3,000 files take seconds to create and to delete again at the end."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def with_database(dsn: str, dbname: str) -> str:
    """The same DSN pointing at another database."""
    p = urlsplit(dsn)
    return urlunsplit(p._replace(path="/" + quote(dbname)))


def with_password(dsn: str, password: str) -> str:
    p = urlsplit(dsn)
    host = p.netloc.rsplit("@", 1)[-1]
    user = quote(p.username or "", safe="")
    return urlunsplit(p._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


def fresh_database(admin_dsn: str, dbname: str) -> str:
    """(Re)create database ``dbname`` on the server; returns its DSN."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{dbname}"')
    return with_database(admin_dsn, dbname)


class PgServer:
    """A throwaway PostgreSQL cluster in a temp dir, owned and run by a non-root user."""

    def __init__(self, bin_dir: Path, *, fsync: bool = False):
        self.bin = bin_dir
        self.user = _run_as()
        self.port = _free_port()
        self.password = "pw-" + secrets.token_hex(8)
        self.root = Path(tempfile.mkdtemp(prefix="agentcli-pg-", dir=_ram_dir() if not fsync else None))
        self.data = self.root / "data"
        self.fsync = fsync
        self.dsn = f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"
        self._started = False

    def _run(self, *args: str, timeout: float = 120) -> None:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        for k in list(env):
            if k.startswith("PG"):
                del env[k]
        as_user = {}
        if self.user:  # drop root for initdb/pg_ctl/postgres (like `runuser -u USER`)
            import pwd

            pw = pwd.getpwnam(self.user)
            as_user = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
            env.update(HOME=str(self.root), USER=self.user, LOGNAME=self.user)
        p = subprocess.run([str(self.bin / args[0]), *args[1:]], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=str(self.root), stdin=subprocess.DEVNULL,
                           **as_user)
        if p.returncode != 0:
            log = ""
            logfile = self.root / "server.log"
            if logfile.exists():
                log = logfile.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{args[0]} failed ({p.returncode}): {p.stderr.strip()[-2000:]}\n{log}")

    def start(self) -> "PgServer":
        try:
            return self._start()
        except BaseException:
            self.stop()  # no half-made cluster left in /tmp
            raise

    def _start(self) -> "PgServer":
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user:
            import pwd

            pw = pwd.getpwnam(self.user)
            for path in (self.root, pwfile):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", f"--pwfile={pwfile}",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
                f"-c max_connections=100 -c shared_buffers=256MB")
        if not self.fsync:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
                  "-o", opts, "-w", "-t", "60", "start")
        self._started = True
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if self._started:
            self._started = False
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
            except Exception:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


def start_server(**kw) -> PgServer | None:
    """Start a throwaway server when initdb/pg_ctl exist; None when they do not."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        return None
    return PgServer(bin_dir, **kw).start()


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason}")


_lock = threading.Lock()
_state: dict[str, object] = {}


def _session_dsn() -> str:
    """One server per process, however many fixture definitions ask for it."""
    with _lock:
        if "dsn" in _state:
            return _state["dsn"]  # type: ignore[return-value]
        if "error" in _state:
            _unavailable(_state["error"])  # type: ignore[arg-type]
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            _state["error"] = "psycopg / psycopg-pool are not installed (pip install -e '.[test]')"
            _unavailable(_state["error"])  # type: ignore[arg-type]
        dsn = os.environ.get(ENV_DSN)
        if dsn:
            import psycopg

            try:
                psycopg.connect(dsn, connect_timeout=5).close()
            except psycopg.Error as e:
                _state["error"] = f"{ENV_DSN} is set but the server is unreachable ({type(e).__name__})"
                _unavailable(_state["error"])  # type: ignore[arg-type]
            _state["dsn"] = dsn
            return dsn
        try:
            server = start_server()
        except Exception as e:
            _state["error"] = f"could not start a throwaway server: {e}"
            _unavailable(_state["error"])  # type: ignore[arg-type]
        if server is None:
            _state["error"] = f"set {ENV_DSN}, or install PostgreSQL (initdb and pg_ctl on PATH)"
            _unavailable(_state["error"])  # type: ignore[arg-type]
        _state["server"] = server
        _state["dsn"] = server.dsn
        return server.dsn


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """An admin DSN (may create databases) for a reachable PostgreSQL server."""
    return _session_dsn()


def pytest_sessionfinish(session, exitstatus):
    server = _state.pop("server", None)
    _state.pop("dsn", None)
    if server is not None:
        server.stop()  # type: ignore[attr-defined]
