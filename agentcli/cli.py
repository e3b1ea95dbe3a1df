"""The ``agentcli`` command line (typer). Heavy imports happen inside the commands that use them."""

import json
import sys
from typing import Annotated, Optional

import typer

from . import __version__
from ._entry import silence_stdout
from .cli_common import (Customer, Db, DraftsDir, Json, MaxTurns, Model, NoStream, Provider,
                         Quiet, RequestTimeout, Retries, ToolTimeout, err_console, error_line, fail,
                         offline_notice,
                         out_console, read_question, run, settings_from)

def _skip_needless_coercion() -> None:
    """typer >= 0.2x coerces every value through a pydantic TypeAdapter (importing pydantic,
    ~150-250 ms) even for an option left at None, a plain string, or a plain number
    (``log list -n 5``): take those through here, in range, and leave anything else (``-n x``,
    ``-n 0x10``, out of range) to typer's own validation and error messages.

    It relies on typer's private ``_TyperParameter`` and does nothing on a typer without it.
    """
    try:
        from typer.core import _TyperParameter
    except ImportError:
        return
    orig = getattr(_TyperParameter, "process_value", None)
    if orig is None or getattr(orig, "_agentcli_lean", False):
        return
    import re

    plain_str = (str, Optional[str])
    numbers = {int: int, Optional[int]: int, float: float, Optional[float]: float}
    literal = {int: re.compile(r"[+-]?[0-9]{1,18}"),
               float: re.compile(r"[+-]?(?:[0-9]{1,18}(?:\.[0-9]{0,18})?|\.[0-9]{1,18})")}
    unhandled = object()

    def plain_number(d, value):
        """``value`` as the option's int/float when it is a plain literal or already a number of
        that type, inside min/max; ``unhandled`` for anything typer should judge."""
        kind, info = numbers.get(d.annotation), d.parameter_info
        if kind is None or getattr(info, "clamp", False):
            return unhandled
        if type(value) is str and literal[kind].fullmatch(value):
            value = kind(value)
        if type(value) is not kind:
            return unhandled
        lo, hi = getattr(info, "min", None), getattr(info, "max", None)
        return value if (lo is None or value >= lo) and (hi is None or value <= hi) else unhandled

    def process_value(self, ctx, value):
        d = getattr(self, "type_descriptor", None)
        if (d is not None and not (self.multiple or self.nargs == -1)
                and getattr(d.parameter_info, "parser", None) is None
                and getattr(d, "file_annotation", None) is None):
            if (value is None and not self.required) or (d.annotation in plain_str and type(value) is str):
                return self.callback(ctx, self, value) if self.callback is not None else value
            number = plain_number(d, value)
            if number is not unhandled:
                return self.callback(ctx, self, number) if self.callback is not None else number
        return orig(self, ctx, value)

    process_value._agentcli_lean = True  # type: ignore[attr-defined]
    _TyperParameter.process_value = process_value


_skip_needless_coercion()

app = typer.Typer(
    name="agentcli",
    help="A terminal assistant for customer-support staff: answers order questions with a model "
         "that can look orders up (read-only) and save reply drafts for a human to review.\n\n"
         "With no command it starts the REPL on a terminal, and answers standard input as one "
         "question (like `ask`) when that is a pipe; the options below apply to either.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
orders_app = typer.Typer(help="Look orders up without a model.", no_args_is_help=True)
db_app = typer.Typer(help="The demo orders database.", no_args_is_help=True)
app.add_typer(orders_app, name="orders")
app.add_typer(db_app, name="db")


def _version(value: bool) -> None:
    if value:
        print(f"agentcli {__version__}")
        raise typer.Exit(0)


# The shared options the root takes (for the REPL, or for `ask` on a pipe), as flags for messages.
_ROOT_FLAGS = {"provider": "--provider", "model": "--model", "db": "--db", "drafts_dir": "--drafts-dir",
               "customer": "--customer", "max_turns": "--max-turns", "tool_timeout": "--tool-timeout",
               "request_timeout": "--request-timeout", "retries": "--retries", "json_out": "--json",
               "quiet": "--quiet", "no_stream": "--no-stream"}


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context,
          version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False,
          provider: Provider = None, model: Model = None, db: Db = None, drafts_dir: DraftsDir = None,
          customer: Customer = None, max_turns: MaxTurns = None, tool_timeout: ToolTimeout = None,
          request_timeout: RequestTimeout = None, retries: Retries = None, json_: Json = False,
          quiet: Quiet = False, no_stream: NoStream = False) -> None:
    opts = dict(provider=provider, model=model, db=db, drafts_dir=drafts_dir, customer=customer,
                max_turns=max_turns, tool_timeout=tool_timeout, request_timeout=request_timeout,
                retries=retries, json_out=json_, quiet=quiet, no_stream=no_stream)
    if ctx.invoked_subcommand is not None:
        given = [_ROOT_FLAGS[k] for k, v in opts.items()
                 if (v is True if isinstance(v, bool) else v is not None)]  # 0 is a value too
        if given:  # `agentcli --json drafts list` would silently drop --json: say so
            raise fail(f"{given[0]} before a command does nothing: options go after the command "
                       f"(agentcli {ctx.invoked_subcommand} --help lists its own)", 2)
        return
    if sys.stdin is not None and sys.stdin.isatty():
        from .cli_chat import chat_main

        chat_main(**opts)
    else:
        # A pipe on standard input: behave as `agentcli ask` (a REPL never starts on a pipe).
        ask_main(None, **opts)


# --------------------------------------------------------------------------- ask

def ask_main(question: Optional[str], *, provider=None, model=None, db=None, drafts_dir=None,
             customer=None, max_turns=None, tool_timeout=None, request_timeout=None, retries=None,
             json_out=False, quiet=False, no_stream=False) -> None:
    def body():
        settings = settings_from(provider=provider, model=model, db=db, drafts_dir=drafts_dir,
                                 customer=customer, max_turns=max_turns, tool_timeout=tool_timeout,
                                 request_timeout=request_timeout, retries=retries, json=json_out,
                                 quiet=quiet, no_stream=no_stream)
        q = read_question(question)
        offline_notice(settings)
        return _ask(settings, q)

    code = run(body)
    raise typer.Exit(code)


async def _ask(settings, question: str) -> int:
    from .app import App
    from .render import TraceRenderer

    application = App.open(settings)
    try:
        conv = application.conversation()
        consumers = []
        if not settings.json:
            live = sys.stdout.isatty()
            console = out_console() if live else err_console()
            consumers.append(TraceRenderer(console, answer_file=None if live else sys.stdout,
                                           live=live, quiet=settings.quiet,
                                           err_console=err_console()))
        builder = await application.run(conv, question, consumers)
        for c in consumers:
            c.close()
        if settings.json:
            sys.stdout.write(json.dumps(builder.result(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
            if builder.error is not None:
                error_line(builder.error.message)
        return builder.exit_code
    finally:
        await application.aclose()


@app.command()
def ask(
    question: Annotated[Optional[str], typer.Argument(
        help="the question; '-' or none reads the whole of standard input", show_default=False)] = None,
    provider: Provider = None, model: Model = None, db: Db = None, drafts_dir: DraftsDir = None,
    customer: Customer = None, max_turns: MaxTurns = None, tool_timeout: ToolTimeout = None,
    request_timeout: RequestTimeout = None, retries: Retries = None, json_: Json = False,
    quiet: Quiet = False, no_stream: NoStream = False,
) -> None:
    """Answer one question and exit."""
    ask_main(question, provider=provider, model=model, db=db, drafts_dir=drafts_dir,
             customer=customer, max_turns=max_turns, tool_timeout=tool_timeout,
             request_timeout=request_timeout, retries=retries, json_out=json_, quiet=quiet,
             no_stream=no_stream)


# --------------------------------------------------------------------------- orders / db

@orders_app.command("show")
def orders_show(
    code: Annotated[str, typer.Argument(help="order code, e.g. GH56JK78MN or ORD-20261234")],
    db: Db = None, customer: Customer = None, json_: Json = False,
    lines: Annotated[bool, typer.Option("--lines/--no-lines", help="include line items")] = True,
) -> None:
    """Print what get_order_status returns for CODE (same validation, same scope)."""

    def body() -> int:
        import asyncio

        from .config import resolve
        from .drafts import DraftStore
        from .errors import ConfigError, UsageError
        from .stores import open_store
        from .tools import ToolContext, default_registry, run_tool

        settings = resolve(db=db, customer=customer)
        store = open_store(settings.db)

        async def lookup():
            try:
                ctx = ToolContext(store=store, drafts=DraftStore(settings.drafts_dir), customer=settings.customer)
                return await run_tool(default_registry(), "get_order_status",
                                      {"order_code": code, "include_line_items": lines}, ctx, 30.0)
            finally:
                await store.aclose()

        out = asyncio.run(lookup())
        if out.is_error:
            if out.outcome == "invalid_input":
                raise UsageError(str(out.result))
            raise ConfigError(str(out.result))  # the database failed or timed out
        from .redact import redact_obj

        result = redact_obj(out.result)  # database text is untrusted: it may hold a key
        if json_:
            print(json.dumps(result, ensure_ascii=False))
        else:
            _print_order(result)
        return 0 if result.get("found") else 1

    raise typer.Exit(run(body))


def _print_order(rec: dict) -> None:
    from rich.table import Table
    from rich.text import Text

    from .redact import clean_for_terminal

    console = out_console()
    if not rec.get("found"):
        console.print(Text(f"order {rec.get('order_code')}: not found"))
        return
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    for k in ("order_code", "status", "status_detail", "product", "placed_on",
              "estimated_delivery", "license_issued"):
        v = rec.get(k)
        t.add_row(k, Text(clean_for_terminal("—" if v is None else str(v))))
    console.print(t)
    items = rec.get("line_items")
    if items:
        lt = Table("sku", "name", "qty", "unit price")
        for li in items:
            lt.add_row(Text(clean_for_terminal(li["sku"])), Text(clean_for_terminal(li["name"])),
                       str(li["quantity"]), f"{li['unit_price_cents'] / 100:.2f}")
        console.print(lt)


@db_app.command("init")
def db_init(
    db: Annotated[Optional[str], typer.Option("--db", help="where to create it: SQLite path, sqlite:///path "
                                              "or postgresql://... [default: under AGENTCLI_HOME]",
                                              show_default=False)] = None,
    orders: Annotated[int, typer.Option("--orders", min=1, help="how many orders to generate")] = 300,
    force: Annotated[bool, typer.Option("--force", help="replace an existing database")] = False,
) -> None:
    """Create the demo orders database (the only command that writes to a database)."""

    def body() -> int:
        import time

        from .config import default_db_path
        from .stores import init_postgres, init_sqlite, is_postgres_url, mask_dsn, sqlite_path

        t0 = time.perf_counter()
        if is_postgres_url(db):
            n = init_postgres(db, orders, force=force)
            where = mask_dsn(db)
        else:
            path = sqlite_path(db) if db else default_db_path()
            n = init_sqlite(path, orders, force=force)
            where = str(path)
        sys.stderr.write(f"created {where} with {n} orders in {time.perf_counter() - t0:.1f} s\n")
        return 0

    raise typer.Exit(run(body))


def _register_extensions() -> None:
    """Commands that live in their own modules (each imports its heavy parts lazily)."""
    from . import cli_batch, cli_chat, cli_review

    for mod in (cli_chat, cli_batch, cli_review):
        mod.register(app)


_register_extensions()


def main() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # text no encoding can hold (a lone surrogate from a model) prints as an escape
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass
    if sys.stdout is None:  # started with stdout closed (`agentcli ask ... >&-`): answer nothing
        sys.stderr.write("agentcli: standard output is closed; give agentcli somewhere to write\n")
        sys.exit(2)
    try:
        app(prog_name="agentcli")
    except KeyboardInterrupt:
        sys.stderr.write("agentcli: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:  # typer writing help or usage into a pipe whose reader went away
        silence_stdout()
        sys.exit(1)
    except OSError as e:  # ... or into a full disk (command bodies handle their own: cli_common.run)
        try:
            sys.stderr.write(f"agentcli: cannot write the output ({e.strerror or e})\n")
        except (OSError, AttributeError):
            pass
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
