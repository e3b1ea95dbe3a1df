"""``agentcli batch``: many questions in, one JSON object per question out, in input order.

Only typer and the standard library are imported at load time; the engine (``agentcli.batch.engine``),
rich and the SDKs load when the command runs.
"""


import asyncio
import concurrent.futures
import json
import os
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
from ..batch.batches import MAX_OPEN, BatchState, Rounds, state_path
from ..batch.engine import BatchRunner, RecordFile, read_done
from ..batch.input import LineSource
from ..config import BATCH
from ..errors import EXIT_API, UsageError
from ..redact import clean_for_terminal, one_line
from .common import err_console, lock_notice, offline_notice, out_console, run, say_err
from .layout import print_lines
from .options import ModelOptions, model_options, option
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
                             "(failed API calls are tried again; --via batches: re-attach to "
                             "the batches already submitted)")] = False,
        via: option("via", BATCH) = None,
        batch_deadline: option("batch_deadline", BATCH) = None,
        live_tail: option("live_tail", BATCH) = None,
        *, opts: ModelOptions,
    ) -> None:
        """Answer many questions; print one JSON object per question, in input order (on a
        terminal: one readable line each, unless --json; -o FILE keeps the records).

        Exit code: 0 when every question finished normally, 1 when any is incomplete (or its
        input line was unusable), 4 when any failed at the model API after retries; Ctrl-C says
        how many were answered and how to go on (--resume).

        --via batches (the Anthropic provider only) sends each round of the tool loop as one
        Message Batch at half price; its state sits beside --output (FILE.batches.json), so
        --resume re-attaches to what was submitted instead of paying twice.

        Examples:

        \b
          agentcli batch questions.txt > answers.jsonl
          agentcli batch tickets.jsonl -o done.jsonl --resume
          agentcli batch tickets.jsonl --via batches -o done.jsonl --resume
        """
        # --json: JSON Lines on a terminal too (in a pipe or a file they always are)
        batch_main(file, opts, concurrency=concurrency, output=output, resume=resume,
                   batch_flags={"via": via, "batch_deadline": batch_deadline,
                                "live_tail": live_tail})


def batch_main(file: Optional[str], opts: ModelOptions, *, concurrency: int = DEFAULT_CONCURRENCY,
               output: Optional[Path] = None, resume: bool = False,
               batch_flags: dict[str, Any] | None = None) -> None:
    def body():
        settings = opts.settings(json=True, **(batch_flags or {}))
        if resume and output is None:
            raise UsageError("--resume needs --output FILE (the file that holds the records so far)")
        if settings.via == "batches":
            if settings.provider != "anthropic":
                raise UsageError(f"--via batches needs the Anthropic provider (the Message Batches "
                                 f"API); --provider {settings.provider} has none: use --via live")
            if output is None:
                raise UsageError("--via batches needs --output FILE: the batches' state is kept "
                                 "beside it (FILE.batches.json), so a crash loses nothing paid for")
        if file is None and sys.stdin is not None and sys.stdin.isatty():
            raise UsageError("no input: pass a FILE with one question per line (or JSON Lines), "
                             "or pipe the questions in (agentcli batch < questions.txt)")
        source = LineSource.open(file)
        preflight(settings, opts)
        offline_notice(settings, opts)
        return run_batch(settings, source=source, concurrency=concurrency, output=output,
                         resume=resume, quiet=opts.quiet, readable=not opts.json)

    raise typer.Exit(run(body))


# --------------------------------------------------------------------------- progress


class Progress:
    """A rich progress bar on stderr: done/total (when known), rate, failures."""

    def __init__(self, total: int | None):
        self.console = err_console()  # NO_COLOR: no colour, and no bold either
        narrow = self.console.width < 100  # the bar gives way to the counts and the rounds
        bar = [] if self.console.width < 60 else [BarColumn(bar_width=10 if narrow else 40)]
        cols = [SpinnerColumn(), TextColumn("batch"), *bar,
                MofNCompleteColumn() if total is not None else TextColumn("{task.completed}"),
                TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[failed]}"),
                TextColumn("{task.fields[limits]}"), TimeElapsedColumn()]
        self.p = RichProgress(*cols, console=self.console, redirect_stdout=False,
                              redirect_stderr=False, transient=False)
        self.task = self.p.add_task("batch", total=total, rate="", failed="", limits="")
        self.done = 0
        self.incomplete = 0
        self.failed = 0
        self.t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        self.p.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.p.stop()

    def advance(self, *, status: str | None = None, skipped: bool = False) -> None:
        """One question done: ``status`` "ok", "incomplete" (a person must look) or "error"
        (counted apart, as the summary counts them)."""
        self.done += 0 if skipped else 1
        self.incomplete += int(status == "incomplete")
        self.failed += int(status not in (None, "ok", "incomplete"))
        dt = time.perf_counter() - self.t0
        rate = f"{self.done / dt:.1f}/s" if dt > 0 and self.done else ""
        said = ", ".join(x for x in (f"{self.incomplete} incomplete" if self.incomplete else "",
                                     f"{self.failed} failed" if self.failed else "") if x)
        self.p.update(self.task, advance=1, rate=rate, failed=said)

    def limits(self, status: str) -> None:
        """The rate-limit gate changed: time limited so far, concurrency now."""
        self.p.update(self.task, limits=status)

    _shown_at = 0.0

    def rounds(self, r: Any) -> None:
        """--via batches: round, requests in flight, ended, the cost so far (batch against
        live prices); at most ten updates a second, however many conversations move."""
        now = time.perf_counter()
        if now - self._shown_at >= 0.1:
            self._shown_at = now
            self.p.update(self.task, limits=r.status(self.console.width))

    def print_line(self, line: str) -> None:
        """A record for a stdout that is the same terminal: printed above the bar."""

        self.console.print(Text(line), soft_wrap=True, highlight=False)

    def print_text(self, text: Text) -> None:
        """A readable line above the bar (it fits the terminal)."""
        print_lines(self.console, [text])


STATUS_MARK = {"ok": ("✓", "green"), "incomplete": ("⚑", "yellow"), "error": ("✗", "red")}


def _readable(line: str, width: int) -> Text:
    """A batch record as one line a person reads on a terminal: mark, id, status (and why),
    the answer's start; the JSON stays in --output and in a pipe."""
    try:
        rec = json.loads(line)
    except ValueError:
        return Text(one_line(line, width))
    st = str(rec.get("status") or "?")
    mark, style = STATUS_MARK.get(st, ("?", ""))
    why = rec.get("stop_reason") if st != "ok" else None
    drafts = rec.get("drafts") or []
    t = Text(f"{mark} ", style=style)
    t.append(one_line(rec.get("id"), 40), style="bold")
    t.append(f"  {st}" + (f" ({one_line(why, 30)})" if why else ""), style=style)
    if drafts:
        t.append(f"  ✎ {one_line(drafts[0].get('id') if isinstance(drafts[0], dict) else '', 20)}",
                 style="magenta")
    said = rec.get("error") if st == "error" else rec.get("answer")
    room = width - t.cell_len - 2
    if room > 10 and said:
        t.append("  " + one_line(said, room), style="dim")
    if t.cell_len > width:
        t.truncate(width, overflow="ellipsis")
    return t


async def run_batch(settings: Any, *, source: Any, concurrency: int,
                    output: Path | None, resume: bool, show_progress: bool | None = None,
                    quiet: bool = False, readable: bool = False) -> int:
    """What ``agentcli batch`` does; returns the exit code."""


    if resume and output is None:
        raise UsageError("--resume needs --output FILE (the file that holds the records so far)")
    if output is not None and source.same_file(output):
        raise UsageError(f"--output {output} is the input file: the batch would read its own "
                         "records as questions; write the records elsewhere")
    state = None
    if getattr(settings, "via", "live") == "batches":
        assert output is not None
        spath = state_path(output)
        if not resume and os.path.lexists(spath):
            raise UsageError(f"{spath} holds the batches of an earlier run: add --resume to go "
                             "on with them (nothing paid for is asked again), or remove it to "
                             "start afresh")
        state = BatchState.load(spath)
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
    app.drafts.on_wait = lock_notice(progress.console if progress is not None else err_console())
    emit = None  # the runner's default: stdout
    if sys.stdout.isatty() and readable:  # a person reads it: one line a question, not JSON
        out = progress.console if progress is not None else out_console()
        emit = (lambda line: print_lines(out, [_readable(line, out.width)]))
    elif progress is not None and sys.stdout.isatty():
        emit = progress.print_line
    rounds = None
    if state is not None:
        rounds = Rounds(app.provider, state, deadline_s=settings.batch_deadline.total_seconds(),
                        live_tail=settings.live_tail, prices=settings.prices)
        if progress is not None:
            rounds.listener = progress.rounds
        app.forced_for = rounds.forced_for  # the checks' model layer in the rounds too
    runner = BatchRunner(app, concurrency=MAX_OPEN if rounds is not None else concurrency,
                         emit=emit, output=rec_file, skip=skip, progress=progress, rounds=rounds)
    try:
        if rounds is not None:
            await rounds.prepare()
        if progress is not None:
            with progress:
                summary = await runner.run(source.items())
        else:
            summary = await runner.run(source.items())
    except (asyncio.CancelledError, KeyboardInterrupt):
        s = runner.summary  # Ctrl-C or SIGTERM: what was answered, and how to go on
        where = (f"; the records so far are in {output}: rerun with --resume -o {output} to answer "
                 "the rest" if output is not None else
                 "; to go on later without answering them again, run with -o FILE --resume")
        say_err(f"agentcli: batch interrupted after {s.total} answered ({s.ok} ok, "
                f"{s.incomplete} incomplete, {s.errors} failed"
                + (f", {s.skipped} skipped" if s.skipped else "") + f"){where}")
        raise
    except BrokenPipeError:
        # standard output's reader went away (`| head -1`): quiet, as Unix tools are, but for a
        # batch that keeps its records in a file, where they are and how to go on
        if output is not None:
            s = runner.summary
            say_err(f"agentcli: standard output was closed after {s.total} answered; the records "
                    f"so far are in {output}: rerun with --resume -o {output} to answer the rest")
        raise
    finally:
        try:
            await app.aclose()
        finally:
            if rec_file is not None:
                rec_file.close()
            source.close()
    if rounds is not None:
        summary.limits = rounds.summary()
        if summary.exit_code != EXIT_API and not summary.stopped:
            state.remove()  # every question has its final record: nothing left to re-attach to
    if summary.stopped:
        say_err(f"agentcli: batch stopped: {clean_for_terminal(summary.stopped)}; fix it and rerun"
                + (" with --resume" if output is not None else ""))
    if not quiet:
        say_err(f"agentcli: {summary.line()}")
    return summary.exit_code
