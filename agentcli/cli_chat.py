"""``agentcli chat`` (and bare ``agentcli`` on a terminal): the REPL.

Light at import time (``agentcli --help`` loads this module): the REPL, rich and prompt_toolkit
are imported inside the command body. With standard input (or output) not a terminal, no
prompt_toolkit is used at all: each line of standard input is one turn of the same ticket.
"""

import sys
from typing import Any

import typer

from .cli_common import (Customer, Db, DraftsDir, Json, MaxTurns, Model, NoStream, Provider,
                         Quiet, RequestTimeout, Retries, ToolTimeout, err_console, offline_notice,
                         out_console, run, settings_from)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream) and stream.isatty()
    except (AttributeError, ValueError):
        return False


def chat_main(*, provider: str | None = None, model: str | None = None, db: str | None = None,
              drafts_dir: Any = None, customer: str | None = None, max_turns: int | None = None,
              tool_timeout: float | None = None, request_timeout: float | None = None,
              retries: int | None = None, json_out: bool = False, quiet: bool = False,
              no_stream: bool = False) -> None:
    """Start the REPL (interactive on a terminal, line by line otherwise); exits via typer.Exit."""

    def body():
        settings = settings_from(provider=provider, model=model, db=db, drafts_dir=drafts_dir,
                                 customer=customer, max_turns=max_turns, tool_timeout=tool_timeout,
                                 request_timeout=request_timeout, retries=retries, json=json_out,
                                 quiet=quiet, no_stream=no_stream)
        return _chat(settings, _isatty(sys.stdin) and _isatty(sys.stdout))

    raise typer.Exit(run(body))


async def _chat(settings: Any, interactive: bool) -> int:
    from .app import App
    from .repl import Repl

    application = App.open(settings)  # a configuration error ends here: one line, exit 3
    try:
        if interactive:
            repl = Repl(application, console=out_console(), err_console=err_console(),
                        interactive=True, live=True, json_out=settings.json,
                        answer_file=sys.stdout if settings.json else None)
            return await repl.run()
        offline_notice(settings)  # the banner says it on a terminal
        live = _isatty(sys.stdout)
        repl = Repl(application, console=out_console(), err_console=err_console(),
                    interactive=False, live=live and not settings.json, json_out=settings.json,
                    answer_file=None if live and not settings.json else sys.stdout, spinner=False)
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, ValueError, OSError):
            return 0  # no standard input at all: nothing to answer
        return await repl.run_lines(fd)
    finally:
        await application.aclose()


def register(app: typer.Typer) -> None:
    @app.command("chat")
    def chat(
        provider: Provider = None, model: Model = None, db: Db = None, drafts_dir: DraftsDir = None,
        customer: Customer = None, max_turns: MaxTurns = None, tool_timeout: ToolTimeout = None,
        request_timeout: RequestTimeout = None, retries: Retries = None, json_: Json = False,
        quiet: Quiet = False, no_stream: NoStream = False,
    ) -> None:
        """The REPL: one ticket at a time; follow-ups keep context.

        Inside, /help lists the commands (/new, /customer, /model, /drafts, /usage, /history).

        When standard input is not a terminal, each line is one question (or slash command) of
        the same ticket, and the command exits 0 at end of input.
        """
        chat_main(provider=provider, model=model, db=db, drafts_dir=drafts_dir, customer=customer,
                  max_turns=max_turns, tool_timeout=tool_timeout, request_timeout=request_timeout,
                  retries=retries, json_out=json_, quiet=quiet, no_stream=no_stream)
