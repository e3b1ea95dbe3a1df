"""Order stores: read-only lookups behind one small async interface (``base.OrderStore``).

``open_store(url)`` gives a store whose ``await get_order(code, customer, include_lines)``
returns the tool's record or ``None``, and ``await aclose()``. SQLite (``sqlite``) is opened with
``mode=ro``; PostgreSQL (``postgres``) is imported only for a ``postgresql://`` URL. Shared
columns and SQL are in ``records``, the demo data in ``demo``. This package imports nothing
above it (no tools, loop, cli or app).
"""

from __future__ import annotations

import re

from ..config import default_db_path
from ..errors import ConfigError, StoreError
from .base import OrderStore
from .demo import FIXED_ORDERS, init_sqlite
from .records import LINE_COLUMNS, ORDER_COLUMNS, STATUSES, mask_dsn, order_record
from .sqlite import SQLiteStore, sqlite_path

__all__ = ["OrderStore", "StoreError", "SQLiteStore", "open_store", "init_sqlite", "init_postgres",
           "mask_dsn", "order_record", "sqlite_path", "ORDER_COLUMNS", "LINE_COLUMNS", "STATUSES",
           "FIXED_ORDERS"]


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.startswith(("postgresql://", "postgres://"))  # type: ignore[union-attr]


def open_store(url: str | None, *, create_demo: bool = True, pool_size: int = 4) -> OrderStore:
    """Open the orders database for reading. ``None`` means the demo database (created on first use)."""
    if is_postgres_url(url):
        from .postgres import PostgresStore  # imported only when used

        return PostgresStore(url, pool_size=pool_size)  # type: ignore[arg-type]
    if url is None:

        path = default_db_path()
        if not path.exists() and create_demo:
            init_sqlite(path)
        return SQLiteStore(path)
    if re.match(r"^[A-Za-z][A-Za-z0-9+._-]*://", url) and not url.startswith("sqlite:"):
        raise ConfigError(f"unsupported database URL {mask_dsn(url)}: use a SQLite path, "
                          "sqlite:///path or postgresql://...")
    return SQLiteStore(sqlite_path(url))


def init_postgres(url: str, orders: int = 300, force: bool = False) -> int:
    from .demo import init_postgres as _init  # psycopg only when used

    return _init(url, orders, force=force)
