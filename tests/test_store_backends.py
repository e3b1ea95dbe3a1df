"""The orders store, the same tests over SQLite and PostgreSQL (issue 6).

Real parts only: a real SQLite file (``demo_db``), a real PostgreSQL server (``pg_dsn`` from
``tests/pg.py``: ``AGENTCLI_TEST_PG_DSN`` or a throwaway server started with initdb/pg_ctl),
the real tool layer (``tools.run_tool``), the real console script (``cli``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest

from agentcli.drafts.store import DraftStore
from agentcli.errors import ConfigError
from agentcli.stores import open_store
from agentcli.stores.sqlite import SQLiteStore
from agentcli.ticket import Ticket
from agentcli.tools import ToolDeps, default_registry, run_tool

# Until tests/conftest.py has `pytest_plugins = ["tests.pg"]`, take the fixture from here.
from tests.pg import fresh_database, pg_dsn, with_database, with_password  # noqa: F401

GH56 = {"found": True, "order_code": "GH56JK78MN", "status": "pending_payment",
        "status_detail": "payment received, not yet matched to the order",
        "product": "PhotoFlux Pro license", "placed_on": "2026-11-20",
        "estimated_delivery": None, "license_issued": False}
ORD1234_LINES = [
    {"sku": "MAN-PRT", "name": "Printed manual", "quantity": 1, "unit_price_cents": 1500},
    {"sku": "USB-KEY", "name": "Hardware license key (USB)", "quantity": 1, "unit_price_cents": 2500},
]
MISSING = "ZZ99ZZ99ZZ"
WRONG_PASSWORD = "wrong-Pa55word-XYZ"


def _sorted_lines(rec):
    if rec and "line_items" in rec:
        rec = {**rec, "line_items": sorted(rec["line_items"], key=lambda li: (li["sku"], li["name"]))}
    return rec


def tool(store, args, *, customer=None, timeout=10.0):
    return asyncio.run(atool(store, args, customer=customer, timeout=timeout))


def get(store, code, customer, include_lines):
    """One ``await get(store, ...)`` on a loop of its own (PostgreSQL: a pool of its own)."""
    return asyncio.run(store.get_order(code, customer, include_lines))


def close(store):
    asyncio.run(store.aclose())


async def atool(store, args, *, customer=None, timeout=10.0):
    """One call through the tool layer on the running loop (PostgreSQL: the async pool)."""
    deps = ToolDeps(store, DraftStore(Path(tempfile.gettempdir()) / "agentcli-test-drafts"))
    return await run_tool(default_registry(), "get_order_status", args, deps,
                          Ticket("t", customer=customer).view(), timeout)


# --------------------------------------------------------------------------- backends

class SQLiteBackend:
    name = "sqlite"

    def __init__(self, path: Path):
        self.url = str(path)
        self.path = path

    def open(self, pool_size: int = 2):
        return open_store(self.url, pool_size=pool_size)

    def write_through_store(self, store):
        store._conn().execute("UPDATE orders SET status = 'cancelled' WHERE code = 'GH56JK78MN'")

    async def _traced(self, store, seen, coro):
        conn = store._conn()  # the event loop thread's connection: the fast path's
        conn.set_trace_callback(seen.append)
        try:
            return await coro
        finally:
            conn.set_trace_callback(None)

    def status_of(self, code):
        with sqlite3.connect(self.path) as c:
            return c.execute("SELECT status FROM orders WHERE code = ?", (code,)).fetchone()[0]

    def trace(self, store, coro):
        """Run ``coro``; every SQL statement the store's connection ran (parameters expanded)."""
        seen: list[str] = []
        return asyncio.run(self._traced(store, seen, coro)), seen


class PostgresBackend:
    name = "postgresql"

    def __init__(self, url: str, admin: str):
        self.url = url
        self.admin = admin

    def open(self, pool_size: int = 2):
        return open_store(self.url, pool_size=pool_size)

    def write_through_store(self, store):
        async def write():
            async with (await store._pool()).connection() as conn:
                await conn.execute("UPDATE orders SET status = 'cancelled' WHERE code = 'GH56JK78MN'")

        asyncio.run(write())

    def status_of(self, code):
        import psycopg

        with psycopg.connect(self.url) as c:
            return c.execute("SELECT status FROM orders WHERE code = %s", (code,)).fetchone()[0]

    def trace(self, store, coro):
        """Run ``coro``; the libpq protocol trace of the store's connection: Parse (SQL text)
        and Bind (values)."""
        import psycopg

        assert store.pool_size == 1, "trace needs the single pooled connection"
        fd, name = tempfile.mkstemp(prefix="pgtrace-")

        async def traced():
            pool = await store._pool()
            async with pool.connection() as conn:
                conn.pgconn.trace(fd)
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                return await coro
            finally:
                async with pool.connection() as conn:
                    conn.pgconn.untrace()
                await store.aclose()

        try:
            result = asyncio.run(traced())
        finally:
            os.close(fd)
            seen = Path(name).read_text(errors="replace").splitlines()
            os.unlink(name)
        return result, seen


@pytest.fixture(scope="session")
def pg_demo_url(pg_dsn):
    from agentcli.stores import init_postgres

    url = fresh_database(pg_dsn, "agentcli_test_demo")
    assert init_postgres(url, 300) == 300
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request, demo_db):
    if request.param == "sqlite":
        return SQLiteBackend(demo_db)
    return PostgresBackend(request.getfixturevalue("pg_demo_url"), request.getfixturevalue("pg_dsn"))


@pytest.fixture
def store(backend):
    s = backend.open()
    yield s
    close(s)


# --------------------------------------------------------------------------- store behaviour

def test_found_returns_the_minimal_record(store):
    assert get(store, "GH56JK78MN", None, False) == GH56
    out = tool(store, {"order_code": "  gh56jk78mn "})
    assert (out.is_error, out.outcome, out.result) == (False, "ok", GH56)


def test_unknown_order_is_not_found_not_an_error(store):
    assert get(store, MISSING, None, False) is None
    assert get(store, MISSING, None, True) is None
    out = tool(store, {"order_code": MISSING.lower()})
    assert (out.is_error, out.outcome) == (False, "not_found")
    assert out.result == {"found": False, "order_code": MISSING}


def test_customer_scope(store):
    owner, other = "ben.okafor@example.net", "ana.silva@example.com"
    assert get(store, "ORD-20261234", owner, False)["status"] == "shipped"
    assert get(store, "ORD-20261234", owner.upper(), False)["found"] is True
    assert get(store, "ORD-20261234", other, False) is None
    assert get(store, "ORD-20261234", other, True) is None
    # The customer is a bound value, never SQL text.
    assert get(store, "ORD-20261234", "x' OR '1'='1", False) is None
    assert get(store, "ORD-20261234", "') OR ('1'='1", True) is None
    out = tool(store, {"order_code": "ORD-20261234"}, customer=other)
    assert out.result == {"found": False, "order_code": "ORD-20261234"}
    assert tool(store, {"order_code": "ORD-20261234"}, customer=owner).result["found"] is True


def test_customer_filter_is_in_the_sql(backend):
    s = backend.open(pool_size=1)
    try:
        found, seen = backend.trace(s, s.get_order("ORD-20261234", "ana.silva@example.com", False))
        assert found is None
    finally:
        close(s)
    text = "\n".join(seen)
    if backend.name == "sqlite":
        [stmt] = [x for x in seen if "FROM orders" in x]
        assert "code = 'ORD-20261234'" in stmt
        assert "lower(customer_email) = lower('ana.silva@example.com')" in stmt
    else:
        parse = [x for x in seen if "\tParse\t" in x and "FROM orders" in x]
        assert parse and "lower(customer_email) = lower($2)" in parse[0]
        assert "ana.silva@example.com" not in parse[0]  # sent as a parameter (Bind), not as SQL
        assert any("\tBind\t" in x and "'ana.silva@example.com'" in x for x in seen)
        assert "DataRow" not in text  # the other customer's row never left the server


def test_line_items_only_on_request(store):
    rec = get(store, "ORD-20261234", None, False)
    assert "line_items" not in rec
    rec = get(store, "ORD-20261234", None, True)
    assert sorted(rec["line_items"], key=lambda li: li["sku"]) == ORD1234_LINES
    assert all(type(li["quantity"]) is int and type(li["unit_price_cents"]) is int
               for li in rec["line_items"])
    out = tool(store, {"order_code": "ORD-20261234", "include_line_items": True})
    assert len(out.result["line_items"]) == 2
    assert "line_items" not in tool(store, {"order_code": "ORD-20261234"}).result


def test_dates_and_booleans(store):
    shipped = get(store, "ORD-20261234", None, False)
    assert (shipped["placed_on"], shipped["estimated_delivery"]) == ("2026-11-18", "2026-12-03")
    assert shipped["license_issued"] is True
    issued = get(store, "KL12MN34PQ", None, False)
    assert issued["license_issued"] is True and issued["estimated_delivery"] is None
    pending = get(store, "GH56JK78MN", None, False)
    assert pending["license_issued"] is False
    # Through the tool layer the result is plain JSON: strings, null, true/false.
    out = tool(store, {"order_code": "ORD-20261234"})
    back = json.loads(json.dumps(out.result))
    assert back["placed_on"] == "2026-11-18" and back["license_issued"] is True


def test_the_store_session_is_read_only(backend, store):
    before = backend.status_of("GH56JK78MN")
    with pytest.raises(Exception) as info:
        backend.write_through_store(store)
    assert "read" in str(info.value).lower()  # "readonly database" / "read-only transaction"
    assert backend.status_of("GH56JK78MN") == before == "pending_payment"
    assert get(store, "GH56JK78MN", None, False) == GH56  # still usable


def test_a_broken_or_missing_database_is_a_config_error(backend, tmp_path):
    if backend.name == "sqlite":
        bad = str(tmp_path / "nope.sqlite3")
        secret = None
    else:
        bad = with_password(backend.url, WRONG_PASSWORD)
        secret = WRONG_PASSWORD
    with pytest.raises(ConfigError) as info:
        open_store(bad)
    msg = info.value.message
    assert info.value.exit_code == 3 and "\n" not in msg
    if secret:
        assert secret not in msg and "***" in msg
        assert "password authentication failed" in msg


# --------------------------------------------------------------------------- PostgreSQL only

def _admin(pg_dsn):
    import psycopg

    return psycopg.connect(pg_dsn, autocommit=True)


def _our_backends(admin, dbname):
    return {r[0] for r in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = 'agentcli'",
        (dbname,))}


@pytest.mark.postgres
def test_pg_lookups_reuse_the_pool(pg_demo_url, pg_dsn):
    s = open_store(pg_demo_url, pool_size=3)
    try:
        with _admin(pg_dsn) as admin:
            before = _our_backends(admin, "agentcli_test_demo")

            async def many():  # more concurrent lookups than connections: at most pool_size
                found = await asyncio.gather(*(s.get_order("GH56JK78MN", None, i % 2 == 0)
                                               for i in range(60)))
                assert all(r["found"] for r in found)
                outs = await asyncio.gather(*(atool(s, {"order_code": "ORD-20261234",
                                                        "include_line_items": i % 2 == 0})
                                              for i in range(30)))
                return outs, _our_backends(admin, "agentcli_test_demo")

            outs, during = asyncio.run(many())
            assert all(not o.is_error and o.result["found"] for o in outs)
            assert len(during - before) <= s.pool_size
    finally:
        close(s)


@pytest.mark.postgres
def test_pg_async_path_is_read_only_and_scoped(pg_demo_url):
    """The tool layer's connections (the async pool) have the same read-only options."""
    import psycopg

    s = open_store(pg_demo_url, pool_size=1)

    async def main():
        assert await s.get_order("GH56JK78MN", None, False) == GH56
        assert await s.get_order("ORD-20261234", "ana.silva@example.com", True) is None
        rec = await s.get_order("ORD-20261234", "BEN.okafor@example.net", True)
        assert _sorted_lines(rec)["line_items"] == ORD1234_LINES
        async with s._apool.connection() as conn:
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                await conn.execute("UPDATE orders SET status = 'cancelled' WHERE code = 'GH56JK78MN'")
        await s.aclose()

    try:
        asyncio.run(main())
    finally:
        close(s)


@pytest.mark.postgres
def test_pg_connection_loss_is_an_error_result_then_recovers(pg_dsn):
    from agentcli.stores import init_postgres

    url = fresh_database(pg_dsn, "agentcli_test_loss")
    init_postgres(url, 20)
    s = open_store(url, pool_size=3)

    async def main():  # one loop, as in batch / the REPL: the async pool lives across lookups
        assert (await atool(s, {"order_code": "GH56JK78MN"})).result["found"] is True
        await s._apool.wait()  # all its connections open: every one of them is killed below
        with _admin(pg_dsn) as admin:
            killed = admin.execute(
                "SELECT pid, pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                "WHERE datname = 'agentcli_test_loss' AND application_name = 'agentcli'").fetchall()
            assert len(killed) == 3 and all(ok for _, ok in killed)  # the pool's (min 3 = pool_size)
            lost = await atool(s, {"order_code": "GH56JK78MN"})
            assert lost.is_error and lost.outcome == "tool_error"
            assert "unavailable" in lost.result and len(lost.result) < 200
            for leak in ("SELECT", "postgresql://", "127.0.0.1", pg_dsn.split(":")[2].split("@")[0]):
                assert leak not in lost.result
            # The pool dropped the dead connections: the next lookups work, on new backends.
            again = [await atool(s, {"order_code": "GH56JK78MN"}) for _ in range(5)]
            assert all(not o.is_error and o.result["found"] for o in again)
            now = _our_backends(admin, "agentcli_test_loss")
            assert now and not (now & {pid for pid, _ in killed})
        await s.aclose()

    try:
        asyncio.run(main())
    finally:
        close(s)


@pytest.mark.postgres
def test_pg_tool_timeout_cancels_the_query_in_the_server(pg_dsn):
    """A view is enough for the schema; a slow one shows interrupt() cancels server-side."""
    from agentcli.stores import init_postgres

    url = fresh_database(pg_dsn, "agentcli_test_slow")
    init_postgres(url, 20)
    with _admin(with_database(pg_dsn, "agentcli_test_slow")) as admin:
        admin.execute("ALTER TABLE orders RENAME TO orders_data")
        admin.execute("CREATE VIEW orders AS SELECT o.* FROM orders_data o "
                      "CROSS JOIN LATERAL pg_sleep(60) AS slow")
    s = open_store(url, pool_size=1)
    outcome = []

    async def main():
        outcome.append(await atool(s, {"order_code": "GH56JK78MN"}, timeout=0.5))
        # The cancelled lookup gave its connection back: the (only) pooled one is usable.
        async with s._apool.connection(timeout=5) as conn:
            outcome.append(await (await conn.execute("SELECT 1")).fetchone())
        await s.aclose()

    # In a thread: without a server-side cancel the call would sit out the whole pg_sleep.
    worker = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    try:
        worker.start()
        worker.join(20)
        stuck = worker.is_alive()
        with _admin(pg_dsn) as admin:
            active = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'agentcli_test_slow' "
                "AND application_name = 'agentcli' AND state = 'active'").fetchone()[0]
            if stuck:  # unblock the worker before failing
                admin.execute("SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = 'agentcli_test_slow' AND application_name = 'agentcli'")
                worker.join(20)
        assert not stuck and active == 0, "the timed-out query kept running in the server"
        out, one = outcome
        assert out.is_error and out.outcome == "timeout"
        assert one == (1,)
    finally:
        close(s)


@pytest.mark.postgres
def test_pg_one_timeout_leaves_the_other_lookup_in_flight_alone(pg_dsn):
    """Two lookups at once; one times out: only its query is cancelled, the other one ends ok."""
    from agentcli.stores import init_postgres

    url = fresh_database(pg_dsn, "agentcli_test_slow2")
    init_postgres(url, 20)
    with _admin(with_database(pg_dsn, "agentcli_test_slow2")) as admin:
        admin.execute("ALTER TABLE orders RENAME TO orders_data")
        # GH56JK78MN takes 60 s, ORD-20261234 0.8 s: still running when the other is cancelled
        # (at 0.3 s).
        admin.execute("CREATE VIEW orders AS SELECT o.* FROM orders_data o CROSS JOIN LATERAL "
                      "pg_sleep(CASE o.code WHEN 'GH56JK78MN' THEN 60 "
                      "WHEN 'ORD-20261234' THEN 0.8 ELSE 0 END) AS slow")
    s = open_store(url, pool_size=2)

    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        slow, other = await asyncio.gather(
            atool(s, {"order_code": "GH56JK78MN"}, timeout=0.3),
            atool(s, {"order_code": "ORD-20261234", "include_line_items": True}, timeout=15))
        elapsed = loop.time() - t0
        await s.aclose()
        return slow, other, elapsed

    try:
        slow, other, elapsed = asyncio.run(main())
        assert slow.is_error and slow.outcome == "timeout"
        assert not other.is_error and other.outcome == "ok", other.result
        assert other.result["status"] == "shipped" and len(other.result["line_items"]) == 2
        # It ran its whole pg_sleep (a lower bound: a sleep never ends early), and the slow one
        # did not hold the gather up for its 60 s (an upper bound only that would exceed).
        assert other.duration_ms >= 750 and elapsed < 30
        with _admin(pg_dsn) as admin:
            active = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'agentcli_test_slow2' "
                "AND application_name = 'agentcli' AND state = 'active'").fetchone()[0]
        assert active == 0
    finally:
        close(s)


@pytest.mark.postgres
def test_pg_and_sqlite_agree(pg_demo_url, demo_db):
    with sqlite3.connect(demo_db) as c:
        codes = [r[0] for r in c.execute("SELECT code FROM orders ORDER BY code")]
    assert len(codes) == 300
    sq = SQLiteStore(demo_db)
    pg = open_store(pg_demo_url, pool_size=1)

    async def both():  # one loop: the PostgreSQL pool connects once, not once per lookup
        out = []
        try:
            for i, code in enumerate(codes + [MISSING, "ORD-00000000"]):
                lines = i % 3 == 0
                customer = "grace.lee@example.com" if i % 5 == 0 else None
                out.append((code, await pg.get_order(code, customer, lines),
                            await sq.get_order(code, customer, lines)))
        finally:
            await sq.aclose()
            await pg.aclose()
        return out

    pairs = asyncio.run(both())
    assert len(pairs) == 302
    for code, from_pg, from_sqlite in pairs:
        assert _sorted_lines(from_pg) == _sorted_lines(from_sqlite), code


@pytest.mark.postgres
def test_pg_unreachable_server_is_a_config_error(pg_dsn):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    url = f"postgresql://agent:{WRONG_PASSWORD}@127.0.0.1:{port}/orders"
    with pytest.raises(ConfigError) as info:
        open_store(url)
    msg = info.value.message
    assert WRONG_PASSWORD not in msg and f"127.0.0.1:{port}" in msg and "\n" not in msg


@pytest.mark.postgres
def test_pg_init_refuses_existing_tables_without_force(pg_dsn):
    from agentcli.stores import init_postgres

    url = fresh_database(pg_dsn, "agentcli_test_init")
    assert init_postgres(url, 12) == 12
    with pytest.raises(ConfigError) as info:
        init_postgres(url, 5)
    assert "--force" in info.value.message
    assert init_postgres(url, 5, force=True) == 5
    import psycopg

    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM orders").fetchone()[0] == 5
        assert c.execute("SELECT count(*) FROM order_lines WHERE order_code = 'ORD-20261234'").fetchone()[0] == 2
        # the schema of the spec: primary key and foreign key exist after the load
        kinds = {r[0] for r in c.execute(
            "SELECT contype FROM pg_constraint WHERE conrelid IN ('orders'::regclass, 'order_lines'::regclass)")}
        assert {"p", "f"} <= kinds


# --------------------------------------------------------------------------- the real CLI

def test_cli_orders_show(backend, cli, cli_env):
    p = cli(["orders", "show", "gh56jk78mn", "--db", backend.url, "--json"], cli_env)
    assert p.returncode == 0, p.err
    rec = json.loads(p.out)
    assert rec == {**GH56, "line_items": [{"sku": "PHX-PRO", "name": "PhotoFlux Pro license",
                                           "quantity": 1, "unit_price_cents": 4900}]}
    p = cli(["orders", "show", "ORD-20261234", "--db", backend.url, "--customer",
             "ana.silva@example.com", "--json"], cli_env)
    assert p.returncode == 1 and json.loads(p.out) == {"found": False, "order_code": "ORD-20261234"}
    p = cli(["orders", "show", "ORD-20261234", "--db", backend.url, "--no-lines"], cli_env)
    assert p.returncode == 0 and "shipped" in p.out and "2026-12-03" in p.out
    assert "Traceback" not in p.err


def test_cli_db_init(backend, cli, cli_env, tmp_path):
    if backend.name == "sqlite":
        target = str(tmp_path / "new.sqlite3")
        secret = None
    else:
        target = fresh_database(backend.admin, "agentcli_test_cli_init")
        secret = target.split("://", 1)[1].split("@")[0].split(":")[1]
    p = cli(["db", "init", "--db", target, "--orders", "40"], cli_env)
    assert p.returncode == 0, p.err
    assert "with 40 orders" in p.err
    p = cli(["orders", "show", "ORD-20261234", "--db", target, "--json"], cli_env)
    assert p.returncode == 0 and json.loads(p.out)["estimated_delivery"] == "2026-12-03"
    p = cli(["db", "init", "--db", target, "--orders", "10"], cli_env)
    assert p.returncode == 3 and "--force" in p.err
    assert len(p.err.strip().splitlines()) == 1 and "Traceback" not in p.err
    p = cli(["db", "init", "--db", target, "--orders", "10", "--force"], cli_env)
    assert p.returncode == 0, p.err
    if secret:
        for text in (p.out, p.err):
            assert secret not in text
    s = open_store(target)
    try:
        assert get(s, "GH56JK78MN", None, False) == GH56
    finally:
        close(s)
    if backend.name == "sqlite":
        with sqlite3.connect(target) as c:
            assert c.execute("SELECT count(*) FROM orders").fetchone()[0] == 10
    else:
        import psycopg

        with psycopg.connect(target) as c:
            assert c.execute("SELECT count(*) FROM orders").fetchone()[0] == 10


def test_cli_bad_database_exits_3_with_one_line(backend, cli, cli_env, tmp_path):
    if backend.name == "sqlite":
        bad, secret = str(tmp_path / "missing.sqlite3"), None
    else:
        bad, secret = with_password(backend.url, WRONG_PASSWORD), WRONG_PASSWORD
    p = cli(["orders", "show", "GH56JK78MN", "--db", bad], cli_env)
    assert p.returncode == 3
    lines = p.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcli: ") and "Traceback" not in p.err
    assert p.out == ""
    if secret:
        assert secret not in p.err and "***" in p.err
        # and the environment variable route masks it the same way
        p = cli(["orders", "show", "GH56JK78MN"], {**cli_env, "AGENTCLI_DB": bad})
        assert p.returncode == 3 and secret not in p.err and "password authentication failed" in p.err
