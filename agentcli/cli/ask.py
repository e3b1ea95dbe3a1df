"""``agentcli ask``: one question, answered and exited (and bare ``agentcli`` on a pipe)."""


import sys
from typing import Annotated, Optional

import typer

from ..app import App
from ..drafts.queue import ticket_arg
from ..errors import AgentcliError
from ..events import Error
from ..ticket import Run
from .advice import advise
from .common import (
    clean_for_terminal,
    dump_json,
    err_console,
    error_line,
    lock_notice,
    offline_notice,
    out_console,
    read_question,
    run,
    say_err,
    warn,
)
from .options import ModelOptions, TicketOpt, model_options
from .preflight import preflight
from .render import TraceRenderer


def _json_failure(settings, wanted: bool, question: Optional[str], e: AgentcliError) -> None:
    """``--json``: the spec's object for a question that never ran (a usage or configuration
    error, exit 2 or 3): status "error" and the same one-line message as on stderr, so a script
    reading standard output reads one object whatever happened."""
    if not wanted:
        return
    r = Run(provider=getattr(settings, "provider", None), model=getattr(settings, "model", None))
    r.question = question
    r.error = Error("not_run", e.message, e.exit_code)
    dump_json(r.result())


def ask_main(question: Optional[str], opts: ModelOptions, ticket: Optional[str] = None) -> None:
    def body():
        settings = q = None
        try:
            t = ticket_arg(ticket)
            settings = opts.settings()
            q = read_question(question)
            preflight(settings, opts)
        except AgentcliError as e:
            _json_failure(settings, settings.json if settings is not None else bool(opts.json), q, e)
            raise
        offline_notice(settings, opts)
        return _ask(settings, q, t)

    raise typer.Exit(run(body))


async def _ask(settings, question: str, ticket: Optional[str] = None) -> int:
    try:
        application = App.open(settings)
    except AgentcliError as e:
        _json_failure(settings, settings.json, question, e)
        raise
    try:
        try:
            conv = application.conversation(ticket=ticket, resume=True)
        except AgentcliError as e:
            _json_failure(settings, settings.json, question, e)
            raise
        note = conv.ticket.unread_note()
        if note is not None:
            warn([note])
        scoped = conv.ticket.scope_note()
        if scoped is not None and not settings.quiet:
            say_err(f"agentcli: {clean_for_terminal(scoped)}")
        consumers = []
        application.drafts.on_wait = lock_notice(err_console())  # a held lock: who holds it
        if not settings.json:
            live = sys.stdout.isatty()
            console = out_console() if live else err_console()
            application.drafts.on_wait = lock_notice(console)  # above the spinner, on a terminal
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
