"""PostgreSQL orders backend: the same store interface as ``orders.SQLiteStore``.

Imported only when a ``postgresql://`` URL is used (``orders.open_store``, ``db init``); it is
the only module that imports psycopg. Sessions are read-only (``default_transaction_read_only``
set in the connection options), every query is fixed text with parameters, the customer filter
is in the SQL. One ``psycopg_pool.ConnectionPool`` per store (the ``App`` builds one store per
process), sized for ``batch --concurrency``: lookups borrow a connection, never open one.

The tool layer awaits ``aget_order``: the same queries over a ``psycopg_pool.AsyncConnectionPool``
(same connection options), run on the event loop with no worker-thread hop. That pool is made
lazily on the first lookup and belongs to the loop that made it (a new loop gets a new pool).
The sync pool stays for the start-up check and sync callers (``orders show``, benchmarks).
Cancelling the awaiting task (a tool timeout, Ctrl-C) makes psycopg cancel that connection's
query in the server (``AsyncConnection.wait`` on ``CancelledError``), not the other lookups.

Errors: at open time a ``ConfigError`` (exit 3) with one line and the password masked; during a
lookup a ``StoreError``, which the tool layer turns into an ``is_error`` result. A lost
connection is dropped by the pool, the idle ones are re-checked, later lookups work again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import ConfigError, StoreError

# psycopg_pool reports reconnect attempts through logging; agentcli configures none, so Python
# would print them on stderr as bare lines. Failures reach the person through our own errors.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())
from .orders import LINE_COLUMNS, ORDER_COLUMNS, _gen_orders, mask_dsn, order_record

CONNECT_TIMEOUT = 5  # seconds, for the first connection and each one the pool opens
ACQUIRE_TIMEOUT = 5.0  # seconds a lookup waits for a free (or re-opened) connection
MIN_OPEN = 4  # connections opened at start; the pool grows to pool_size when lookups wait
READ_ONLY_OPTIONS = "-c default_transaction_read_only=on"
APPLICATION_NAME = "agentcli"

ORDER_SQL = ("SELECT code, status, status_detail, product, placed_on, estimated_delivery, "
             "license_issued FROM orders WHERE code = %s")
ORDER_SQL_CUSTOMER = ORDER_SQL + " AND lower(customer_email) = lower(%s)"
# No rowid in PostgreSQL (and a view has no ctid): line items come in a stable, documented order.
LINES_SQL = ("SELECT sku, name, quantity, unit_price_cents FROM order_lines "
             "WHERE order_code = %s ORDER BY sku, name")

_COLUMNS_SQL = ("SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = ANY (current_schemas(false)) "
                "AND table_name IN ('orders', 'order_lines')")


def _modules():
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise ConfigError("PostgreSQL support is not installed: pip install 'agentcli[postgres]' "
                          "(psycopg 3 and psycopg-pool)") from None
    return psycopg, psycopg_pool


def _password(url: str) -> str | None:
    """The password in the URL (userinfo or ``?password=``), to keep it out of every output."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return conninfo_to_dict(url).get("password")  # type: ignore[return-value]
    except Exception:
        return None


def _masked(url: str) -> str:
    text = mask_dsn(url)
    pw = _password(url)
    if pw and len(pw) >= 3:
        text = text.replace(pw, "***")
    return text


def _reason(exc: BaseException) -> str:
    """One short line from a libpq error: its last meaningful line, without the 'FATAL:' noise."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[-1] if lines else type(exc).__name__
    for noise in ("connection failed:", "FATAL:", "ERROR:"):
        line = line.replace(noise, "")
    line = " ".join(line.split())
    if len(line) > 200:
        line = line[:200] + "..."
    return line


CONNECT_HINT = "check --db / AGENTCLI_DB (host, port, user, password) and that the server is running"


def _connect_error(url: str, exc: BaseException, what: str = "cannot connect to the orders database",
                   hint: str = CONNECT_HINT) -> ConfigError:
    from .redact import redact

    reason = _reason(exc)
    pw = _password(url)
    if pw and len(pw) >= 3:
        reason = reason.replace(pw, "***")
    return ConfigError(redact(f"{what} {_masked(url)}: {reason}; {hint}"))


class PostgresStore:
    """Read-only PostgreSQL store over one connection pool.

    The pool opens ``min(pool_size, 4)`` connections at start and grows to ``pool_size`` (the
    ``batch --concurrency``) when lookups wait; a lookup never opens a connection itself.
    """

    def __init__(self, url: str, pool_size: int = 4, *, connect_timeout: float = CONNECT_TIMEOUT,
                 acquire_timeout: float = ACQUIRE_TIMEOUT):
        psycopg, psycopg_pool = _modules()
        from .redact import add_secret

        self.url = url
        self.description = _masked(url)
        add_secret(_password(url))
        self.pool_size = max(1, int(pool_size))
        self._acquire_timeout = acquire_timeout
        self._psycopg = psycopg
        self._psycopg_pool = psycopg_pool
        self._apool: Any = None  # the AsyncConnectionPool of self._aloop (made on first aget_order)
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._aguard: asyncio.Task | None = None  # closes the async pool when its loop ends
        self._active: dict[int, Any] = {}  # thread id -> connection running its lookup
        self._lock = threading.Lock()
        self._kwargs = {
            "autocommit": True,  # one round trip per query; still read-only (default_transaction_read_only)
            "options": READ_ONLY_OPTIONS,
            "application_name": APPLICATION_NAME,
            "connect_timeout": max(1, int(connect_timeout)),
        }
        # Fail now, at start, with the real reason (the pool would only say "timeout").
        try:
            conn = psycopg.connect(url, **self._kwargs)
        except psycopg.Error as e:
            raise _connect_error(url, e) from None
        except Exception as e:  # a malformed URL, an unknown option: still one clear line
            raise _connect_error(url, e, "invalid orders database URL") from None
        try:
            self._check_schema(conn)
        finally:
            conn.close()
        self._pool = psycopg_pool.ConnectionPool(
            url, kwargs=self._kwargs, min_size=min(self.pool_size, MIN_OPEN), max_size=self.pool_size,
            open=False, name="agentcli-orders", timeout=acquire_timeout,
            reconnect_timeout=60.0)
        try:
            self._pool.open(wait=True, timeout=max(10.0, connect_timeout * 2))
        except psycopg.Error as e:
            self._pool.close(timeout=1.0)
            raise _connect_error(url, e) from None

    def _check_schema(self, conn: Any) -> None:
        try:
            rows = conn.execute(_COLUMNS_SQL).fetchall()
        except self._psycopg.Error as e:
            raise _connect_error(self.url, e, "cannot read the orders database",
                                 "check the role may read orders and order_lines") from None
        cols = {(t, c) for t, c in rows}
        missing = [c for c in ORDER_COLUMNS if ("orders", c) not in cols] + \
                  [f"order_lines.{c}" for c in LINE_COLUMNS if ("order_lines", c) not in cols]
        if missing:
            raise ConfigError(f"{self.description} is not an orders database (missing "
                              f"{', '.join(missing[:4])}); see the schema in the README or run "
                              "`agentcli db init --db postgresql://...`")

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """Borrow a pooled read-only connection (raises StoreError when none can be had)."""
        psycopg = self._psycopg
        try:
            conn = self._pool.getconn(timeout=self._acquire_timeout)
        except psycopg.Error:
            raise StoreError("orders database unavailable (no connection)") from None
        with self._lock:
            self._active[threading.get_ident()] = conn
        lost = False
        try:
            yield conn
        except psycopg.OperationalError:
            lost = conn.broken or conn.closed
            raise
        finally:
            with self._lock:
                self._active.pop(threading.get_ident(), None)
            try:
                self._pool.putconn(conn)  # a broken one is discarded and replaced by the pool
            except psycopg.Error:
                lost = True
            if lost:
                self._recheck()

    def _recheck(self) -> None:
        """After a lost connection, test the idle ones too so the next lookups get live ones."""
        try:
            self._pool.check()
        except Exception:  # the pool is closing, or the server is down: the next getconn reports it
            pass

    def get_order(self, code: str, customer: str | None, include_lines: bool) -> dict[str, Any] | None:
        psycopg = self._psycopg
        try:
            with self.connection() as conn:
                if include_lines:
                    with conn.transaction():  # one snapshot for the order and its lines
                        row, lines = self._query(conn, code, customer, True)
                else:
                    row, lines = self._query(conn, code, customer, False)
        except psycopg.errors.QueryCanceled:
            raise StoreError("orders database query cancelled") from None
        except psycopg.Error as e:
            raise StoreError(f"orders database error ({type(e).__name__})") from None
        if row is None:
            return None
        return order_record(row, lines)

    @staticmethod
    def _query(conn: Any, code: str, customer: str | None, include_lines: bool):
        if customer:
            row = conn.execute(ORDER_SQL_CUSTOMER, (code, customer)).fetchone()
        else:
            row = conn.execute(ORDER_SQL, (code,)).fetchone()
        lines = None
        if row is not None and include_lines:
            lines = conn.execute(LINES_SQL, (code,)).fetchall()
        return row, lines

    # ----------------------------------------------------------------------- async lookups

    async def _async_pool(self) -> Any:
        """The async pool of the running loop, made (and opened) on first use in that loop."""
        loop = asyncio.get_running_loop()
        pool = self._apool
        if pool is not None and self._aloop is loop:
            return pool
        self._drop_async_pool()
        pool = self._psycopg_pool.AsyncConnectionPool(
            self.url, kwargs=self._kwargs, min_size=min(self.pool_size, MIN_OPEN),
            max_size=self.pool_size, open=False, name="agentcli-orders-async",
            timeout=self._acquire_timeout, reconnect_timeout=60.0)
        # Published before the await: open(wait=False) takes an uncontended lock and starts the
        # workers without yielding, so a concurrent first lookup never sees it unopened.
        self._apool, self._aloop = pool, loop
        await pool.open(wait=False)
        # An open pool must be closed before its loop ends: a pool worker cancelled while it
        # opens a connection swallows the cancel and would hang asyncio.run's shutdown. This
        # task is cancelled by that shutdown (or by aclose) and closes the pool then.
        self._aguard = loop.create_task(self._close_with_loop(pool), name="agentcli-orders-pool-guard")
        return pool

    @staticmethod
    async def _close_with_loop(pool: Any) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            try:
                await pool.close(timeout=2.0)
            except BaseException:
                pass

    def _drop_async_pool(self) -> None:
        """Forget the async pool of another (or no) loop, closing it best-effort."""
        pool, loop = self._apool, self._aloop
        self._apool = self._aloop = self._aguard = None
        if pool is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is not None and loop is not running and loop.is_running() and not loop.is_closed():
            # Its loop still runs (in another thread): let it close the pool there.
            asyncio.run_coroutine_threadsafe(pool.close(timeout=2.0), loop)
            return
        # Its loop is gone (asyncio.run cancelled the pool's tasks on exit): the idle
        # connections cannot be closed through it, so close their sockets directly.
        for conn in list(getattr(pool, "_pool", ())):
            try:
                conn.pgconn.finish()
            except Exception:
                pass

    async def aget_order(self, code: str, customer: str | None,
                         include_lines: bool) -> dict[str, Any] | None:
        """``get_order`` on the event loop (no thread hop); same record, same errors."""
        psycopg = self._psycopg
        try:
            pool = await self._async_pool()
            conn = await pool.getconn(timeout=self._acquire_timeout)
        except psycopg.Error:  # PoolTimeout, PoolClosed
            raise StoreError("orders database unavailable (no connection)") from None
        lost = False
        try:
            if include_lines:
                async with conn.transaction():  # one snapshot for the order and its lines
                    row, lines = await self._aquery(conn, code, customer, True)
            else:
                row, lines = await self._aquery(conn, code, customer, False)
        except psycopg.errors.QueryCanceled:
            raise StoreError("orders database query cancelled") from None
        except psycopg.Error as e:
            lost = isinstance(e, psycopg.OperationalError) and (conn.broken or conn.closed)
            raise StoreError(f"orders database error ({type(e).__name__})") from None
        finally:
            try:
                await pool.putconn(conn)  # a broken one is discarded and replaced by the pool
            except psycopg.Error:
                lost = True
            if lost:
                try:  # test the idle ones too so the next lookups get live ones
                    await pool.check()
                except Exception:
                    pass
        if row is None:
            return None
        return order_record(row, lines)

    @staticmethod
    async def _aquery(conn: Any, code: str, customer: str | None, include_lines: bool):
        if customer:
            cur = await conn.execute(ORDER_SQL_CUSTOMER, (code, customer))
        else:
            cur = await conn.execute(ORDER_SQL, (code,))
        row = await cur.fetchone()
        lines = None
        if row is not None and include_lines:
            cur = await conn.execute(LINES_SQL, (code,))
            lines = await cur.fetchall()
        return row, lines

    async def aclose(self) -> None:
        """Close the async pool (if made in this loop) and the sync pool."""
        pool, loop, guard = self._apool, self._aloop, self._aguard
        if pool is not None and loop is asyncio.get_running_loop():
            self._apool = self._aloop = self._aguard = None
            try:
                await pool.close(timeout=2.0)
            except Exception:
                pass
            if guard is not None:
                guard.cancel()
        self.close()

    def interrupt(self, thread_id: int | None = None) -> None:
        """Cancel the query of the lookup running in ``thread_id`` (all of them when None):
        a timeout of one call must not fail the other lookups in flight."""
        with self._lock:
            active = [c for t, c in self._active.items() if thread_id is None or t == thread_id]
        for conn in active:
            try:
                conn.cancel_safe(timeout=2.0)
            except Exception:
                pass

    def close(self) -> None:
        if getattr(self, "_apool", None) is not None:
            self._drop_async_pool()
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close(timeout=2.0)


# --------------------------------------------------------------------------- demo data

PG_SCHEMA_SQL = """
CREATE TABLE orders (
  code TEXT NOT NULL,
  customer_email TEXT NOT NULL,
  status TEXT NOT NULL,
  status_detail TEXT,
  product TEXT NOT NULL,
  placed_on DATE NOT NULL,
  estimated_delivery DATE,
  license_issued BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE order_lines (
  order_code TEXT NOT NULL,
  sku TEXT NOT NULL,
  name TEXT NOT NULL,
  quantity INTEGER NOT NULL,
  unit_price_cents INTEGER NOT NULL
)
"""
# Constraints and indexes after the load: building them once is much faster than per row.
PG_CONSTRAINTS_SQL = [
    "ALTER TABLE orders ADD PRIMARY KEY (code)",
    "CREATE INDEX order_lines_order_code ON order_lines (order_code)",
    "ALTER TABLE order_lines ADD FOREIGN KEY (order_code) REFERENCES orders (code)",
    "ANALYZE orders",
    "ANALYZE order_lines",
]


def init_postgres(url: str, orders: int = 300, force: bool = False) -> int:
    """Create the schema and ``orders`` demo orders in PostgreSQL (COPY), in one transaction.

    Refuses to touch existing ``orders`` / ``order_lines`` tables unless ``force``; with
    ``force`` they are dropped and rebuilt. Returns the number of orders loaded.
    """
    psycopg, _ = _modules()
    from .redact import add_secret

    add_secret(_password(url))
    try:
        conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, application_name=APPLICATION_NAME)
    except psycopg.Error as e:
        raise _connect_error(url, e) from None
    except Exception as e:
        raise _connect_error(url, e, "invalid orders database URL") from None
    count = 0
    try:
        with conn.transaction():
            existing = [r[0] for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relname IN ('orders', 'order_lines')")]
            if existing and not force:
                raise ConfigError(f"{_masked(url)} already has {' and '.join(sorted(existing))}; "
                                  "pass --force to replace them")
            if existing:
                conn.execute("DROP TABLE IF EXISTS order_lines")
                conn.execute("DROP TABLE IF EXISTS orders")
            conn.execute(PG_SCHEMA_SQL)
            lines_buf: list[tuple] = []
            with conn.cursor() as cur:
                with cur.copy("COPY orders (code, customer_email, status, status_detail, product, "
                              "placed_on, estimated_delivery, license_issued) FROM STDIN") as copy:
                    for row, lines in _gen_orders(orders):
                        copy.write_row((*row[:7], bool(row[7])))
                        lines_buf.extend(lines)
                        count += 1
                with cur.copy("COPY order_lines (order_code, sku, name, quantity, unit_price_cents) "
                              "FROM STDIN") as copy:
                    for line in lines_buf:
                        copy.write_row(line)
            for stmt in PG_CONSTRAINTS_SQL:
                conn.execute(stmt)
    except psycopg.Error as e:
        raise _connect_error(url, e, "cannot create the demo orders in",
                             "db init needs a role that may create tables there (not a replica)") from None
    finally:
        conn.close()
    return count
