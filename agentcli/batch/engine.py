"""The batch engine: many questions through one ``App``, N at a time, answers out in input order.

Input parsing lives in ``batch_input``; the command body and the progress bar in ``cli.batch``.

How it runs:

- one ``App`` (one provider client, one store / connection pool) for the whole batch, one
  ``Conversation`` per question (own session id, own session log, own drafts namespace);
- the input is read lazily: a line is read only when a worker slot is free, so at most
  ``concurrency`` questions are in flight and at most ``window`` finished records wait in the
  reorder buffer for a slower question before them (memory does not grow with input length);
- each record goes to ``--output`` (appended, one ``os.write`` per record) as soon as it is done,
  and to stdout in input order as soon as it and every record before it are done;
- both are written by threads of their own (:class:`LineWriter`, a bounded queue each): a
  reader that stalls (``| stalled-reader``, an ``--output`` FIFO nobody reads) holds the batch
  back, never the event loop, so SIGTERM and Ctrl-C are obeyed at once; on the way out the
  writers get :data:`DRAIN_S` to write what is queued, then are left behind;
- ``--resume`` skips ids that already have a final record in the output file (``ok``,
  ``incomplete``, or an input error); API failures are tried again.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import queue
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable

from ..errors import EXIT_API, EXIT_INCOMPLETE, EXIT_OK, AgentcliError, UsageError
from ..redact import json_dumps, redact_obj
from .input import INPUT_ERROR, Item, id_key

DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 256
# API failures that no other question can escape: stop dispatching, keep what is done.
FATAL_KINDS = ("authentication", "permission", "not_found")
# stop_reason of a record for a line whose id an earlier line already used; --resume ignores
# these records (the id belongs to the earlier line)
DUPLICATE_ID = "duplicate_id"

USAGE_ZERO = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
              "cache_creation_input_tokens": 0}


# --------------------------------------------------------------------------- output file


MAX_RECORD_LINE = 64 * 1024 * 1024  # far above any record we write
WRITER_QUEUE = 64  # records queued for a writer thread before the batch waits for it
DRAIN_S = 2.0  # on the way out after a signal: how long the writers may take to catch up
_END = object()


class LineWriter:
    """Records written by a thread of its own, through a bounded queue.

    :meth:`put` waits (on the event loop, never blocking it) while ``capacity`` records are
    queued; the thread calls ``write`` for each. A failure (EPIPE: the reader left; ENOSPC)
    is kept, the rest is dropped, and the next :meth:`put` or :meth:`close` raises it."""

    def __init__(self, write: Callable[[Any], None], name: str, capacity: int = WRITER_QUEUE):
        self._write = write
        self._name = name
        self._capacity = capacity
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._room: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._finished = threading.Event()
        self.error: BaseException | None = None

    async def put(self, item: Any) -> None:
        if self.error is not None:
            raise self.error
        if self._room is None:
            self._loop = asyncio.get_running_loop()
            self._room = asyncio.Semaphore(self._capacity)
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        await self._room.acquire()
        self._q.put(item)

    def _run(self) -> None:
        while (item := self._q.get()) is not _END:
            if self.error is None:
                try:
                    self._write(item)
                except BaseException as e:  # noqa: BLE001 - handed to the loop's side
                    self.error = e
            try:
                self._loop.call_soon_threadsafe(self._room.release)  # type: ignore[union-attr]
            except RuntimeError:  # the loop is closed: nobody waits for room any more
                pass
        self._finished.set()

    @property
    def finished(self) -> bool:
        """Nothing more will be written (never started, or the thread has ended)."""
        return self._thread is None or self._finished.is_set()

    async def close(self, timeout: float = float("inf")) -> bool:
        """Wait (on the loop) until everything queued is written: True; False when ``timeout``
        s pass first (a reader that does not read: the thread is left, it is a daemon).
        Raises the writer's failure."""
        if self._thread is None:
            return True
        self._q.put(_END)
        deadline = time.monotonic() + timeout
        while not self._finished.is_set():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        if self.error is not None:
            raise self.error
        return True


def read_done(path: Path) -> set[str]:
    """Ids (``id_key``) with a final record in an output file: the ones --resume skips.

    The last record of an id wins; a damaged line (cut by a kill) is ignored.
    """
    final: dict[str, bool] = {}
    try:
        # non-blocking: opening a FIFO for reading would wait for a writer, deaf to SIGTERM
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:  # a FIFO, a device (/dev/zero: read until memory runs out), a directory
        os.close(fd)
        raise UsageError(f"--resume reads the earlier records from --output, and {path} is not "
                         "a regular file: give the file the earlier run wrote")
    with os.fdopen(fd, "rb") as f:
        while raw := f.readline(MAX_RECORD_LINE + 1):
            if len(raw) > MAX_RECORD_LINE and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # not ours: skip it without holding it
                    raw = f.readline(MAX_RECORD_LINE)
                continue
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):  # cut by a kill, or not ours
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
        self.stuck = False  # its writer thread never finished: the descriptor is left open
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror or e}") from None

        try:  # two runs appending to one file (a cron job overlapping the last one) mix records
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            raise UsageError(f"{path} is being written by another batch run; wait for it to end, "
                             "or give this one another --output") from None
        try:
            size = os.fstat(self.fd).st_size
            if size and os.pread(self.fd, 1, size - 1) != b"\n":
                os.write(self.fd, b"\n")  # a line cut by a kill stays alone on its line
        except OSError as e:
            os.close(self.fd)
            raise UsageError(f"cannot write {path}: {e.strerror or e}") from None

    def write(self, line: bytes) -> None:
        view = memoryview(line)
        while view:  # a FIFO or a pipe takes a long record in pieces
            view = view[os.write(self.fd, view):]

    def close(self) -> None:
        if not self.stuck:  # a thread blocked writing to it: closing could hand the number on
            os.close(self.fd)


# --------------------------------------------------------------------------- records


def line_ticket(item: Item) -> str:
    """The ticket of a batch line: its ``id`` (so ``--resume`` re-running the question reuses the
    draft it made); a line without an id: its number and question, stable across re-runs of the
    same input and apart from other inputs' line N."""

    qh = hashlib.sha256((item.question or "").encode("utf-8", "surrogatepass")).hexdigest()[:12]
    if isinstance(item.id, int) and item.id == item.line:
        return f"line-{item.line}-{qh}"
    t = str(item.id)
    return t if len(t) <= 200 and t.isprintable() else f"id-{hashlib.sha256(t.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}"


def error_record(item: Item, message: str, *, stop_reason: str | None, provider: str | None,
                 model: str | None) -> dict[str, Any]:
    return {"id": item.id, "question": item.question, "customer": item.customer, "answer": "",
            "status": "error", "stop_reason": stop_reason, "error": message, "turns": 0,
            "tool_calls": [], "drafts": [], "usage": dict(USAGE_ZERO), "provider": provider,
            "model": model, "session_id": None, "checks": []}


@dataclass
class Summary:
    total: int = 0
    ok: int = 0
    incomplete: int = 0
    errors: int = 0
    skipped: int = 0
    flagged: int = 0   # incomplete because of an error-level grounding finding
    warned: int = 0    # ok, with warning-level findings listed
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
        checks = rec.get("checks") if isinstance(rec.get("checks"), list) else []
        if st == "incomplete" and rec.get("stop_reason") == "grounding":
            self.flagged += 1
        elif st == "ok" and any(isinstance(c, dict) and c.get("severity") == "warning" for c in checks):
            self.warned += 1
        if code == EXIT_API:
            self.exit_code = EXIT_API
        elif code != EXIT_OK and self.exit_code == EXIT_OK:
            self.exit_code = EXIT_INCOMPLETE

    def line(self) -> str:
        rate = self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0
        s = (f"batch: {self.total} answered ({self.ok} ok, {self.incomplete} incomplete, "
             f"{self.errors} failed) in {self.elapsed_s:.2f} s ({rate:.1f}/s); grounding checks: "
             f"{self.flagged} flagged, {self.warned} ok with warnings")
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
                 skip: set[str] | None = None, progress: Any = None, window: int | None = None,
                 rounds: Any = None):
        if concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        self.app = app
        self.concurrency = concurrency
        # finished records that may wait for a slower one before them (>= concurrency)
        self.window = max(window or max(8 * concurrency, 64), concurrency)
        # stdout (no ``emit`` given) and --output are written by threads of their own
        self.emit = emit
        self._stdout = LineWriter(_stdout_emit, "agentcli-stdout") if emit is None else None
        self.output = output
        self._file = LineWriter(output.write, "agentcli-records") if output is not None else None
        self._emitting = asyncio.Lock()
        self.skip = skip or set()
        self.progress = progress
        self.summary = Summary()
        self._ready: dict[int, str] = {}
        self._head = 0
        self._stop: str | None = None
        # --via batches: the Message Batches rounds answer every conversation's model calls
        # (``batch.batches.Rounds``); the questions open at once are its, not the gate's
        self.rounds = rounds
        # the provider's rate-limit gate (agentcli.providers.ratelimit): shared pause, pacing, adaptive
        # concurrency under the --concurrency ceiling, and the quota stop
        self.gate = app.provider.gate if rounds is None else None
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
        prov, model = app.provider.name, app.provider.model
        if item.error is not None:
            return error_record(item, item.error, stop_reason=item.error_kind, provider=prov,
                                model=model), EXIT_INCOMPLETE
        conv = app.conversation(customer=item.customer, ticket=line_ticket(item))
        if self.rounds is not None:
            self.rounds.attach(conv, item)
        try:
            run = await app.run(conv, item.question, [])
            rec = {"id": item.id, **run.result()}
            if self.rounds is not None:
                self.rounds.price(conv, rec)
            code = run.exit_code
            err = run.error
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
            if self.rounds is not None:
                self.rounds.detach(conv)
            app.close_conversation(conv)  # a long batch must not hold a descriptor each
        return rec, code

    async def _rounds(self) -> None:
        """The Message Batches rounds, beside the questions; a failure of theirs (a bug, the
        state file unwritable) stops the batch as a failed record write does."""
        try:
            await self.rounds.run()
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            self._rounds_failure = e
            main = self._main
            if main is not None:
                main.cancel()

    _rounds_failure: BaseException | None = None
    _main: Any = None

    def _not_attempted(self, item: Item) -> dict[str, Any]:
        return error_record(item, f"not attempted: the batch stopped ({self._stop})", stop_reason=None,
                            provider=self.app.provider.name, model=self.app.provider.model)

    # -- output ---------------------------------------------------------------------
    async def _done(self, seq: int, rec: dict[str, Any], code: int,
                    window: asyncio.Semaphore) -> None:
        rec = redact_obj(rec)
        line = json_dumps(rec)  # one line whatever a reader splits lines at
        if self._file is not None:
            await self._file.put((line + "\n").encode("utf-8", "surrogateescape"))
        self.summary.add(rec, code)
        if self.progress is not None:
            self.progress.advance(status=str(rec.get("status")))
        self._ready[seq] = line
        async with self._emitting:  # one emitter at a time: stdout stays in input order
            while self._head in self._ready:
                out = self._ready.pop(self._head)
                self._head += 1
                if self._stdout is not None:
                    await self._stdout.put(out)
                else:
                    self.emit(out)  # type: ignore[misc]
                window.release()

    async def _close_writers(self, *, leaving: bool) -> None:
        """Everything queued written. ``leaving`` (a signal, a failure): within :data:`DRAIN_S`,
        a writer still blocked then is left behind (and --output's descriptor with it), and a
        writer's own failure is not raised over the reason the batch is leaving."""
        writers = [w for w in (self._file, self._stdout) if w is not None]
        try:  # both at once: a stalled stdout does not hold the file's records back
            results = await asyncio.gather(
                *(w.close(DRAIN_S if leaving else float("inf")) for w in writers),
                return_exceptions=True)
            failed = [r for r in results if isinstance(r, BaseException)]
            if failed and not leaving:
                raise failed[0]
        finally:  # cancelled while waiting, too: a thread still writing keeps its descriptor
            if self._file is not None and not self._file.finished:
                self.output.stuck = True  # type: ignore[union-attr]

    # -- the whole batch ------------------------------------------------------------
    async def run(self, items: AsyncIterator[Item] | Iterable[Item]) -> Summary:
        t0 = time.perf_counter()
        window = asyncio.Semaphore(self.window)       # records not yet printed
        # questions in flight: the gate's adaptive limit, or a fixed one
        slots: Any = self.gate if self.gate is not None else asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task] = set()
        seq = 0

        main = self._main = asyncio.current_task()
        failure: list[BaseException] = []
        cancelled = False

        async def one(s: int, item: Item) -> None:
            try:
                rec, code = await self._answer(item)
                await self._done(s, rec, code, window)
            except Exception as e:  # e.g. stdout closed: stop the whole batch, not just this task
                if not failure:
                    failure.append(e)
                    if main is not None:
                        main.cancel()
            finally:
                slots.release()

        seen: set[int] = set()  # hashes of the ids met so far (small, whatever the ids)
        rounds_task = asyncio.create_task(self._rounds()) if self.rounds is not None else None
        try:
            async for item in _aiter(items):
                key = id_key(item.id)
                h = hash(key)
                if h in seen:
                    if item.error is not None:
                        # a line already refused (no valid id: its line number stands in): its
                        # own reason is the one to say, not "the id 5 is already used"
                        why = item.error
                    elif not item.id_given:
                        why = (f"line {item.line} has no id, and its line number {item.line} is "
                               "the id of an earlier line; give every line an id, or none")
                    else:
                        why = (f"line {item.line}: the id {json.dumps(item.id)} is already used "
                               "by an earlier line; ids must be unique (--resume tells questions "
                               "apart by id)")
                    item = Item(item.line, item.id, item.question, item.customer, error=why,
                                error_kind=DUPLICATE_ID, id_given=item.id_given)
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
                await self._done(seq, self._not_attempted(item), EXIT_API, window)
                seq += 1
            if self.rounds is not None:
                self.rounds.finished_input()
            if tasks:
                await asyncio.gather(*list(tasks))
        except asyncio.CancelledError:
            cancelled = True
            if failure:
                raise failure[0] from None
            if self._rounds_failure is not None:
                raise self._rounds_failure from None
            raise
        finally:
            if tasks:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*list(tasks), return_exceptions=True)
            if rounds_task is not None:
                rounds_task.cancel()
                await asyncio.gather(rounds_task, return_exceptions=True)
            # after a signal or a failure, what is queued gets DRAIN_S; at the end, all it needs
            await self._close_writers(leaving=cancelled or bool(failure))
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
