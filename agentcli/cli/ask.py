"""``agentcli ask``: one question, answered and exited (and bare ``agentcli`` on a pipe)."""


import sys
from typing import Annotated, Optional

import typer

from ..app import App
from ..drafts.queue import ticket_arg
from .advice import advise
from .common import (
    dump_json,
    err_console,
    error_line,
    offline_notice,
    out_console,
    read_question,
    run,
)
from .options import ModelOptions, TicketOpt, model_options
from .preflight import preflight
from .render import TraceRenderer


def ask_main(question: Optional[str], opts: ModelOptions, ticket: Optional[str] = None) -> None:
    def body():
        t = ticket_arg(ticket)
        settings = opts.settings()
        q = read_question(question)
        preflight(settings, opts)
        offline_notice(settings)
        return _ask(settings, q, t)

    raise typer.Exit(run(body))


async def _ask(settings, question: str, ticket: Optional[str] = None) -> int:
    application = App.open(settings)
    try:
        conv = application.conversation(ticket=ticket, resume=True)
        consumers = []
        if not settings.json:
            live = sys.stdout.isatty()
            console = out_console() if live else err_console()
            consumers.append(TraceRenderer(console, answer_file=None if live else sys.stdout,
                                           live=live, quiet=settings.quiet,
                                           err_console=err_console(), command="ask",
                                           spinner=live))
        answered = await application.run(conv, question, consumers)
        for c in consumers:
            c.close()
        if settings.json:
            dump_json(answered.result())
            if answered.error is not None:

                error_line(advise(answered.error.message, answered.error.kind, "ask"))
        return answered.exit_code
    finally:
        await application.aclose()


def register(app: typer.Typer) -> None:
    @app.command()
    @model_options
    def ask(
        question: Annotated[Optional[str], typer.Argument(
            help="the question; '-' or none reads the whole of standard input", show_default=False,
            metavar="QUESTION")] = None,
        ticket: TicketOpt = None,
        *, opts: ModelOptions,
    ) -> None:
        """Answer one question and exit.

        Examples:

        \b
          agentcli ask "Where is order ORD-20261234?"
          agentcli ask --customer ana@example.com --ticket HD-1042 - < mail.txt
        """
        ask_main(question, opts, ticket)
