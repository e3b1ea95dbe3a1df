"""Pieces every command shares: the model options, consoles, input reading and error exits.

Imports here stay light (typer, the standard library): ``agentcli --help`` loads this module.
"""

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from .errors import EXIT_INTERRUPTED, EXIT_USAGE, AgentcliError, UsageError

MAX_QUESTION_CHARS = 100_000

Provider = Annotated[Optional[str], typer.Option(
    "--provider", help="anthropic, openai or offline [env AGENTCLI_PROVIDER]", show_default=False)]
Model = Annotated[Optional[str], typer.Option(
    "--model", help="model name [env AGENTCLI_MODEL; anthropic default claude-sonnet-5-5; required for openai]", show_default=False)]
Db = Annotated[Optional[str], typer.Option(
    "--db", help="orders database: SQLite path, sqlite:///path or postgresql://... [env AGENTCLI_DB]",
    show_default=False)]
DraftsDir = Annotated[Optional[Path], typer.Option(
    "--drafts-dir", help="where drafts are written [env AGENTCLI_DRAFTS_DIR; default ./drafts]",
    show_default=False)]
Customer = Annotated[Optional[str], typer.Option(
    "--customer", help="customer email this ticket is about; other customers' orders read as not found "
    "[env AGENTCLI_CUSTOMER]", show_default=False)]
MaxTurns = Annotated[Optional[int], typer.Option(
    "--max-turns", help="model calls allowed per question [default 10]", show_default=False)]
ToolTimeout = Annotated[Optional[float], typer.Option(
    "--tool-timeout", help="seconds one tool call may take [default 30]", show_default=False)]
RequestTimeout = Annotated[Optional[float], typer.Option(
    "--request-timeout", help="seconds a model request may wait for data [env AGENTCLI_REQUEST_TIMEOUT; default 120]",
    show_default=False)]
Retries = Annotated[Optional[int], typer.Option(
    "--retries", help="retries of a failed model request [env AGENTCLI_RETRIES; default 3]", show_default=False)]
Json = Annotated[bool, typer.Option("--json", help="machine-readable output")]
Quiet = Annotated[bool, typer.Option("-q", "--quiet", help="no tool trace, answer only")]
NoStream = Annotated[bool, typer.Option("--no-stream", help="wait for whole responses instead of streaming")]


def settings_from(**kw: Any):
    from .config import resolve

    no_stream = kw.pop("no_stream", False)
    return resolve(stream=not no_stream, **kw)


def err_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def out_console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def error_line(message: str) -> None:
    """One line on stderr, redacted and cleaned of control sequences."""
    from .redact import clean_for_terminal, redact

    line = " ".join(clean_for_terminal(redact(str(message))).split())
    sys.stderr.write(f"agentcli: {line}\n")
    sys.stderr.flush()


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
    import asyncio
    import signal

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
        from ._entry import silence_stdout

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
        data = sys.stdin.buffer.read(MAX_QUESTION_CHARS * 4 + 1)
        q = data.decode("utf-8", errors="replace")
    return check_question(q)


def clean_text(s: str) -> str:
    """Text fit to send and store: no NUL, no byte-order mark in front, and no lone surrogate
    (from invalid UTF-8 in an argument, or a ``\\ud800`` escape in JSON), which no encoder
    accepts: each becomes U+FFFD, as undecodable bytes from standard input already do."""
    s = s.replace("\x00", "")
    if s.startswith("\ufeff"):
        s = s[1:]
    from .redact import replace_surrogates

    return replace_surrogates(s)


def check_question(q: str) -> str:
    q = clean_text(q)
    if not q.strip():
        raise UsageError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is too long ({len(q)} characters; the limit is "
                         f"{MAX_QUESTION_CHARS}): trim quoted history from the email")
    return q.replace("\r\n", "\n").strip("\n")  # pasted CRLF emails read like any other


def offline_notice(settings: Any) -> None:
    if settings.provider == "offline":
        from .app import OFFLINE_NOTICE

        sys.stderr.write(OFFLINE_NOTICE + "\n")
        sys.stderr.flush()


__all__ = ["EXIT_USAGE"]
