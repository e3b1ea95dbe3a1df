"""SQLite orders store: read-only (``mode=ro`` and ``query_only``), lookups of microseconds.

``get_order`` owns the whole strategy; callers just await it:

- fast path: the lookup runs on the event loop (a hop to a worker thread would cost more than an
  indexed read of ~15 µs), with a small budget enforced by SQLite's progress handler;
- a lookup that outlives the budget (a slow view) is run again in a daemon thread of its own,
  on a connection that thread opens and closes itself. Cancelling the awaiting task (a tool
  timeout, Ctrl-C, SIGTERM) returns at once and makes the progress handler stop that query;
  nothing ever waits for it: no connection is closed from another thread while it runs, and no
  executor joins it at exit;
- a locked database (another process holds ``BEGIN EXCLUSIVE``) never waits inside the driver
  (busy timeout 0): ``get_order`` retries with ``asyncio.sleep``, so the loop stays free and
  the tool timeout bounds the wait; past ``BUSY_WAIT_S`` it is a ``StoreError``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import ConfigError, StoreError
from .records import LINE_COLUMNS, ORDER_COLUMNS, for_driver, order_record

ORDER_SQL, ORDER_SQL_CUSTOMER, LINES_SQL = for_driver("sqlite")
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class SlowQuery(Exception):
    """A fast-path lookup ran out of its budget; it is run again off the event loop."""


class Busy(StoreError):
    """The database is locked by another connection (SQLITE_BUSY / SQLITE_LOCKED)."""


def _is_busy(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(e) or "busy" in str(e)


class SQLiteStore:
    """Read-only SQLite store. ``inline = False`` (a subclass that is slow on purpose) sends
    every lookup to a thread; ``lookup`` is the synchronous query a subclass may wrap."""

    inline = True
    INLINE_BUDGET_S = 0.05  # an on-loop lookup longer than this moves to a thread
    BUSY_WAIT_S = 5.0  # a lookup on a locked database fails after this (the tool timeout is usually first)
    START_BUSY_WAIT_S = 1.0  # how long the start-up check waits for a lock to go
    MAX_THREADS = 16  # slow lookups running at once; more wait (on the loop) for a free one
    PROGRESS_OPS = 1_000  # SQLite VM steps between two checks of a budget or a cancellation

    def __init__(self, path: Path):
        self.path = Path(path)
        self.description = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []  # those of caller threads, closed by aclose
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._slots: tuple[Any, asyncio.Semaphore] | None = None
        self._check()  # fail now, at start, not mid-question

    # ----------------------------------------------------------------------- connections

    def _open(self) -> sqlite3.Connection:
        try:
            st = self.path.stat()
        except OSError:
            st = None
        if st is None:
            raise ConfigError(f"orders database {self.path} does not exist; run "
                              "`agentcli db init` or point --db at an existing one")
        if self.path.is_dir():
            raise ConfigError(f"orders database {self.path} is a directory; point --db at the "
                              "orders database file (e.g. orders.sqlite3 inside it)")
        if not self.path.is_file():
            raise ConfigError(f"orders database {self.path} is not a regular file; point --db at "
                              "the orders database file")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=0,
                                   isolation_level=None)
            conn.set_progress_handler(self._stop_requested, self.PROGRESS_OPS)
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as e:
            raise ConfigError(f"cannot open orders database {self.path}: {e}") from None
        return conn

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (opened once, kept until ``aclose``)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed.is_set():
                raise StoreError("orders database is closed")
            conn = self._open()
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def _stop_requested(self) -> bool:
        """SQLite's progress handler, run by the thread executing the query: stop it when the
        store is closing, its fast-path budget is spent, or its lookup was cancelled."""
        if self._closed.is_set():
            return True
        local = self._local
        deadline = getattr(local, "deadline", None)
        if deadline is not None and time.monotonic() > deadline:
            return True
        cancel = getattr(local, "cancel", None)
        return cancel is not None and cancel.is_set()

    def _check(self) -> None:
        conn = self._conn()
        give_up = time.monotonic() + self.START_BUSY_WAIT_S
        while True:
            try:
                cols = {r[1] for r in conn.execute("PRAGMA table_info(orders)")}
                lcols = {r[1] for r in conn.execute("PRAGMA table_info(order_lines)")}
                break
            except sqlite3.DatabaseError as e:
                if _is_busy(e) and time.monotonic() < give_up:
                    time.sleep(0.05)
                    continue
                self.close()
                if _is_busy(e):
                    raise ConfigError(f"orders database {self.path} is locked by another process "
                                      "(database busy); try again when it is released") from None
                raise ConfigError(f"{self.path} is not a SQLite database ({e}); point --db at "
                                  "the orders database") from None
        missing = [c for c in ORDER_COLUMNS if c not in cols] + \
                  [f"order_lines.{c}" for c in LINE_COLUMNS if c not in lcols]
        if missing:
            self.close()
            raise ConfigError(f"{self.path} is not an orders database (missing "
                              f"{', '.join(missing[:4])}); see the schema in the README")

    # ----------------------------------------------------------------------- lookups

    def lookup(self, code: str, customer: str | None, include_lines: bool, *,
               budget: float | None = None) -> dict[str, Any] | None:
        """One synchronous lookup on this thread's connection. With ``budget`` (seconds) SQLite
        stops a query that runs longer and ``SlowQuery`` is raised. ``Busy`` when locked."""
        try:
            conn = self._conn()
        except StoreError:
            raise
        except ConfigError as e:  # the file went away or changed under a running process
            raise StoreError(str(e)) from None
        if budget is not None:
            self._local.deadline = time.monotonic() + budget
        try:
            if customer:
                row = conn.execute(ORDER_SQL_CUSTOMER, (code, customer)).fetchone()
            else:
                row = conn.execute(ORDER_SQL, (code,)).fetchone()
            lines = None
            if row is not None and include_lines:
                lines = conn.execute(LINES_SQL, (code,)).fetchall()
        except sqlite3.Error as e:
            if _is_busy(e):
                raise Busy("orders database is busy (locked by another process)") from None
            if budget is not None and isinstance(e, sqlite3.OperationalError) and "interrupt" in str(e) \
                    and not self._closed.is_set():
                raise SlowQuery() from None
            raise StoreError(f"orders database error ({type(e).__name__})") from None
        finally:
            if budget is not None:
                self._local.deadline = None
        return None if row is None else order_record(row, lines)

    async def get_order(self, code: str, customer: str | None,
                        include_lines: bool) -> dict[str, Any] | None:
        if self._closed.is_set():
            raise StoreError("orders database is closed")
        give_up: float | None = None
        delay = 0.002
        while True:
            try:
                if self.inline:
                    try:
                        return self.lookup(code, customer, include_lines, budget=self.INLINE_BUDGET_S)
                    except SlowQuery:
                        pass
                return await self._in_thread(code, customer, include_lines)
            except Busy:
                now = time.monotonic()
                give_up = give_up if give_up is not None else now + self.BUSY_WAIT_S
                if now >= give_up:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.MAX_THREADS))
        return self._slots[1]

    async def _in_thread(self, code: str, customer: str | None, include_lines: bool) -> Any:
        """The lookup in a daemon thread of its own; a cancellation returns at once and stops
        the thread's query (progress handler) without waiting for it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        cancel = threading.Event()

        def deliver(ok: bool, value: Any) -> None:
            if not fut.done():
                fut.set_result(value) if ok else fut.set_exception(value)

        def work() -> None:
            local = self._local
            local.cancel = cancel
            conn = None
            try:
                conn = local.conn = self._open()
                outcome = (True, self.lookup(code, customer, include_lines))
            except BaseException as e:  # delivered to the awaiting task (or dropped if it is gone)
                outcome = (False, e)
            finally:
                local.conn = None
                if conn is not None:
                    conn.close()  # this thread's own connection: nothing else uses it
            try:
                loop.call_soon_threadsafe(deliver, *outcome)
            except RuntimeError:  # the loop is closed: nobody is waiting
                pass

        async with self._semaphore():
            threading.Thread(target=work, name="agentcli-sqlite-lookup", daemon=True).start()
            try:
                return await fut
            except asyncio.CancelledError:
                cancel.set()
                raise

    # ----------------------------------------------------------------------- closing

    def close(self) -> None:
        """Close the connections of caller threads; lookups in threads of their own stop (their
        queries are interrupted) and close their connections themselves."""
        self._closed.set()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()

    async def aclose(self) -> None:
        self.close()
