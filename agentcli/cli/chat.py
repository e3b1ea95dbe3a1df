"""``agentcli chat`` (and bare ``agentcli`` on a terminal): the REPL.

Light at import time: the REPL, rich and prompt_toolkit are imported inside the command body.
With standard input (or output) not a terminal, no prompt_toolkit is used at all: each line of
standard input is one turn of the same ticket.
"""


import sys
from typing import Any, Optional

import typer

from ..app import App
from ..drafts.queue import ticket_arg
from ..stdio import isatty
from .common import err_console, offline_text, out_console, provider_chosen, run
from .options import ModelOptions, TicketOpt, model_options
from .preflight import preflight
from .repl import AppLoader, Repl, quiet_terminal


def chat_main(opts: ModelOptions, ticket: Optional[str] = None) -> None:
    """Start the REPL (interactive on a terminal, line by line otherwise); exits via typer.Exit."""
    interactive = isatty(sys.stdin) and isatty(sys.stdout)
    # keys typed before the prompt is up are kept for it, never echoed raw (^[[A)
    restore = quiet_terminal() if interactive else (lambda: None)

    def body():
        t = ticket_arg(ticket)
        settings = opts.settings()
        preflight(settings, opts)
        return _chat(settings, interactive, t, chosen=provider_chosen(opts))

    try:
        code = run(body)
    finally:
        restore()
    raise typer.Exit(code)


async def _interactive(settings: Any, ticket: Optional[str], chosen: bool) -> int:
    """The prompt at once; the SDK, the provider and the database open behind it."""
    loader = AppLoader(settings, App.open)
    repl = Repl(loader, console=out_console(), err_console=err_console(), interactive=True,
                live=True, json_out=settings.json,
                answer_file=sys.stdout if settings.json else None, ticket=ticket,
                offline_chosen=chosen)
    try:
        return await repl.run()
    finally:
        if repl.app is not None:
            await repl.app.aclose()
        elif loader.done():
            try:
                await (await loader.app()).aclose()
            except Exception:  # noqa: BLE001 - it failed to open: nothing to close
                pass


async def _chat(settings: Any, interactive: bool, ticket: Optional[str] = None, *,
                chosen: bool = False) -> int:
    if interactive:
        return await _interactive(settings, ticket, chosen)
    application = App.open(settings)  # a configuration error ends here: one line, exit 3
    try:
        if settings.provider == "offline":  # the banner says it on a terminal
            sys.stderr.write(offline_text(chosen) + "\n")
        live = isatty(sys.stdout)
        repl = Repl(application, console=out_console(), err_console=err_console(),
                    interactive=False, live=live and not settings.json, json_out=settings.json,
                    answer_file=None if live and not settings.json else sys.stdout, spinner=False,
                    ticket=ticket)
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, ValueError, OSError):
            return 0  # no standard input at all: nothing to answer
        return await repl.run_lines(fd)
    finally:
        await application.aclose()


def register(app: typer.Typer) -> None:
    @app.command("chat", short_help="The REPL: one ticket at a time, follow-ups keep context.")
    @model_options
    def chat(ticket: TicketOpt = None, *, opts: ModelOptions) -> None:
        """The REPL: one ticket at a time; follow-ups keep context.

        Inside, /help lists the commands (/new, /customer, /model, /drafts, /show, /usage,
        /history).

        Examples:

        \b
          agentcli chat
          agentcli chat --customer ana@example.com

        When standard input is not a terminal, each line is one question of the same ticket;
        at end of input it exits as batch does: 0 when every question ended normally, 4 when any
        failed at the model API, 1 when any is incomplete.
        """
        chat_main(opts, ticket)
