"""agentcli's end of the MCP stdio transport: the client's lines in, the protocol out.

The SDK's ``stdio_server`` frames messages; it is handed these two streams instead of the
process's own because a client is hostile ground and the SDK's defaults are not enough here:

- **Input** (``ClientLines``): a daemon thread reads the input descriptor, so a read blocked on
  an idle client never holds up an exit (SIGTERM, SIGINT). Each line is bounded
  (``MAX_MESSAGE_BYTES``; a longer one is skipped whole, never held in memory) and checked
  before the SDK sees it: a line the SDK would drop in silence (not JSON, NaN, a batch, an id
  that is neither a string nor an integer, nested more than ``MAX_DEPTH`` deep, not a JSON-RPC
  message) is answered here with the JSON-RPC error it deserves (-32700 / -32600) and reported
  to ``on_error`` (the session log), so a client never waits for an answer that cannot come.
- **Output** (``ProtocolOutput``): every frame is written whole by a daemon thread, in order;
  a closed pipe (EPIPE: the client went away; SIGPIPE is ignored by Python) or a client that
  stops reading for ``STALL_S`` seconds ends the session (``on_gone``) instead of hanging it.
- **Standard streams** (``claimed``): while serving, descriptor 0 reads the null device and 1
  writes to standard error, and ``sys.stdout`` is standard error: anything printed by accident
  (a library, a warning) never reaches the protocol. The wire is served from private copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import queue
import select
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import mcp.types as types

from ..drafts.format import depth_ok

MAX_MESSAGE_BYTES = 1 << 20  # one JSON-RPC message; a tool's input is bounded far below (64 kB)
MAX_DEPTH = 64               # nesting of one message; ours need 4
STALL_S = 60.0               # a client that reads nothing of a response for this long is gone
DRAIN_S = 2.0                # ... once its input has ended
READ_CHUNK = 1 << 16
QUEUED_LINES = 8             # lines read ahead of the server (the reader thread waits beyond)

PARSE_ERROR, INVALID_REQUEST = types.PARSE_ERROR, types.INVALID_REQUEST


@dataclass(frozen=True)
class ProtocolError:
    """A line answered by the transport itself: the JSON-RPC error and the request id (None when
    it could not be read)."""
    code: int
    message: str
    request_id: str | int | None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError("a number too large for JSON")
    return x


def _request_id(value: Any) -> str | int | None:
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def check_line(text: str) -> ProtocolError | dict[str, Any]:
    """The message when the SDK can take ``text`` as one JSON-RPC message; else the error to
    answer."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        return ProtocolError(PARSE_ERROR, "Parse error: the line is not valid JSON", None)
    if not isinstance(obj, dict):
        what = "batches are not supported" if isinstance(obj, list) else "a message is a JSON object"
        return ProtocolError(INVALID_REQUEST, f"Invalid Request: {what}", None)
    rid = _request_id(obj.get("id"))
    if "id" in obj and rid is None:
        # The SDK would read a request with id true, 1.5 or null as a notification and answer
        # nothing: the client would wait for ever.
        return ProtocolError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer",
                             None)
    if not depth_ok(obj, MAX_DEPTH):
        return ProtocolError(INVALID_REQUEST, f"Invalid Request: nested more than {MAX_DEPTH} "
                                              "levels deep", rid)
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:  # pydantic's ValidationError
        return ProtocolError(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message "
                                              "(jsonrpc, id, method, params)", rid)
    return obj


def _id_key(rid: Any) -> str:
    return json.dumps(rid)  # 7 and "7" are two requests


def error_frame(err: ProtocolError) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": err.request_id,
                       "error": {"code": err.code, "message": err.message}}) + "\n"


def _wait(fd: int, write: bool) -> None:
    """A descriptor left non-blocking by whoever opened it: wait until it is ready."""
    select.select([] if write else [fd], [fd] if write else [], [], 1.0)


class ProtocolOutput:
    """The protocol's writer (``stdio_server``'s ``stdout``): ``await write(frame)`` returns
    once the frame is in the pipe, or once the client is known to be gone (then every frame
    is dropped; ``gone`` says why)."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, on_gone: Callable[[str], None]):
        self._fd = fd
        self._loop = loop
        self._on_gone = on_gone
        self._frames: Any = None  # queue.SimpleQueue, made with the thread
        self._thread: threading.Thread | None = None
        self.gone: str | None = None
        self.draining = False  # the input ended: a stalled write waits DRAIN_S, not STALL_S
        self.on_response: Callable[[Any], None] = lambda rid: None  # a request was answered

    def _start(self) -> None:
        self._frames = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="agentcli-mcp-out", daemon=True)
        self._thread.start()

    async def write(self, text: str) -> None:
        if self.gone is not None:
            return
        if self._thread is None:
            self._start()
        done = self._loop.create_future()
        # backslashreplace: a lone surrogate becomes its JSON escape, the frame stays valid
        self._frames.put((text.encode("utf-8", "backslashreplace"), done))
        try:
            err = await asyncio.wait_for(asyncio.shield(done), DRAIN_S if self.draining else STALL_S)
        except TimeoutError:
            self._lost("stalled")
            return
        if err is not None:
            self._lost("closed")
            return
        try:
            frame = json.loads(text)
        except ValueError:
            return
        if isinstance(frame, dict) and ("result" in frame or "error" in frame):
            self.on_response(frame.get("id"))

    async def flush(self) -> None:
        return None  # write() returns once the frame is written: nothing is buffered here

    def _lost(self, why: str) -> None:
        if self.gone is None:
            self.gone = why
            self._on_gone(why)

    def _run(self) -> None:
        while True:
            data, done = self._frames.get()
            if data is None:
                return
            err: OSError | None = None
            view = memoryview(data)
            try:
                while view:
                    try:
                        view = view[os.write(self._fd, view):]
                    except BlockingIOError:
                        _wait(self._fd, write=True)
            except OSError as e:  # EPIPE: the client closed its end; EBADF, EIO: likewise gone
                err = e
            try:
                self._loop.call_soon_threadsafe(_settle, done, err)
            except RuntimeError:  # the loop is closed: the process is ending
                return
            if err is not None:
                return

    def stop(self, timeout: float) -> bool:
        """Let the thread end after the frames already queued; True when it has."""
        if self._thread is None:
            return True
        self._frames.put((None, None))
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _settle(done: asyncio.Future, err: OSError | None) -> None:
    if not done.done():
        done.set_result(err)


_EOF = object()


class ClientLines:
    """The client's messages (``stdio_server``'s ``stdin``): an async iterator of lines the SDK
    can parse; every other line is answered with its error frame on ``out`` and reported to
    ``on_error``. At the end of the input, the requests already read are answered first (within
    ``settle_s``: a client that closes its side after its last request still gets every
    result); ``end()`` (the output is gone, the log failed) ends the iteration at once."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, out: ProtocolOutput,
                 on_error: Callable[[ProtocolError], None], settle_s: float = 30.0,
                 on_message: Callable[[dict[str, Any]], None] = lambda msg: None):
        self._fd = fd
        self._loop = loop
        self._out = out
        self._on_error = on_error
        self._on_message = on_message  # each message passed on, parsed (hostile: check it)
        self._settle_s = settle_s
        self._lines: asyncio.Queue = asyncio.Queue()
        self._room = threading.Semaphore(QUEUED_LINES)
        self._ended = False
        self._awaiting: set[str] = set()  # requests read, not yet answered
        self._settled = asyncio.Event()
        out.on_response = self._answered
        self._thread = threading.Thread(target=self._run, name="agentcli-mcp-in", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def end(self) -> None:
        """Stop taking messages (the session is over): the iteration ends now."""
        self._ended = True
        self._settled.set()
        self._lines.put_nowait(_EOF)

    def _answered(self, rid: Any) -> None:
        self._awaiting.discard(_id_key(rid))
        if not self._awaiting:
            self._settled.set()

    def _track(self, msg: dict[str, Any]) -> None:
        rid = _request_id(msg.get("id"))
        if rid is not None and isinstance(msg.get("method"), str):
            self._awaiting.add(_id_key(rid))
            self._settled.clear()
        elif msg.get("method") == "notifications/cancelled":  # a cancelled request: no answer
            params = msg.get("params")
            self._answered(params.get("requestId") if isinstance(params, dict) else None)

    def __aiter__(self) -> "ClientLines":
        return self

    async def __anext__(self) -> str:
        while True:
            if self._ended:
                raise StopAsyncIteration
            item = await self._lines.get()
            if item is _EOF:
                if not self._ended and self._awaiting:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._settled.wait(), self._settle_s)
                self._ended = True
                raise StopAsyncIteration
            self._room.release()
            if isinstance(item, int):  # a line longer than the limit (its length so far)
                err = ProtocolError(INVALID_REQUEST, f"Invalid Request: the message is larger than "
                                                     f"{MAX_MESSAGE_BYTES >> 10} KiB", None)
            else:
                text = item.decode("utf-8", "replace")
                if not text.strip():
                    continue
                msg = check_line(text)
                if not isinstance(msg, ProtocolError):
                    self._track(msg)
                    self._on_message(msg)
                    return text
                err = msg
            self._on_error(err)
            await self._out.write(error_frame(err))

    # -- the reader thread -------------------------------------------------------------
    def _put(self, item: Any) -> bool:
        """Hand ``item`` to the loop, waiting while QUEUED_LINES wait there; False: stop."""
        if item is not _EOF:
            while not self._room.acquire(timeout=1.0):
                if self._ended:
                    return False
        try:
            self._loop.call_soon_threadsafe(self._lines.put_nowait, item)
        except RuntimeError:  # the loop is closed: the process is ending
            return False
        return not self._ended

    def _run(self) -> None:
        buf = bytearray()
        oversized = 0  # > 0: skipping the rest of a line that passed the limit
        try:
            while True:
                try:
                    chunk = os.read(self._fd, READ_CHUNK)
                except BlockingIOError:
                    _wait(self._fd, write=False)
                    continue
                except OSError as e:
                    if e.errno == errno.EINTR:
                        continue
                    chunk = b""  # EIO, EBADF: as good as the end of input
                if not chunk:
                    break
                start = 0
                while True:
                    nl = chunk.find(b"\n", start)
                    piece = chunk[start:] if nl < 0 else chunk[start:nl]
                    if oversized:
                        oversized += len(piece)
                    elif len(buf) + len(piece) > MAX_MESSAGE_BYTES:
                        oversized, buf = len(buf) + len(piece), bytearray()
                    else:
                        buf += piece
                    if nl < 0:
                        break
                    item: Any = oversized if oversized else bytes(buf)
                    buf, oversized = bytearray(), 0
                    if not self._put(item):
                        return
                    start = nl + 1
            last = oversized if oversized else (bytes(buf) if buf.strip() else None)
            if last is not None and not self._put(last):
                return
        finally:
            self._out.draining = True
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._lines.put_nowait, _EOF)


@contextlib.contextmanager
def claimed(stdin: Any, stdout: Any) -> Iterator[tuple[int, int]]:
    """(input fd, output fd) of the wire; while inside, the process's descriptors 0 and 1 (when
    they are the wire) read the null device and write to standard error, and ``sys.stdout``
    is ``sys.stderr``; both are put back afterwards."""
    in_fd, out_fd = stdin.fileno(), stdout.fileno()
    with contextlib.suppress(OSError, ValueError):
        stdout.flush()
    moved: list[tuple[int, int]] = []

    def divert(fd: int, replacement: Callable[[], int]) -> int:
        if fd not in (0, 1):  # not the process's own (a test's file): nothing to protect
            return fd
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        try:
            repl = replacement()
        except OSError:
            return private  # serve it anyway; stray output could reach the wire, nothing worse
        os.dup2(repl, fd)
        os.close(repl)
        moved.append((fd, private))
        return private

    def to_stderr() -> int:
        try:
            return os.dup(2)
        except OSError:
            return os.open(os.devnull, os.O_WRONLY)

    wire_in = divert(in_fd, lambda: os.open(os.devnull, os.O_RDONLY))
    wire_out = divert(out_fd, to_stderr)
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout = saved
        for fd, private in moved:
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            # the private copies stay open: a daemon thread may still be blocked on one, and a
            # descriptor closed under it could be reused by another file
