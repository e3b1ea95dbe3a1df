"""Store faults (issue 14): a slow SQLite view, a locked SQLite file, `db init --force` on what
is not a database file, a PostgreSQL URL whose password holds a raw '@'.

Real SQLite files: a view over a recursive CTE that counts to 10**9 (minutes of work), and a
second connection holding BEGIN EXCLUSIVE. Bounds like ``join(20)`` only stop a hung test; no
assertion is about how fast anything is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from agentcli.drafts.store import DraftStore
from agentcli.errors import ConfigError, StoreError, UsageError
from agentcli.stores import init_sqlite, mask_dsn, open_store
from agentcli.stores.sqlite import SQLiteStore
from agentcli.ticket import Ticket
from agentcli.tools import ToolDeps, default_registry, run_tool

from .conftest import agentcli_exe

# A long file (slow and locked lookups cut at their timeouts):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

SLOW_VIEW = ("CREATE VIEW orders AS SELECT o.* FROM orders_data o, "
             "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
             "SELECT max(x) FROM c) AS slow")


@pytest.fixture(scope="module")
def slow_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("slow") / "slow.sqlite3"
    init_sqlite(path, 20)
    with sqlite3.connect(path) as c:
        c.execute("ALTER TABLE orders RENAME TO orders_data")
        c.execute(SLOW_VIEW)
    return path


@pytest.fixture
def rw_db(tmp_path) -> Path:
    path = tmp_path / "orders.sqlite3"
    init_sqlite(path, 20)
    return path


async def lookup(store, tmp_path, timeout, code="GH56JK78MN"):
    deps = ToolDeps(store, DraftStore(tmp_path / "drafts"))
    return await run_tool(default_registry(), "get_order_status", {"order_code": code}, deps,
                          Ticket("t").view(), timeout)


def in_thread(fn, bound=20.0):
    """Run ``fn`` in a daemon thread; return (finished, result): a hang fails instead of hanging."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(bound)
    return (not t.is_alive()), (out[0] if out else None)


# --------------------------------------------------------------------------- a slow view

def test_a_timed_out_slow_lookup_is_stopped_and_closing_does_not_wait_for_it(slow_db, tmp_path):
    store = SQLiteStore(slow_db)

    async def main():
        first, second = await asyncio.gather(lookup(store, tmp_path, 0.5),
                                             lookup(store, tmp_path, 0.5, "ORD-20261234"))
        await store.aclose()
        return first, second

    finished, outs = in_thread(lambda: asyncio.run(main()))
    assert finished, "closing the store (or the loop) waited for the interrupted query"
    assert [(o.is_error, o.outcome) for o in outs] == [(True, "timeout")] * 2
    # The lookup threads were told to stop, and they do: none is left behind running SQL.
    for t in threading.enumerate():
        if t.name == "agentcli-sqlite-lookup":
            t.join(20)
            assert not t.is_alive()


def test_a_slow_lookup_leaves_the_loop_free(slow_db, tmp_path):
    store = SQLiteStore(slow_db)
    ticks: list[int] = []

    async def ticker():
        for i in range(5):
            await asyncio.sleep(0.01)
            ticks.append(i)

    async def main():
        task = asyncio.create_task(lookup(store, tmp_path, 1.0))
        await ticker()
        done_before = task.done()
        out = await task
        await store.aclose()
        return done_before, out

    finished, (done_before, out) = in_thread(lambda: asyncio.run(main()))
    assert finished and not done_before and ticks == [0, 1, 2, 3, 4]
    assert out.outcome == "timeout"


def _popen(args, env):
    return subprocess.Popen([agentcli_exe(), *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for_lookup(p, home: Path):
    """Wait until a session log shows the lookup started (the process is inside it)."""
    import time

    give_up = time.monotonic() + 60  # only stops a broken test; nothing is asserted about it
    while time.monotonic() < give_up and p.poll() is None:
        for log in (home / "sessions").glob("*.jsonl"):
            if "get_order_status" in log.read_text(errors="replace"):
                return
        time.sleep(0.05)
    raise AssertionError(f"no lookup started (exit {p.poll()})")


def test_ask_with_a_slow_view_ends_after_its_answer(slow_db, cli_env):
    """The issue's example: two codes, offline provider, a tool timeout: the process exits
    (its lookup threads are still inside SQLite when the answer is printed)."""
    p = subprocess.run([agentcli_exe(), "ask", "--provider", "offline", "--tool-timeout", "0.3",
                        "--db", str(slow_db), "Where are GH56JK78MN and ORD-20261234?"],
                       env=cli_env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr, p.stderr
    # both lookups timed out: the offline answer says so, and the question is incomplete
    # (lookup_failed, exit 1) because a failure on our side left it unanswered
    assert p.returncode == 1, p.stderr
    assert p.stdout.count("lookup failed: get_order_status timed out after 0.3 s") == 2, p.stdout
    assert "incomplete (lookup_failed)" in p.stderr and "GH56JK78MN (timeout)" in p.stderr


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("command", ["ask", "batch"])
def test_a_signal_during_a_slow_lookup_exits_at_once(slow_db, cli_env, home, tmp_path, command, sig, code):
    if command == "ask":
        args = ["ask", "--provider", "offline", "--tool-timeout", "120", "--db", str(slow_db),
                "Where is GH56JK78MN?"]
    else:
        q = tmp_path / "q.txt"
        q.write_text("Where is GH56JK78MN?\nWhere is ORD-20261234?\n")
        args = ["batch", "--provider", "offline", "--tool-timeout", "120", "--db", str(slow_db), str(q)]
    p = _popen(args, cli_env)
    try:
        _wait_for_lookup(p, home)
        p.send_signal(sig)
        assert p.wait(timeout=20) == code
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# --------------------------------------------------------------------------- a locked file

def _hold_exclusive(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_a_locked_database_is_bounded_by_the_tool_timeout_and_leaves_the_loop_free(rw_db, tmp_path):
    store = SQLiteStore(rw_db)
    holder = _hold_exclusive(rw_db)
    ticks: list[int] = []

    async def main():
        task = asyncio.create_task(lookup(store, tmp_path, 1.0))
        for i in range(5):
            await asyncio.sleep(0.01)
            ticks.append(i)
        done_before = task.done()
        return done_before, await task

    try:
        finished, (done_before, out) = in_thread(lambda: asyncio.run(main()))
    finally:
        holder.rollback()
        holder.close()
    assert finished and not done_before and ticks == [0, 1, 2, 3, 4]
    assert (out.is_error, out.outcome) == (True, "timeout"), out.result
    # The lock is gone: the same store answers again.
    again = asyncio.run(lookup(store, tmp_path, 5.0))
    assert again.outcome == "ok" and again.result["status"] == "pending_payment"
    asyncio.run(store.aclose())


def test_a_database_locked_past_the_stores_own_bound_is_a_store_error(rw_db):
    store = SQLiteStore(rw_db)
    store.BUSY_WAIT_S = 0.2
    holder = _hold_exclusive(rw_db)
    try:
        with pytest.raises(StoreError, match="busy"):
            asyncio.run(store.get_order("GH56JK78MN", None, True))
    finally:
        holder.rollback()
        holder.close()
        asyncio.run(store.aclose())


def test_a_database_locked_at_start_is_reported_as_locked(rw_db, cli, cli_env):
    # open_store's start-up check waits START_BUSY_WAIT_S for the lock, then says why it failed;
    # the command prints that ConfigError as its one line
    holder = _hold_exclusive(rw_db)
    try:
        p = cli(["orders", "show", "GH56JK78MN", "--db", str(rw_db)], cli_env)
    finally:
        holder.rollback()
        holder.close()
    assert p.returncode == 3 and len(p.err.strip().splitlines()) == 1, p.err
    assert "locked" in p.err and "busy" in p.err
    assert "not a SQLite database" not in p.err and "db init" not in p.err
    assert p.out == ""


def test_an_existing_file_that_is_not_a_database_never_suggests_db_init(tmp_path):
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not sqlite at all " * 200)
    folder = tmp_path / "folder.sqlite3"
    folder.mkdir()
    tables = tmp_path / "other.sqlite3"
    sqlite3.connect(tables).executescript("CREATE TABLE orders (id INTEGER);")
    for path in (junk, folder, tables):
        with pytest.raises(ConfigError) as info:
            open_store(str(path))
        assert "db init" not in info.value.message, path
    with pytest.raises(ConfigError, match="db init"):  # a missing file: creating one is the fix
        open_store(str(tmp_path / "missing.sqlite3"))


# --------------------------------------------------------------------------- db init --force

def _targets(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    links = {"link-to-folder": folder, "link-to-fifo": fifo, "link-to-device": Path("/dev/null"),
             "link-to-nothing": tmp_path / "nothing-here"}
    out = {"folder": folder, "empty folder": empty, "fifo": fifo}
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
        out[name] = tmp_path / name
    return out


def test_db_init_force_replaces_only_a_regular_file(tmp_path):
    for what, path in _targets(tmp_path).items():
        before = os.lstat(path)
        for force in (True, False):
            with pytest.raises(UsageError) as info:
                init_sqlite(path, 5, force=force)
            assert info.value.exit_code == 2 and "\n" not in info.value.message, what
        after = os.lstat(path)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode), what
    assert (tmp_path / "a-folder" / "keep.txt").read_text() == "keep"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # nothing left behind
    # A regular file, and a symlink to one (the file it points to is replaced; the link stays).
    real = tmp_path / "real.sqlite3"
    real.write_text("old")
    link = tmp_path / "link.sqlite3"
    link.symlink_to(real)
    assert init_sqlite(real, 5, force=True) == 5
    assert init_sqlite(link, 7, force=True) == 7
    assert link.is_symlink()
    with sqlite3.connect(real) as c:
        assert c.execute("SELECT count(*) FROM orders").fetchone()[0] == 7


def test_cli_db_init_force_on_a_folder_is_one_line_exit_2(tmp_path, cli, cli_env):
    folder = tmp_path / "not-a-db"
    folder.mkdir()
    p = cli(["db", "init", "--db", str(folder), "--force"], cli_env)
    assert p.returncode == 2 and folder.is_dir()
    assert len(p.err.strip().splitlines()) == 1 and "Traceback" not in p.err


# --------------------------------------------------------------------------- DSN secrets

RAW_AT = ["p@ss@w0rd", "s3cr@t-99", "tail@", "a/b@cdefg", "ab#cd@ef", "qq?rr@ss"]


@pytest.mark.parametrize("password", RAW_AT)
def test_a_raw_at_in_a_postgres_password_never_shows(password):
    pytest.importorskip("psycopg")
    url = f"postgresql://agent:{password}@127.0.0.1:9/orders"
    pieces = [password] + [x for sep in "@/#?" for x in password.split(sep) if len(x) >= 3]
    with pytest.raises(ConfigError) as info:
        open_store(url)
    from agentcli.stores import init_postgres

    with pytest.raises(ConfigError) as info2:
        init_postgres(url, 5)
    for text in (info.value.message, info2.value.message, mask_dsn(url)):
        assert "***" in text
        for piece in pieces:
            assert piece not in text, (piece, text)
    assert "%40" in info.value.message  # says how to write it


@pytest.mark.parametrize("url, shown", [
    ("postgresql://app:s3cr%40t@db.example:5432/shop", "postgresql://app:***@db.example:5432/shop"),
    ("postgresql://db/shop", "postgresql://db/shop"),
    ("postgresql://app:ab#cd@db/shop", "postgresql://app:***@db/shop"),
    ("postgresql://app@db/shop?password=hunter2@x&sslmode=require",
     "postgresql://app@db/shop?password=***&sslmode=require"),
    ("host=db password=hunter22 user=app", "host=db password=*** user=app"),
])
def test_mask_dsn_masks_every_password_form(url, shown):
    assert mask_dsn(url) == shown
