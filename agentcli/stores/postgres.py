"""PostgreSQL orders store: one async path over a ``psycopg_pool.AsyncConnectionPool``.

Imported only when a ``postgresql://`` URL is used (``open_store``, ``db init``); with
``demo.init_postgres`` it is the only code that imports psycopg. Sessions are read-only
(``default_transaction_read_only`` in the connection options), every query is fixed text with
parameters (``records``), the customer filter is in the SQL.

At open, one plain connection checks the server and the schema, so a wrong DSN fails at start
with the real reason (exit 3). Lookups go through the async pool, made on the first lookup and
belonging to the loop that made it (a new loop gets a new pool), sized for ``batch
--concurrency``: a lookup borrows a connection, never opens one. Cancelling the awaiting task (a
tool timeout, Ctrl-C) makes psycopg cancel that connection's query in the server, not the other
lookups. A lost connection is dropped by the pool, the idle ones are re-checked.

Secrets: a password never reaches an error, a banner or a log. A URL whose password holds a
raw ``@``, ``/``, ``#`` or ``?`` is ambiguous (libpq and URL parsers split it differently,
and libpq would echo a piece of the password as a host or database name): it is refused before
anything connects, with the percent-encoding to use.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..errors import ConfigError, StoreError
from ..redact import add_secret, dsn_passwords, scrub_dsn
from .records import (
    LINE_COLUMNS,
    ORDER_COLUMNS,
    for_driver,
    mask_dsn,
    order_record,
    url_userinfo,
)

try:  # the optional extra 'agentcli[postgres]'; this module is imported only for a postgresql:// URL
    import psycopg
    import psycopg_pool
    from psycopg.conninfo import conninfo_to_dict
except ImportError:  # pragma: no cover - the test extra installs it
    psycopg = psycopg_pool = conninfo_to_dict = None  # type: ignore[assignment]

# psycopg_pool reports reconnect attempts through logging; agentcli configures none, so Python
# would print them on stderr as bare lines. Failures reach the person through our own errors.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

CONNECT_TIMEOUT = 5  # seconds, for the first connection and each one the pool opens
ACQUIRE_TIMEOUT = 5.0  # seconds a lookup waits for a free (or re-opened) connection
MIN_OPEN = 4  # connections opened at start; the pool grows to pool_size when lookups wait
READ_ONLY_OPTIONS = "-c default_transaction_read_only=on"
APPLICATION_NAME = "agentcli"
CONNECT_HINT = "check --db / AGENTCLI_DB (host, port, user, password) and that the server is running"

ORDER_SQL, ORDER_SQL_CUSTOMER, LINES_SQL = for_driver("postgres")
_COLUMNS_SQL = ("SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = ANY (current_schemas(false)) "
                "AND table_name IN ('orders', 'order_lines')")


def _modules():
    if psycopg is None:
        raise ConfigError("PostgreSQL support is not installed: pip install 'agentcli[postgres]' "
                          "(psycopg 3 and psycopg-pool)")
    return psycopg, psycopg_pool


def _parsed_password(url: str) -> Any:
    """The password as psycopg's own parser reads URL (None when it cannot read it)."""
    try:
        return conninfo_to_dict(url).get("password")
    except Exception:
        return None


def _passwords(url: str) -> list[str]:
    """Every string that is (a piece of) the URL's password, however a parser splits it."""
    return dsn_passwords(url, _parsed_password(url))


def check_url(url: str) -> None:
    """Refuse an ambiguous URL (see the module docstring) and register its password as a secret."""

    for pw in _passwords(url):
        add_secret(pw)
    info = url_userinfo(url)
    if info and info[1] and any(c in info[1] for c in "@/#?"):
        raise ConfigError(f"the password in the orders database URL {mask_dsn(url)} "
                          "holds a raw '@', '/', '#' or '?': percent-encode it (%40, %2F, %23, %3F)")


def _scrub(text: str, url: str) -> str:
    return scrub_dsn(text, url, _parsed_password(url))


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


def connect_error(url: str, exc: BaseException, what: str = "cannot connect to the orders database",
                  hint: str = CONNECT_HINT) -> ConfigError:
    return ConfigError(_scrub(f"{what} {mask_dsn(url)}: {_reason(exc)}; {hint}", url))


def masked(url: str) -> str:
    return _scrub(mask_dsn(url), url)


class PostgresStore:
    """Read-only PostgreSQL store over one async connection pool per event loop."""

    def __init__(self, url: str, pool_size: int = 4, *, connect_timeout: float = CONNECT_TIMEOUT,
                 acquire_timeout: float = ACQUIRE_TIMEOUT):
        check_url(url)
        psycopg, psycopg_pool = _modules()
        self.url = url
        self.description = masked(url)
        self.pool_size = max(1, int(pool_size))
        self._acquire_timeout = acquire_timeout
        self._psycopg = psycopg
        self._psycopg_pool = psycopg_pool
        self._apool: Any = None  # the AsyncConnectionPool of self._aloop
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._aguard: asyncio.Task | None = None  # closes the pool when its loop ends
        self._kwargs = {
            "autocommit": True,  # one round trip per query; still read-only (default_transaction_read_only)
            "options": READ_ONLY_OPTIONS,
            "application_name": APPLICATION_NAME,
            "connect_timeout": max(1, int(connect_timeout)),
        }
        # Fail now, at start, with the real reason (a pool would only say "timeout").
        try:
            conn = psycopg.connect(url, **self._kwargs)
        except psycopg.Error as e:
            raise connect_error(url, e) from None
        except Exception as e:  # a malformed URL, an unknown option: still one clear line
            raise connect_error(url, e, "invalid orders database URL") from None
        try:
            self._check_schema(conn)
        finally:
            conn.close()

    def _check_schema(self, conn: Any) -> None:
        try:
            rows = conn.execute(_COLUMNS_SQL).fetchall()
        except self._psycopg.Error as e:
            raise connect_error(self.url, e, "cannot read the orders database",
                                "check the role may read orders and order_lines") from None
        cols = {(t, c) for t, c in rows}
        missing = [c for c in ORDER_COLUMNS if ("orders", c) not in cols] + \
                  [f"order_lines.{c}" for c in LINE_COLUMNS if ("order_lines", c) not in cols]
        if missing:
            raise ConfigError(f"{self.description} is not an orders database (missing "
                              f"{', '.join(missing[:4])}); see the schema in the README or run "
                              "`agentcli db init --db postgresql://...`")

    async def _pool(self) -> Any:
        """The pool of the running loop, made (and opened) on first use in that loop."""
        loop = asyncio.get_running_loop()
        pool = self._apool
        if pool is not None and self._aloop is loop:
            return pool
        self._drop_pool()
        pool = self._psycopg_pool.AsyncConnectionPool(
            self.url, kwargs=self._kwargs, min_size=min(self.pool_size, MIN_OPEN),
            max_size=self.pool_size, open=False, name="agentcli-orders",
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

    def _drop_pool(self) -> None:
        """Forget the pool of another (or no) loop, closing it best-effort."""
        pool, loop = self._apool, self._aloop
        self._apool = self._aloop = self._aguard = None
        if pool is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is not None and loop is not running and loop.is_running() and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(pool.close(timeout=2.0), loop)  # closed in its own loop
            return
        # Its loop is gone (asyncio.run cancelled the pool's tasks on exit): the idle
        # connections cannot be closed through it, so close their sockets directly.
        for conn in list(getattr(pool, "_pool", ())):
            try:
                conn.pgconn.finish()
            except Exception:
                pass

    async def get_order(self, code: str, customer: str | None,
                        include_lines: bool) -> dict[str, Any] | None:
        psycopg = self._psycopg
        try:
            pool = await self._pool()
            conn = await pool.getconn(timeout=self._acquire_timeout)
        except psycopg.Error:  # PoolTimeout, PoolClosed
            raise StoreError("orders database unavailable (no connection)") from None
        lost = False
        try:
            if include_lines:
                async with conn.transaction():  # one snapshot for the order and its lines
                    row, lines = await self._query(conn, code, customer, True)
            else:
                row, lines = await self._query(conn, code, customer, False)
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
        return None if row is None else order_record(row, lines)

    @staticmethod
    async def _query(conn: Any, code: str, customer: str | None, include_lines: bool):
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
        """Close the pool (in its own loop when that is this one; best-effort otherwise)."""
        pool, loop, guard = self._apool, self._aloop, self._aguard
        if pool is not None and loop is asyncio.get_running_loop():
            self._apool = self._aloop = self._aguard = None
            try:
                await pool.close(timeout=2.0)
            except Exception:
                pass
            if guard is not None:
                guard.cancel()
        else:
            self._drop_pool()
