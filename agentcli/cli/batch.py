"""``agentcli batch``: many questions in, one JSON object per question out, in input order.

Only typer and the standard library are imported at load time; the engine (``agentcli.batch.engine``),
rich and the SDKs load when the command runs.
"""


import asyncio
import concurrent.futures
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text

from ..app import App
from ..batch.engine import BatchRunner, RecordFile, read_done
from ..batch.input import LineSource
from ..errors import UsageError
from ..redact import clean_for_terminal
from .common import err_console, offline_notice, run
from .options import ModelOptions, model_options
from .preflight import preflight

DEFAULT_CONCURRENCY = 8  # keep in step with agentcli.batch.engine.DEFAULT_CONCURRENCY
MAX_CONCURRENCY = 256


def register(app: typer.Typer) -> None:
    @app.command("batch", short_help="Answer many questions: one JSON object per question.")
    @model_options
    def batch(
        file: Annotated[Optional[str], typer.Argument(
            help="questions, one per line: plain text, or JSON Lines {\"id\", \"question\", "
                 "\"customer\"}; '-' or none reads standard input", show_default=False,
            metavar="FILE")] = None,
        concurrency: Annotated[int, typer.Option(
            "--concurrency", min=1, max=MAX_CONCURRENCY, metavar="N",
            help="questions answered at once (one shared client and database pool)")] = DEFAULT_CONCURRENCY,
        output: Annotated[Optional[Path], typer.Option(
            "--output", "-o", help="also append every record to FILE as soon as it is done "
                                   "(any order)", show_default=False, dir_okay=False,
            metavar="FILE")] = None,
        resume: Annotated[bool, typer.Option(
            "--resume", help="skip ids that already have a record in the --output file "
                             "(failed API calls are tried again)")] = False,
        *, opts: ModelOptions,
    ) -> None:
        """Answer many questions; print one JSON object per question, in input order.

        Exit code: 0 when every question finished normally, 1 when any is incomplete (or its
        input line was unusable), 4 when any failed at the model API after retries.

        Examples:

        \b
          agentcli batch questions.txt > answers.jsonl
          agentcli batch tickets.jsonl -o done.jsonl --resume
        """
        # --json is accepted for symmetry with ask: batch output is always JSON Lines.
        batch_main(file, opts, concurrency=concurrency, output=output, resume=resume)


def batch_main(file: Optional[str], opts: ModelOptions, *, concurrency: int = DEFAULT_CONCURRENCY,
               output: Optional[Path] = None, resume: bool = False) -> None:
    def body():
        settings = opts.settings(json=True)
        if resume and output is None:
            raise UsageError("--resume needs --output FILE (the file that holds the records so far)")
        if file is None and sys.stdin is not None and sys.stdin.isatty():
            raise UsageError("no input: pass a FILE with one question per line (or JSON Lines), "
                             "or pipe the questions in (agentcli batch < questions.txt)")
        source = LineSource.open(file)
        preflight(settings, opts)
        offline_notice(settings)
        return run_batch(settings, source=source, concurrency=concurrency, output=output,
                         resume=resume, quiet=opts.quiet)

    raise typer.Exit(run(body))


# --------------------------------------------------------------------------- progress


class Progress:
    """A rich progress bar on stderr: done/total (when known), rate, failures."""

    def __init__(self, total: int | None):
        self.console = err_console()  # NO_COLOR: no colour, and no bold either
        cols = [SpinnerColumn(), TextColumn("batch"), BarColumn(),
                MofNCompleteColumn() if total is not None else TextColumn("{task.completed}"),
                TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[failed]}"),
                TextColumn("{task.fields[limits]}"), TimeElapsedColumn()]
        self.p = RichProgress(*cols, console=self.console, redirect_stdout=False,
                              redirect_stderr=False, transient=False)
        self.task = self.p.add_task("batch", total=total, rate="", failed="0 failed", limits="")
        self.done = 0
        self.failed = 0
        self.t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        self.p.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.p.stop()

    def advance(self, *, failed: bool = False, skipped: bool = False) -> None:
        self.done += 0 if skipped else 1
        self.failed += int(failed)
        dt = time.perf_counter() - self.t0
        rate = f"{self.done / dt:.1f}/s" if dt > 0 and self.done else ""
        self.p.update(self.task, advance=1, rate=rate, failed=f"{self.failed} failed")

    def limits(self, status: str) -> None:
        """The rate-limit gate changed: time limited so far, concurrency now."""
        self.p.update(self.task, limits=status)

    def print_line(self, line: str) -> None:
        """A record for a stdout that is the same terminal: printed above the bar."""

        self.console.print(Text(line), soft_wrap=True, highlight=False)


async def run_batch(settings: Any, *, source: Any, concurrency: int,
                    output: Path | None, resume: bool, show_progress: bool | None = None,
                    quiet: bool = False) -> int:
    """What ``agentcli batch`` does; returns the exit code."""


    if resume and output is None:
        raise UsageError("--resume needs --output FILE (the file that holds the records so far)")
    if output is not None and source.same_file(output):
        raise UsageError(f"--output {output} is the input file: the batch would read its own "
                         "records as questions; write the records elsewhere")
    skip = read_done(output) if (resume and output is not None) else set()
    rec_file = RecordFile(output) if output is not None else None

    loop = asyncio.get_running_loop()
    # Lookups and draft writes run in the default executor: one thread per question in flight.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(
        max_workers=min(64, concurrency + 4), thread_name_prefix="agentcli-batch"))
    app = App.open(settings, pool_size=concurrency)  # freezes the SDK's objects (providers._sdk_import)
    if show_progress is None:
        show_progress = sys.stderr.isatty() and not quiet
    progress = Progress(source.count_items()) if show_progress else None
    emit = None  # the runner's default: stdout
    if progress is not None and sys.stdout.isatty():
        emit = progress.print_line
    runner = BatchRunner(app, concurrency=concurrency, emit=emit, output=rec_file, skip=skip,
                         progress=progress)
    try:
        if progress is not None:
            with progress:
                summary = await runner.run(source.items())
        else:
            summary = await runner.run(source.items())
    finally:
        try:
            await app.aclose()
        finally:
            if rec_file is not None:
                rec_file.close()
            source.close()
    if summary.stopped:

        sys.stderr.write(f"agentcli: batch stopped: {clean_for_terminal(summary.stopped)}; fix it and rerun"
                         + (" with --resume" if output is not None else "") + "\n")
    if not quiet:
        sys.stderr.write(f"agentcli: {summary.line()}\n")
    sys.stderr.flush()
    return summary.exit_code
