"""The batch engine: many questions through one ``App``, N at a time, answers out in input order.

Input (a file or standard input), one question per non-empty line, detected per line:

- plain text: the line is the question; its id is the line number;
- JSON Lines: ``{"id": ..., "question": ..., "customer": ...}`` (``id`` defaults to the line
  number, ``customer`` to ``--customer``); a line that starts with ``{`` but is not such an
  object becomes an error record for that line, and the batch goes on.

How it runs:

- one ``App`` (one provider client, one store / connection pool) for the whole batch, one
  ``Conversation`` per question (own session id, own session log, own drafts namespace);
- the input is read lazily: a line is read only when a worker slot is free, so at most
  ``concurrency`` questions are in flight and at most ``window`` finished records wait in the
  reorder buffer for a slower question before them (memory does not grow with input length);
- each record goes to ``--output`` (appended, one ``os.write`` per record) as soon as it is done,
  and to stdout in input order as soon as it and every record before it are done;
- ``--resume`` skips ids that already have a final record in the output file (``ok``,
  ``incomplete``, or an input error); API failures are tried again.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, AsyncIterator, Callable, Iterable

from .errors import EXIT_API, EXIT_INCOMPLETE, EXIT_OK, AgentcliError, UsageError

DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 256
# A line may hold a 100,000-character question written as JSON \uXXXX escapes (6 bytes each);
# longer lines are input errors (and the question itself is checked against 100,000 characters).
MAX_LINE_BYTES = 600_129
# API failures that no other question can escape: stop dispatching, keep what is done.
FATAL_KINDS = ("authentication", "permission", "not_found")
INPUT_ERROR = "invalid_input"  # stop_reason of a record for a malformed input line
# stop_reason of a record for a line whose id an earlier line already used; --resume ignores
# these records (the id belongs to the earlier line)
DUPLICATE_ID = "duplicate_id"

USAGE_ZERO = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
              "cache_creation_input_tokens": 0}


# --------------------------------------------------------------------------- input


@dataclass(slots=True)
class Item:
    """One question of the input (or the error of one input line)."""
    line: int                  # 1-based line number in the input
    id: Any                    # the JSONL id, or the line number
    question: str | None = None
    customer: str | None = None
    error: str | None = None   # the line could not be used: becomes an error record
    error_kind: str = INPUT_ERROR  # that record's stop_reason


def id_key(value: Any) -> str:
    """How ids compare for --resume: 7 and "7" are the same question."""
    return value if isinstance(value, str) else json.dumps(value)


def parse_line(line_no: int, raw: str) -> Item | None:
    """One input line -> an Item (None for a blank line)."""
    from .cli_common import check_question, clean_text

    text = raw.strip()
    if text.startswith("\ufeff"):  # a byte-order mark must not hide a JSON line's "{"
        text = text[1:].lstrip()
    if not text:
        return None
    if not text.startswith("{"):
        try:
            return Item(line_no, line_no, check_question(text))
        except UsageError as e:
            return Item(line_no, line_no, error=f"line {line_no}: {e.message}")
    try:
        obj = json.loads(text)
    except ValueError as e:
        return Item(line_no, line_no, error=f"line {line_no}: not valid JSON ({e.msg} at column "
                                            f"{e.colno}); expected {{\"id\", \"question\", \"customer\"}}")
    if not isinstance(obj, dict):
        return Item(line_no, line_no, error=f"line {line_no}: expected a JSON object")
    qid = obj.get("id")
    if qid is None:
        qid = line_no
    elif isinstance(qid, bool) or not isinstance(qid, (str, int)) or qid == "":
        return Item(line_no, line_no, error=f"line {line_no}: \"id\" must be a non-empty string "
                                            "or an integer")
    q = obj.get("question")
    if not isinstance(q, str):
        return Item(line_no, qid, error=f"line {line_no}: \"question\" must be a string")
    cust = obj.get("customer")
    if cust is not None and not isinstance(cust, str):
        return Item(line_no, qid, error=f"line {line_no}: \"customer\" must be a string or null")
    try:
        q = check_question(q)
    except UsageError as e:
        return Item(line_no, qid, error=f"line {line_no}: {e.message}")
    return Item(line_no, qid, q, clean_text(cust or "").strip() or None)


class LineSource:
    """Reads the input line by line; pipes and terminals are read in a thread (they may block)."""

    def __init__(self, f: IO[bytes], name: str):
        self.f = f
        self.name = name
        try:
            self.regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        except (OSError, ValueError, AttributeError):
            self.regular = False
        # A pipe or terminal is read in a thread, straight from the descriptor: a thread parked
        # in a buffered file's readline holds its lock and aborts the interpreter at exit.
        self.readline: Callable[[int], bytes] = f.readline if self.regular else _FdLines(f.fileno()).readline
        self.line_no = 0

    @classmethod
    def open(cls, path: str | None) -> "LineSource":
        if path is None or path == "-":
            if sys.stdin is None:
                raise UsageError("standard input is closed: pass the questions as a FILE")
            return cls(sys.stdin.buffer, "standard input")
        try:
            f = open(path, "rb")
            if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                f.close()
                raise IsADirectoryError(21, "is a directory")
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        return cls(f, str(path))

    def count_items(self) -> int | None:
        """How many non-blank lines a regular file holds (None for a pipe): the progress total."""
        if not self.regular:
            return None
        try:
            with open(self.f.fileno(), "rb", closefd=False) as g:
                pos = self.f.tell()
                g.seek(pos)
                n = sum(1 for ln in g if ln.strip())
                self.f.seek(pos)
            return n
        except OSError:
            return None

    def _readline(self) -> tuple[int, str] | None:
        """The next line (number, text), or None at the end; overlong lines are cut and flagged."""
        raw = self.readline(MAX_LINE_BYTES)
        if not raw:
            return None
        self.line_no += 1
        if len(raw) >= MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while True:  # skip the rest of the line without holding it
                more = self.readline(1 << 16)
                if not more or more.endswith(b"\n"):
                    break
            return self.line_no, "\x00too-long"
        return self.line_no, raw.decode("utf-8", errors="replace")

    async def items(self) -> AsyncIterator[Item]:
        reader = None if self.regular else _ThreadReader(self._readline)
        while True:
            try:
                got = self._readline() if reader is None else await reader.call()
            except OSError as e:
                raise UsageError(f"cannot read {self.name}: {e.strerror or e}") from None
            if got is None:
                return
            n, text = got
            if text == "\x00too-long":
                yield Item(n, n, error=f"line {n}: the line is too long (the limit is 100000 characters)")
                continue
            item = parse_line(n, text)
            if item is not None:
                yield item

    def same_file(self, path: Path) -> bool:
        """Whether ``path`` is this input (``--output`` onto the input would read its own records)."""
        try:
            a, b = os.fstat(self.f.fileno()), os.stat(path)
        except (OSError, ValueError, AttributeError):
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def close(self) -> None:
        if self.f is not sys.stdin.buffer:
            self.f.close()


class _FdLines:
    """``readline(limit)`` over a raw descriptor (``os.read``: no Python-level lock)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def readline(self, limit: int) -> bytes:
        while True:
            i = self.buf.find(b"\n", 0, limit)
            if i >= 0 or len(self.buf) >= limit or self.eof:
                n = i + 1 if i >= 0 else min(limit, len(self.buf))
                line, self.buf = self.buf[:n], self.buf[n:]
                return line
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
            self.buf += chunk


class _ThreadReader:
    """Runs a blocking read in one daemon thread, one call at a time.

    Not the event loop's executor: a read blocked on a terminal or an idle pipe must not keep
    Ctrl-C (or the end of a stopped batch) waiting for the executor to shut down.
    """

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.requests: "queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future]]" = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    async def call(self) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="agentcli-batch-input", daemon=True)
            self.thread.start()
        self.requests.put((loop, fut))
        return await fut

    def _run(self) -> None:
        while True:
            loop, fut = self.requests.get()
            try:
                res, exc = self.fn(), None
            except BaseException as e:  # handed to the awaiting coroutine
                res, exc = None, e
            try:
                loop.call_soon_threadsafe(_settle, fut, res, exc)
            except RuntimeError:  # the loop is gone: nobody is waiting any more
                return


def _settle(fut: asyncio.Future, res: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(res)


# --------------------------------------------------------------------------- output file


def read_done(path: Path) -> set[str]:
    """Ids (``id_key``) with a final record in an output file: the ones --resume skips.

    The last record of an id wins; a damaged line (cut by a kill) is ignored.
    """
    final: dict[str, bool] = {}
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    with f:
        for raw in f:
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(rec, dict) or "id" not in rec or rec.get("stop_reason") == DUPLICATE_ID:
                continue
            status = rec.get("status")
            final[id_key(rec["id"])] = status in ("ok", "incomplete") or (
                status == "error" and rec.get("stop_reason") == INPUT_ERROR)
    return {k for k, v in final.items() if v}


class RecordFile:
    """``--output``: records appended as they complete, one ``os.write`` each (a kill cuts at
    most the last line, and the next run starts on a fresh line)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            size = os.fstat(self.fd).st_size
            if size and os.pread(self.fd, 1, size - 1) != b"\n":
                os.write(self.fd, b"\n")  # a line cut by a kill stays alone on its line
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror or e}") from None

    def write(self, line: bytes) -> None:
        os.write(self.fd, line)

    def close(self) -> None:
        os.close(self.fd)


# --------------------------------------------------------------------------- records


def error_record(item: Item, message: str, *, stop_reason: str | None, provider: str | None,
                 model: str | None) -> dict[str, Any]:
    return {"id": item.id, "question": item.question, "customer": item.customer, "answer": "",
            "status": "error", "stop_reason": stop_reason, "error": message, "turns": 0,
            "tool_calls": [], "drafts": [], "usage": dict(USAGE_ZERO), "provider": provider,
            "model": model, "session_id": None}


@dataclass
class Summary:
    total: int = 0
    ok: int = 0
    incomplete: int = 0
    errors: int = 0
    skipped: int = 0
    exit_code: int = EXIT_OK
    elapsed_s: float = 0.0
    stopped: str | None = None  # why dispatching stopped early (a fatal API error)
    limits: str | None = None   # time rate-limited and concurrency, when a limit was met

    def add(self, rec: dict[str, Any], code: int) -> None:
        self.total += 1
        st = rec.get("status")
        if st == "ok":
            self.ok += 1
        elif st == "incomplete":
            self.incomplete += 1
        else:
            self.errors += 1
        if code == EXIT_API:
            self.exit_code = EXIT_API
        elif code != EXIT_OK and self.exit_code == EXIT_OK:
            self.exit_code = EXIT_INCOMPLETE

    def line(self) -> str:
        rate = self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0
        s = (f"batch: {self.total} answered ({self.ok} ok, {self.incomplete} incomplete, "
             f"{self.errors} failed) in {self.elapsed_s:.2f} s ({rate:.1f}/s)")
        if self.skipped:
            s += f"; {self.skipped} skipped (already in the output file)"
        if self.limits:
            s += f"; {self.limits}"
        return s


# --------------------------------------------------------------------------- the engine


class BatchRunner:
    """Answers a stream of Items with one App; see the module docstring."""

    def __init__(self, app: Any, *, concurrency: int = DEFAULT_CONCURRENCY,
                 emit: Callable[[str], None] | None = None, output: RecordFile | None = None,
                 skip: set[str] | None = None, progress: Any = None, window: int | None = None):
        if concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        self.app = app
        self.concurrency = concurrency
        # finished records that may wait for a slower one before them (>= concurrency)
        self.window = max(window or max(8 * concurrency, 64), concurrency)
        self.emit = emit or _stdout_emit
        self.output = output
        self.skip = skip or set()
        self.progress = progress
        self.summary = Summary()
        self._ready: dict[int, str] = {}
        self._head = 0
        self._stop: str | None = None
        # the provider's rate-limit gate (agentcli.ratelimit): shared pause, pacing, adaptive
        # concurrency under the --concurrency ceiling, and the quota stop
        self.gate = getattr(app.provider, "gate", None)
        if self.gate is not None:
            self.gate.configure(concurrency, batch=True)
            if progress is not None:
                self.gate.listener = lambda g: progress.limits(g.status())

    def _stopped(self) -> str | None:
        if self._stop is None and self.gate is not None and self.gate.stopped is not None:
            self._stop = self.gate.stopped
        return self._stop

    # -- one question ---------------------------------------------------------------
    async def _answer(self, item: Item) -> tuple[dict[str, Any], int]:
        app = self.app
        prov = getattr(app.provider, "name", None)
        model = getattr(app.provider, "model", None)
        if item.error is not None:
            return error_record(item, item.error, stop_reason=item.error_kind, provider=prov,
                                model=model), EXIT_INCOMPLETE
        conv = app.conversation(customer=item.customer)
        _unique_session(conv)
        try:
            builder = await app.run(conv, item.question, [])
            rec = {"id": item.id, **builder.result()}
            code = builder.exit_code
            err = builder.error
            if err is not None and err.kind in FATAL_KINDS and self._stop is None:
                self._stop = err.message
        except AgentcliError as e:
            rec = error_record(item, e.message, stop_reason=None, provider=prov, model=model)
            code = e.exit_code
        except Exception as e:  # a bug must cost one question, not the batch (and no traceback)
            rec = error_record(item, f"internal error ({type(e).__name__}); see the session log",
                               stop_reason=None, provider=prov, model=model)
            rec["session_id"] = conv.session_id
            code = EXIT_INCOMPLETE
            try:
                app.log_for(conv).record({"type": "error", "kind": "internal",
                                          "message": f"{type(e).__name__}: {str(e)[:300]}"})
            except Exception:
                pass
        finally:
            _forget(app, conv)
        return rec, code

    def _not_attempted(self, item: Item) -> dict[str, Any]:
        prov = getattr(self.app.provider, "name", None)
        return error_record(item, f"not attempted: the batch stopped ({self._stop})", stop_reason=None,
                            provider=prov, model=getattr(self.app.provider, "model", None))

    # -- output ---------------------------------------------------------------------
    def _done(self, seq: int, rec: dict[str, Any], code: int, window: asyncio.Semaphore) -> None:
        line = json.dumps(rec, ensure_ascii=False)
        if self.output is not None:
            self.output.write((line + "\n").encode("utf-8", "surrogateescape"))
        self.summary.add(rec, code)
        if self.progress is not None:
            self.progress.advance(failed=rec.get("status") != "ok")
        self._ready[seq] = line
        while self._head in self._ready:
            self.emit(self._ready.pop(self._head))
            self._head += 1
            window.release()

    # -- the whole batch ------------------------------------------------------------
    async def run(self, items: AsyncIterator[Item] | Iterable[Item]) -> Summary:
        t0 = time.perf_counter()
        window = asyncio.Semaphore(self.window)       # records not yet printed
        # questions in flight: the gate's adaptive limit, or a fixed one
        slots: Any = self.gate if self.gate is not None else asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task] = set()
        seq = 0

        main = asyncio.current_task()
        failure: list[BaseException] = []

        async def one(s: int, item: Item) -> None:
            try:
                rec, code = await self._answer(item)
                self._done(s, rec, code, window)
            except Exception as e:  # e.g. stdout closed: stop the whole batch, not just this task
                if not failure:
                    failure.append(e)
                    if main is not None:
                        main.cancel()
            finally:
                slots.release()

        seen: set[int] = set()  # hashes of the ids met so far (small, whatever the ids)
        try:
            async for item in _aiter(items):
                key = id_key(item.id)
                h = hash(key)
                if h in seen:
                    item = Item(item.line, item.id, item.question, item.customer,
                                error=f"line {item.line}: the id {json.dumps(item.id)} is already used "
                                      "by an earlier line; ids must be unique (--resume tells "
                                      "questions apart by id)", error_kind=DUPLICATE_ID)
                seen.add(h)
                if item.error_kind != DUPLICATE_ID and self.skip and key in self.skip:
                    self.summary.skipped += 1
                    if self.progress is not None:
                        self.progress.advance(skipped=True)
                    continue
                await window.acquire()
                if self._stopped() is None or item.error is not None:
                    await slots.acquire()
                    if self._stopped() is None or item.error is not None:
                        t = asyncio.create_task(one(seq, item))
                        tasks.add(t)
                        t.add_done_callback(tasks.discard)
                        seq += 1
                        continue
                    slots.release()  # stopped while this question waited for a slot
                # A fatal API error (a bad key) stopped the batch: every later question still
                # gets a record, so a script sees which ones to rerun (--resume reruns them).
                self._done(seq, self._not_attempted(item), EXIT_API, window)
                seq += 1
            if tasks:
                await asyncio.gather(*list(tasks))
        except asyncio.CancelledError:
            if failure:
                raise failure[0] from None
            raise
        finally:
            if tasks:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*list(tasks), return_exceptions=True)
            self.summary.elapsed_s = time.perf_counter() - t0
            if self.gate is not None:
                self.summary.limits = self.gate.status() if self.gate.limit_hits or self.gate.limited_s else None
        if self._stopped() is not None:
            self.summary.stopped = self._stop
            self.summary.exit_code = EXIT_API
        return self.summary


async def _aiter(items: AsyncIterator[Item] | Iterable[Item]) -> AsyncIterator[Item]:
    if hasattr(items, "__aiter__"):
        async for it in items:  # type: ignore[union-attr]
            yield it
    else:
        for it in items:  # type: ignore[union-attr]
            yield it


def _stdout_emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _unique_session(conv: Any) -> None:
    """Session ids are second + 24 random bits: in a big batch two could meet; never share one."""
    from .config import sessions_dir

    d = sessions_dir()
    for _ in range(5):
        if not (d / f"{conv.session_id}.jsonl").exists():
            return
        conv.reset()


def _forget(app: Any, conv: Any) -> None:
    """Close the question's session log now (a long batch must not hold one descriptor each)."""
    app.close_conversation(conv)


# --------------------------------------------------------------------------- progress


class Progress:
    """A rich progress bar on stderr: done/total (when known), rate, failures."""

    def __init__(self, total: int | None):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                   SpinnerColumn, TextColumn, TimeElapsedColumn)

        self.console = Console(stderr=True, highlight=False)
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
        from rich.text import Text

        self.console.print(Text(line), soft_wrap=True, highlight=False)


# --------------------------------------------------------------------------- the command body


async def run_batch(settings: Any, *, source: LineSource, concurrency: int,
                    output: Path | None, resume: bool, show_progress: bool | None = None,
                    quiet: bool = False) -> int:
    """What ``agentcli batch`` does; returns the exit code."""
    import concurrent.futures

    from .app import App

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
    emit = _stdout_emit
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
        sys.stderr.write(f"agentcli: batch stopped: {summary.stopped}; fix it and rerun"
                         + (" with --resume" if output is not None else "") + "\n")
    if not quiet:
        sys.stderr.write(f"agentcli: {summary.line()}\n")
    sys.stderr.flush()
    return summary.exit_code
