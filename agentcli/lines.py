"""Reading lines from a raw file descriptor without blocking the event loop.

One reader for every way lines come in: ``batch`` input and ``chat`` on a pipe. A regular file
never blocks long and is read directly; a pipe or a terminal is read in one daemon thread of our
own, straight from the descriptor (``os.read``: no Python-level lock). Not the event loop's
executor: a read blocked on a terminal or an idle pipe must not keep Ctrl-C, SIGTERM or the end of
a stopped batch waiting for the executor to shut down, and a thread parked in a buffered file's
``readline`` would hold its lock and abort the interpreter at exit.
"""

from __future__ import annotations

import asyncio
import os
import queue
import stat
import threading
from typing import Any, Callable


def is_regular(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except (OSError, ValueError):
        return False


class FdLines:
    """Blocking ``readline(limit)`` over a raw descriptor: a line with its newline, at most
    ``limit`` bytes of it, ``b""`` at the end."""

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


class ThreadCaller:
    """Runs blocking calls in one daemon thread, one at a time, awaited from the event loop."""

    def __init__(self, name: str = "agentcli-input"):
        self.name = name
        self.requests: "queue.SimpleQueue[tuple[Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future]]" = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    async def call(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self.thread.start()
        self.requests.put((fn, loop, fut))
        return await fut

    def _run(self) -> None:
        while True:
            fn, loop, fut = self.requests.get()
            try:
                res, exc = fn(), None
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


class LineReader:
    """``await readline()``: the next line as text (newline and a trailing CR removed), or None at
    the end. A line longer than ``limit`` bytes is one line still: its first ``limit`` bytes are
    returned, the rest is read past without being held, and ``cut`` says so (True until the
    next line), so its tail never comes back as a line of its own."""

    def __init__(self, fd: int, *, limit: int = 1 << 20):
        self.lines = FdLines(fd)
        self.limit = limit
        self.caller = None if is_regular(fd) else ThreadCaller()
        self.cut = False

    def _next(self) -> bytes:
        raw = self.lines.readline(self.limit)
        self.cut = False
        if len(raw) >= self.limit and not raw.endswith(b"\n"):
            more = self.lines.readline(1 << 16)
            if more in (b"", b"\n"):  # exactly ``limit`` bytes long: whole
                return raw + more
            self.cut = True
            while more and not more.endswith(b"\n"):  # the rest, a bounded piece at a time
                more = self.lines.readline(1 << 16)
        return raw

    async def readline(self) -> str | None:
        raw = self._next() if self.caller is None else await self.caller.call(self._next)
        if not raw:
            return None
        return raw.decode("utf-8", "replace").removesuffix("\n").rstrip("\r")
