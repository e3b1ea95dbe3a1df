"""Order stores: read-only lookups behind one small async interface (``base.OrderStore``).

``open_store(url)`` gives a store whose ``await get_order(code, customer, include_lines)``
returns the tool's record or ``None``, and ``await aclose()``. SQLite (``sqlite``) is opened with
``mode=ro``; PostgreSQL (``postgres``) is imported only for a ``postgresql://`` URL. Shared
columns and SQL are in ``records``, the demo data in ``demo``. This package imports nothing
above it (no tools, loop, cli or app).
"""

from __future__ import annotations

import re
from typing import Any

from ..config import default_db_path
from ..errors import ConfigError, StoreError
from .base import OrderStore
from .records import (
    LINE_COLUMNS,
    ORDER_COLUMNS,
    STATUSES,
    mask_dsn,
    order_record,
    sqlite_path,
)

# The drivers (sqlite3, psycopg) load with their store module, only when a store is opened or a
# demo database made: ``stores.sqlite``, ``stores.postgres``, ``stores.demo``.
__all__ = ["OrderStore", "StoreError", "open_store", "init_sqlite", "init_postgres", "mask_dsn",
           "order_record", "sqlite_path", "is_postgres_url", "ORDER_COLUMNS", "LINE_COLUMNS",
           "STATUSES"]


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.startswith(("postgresql://", "postgres://"))  # type: ignore[union-attr]


def open_store(url: str | None, *, create_demo: bool = True, pool_size: int = 4) -> OrderStore:
    """Open the orders database for reading. ``None`` means the demo database (created on first use)."""
    if is_postgres_url(url):
        from .postgres import PostgresStore  # psycopg: imported only when used

        return PostgresStore(url, pool_size=pool_size)  # type: ignore[arg-type]
    if url is not None and re.match(r"^[A-Za-z][A-Za-z0-9+._-]*://", url) and not url.startswith("sqlite:"):
        raise ConfigError(f"unsupported database URL {mask_dsn(url)}: use a SQLite path, "
                          "sqlite:///path or postgresql://...")
    from . import demo, sqlite  # sqlite3: imported only when used

    if url is None:
        path = default_db_path()
        if not path.exists() and create_demo:
            demo.init_sqlite(path)
        return sqlite.SQLiteStore(path)
    return sqlite.SQLiteStore(sqlite_path(url))


def init_sqlite(path: Any, orders: int = 300, *, force: bool = False) -> int:
    from .demo import init_sqlite as init  # sqlite3 only when used

    return init(path, orders, force=force)


def init_postgres(url: str, orders: int = 300, force: bool = False) -> int:
    from .demo import init_postgres as init  # psycopg only when used

    return init(url, orders, force=force)
