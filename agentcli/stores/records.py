"""What every store shares: the schema's column lists, the SQL (one copy of each query), the
tool's record shape, and ``mask_dsn``.

The queries are written once with ``?`` placeholders; ``for_driver`` gives the text a driver
takes (``%s`` for psycopg). Every query is fixed text with parameters, and the customer filter is
part of the SQL, so another customer's order is indistinguishable from a missing one.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from ..redact import mask_dsn, redact, url_userinfo

__all__ = ["mask_dsn", "url_userinfo", "redact"]

ORDER_COLUMNS = ("code", "customer_email", "status", "status_detail", "product", "placed_on",
                 "estimated_delivery", "license_issued")
LINE_COLUMNS = ("order_code", "sku", "name", "quantity", "unit_price_cents")
STATUSES = ("pending_payment", "paid", "license_issued", "shipped", "delivered", "cancelled",
            "refunded")

ORDER_SQL = ("SELECT code, status, status_detail, product, placed_on, estimated_delivery, "
             "license_issued, customer_email FROM orders WHERE code = ?")
ORDER_SQL_CUSTOMER = ORDER_SQL + " AND lower(customer_email) = lower(?)"
# Line items in a stable order: SQLite keeps insertion order (rowid); PostgreSQL has no rowid
# (and a view has no ctid), so there they come sorted by sku and name (``LINE_ORDER``).
LINES_SQL = ("SELECT sku, name, quantity, unit_price_cents FROM order_lines "
             "WHERE order_code = ? ORDER BY {order}")
LINE_ORDER = {"sqlite": "rowid", "postgres": "sku, name"}


def for_driver(driver: str) -> tuple[str, str, str]:
    """``(order_sql, order_sql_customer, lines_sql)`` in ``driver``'s parameter style."""
    lines = LINES_SQL.format(order=LINE_ORDER[driver])
    queries = (ORDER_SQL, ORDER_SQL_CUSTOMER, lines)
    if driver == "postgres":
        return tuple(q.replace("?", "%s") for q in queries)  # type: ignore[return-value]
    return queries


def _iso(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, date):
        return v.isoformat()
    return str(v)[:10]


def _text(v: Any) -> str | None:
    """Text columns as text, whatever a view or a loose SQLite column actually holds."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


class OrderRecord(dict):
    """The tool's output, plus the order's customer as an attribute: our code's metadata (a
    draft's customer), never part of what the model or a JSON output sees."""
    customer_email: str | None = None


def order_record(row: tuple, lines: list[tuple] | None) -> dict[str, Any]:
    """The tool's output for one row: minimal fields, dates as yyyy-mm-dd, booleans as booleans."""
    code, status, detail, product, placed_on, eta, lic, *rest = row
    code, status, detail, product = _text(code), _text(status), _text(detail), _text(product)
    rec = OrderRecord({
        "found": True,
        "order_code": code,
        "status": status,
        "status_detail": detail,
        "product": product,
        "placed_on": _iso(placed_on),
        "estimated_delivery": _iso(eta),
        "license_issued": bool(lic),
    })
    rec.customer_email = _text(rest[0]) if rest else None
    if lines is not None:
        rec["line_items"] = [
            {"sku": _text(s), "name": _text(n), "quantity": int(q), "unit_price_cents": int(p)}
            for s, n, q, p in lines
        ]
    return rec


def sqlite_path(url: str) -> Path:
    """The file a SQLite ``--db`` names: a path, ``sqlite:///path`` or ``sqlite://path``."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):] or ".")
    if url.startswith("sqlite://"):
        return Path(url[len("sqlite://"):])
    return Path(url)
