"""``agentcli orders show`` (the tool's lookup without a model) and ``agentcli db init``."""


import asyncio
import sys
import time
from typing import Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from ..config import ORDERS, default_db_path, resolve
from ..drafts.store import DraftStore
from ..errors import ConfigError, UsageError
from ..redact import json_dumps, one_line, redact_obj
from ..stores import (
    check_db_url,
    init_postgres,
    init_sqlite,
    is_postgres_url,
    mask_dsn,
    open_store,
    sqlite_path,
)
from ..ticket import Ticket
from ..tools import ToolDeps, default_registry, run_tool
from ..vocab import Outcome, ToolName
from .common import out_console, run
from .options import PlainUsage, option
from .trace_lines import flat

orders_app = typer.Typer(help="Look orders up without a model.", no_args_is_help=True)
db_app = typer.Typer(help="The demo orders database.", no_args_is_help=True)
Db, Customer, Json = (option(name, ORDERS) for name in ("db", "customer", "json"))


def register(app: typer.Typer) -> None:
    app.add_typer(orders_app, name="orders")
    app.add_typer(db_app, name="db")


@orders_app.command("show", cls=PlainUsage, short_help="Look an order up, as the model's tool does.")
def orders_show(
    code: Annotated[str, typer.Argument(help="order code, e.g. GH56JK78MN or ORD-20261234",
                                        metavar="CODE")],
    db: Db = None, customer: Customer = None, json_: Json = False,
    lines: Annotated[bool, typer.Option("--lines/--no-lines", help="include line items")] = True,
) -> None:
    """Print what get_order_status returns for CODE (same validation, same scope).

    Examples:

    \b
      agentcli orders show ORD-20261234
      agentcli orders show GH56JK78MN --json
    """

    def body() -> int:
        settings = resolve(db=db, customer=customer)
        store = open_store(settings.db)

        async def lookup():
            try:
                deps = ToolDeps(store, DraftStore(settings.drafts_dir))
                view = Ticket("orders-show", customer=settings.customer).view()
                return await run_tool(default_registry(), ToolName.LOOKUP,
                                      {"order_code": code, "include_line_items": lines}, deps, view, 30.0)
            finally:
                await store.aclose()

        out = asyncio.run(lookup())
        if out.is_error:
            if out.outcome == Outcome.INVALID_INPUT:
                raise UsageError(str(out.result))
            raise ConfigError(str(out.result))  # the database failed or timed out

        result = redact_obj(out.result)  # database text is untrusted: it may hold a key
        if json_:
            print(json_dumps(result))
        else:
            _print_order(result)
        return 0 if result.get("found") else 1

    raise typer.Exit(run(body))


def _print_order(rec: dict) -> None:
    console = out_console()
    if not rec.get("found"):
        console.print(Text(f"order {flat(rec.get('order_code'))}: not found"))
        return
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    for k in ("order_code", "status", "status_detail", "product", "placed_on",
              "estimated_delivery", "license_issued"):
        v = rec.get(k)
        # database text is untrusted: a CR or U+2028 in status_detail must not start a line
        t.add_row(k, Text(flat("—" if v is None else v)))
    console.print(t)
    items = rec.get("line_items")
    if items:
        lt = Table("sku", "name", "qty", "unit price")
        for li in items:
            lt.add_row(Text(flat(li["sku"])), Text(flat(li["name"])),
                       str(li["quantity"]), f"{li['unit_price_cents'] / 100:.2f}")
        console.print(lt)


@db_app.command("init", short_help="Create the demo orders database.")
def db_init(
    db: Annotated[Optional[str], typer.Option("--db", help="where to create it: SQLite path, sqlite:///path "
                                              "or postgresql://... [default: under AGENTCLI_HOME]",
                                              show_default=False, metavar="DB")] = None,
    orders: Annotated[int, typer.Option("--orders", min=1, metavar="N",
                                        help="how many orders to generate")] = 300,
    force: Annotated[bool, typer.Option("--force", help="replace an existing database")] = False,
) -> None:
    """Create the demo orders database (the only command that writes to a database).

    Examples:

    \b
      agentcli db init
      agentcli db init --db ./orders.sqlite3 --force
    """

    def body() -> int:
        t0 = time.perf_counter()
        db_ = (db or "").strip() or None  # as the db setting reads it: " postgresql://..." is the URL
        if is_postgres_url(db_):
            n = init_postgres(db_, orders, force=force)
            where = mask_dsn(db_)
        else:
            check_db_url(db_)  # a misspelt URL is not a file to create
            path = sqlite_path(db_) if db_ else default_db_path()
            n = init_sqlite(path, orders, force=force)
            where = str(path)
        sys.stderr.write(f"created {one_line(where, 4096)} with {n} orders in "
                         f"{time.perf_counter() - t0:.1f} s\n")
        return 0

    raise typer.Exit(run(body))
