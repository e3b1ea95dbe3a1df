"""Order stores: read-only lookups behind one small async interface (``base.OrderStore``).

``open_store(url)`` gives a store whose ``await get_order(code, customer, include_lines)``
returns the tool's record or ``None``, and ``await aclose()``. SQLite (``sqlite``) is opened with
``mode=ro``; PostgreSQL (``postgres``) is imported only for a ``postgresql://`` URL. Shared
columns and SQL are in ``records``, the demo data in ``demo``. This package imports nothing
above it (no tools, loop, cli or app).
"""

from __future__ import annotations

import difflib  # typer's own import: loaded with any command already
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
           "order_record", "sqlite_path", "is_postgres_url", "check_db_url", "ORDER_COLUMNS", "LINE_COLUMNS",
           "STATUSES"]


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.startswith(("postgresql://", "postgres://"))  # type: ignore[union-attr]


_SCHEMES = ("postgresql", "postgres", "sqlite")
# A scheme-like head: letters, then ':' with any number of slashes, or '//' with no ':'
# (``postgres//app:pw@db/shop``). One letter is a Windows drive (``C:/orders.db``), not a scheme.
_URL_HEAD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+._-]{1,40})(:/*|//+)(.*)$", re.S)
DB_FORMS = "use a SQLite path, sqlite:///path or postgresql://..."
_CREDENTIAL_RE = re.compile(r"[^\s:/@]{1,64}:[^\s/@]{1,256}@[A-Za-z0-9\[]")


def check_db_url(url: str | None) -> None:
    """ConfigError (exit 3) when ``url`` is a URL agentcli cannot open: one of another kind
    (``mysql://``), or a misspelt one (``postgresql:/...``, ``postgres//...``, ``sqlite:path``).
    Taken for a SQLite path, a misspelt URL named a file that does not exist, and the message
    saying so showed its password: that message names only its scheme (with "://" the URL is
    shown as ``mask_dsn`` masks it)."""
    if not url or is_postgres_url(url):
        return
    m = _URL_HEAD_RE.match(url)
    if m:
        scheme, sep, rest = m.group(1), m.group(2), m.group(3)
        low = scheme.lower()
        if sep.startswith("://") and low not in _SCHEMES:
            # the "://" is there, so the password is where mask_dsn finds it
            raise ConfigError(f"unsupported database URL {mask_dsn(url)}: {DB_FORMS}"
                              f"{_did_you_mean(low)}")
        near = low.startswith(_SCHEMES) or difflib.get_close_matches(low, _SCHEMES, n=1, cutoff=0.75)
        if not sep.startswith("://") and (near or sep.startswith(":/") or "@" in rest):
            raise ConfigError(f"unsupported database URL: it starts with {_scheme_said(scheme)}{sep[:3]} "
                              f"where a URL has {_scheme_said(scheme)}://; {DB_FORMS}"
                              f"{_did_you_mean(low)}")
    if _CREDENTIAL_RE.search(url):
        # whatever the typo before it ("postgresql;//", "p:/", "sqlite:///u:pw@h/db"), a
        # user:password@host is a server's, and no SQLite path: never named, never made into
        # folders by db init
        raise ConfigError(f"unsupported database URL: it holds a user:password@host but does not start with "
                          f"postgresql://; {DB_FORMS}")


def _scheme_said(scheme: str) -> str:
    return scheme if len(scheme) <= 20 else scheme[:19] + "\u2026"


def _did_you_mean(low: str) -> str:
    near = difflib.get_close_matches(low, _SCHEMES, n=1, cutoff=0.6)
    return f" (did you mean {near[0]}://?)" if near and near[0] != low else ""


def open_store(url: str | None, *, create_demo: bool = True, pool_size: int = 4) -> OrderStore:
    """Open the orders database for reading. ``None`` means the demo database (created on first use)."""
    if is_postgres_url(url):
        from .postgres import PostgresStore  # psycopg: imported only when used

        return PostgresStore(url, pool_size=pool_size)  # type: ignore[arg-type]
    check_db_url(url)
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
