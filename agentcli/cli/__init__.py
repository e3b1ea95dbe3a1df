"""The ``agentcli`` command line (typer): one module per command, the shared model options
declared once (``options``), the pieces every command shares in ``common``.

Commands load lazily: the root group knows each command's module (``COMMANDS``) and imports it
only when that command runs (or when the whole help is drawn), so ``agentcli drafts list`` never
loads the loop, the providers or the checks, and each command module imports what it needs at
its top. ``main()`` is what the console script runs after ``_entry`` (which answers the
top-level ``--help`` itself); ``main(argv)`` runs in-process and returns the exit code, for tests.
"""


import importlib
import sys
from contextlib import contextmanager
from typing import Annotated, Any, Iterator, Optional, Sequence

import typer
from typer.core import TyperGroup

from .. import __version__
from ..errors import EXIT_INTERRUPTED
from ..redact import clean_for_terminal
from ..stdio import isatty, silence_stdout
from .common import fail
from .options import ModelOptions, TicketOpt, model_options

# command -> its module in agentcli.cli, in the order `agentcli --help` lists them
COMMANDS = {"ask": "ask", "chat": "chat", "batch": "batch", "eval": "eval", "orders": "orders",
            "db": "orders", "drafts": "drafts", "review": "review_cmd", "log": "log",
            "doctor": "doctor", "mcp": "mcp"}
_TYPER_SETTINGS = dict(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


class _Group(TyperGroup):
    """The root group: commands load on first use (see the module docstring), and a usage error
    quotes what was typed (``Invalid value for '--max-turns': 'sk-ant-…'``), so its message is
    redacted and cleaned before typer prints it."""

    _loaded: dict[str, Any] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in COMMANDS:
            return None
        if name not in self._loaded:
            module = importlib.import_module(f"{__name__}.{COMMANDS[name]}")
            holder = typer.Typer(**_TYPER_SETTINGS)
            module.register(holder)
            holder.callback()(lambda: None)  # always a group: its commands by name
            group = typer.main.get_command(holder)
            self._loaded.update(group.commands)
        return self._loaded.get(name)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _cleaned_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _cleaned_usage_errors():
            return super().invoke(ctx)


@contextmanager
def _cleaned_usage_errors() -> Iterator[None]:
    """Usage errors cleaned (above); and a Ctrl-C outside a command's body (while the command
    line is parsed, or while ``get_command`` imports a command's module) says so and exits 130
    like one inside it (typer would exit 130 without a word)."""
    try:
        yield
    except KeyboardInterrupt:
        raise fail("interrupted", EXIT_INTERRUPTED) from None
    except Exception as e:  # click's exceptions are not public in typer: recognised by shape
        if isinstance(getattr(e, "message", None), str) and hasattr(e, "show"):
            e.message = clean_for_terminal(e.message)
        raise


app = typer.Typer(
    cls=_Group,
    name="agentcli",
    help="A terminal assistant for customer-support staff: answers order questions with a model "
         "that can look orders up (read-only) and save reply drafts for a human to review.\n\n"
         "With no command it starts the REPL on a terminal, and answers standard input as one "
         "question (like `ask`) when that is a pipe; the options below apply to either.\n\n"
         "Examples:\n\n\b\n  agentcli\n  echo 'Where is ORD-20261234?' | agentcli",
    no_args_is_help=False,
    **_TYPER_SETTINGS,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"agentcli {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
@model_options
def _root(ctx: typer.Context,
          version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False,
          ticket: TicketOpt = None,
          *, opts: ModelOptions) -> None:
    if ctx.invoked_subcommand is not None:
        given = opts.given() + (["--ticket"] if ticket is not None else [])
        if given:  # `agentcli --json drafts list` would silently drop --json: say so
            raise fail(f"{given[0]} before a command does nothing: options go after the command "
                       f"(agentcli {ctx.invoked_subcommand} --help lists its own)", 2)
        return
    if isatty(sys.stdin):
        from .chat import chat_main

        chat_main(opts, ticket)
    else:
        # A pipe on standard input: behave as `agentcli ask` (a REPL never starts on a pipe).
        from .ask import ask_main

        ask_main(None, opts, ticket)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; with ``argv`` (tests), return the exit code instead of exiting."""
    for stream in (sys.stdout, sys.stderr):
        try:  # text no encoding can hold (a lone surrogate from a model) prints as an escape
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass
    if sys.stdout is None:  # started with stdout closed (`agentcli ask ... >&-`): answer nothing
        sys.stderr.write("agentcli: standard output is closed; give agentcli somewhere to write\n")
        return _exit(2, argv)
    try:
        app(args=None if argv is None else list(argv), prog_name="agentcli", standalone_mode=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return _exit(code, argv)
    except KeyboardInterrupt:
        sys.stderr.write("agentcli: interrupted\n")
        return _exit(EXIT_INTERRUPTED, argv)
    except BrokenPipeError:  # typer writing help or usage into a pipe whose reader went away
        silence_stdout()
        return _exit(1, argv)
    except OSError as e:  # ... or into a full disk (command bodies handle their own: common.run)
        try:
            sys.stderr.write(f"agentcli: cannot write the output ({e.strerror or e})\n")
        except (OSError, AttributeError):
            pass
        return _exit(1, argv)
    return _exit(0, argv)


def _exit(code: int, argv: Optional[Sequence[str]]) -> int:
    if argv is None:
        sys.exit(code)
    return code
