"""``agentcli batch``: many questions in, one JSON object per question out, in input order.

Only typer and the standard library are imported here; the engine (``agentcli.batch``) and the
SDKs load when the command runs.
"""

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_common import (Customer, Db, DraftsDir, Json, MaxTurns, Model, NoStream, Provider,
                         Quiet, RequestTimeout, Retries, ToolTimeout, offline_notice, run,
                         settings_from)

DEFAULT_CONCURRENCY = 8  # keep in step with agentcli.batch.DEFAULT_CONCURRENCY
MAX_CONCURRENCY = 256


def batch_main(file: Optional[str], *, concurrency: int = DEFAULT_CONCURRENCY,
               output: Optional[Path] = None, resume: bool = False, provider=None, model=None,
               db=None, drafts_dir=None, customer=None, max_turns=None, tool_timeout=None,
               request_timeout=None, retries=None, quiet=False, no_stream=False) -> None:
    def body():
        from .batch import LineSource, run_batch
        from .errors import UsageError

        settings = settings_from(provider=provider, model=model, db=db, drafts_dir=drafts_dir,
                                 customer=customer, max_turns=max_turns, tool_timeout=tool_timeout,
                                 request_timeout=request_timeout, retries=retries, json=True,
                                 quiet=quiet, no_stream=no_stream)
        if resume and output is None:
            raise UsageError("--resume needs --output FILE (the file that holds the records so far)")
        if file is None and sys.stdin is not None and sys.stdin.isatty():
            raise UsageError("no input: pass a FILE with one question per line (or JSON Lines), "
                             "or pipe the questions in (agentcli batch < questions.txt)")
        source = LineSource.open(file)
        offline_notice(settings)
        return run_batch(settings, source=source, concurrency=concurrency, output=output,
                         resume=resume, quiet=quiet)

    raise typer.Exit(run(body))


def register(app: typer.Typer) -> None:
    @app.command("batch")
    def batch(
        file: Annotated[Optional[str], typer.Argument(
            help="questions, one per line: plain text, or JSON Lines {\"id\", \"question\", "
                 "\"customer\"}; '-' or none reads standard input", show_default=False)] = None,
        concurrency: Annotated[int, typer.Option(
            "--concurrency", min=1, max=MAX_CONCURRENCY,
            help="questions answered at once (one shared client and database pool)")] = DEFAULT_CONCURRENCY,
        output: Annotated[Optional[Path], typer.Option(
            "--output", "-o", help="also append every record to FILE as soon as it is done "
                                   "(any order)", show_default=False, dir_okay=False)] = None,
        resume: Annotated[bool, typer.Option(
            "--resume", help="skip ids that already have a record in the --output file "
                             "(failed API calls are tried again)")] = False,
        provider: Provider = None, model: Model = None, db: Db = None, drafts_dir: DraftsDir = None,
        customer: Customer = None, max_turns: MaxTurns = None, tool_timeout: ToolTimeout = None,
        request_timeout: RequestTimeout = None, retries: Retries = None,
        json_: Json = False, quiet: Quiet = False, no_stream: NoStream = False,
    ) -> None:
        """Answer many questions; print one JSON object per question, in input order.

        Exit code: 0 when every question finished normally, 1 when any is incomplete (or its
        input line was unusable), 4 when any failed at the model API after retries.
        """
        # --json is accepted for symmetry with ask: batch output is always JSON Lines.
        batch_main(file, concurrency=concurrency, output=output, resume=resume,
                   provider=provider, model=model, db=db, drafts_dir=drafts_dir,
                   customer=customer, max_turns=max_turns, tool_timeout=tool_timeout,
                   request_timeout=request_timeout, retries=retries, quiet=quiet,
                   no_stream=no_stream)
