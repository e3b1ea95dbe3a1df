"""Pieces every command shares: consoles, input reading, error exits, notices.

Imports here stay light (typer, the standard library): every command loads this module.
"""

import asyncio
import inspect
import json
import os
import signal
import sys
from datetime import datetime
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.text import Text

from ..config import source_of
from ..errors import EXIT_INTERRUPTED, AgentcliError, UsageError
from ..redact import clean_for_terminal, one_line, redact_obj
from ..stdio import isatty, silence_stdout
from ..vocab import MAX_QUESTION_CHARS, check_question
from .layout import print_lines, wrapped


def _console(**kw: Any) -> Any:
    if os.environ.get("NO_COLOR"):
        # No colour and no style at all: rich's own NO_COLOR handling drops colours but keeps
        # bold, dim and reverse; without a colour system it emits no style codes whatever.
        kw["color_system"] = None
    return Console(highlight=False, soft_wrap=True, **kw)


def err_console():
    return _console(stderr=True)


def out_console():
    return _console()


def say_err(text: str, style: str = "") -> None:
    """One message on stderr: on a terminal wrapped at words to its width (continuation lines
    indented), so no word or id is broken by the terminal; elsewhere one line."""
    if isatty(sys.stderr):
        c = err_console()
        print_lines(c, wrapped(c, Text(text, style=style), c.width, 2))
    else:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def error_line(message: str) -> None:
    """One message on stderr, redacted and cleaned of control sequences."""

    line = " ".join(clean_for_terminal(str(message)).split())
    say_err(f"agentcli: {line}")


def lock_notice(console: Any) -> Callable[[Optional[str]], None]:
    """What a drafts command says while it waits for the drafts folder's lock
    (``DraftStore.on_wait``): that it waits, and for whom."""

    def notice(holder: Optional[str]) -> None:
        console.print(Text(f"agentcli: waiting for the drafts folder's lock, held by "
                           f"{clean_for_terminal(holder or 'another process')} (up to 10 s)…",
                           style="yellow"), highlight=False, soft_wrap=not console.is_terminal)

    return notice


def fail(message: str, code: int) -> "typer.Exit":
    """Print one clear line on stderr and return the Exit to raise."""
    error_line(message)
    return typer.Exit(code)


EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process killed by it


class _Terminated(Exception):
    """SIGTERM arrived while a command body ran (a supervisor, ``timeout``, a cron limit)."""


async def _stop_on_sigterm(coro: Any) -> Any:
    """Await ``coro``; SIGTERM cancels it the way Ctrl-C does (in-flight calls are cancelled, the
    history is repaired, logs and records already written are kept), then exits 143."""

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    hit: list[bool] = []

    def on_term() -> None:
        hit.append(True)
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_term)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
        return await coro
    try:
        result = await coro
    except asyncio.CancelledError:
        if hit:
            raise _Terminated() from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    if hit:  # the body caught the cancellation and finished on its own terms
        raise _Terminated()
    return result


def run(fn: Callable[[], Any]) -> Any:
    """Run a command body: AgentcliError -> one line + its exit code; Ctrl-C -> 130; SIGTERM -> 143."""
    try:
        result = fn()
        if inspect.iscoroutine(result):
            import asyncio  # not at module level: it pulls in ssl (~30-80 ms, 6 MB) for --help

            result = asyncio.run(_stop_on_sigterm(result))
        return result
    except AgentcliError as e:
        raise fail(e.message, e.exit_code) from None
    except KeyboardInterrupt:
        raise fail("interrupted", EXIT_INTERRUPTED) from None
    except _Terminated:
        raise fail("terminated (SIGTERM); what was finished is kept", EXIT_TERMINATED) from None
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        silence_stdout()
        raise typer.Exit(1) from None
    except (typer.Exit, SystemExit):
        raise
    except OSError as e:  # the system's, not ours: a full disk under stdout, a vanished file
        where = f"cannot use {e.filename}" if e.filename else "cannot write the output"
        raise fail(f"{where} ({e.strerror or e})", 1) from None
    except Exception as e:  # a bug: one line, never a traceback
        raise fail(f"internal error ({type(e).__name__}: {str(e)[:200]}); please report it "
                   "with the session log (agentcli log show last)", 1) from None


def read_question(arg: Optional[str]) -> str:
    """The question from the argument, or all of standard input for None / '-'."""
    if arg is not None and arg != "-":
        q = arg
    else:
        if sys.stdin is None:  # started with standard input closed (`agentcli <&-`)
            raise UsageError("no question: standard input is closed; pass the question as an argument")
        if arg is None and sys.stdin.isatty():
            raise UsageError("no question: pass one as an argument, or pipe it in "
                             "(echo '...' | agentcli ask)")
        if sys.stdin.isatty():  # `agentcli ask -` typed at a terminal: say what it waits for
            sys.stderr.write("agentcli: paste the question, then press Ctrl-D on a line of its "
                             "own (Ctrl-C cancels)\n")
            sys.stderr.flush()
        data = sys.stdin.buffer.read(MAX_QUESTION_CHARS * 4 + 1)
        q = data.decode("utf-8", errors="replace")
    return check_question(q)


OFFLINE_NOTICE = ("agentcli: using the offline workflow (rule-based order lookups and drafts, not "
                  "a language model); set ANTHROPIC_API_KEY, or OPENAI_BASE_URL with "
                  "--provider openai, to use a model")
OFFLINE_CHOSEN = ("agentcli: using the offline workflow (rule-based order lookups and drafts, not "
                  "a language model), as chosen")


def offline_text(chosen: bool) -> str:
    """The offline notice: how to use a model when offline was the default; only what is
    used when it was chosen (a key that is set is no advice then)."""
    return OFFLINE_CHOSEN if chosen else OFFLINE_NOTICE


def provider_chosen(opts: Any) -> bool:
    """Was the provider named (flag, environment, config file), rather than defaulted?"""
    try:
        return source_of("provider", getattr(opts, "provider", None)) != "default"
    except AgentcliError:  # an unreadable config file: said by the check that reads it
        return False


def offline_notice(settings: Any, opts: Any = None) -> None:
    if settings.provider == "offline":
        say_err(offline_text(opts is not None and provider_chosen(opts)))


def json_line(obj: Any) -> str:
    """The one ``--json`` writer's line: redacted here, at the sink, whatever built the object."""
    return json.dumps(redact_obj(obj), ensure_ascii=False)


def dump_json(obj: Any) -> None:
    """One JSON document on one line of stdout."""
    sys.stdout.write(json_line(obj) + "\n")
    sys.stdout.flush()


def warn(lines: list[str]) -> None:
    """Warnings (damaged files, skipped records), one line each on stderr, cleaned."""

    for w in lines:
        say_err(f"agentcli: warning: {' '.join(clean_for_terminal(w).split())}")


def tsv(*cells: Any) -> str:
    """One tab-separated line for a pipe: every cell on one line, no tabs inside."""
    return "\t".join(one_line("" if c is None else c, 200).replace("\t", " ") for c in cells)


def format_time(iso: str | None) -> str:
    """An ISO UTC time as local ``YYYY-MM-DD HH:MM`` for tables."""
    if not iso:
        return "?"

    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except (ValueError, OverflowError):
        return one_line(iso, 32)
