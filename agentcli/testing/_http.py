"""The HTTP scaffold shared by the fake API servers (``fake_anthropic``, ``fake_openai``).

:class:`FakeServer` owns the server thread on 127.0.0.1, the request handler, the lifecycle
(``start``/``stop``/context manager), the reply queue with its ``handler`` fallback, request
recording, interruptible sleeps and the JSON / chunked-SSE writers.  A subclass speaks one
protocol: its routes, its error bodies, its ``Reply`` class and how a non-error reply is sent
(:meth:`FakeServer._respond`).

Standard library only; must not import anything else from ``agentcli``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import selectors
import socket
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["FakeServer", "split"]


def split(s: str, n: int) -> list[str]:
    """Split ``s`` into ``n`` (or fewer if too short) non-empty, roughly equal pieces."""
    if not s:
        return []
    n = max(1, min(n, len(s)))
    size, rem = divmod(len(s), n)
    out, i = [], 0
    for k in range(n):
        j = i + size + (1 if k < rem else 0)
        out.append(s[i:j])
        i = j
    return out


def _with(reply: Any, **changes: Any) -> Any:
    return dataclasses.replace(reply, **changes)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # listen backlog: benchmarks open 50+ connections at once
    timeout = 0.5  # handle_request's own wait, should the connection _accept_loop saw be gone
    fake: "FakeServer"

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet on client hang-ups
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def setup(self) -> None:
        super().setup()
        # Without this, a header write followed by a body write meets delayed ACKs: ~40 ms per reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_POST(self) -> None:  # noqa: N802
        try:
            self.server.fake._serve(self)
        except OSError:  # the client went away
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self.server.fake._serve_get(self)

    do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815  (the fake helpdesks record every method)


class FakeServer:
    """Base of the scripted fake APIs on ``http://127.0.0.1:PORT``.

    Subclasses set ``name`` (thread name, error messages), ``reply_type`` (their ``Reply``
    dataclass: ``status``, ``body``, ``headers``, ``delay``, ``is_error``), ``routes`` (the POST
    paths served) and ``request_id_header``, and implement :meth:`_error_body`,
    :meth:`_error_reply`, :meth:`_text_reply` and :meth:`_respond`.
    """

    name = "FakeServer"
    reply_type: type = object
    routes: tuple[str, ...] = ()
    request_id_header = "request-id"

    def __init__(self, *, latency: float = 0.0, handler: Callable[[dict[str, Any]], Any] | None = None,
                 record: bool = True) -> None:
        self.latency = latency
        self.handler = handler
        self.record = record
        self._initial = (latency, handler)
        self.url: str = ""
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.errors: list[str] = []
        self._queue: collections.deque[Any] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._served = 0  # requests answered so far (numbering survives record=False)
        self.limits: Any = None  # agentcli.testing.limits.Limits: rate limits with 429s
        # A request whose tool_choice forces one tool (the grounding checks' model layer,
        # ``report_claims``) is answered apart from the script: from ``queue_forced`` replies,
        # else ``forced_handler(body)``, else a call of that tool with ``{"claims": []}`` and
        # no usage. It is recorded in ``forced_requests``, not ``requests``, so a test's script
        # and its request counts stay those of the conversation.
        self.forced_requests: list[dict[str, Any]] = []
        self.forced_handler: Callable[[dict[str, Any]], Any] | None = None
        self._forced: collections.deque[Any] = collections.deque()

    # -- lifecycle
    def start(self) -> Any:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._accept_loop, args=(server, self._wake[0]),
                                        name=self.name, daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _accept_loop(server: _Server, wake: int) -> None:
        """Accept until ``stop`` writes to the wake pipe. ``serve_forever`` would wake every
        poll interval to look for a shutdown (at 10 ms, ~8 ms of CPU a second for each idle
        fake, and a suite keeps dozens alive; at its default 0.5 s, every stop would wait up to
        half a second): this sleeps until a connection or the stop, then hands the connection
        to ``handle_request`` (a thread of its own, as serve_forever would)."""
        with selectors.DefaultSelector() as sel:
            sel.register(server.fileno(), selectors.EVENT_READ)
            sel.register(wake, selectors.EVENT_READ)
            while True:
                ready = {key.fd for key, _ in sel.select()}
                if wake in ready:
                    return
                server.handle_request()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes every sleeping request
        wake_r, wake_w = self._wake
        os.write(wake_w, b"x")  # ends _accept_loop at once
        if self._thread is not None:
            self._thread.join(timeout=5)
        os.close(wake_r)
        os.close(wake_w)
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:  # idle keep-alive connections would otherwise park a thread forever
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting
    def queue(self, *replies: Any) -> None:
        """Append replies to the FIFO; each request pops one."""
        for r in replies:
            if not isinstance(r, self.reply_type):
                raise TypeError(f"queue() takes Reply objects, got {r!r}")
        with self._lock:
            self._queue.extend(replies)

    def queue_forced(self, *replies: Any) -> None:
        """Replies for the next forced-tool requests (see ``forced_requests``), in order."""
        with self._lock:
            for r in replies:
                if not isinstance(r, self.reply_type):
                    raise TypeError(f"queue_forced() takes Reply objects, got {r!r}")
            self._forced.extend(replies)

    def _forced_tool(self, body: dict[str, Any]) -> str | None:
        """The tool a request's tool_choice forces, or None (each API says it its own way)."""
        return None

    def _forced_reply(self, name: str, arguments: dict[str, Any]) -> Any:
        """A reply calling tool ``name`` with ``arguments`` (no usage)."""
        raise NotImplementedError

    def _answer_forced(self, body: dict[str, Any], name: str, record: bool = True) -> Any:
        """The reply to a forced-tool request (``record=False``: a Message Batches request,
        kept in the batch's own record instead of ``forced_requests``)."""
        with self._lock:
            if self.record and record:
                self.forced_requests.append(body)
            reply = self._forced.popleft() if self._forced else None
        if reply is None and self.forced_handler is not None:
            try:
                reply = self.forced_handler(body)
                if isinstance(reply, dict):  # convenience: the tool's arguments
                    reply = self._forced_reply(name, reply)
                if not isinstance(reply, self.reply_type):
                    raise TypeError(f"forced_handler returned {reply!r}, not a Reply")
            except Exception as e:
                self.errors.append(traceback.format_exc())
                reply = self._error_reply(500, f"{self.name} forced_handler raised {type(e).__name__}: {e}",
                                          {"x-should-retry": "false"})
        return reply if reply is not None else self._forced_reply(name, {"claims": []})

    def reset(self) -> None:
        """Forget recorded requests, queued replies and errors; restore the constructor's latency/handler.

        Lets one running server (and one SDK client with its connection pool) serve many tests.
        """
        with self._lock:
            self._queue.clear()
            self._forced.clear()
            self.forced_requests.clear()
            self.requests.clear()
            self.request_headers.clear()
            self.errors.clear()
            self._served = 0
            self._reset_extra()
            self.latency, self.handler = self._initial

    @property
    def pending(self) -> int:
        """Number of queued replies not yet served."""
        with self._lock:
            return len(self._queue)

    @property
    def last_request(self) -> dict[str, Any] | None:
        """The most recent recorded request body (None before any request)."""
        with self._lock:
            return self.requests[-1] if self.requests else None

    # -- protocol hooks
    def _error_body(self, status: int, msg: str) -> dict[str, Any]:
        """The API's error body for a fake-side error (bad route, bad JSON)."""
        raise NotImplementedError

    def _error_reply(self, status: int, msg: str, headers: dict[str, str]) -> Any:
        """An error ``Reply`` (handler failures, exhausted script)."""
        raise NotImplementedError

    def _text_reply(self, s: str) -> Any:
        """The ``Reply`` for a handler that returned a plain string."""
        raise NotImplementedError

    def _respond(self, h: _Handler, body: dict[str, Any], reply: Any) -> None:
        """Send a non-error reply to the request ``body``."""
        raise NotImplementedError

    def _record_extra(self, h: _Handler, path: str) -> None:
        """Record more about a request (called under the lock when recording)."""

    def _reset_extra(self) -> None:
        """Forget what :meth:`_record_extra` kept (called under the lock)."""

    def _serve_get(self, h: _Handler) -> None:
        self._send_json(h, 404, self._error_body(404, f"fake: no GET {h.path}"), {})

    # -- internals
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _request_id(self) -> str:
        return f"req_{uuid.uuid4().hex[:24]}"

    def _send_json(self, h: _Handler, status: int, body: Any, headers: dict[str, str],
                   raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.send_header(self.request_id_header, self._request_id())
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _send_body(self, h: _Handler, reply: Any, raw: bytes) -> None:
        """A non-streamed JSON answer ``raw`` with the reply's faults applied."""
        if reply.drop_after is not None:
            h.close_connection = True  # no status line at all
            return
        if reply.stall_after is not None:
            self._sleep(reply.stall_seconds)
            h.close_connection = True
            return
        if reply.malformed_after is not None:
            raw = raw[: max(1, len(raw) // 2)]
        if getattr(reply, "trickle", 0.0):
            reply = _with(reply, raw=raw, raw_type="application/json")
            self._send_raw(h, reply)
            return
        self._send_json(h, reply.status, None, reply.headers, raw=raw)

    def _send_raw(self, h: _Handler, reply: Any) -> None:
        """The reply's ``raw`` bytes as the whole body (chunked, with the ``trickle`` fault; with
        ``content_length`` set, that Content-Length instead, whatever the body's size, and the
        connection closed after it)."""
        declared = getattr(reply, "content_length", None)
        if declared is not None:
            h.send_response(reply.status)
            h.send_header("content-type", reply.raw_type)
            h.send_header("content-length", str(declared))
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(reply.raw or b"")
            h.wfile.flush()
            h.close_connection = True
            return
        h.send_response(reply.status)
        h.send_header("content-type", reply.raw_type)
        h.send_header("transfer-encoding", "chunked")
        h.send_header(self.request_id_header, self._request_id())
        for k, v in reply.headers.items():
            h.send_header(k, v)
        h.end_headers()
        self._write_chunks(h, reply, [reply.raw] if reply.raw else [])
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    def _write_chunks(self, h: _Handler, reply: Any, chunks: list[bytes]) -> None:
        """Each of ``chunks`` as HTTP chunks; with ``trickle`` > 0, one byte per ``trickle`` s;
        with ``endless`` set, that payload is then sent again and again (every ``endless_every``
        s, 0: as fast as the client reads) until the client leaves or the server stops."""
        w = h.wfile
        step = getattr(reply, "trickle", 0.0) or 0.0
        for c in chunks:
            if step and c:
                for i in range(len(c)):
                    self._sleep(step)
                    if self._stopping.is_set():
                        return
                    w.write(b"1\r\n%s\r\n" % c[i:i + 1])
                    w.flush()
            else:
                w.write(b"%x\r\n%s\r\n" % (len(c), c))
                w.flush()
        endless = getattr(reply, "endless", None)
        every = getattr(reply, "endless_every", None)
        every = max(step, 0.01) if every is None else every
        while endless and not self._stopping.is_set():
            if every:
                self._sleep(every)
            w.write(b"%x\r\n%s\r\n" % (len(endless), endless))
            w.flush()

    def _send_stream(self, h: _Handler, reply: Any, chunks: list[bytes], ending: str) -> None:
        """SSE ``chunks`` in a chunked body; ``ending`` is "clean", "drop" or "stall"."""
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("transfer-encoding", "chunked")
        h.send_header(self.request_id_header, self._request_id())
        for k, v in reply.headers.items():
            h.send_header(k, v)
        h.end_headers()
        w = h.wfile
        self._write_chunks(h, reply, chunks)
        if self._stopping.is_set():
            h.close_connection = True
            return
        if ending == "clean":
            w.write(b"0\r\n\r\n")
            w.flush()
            return
        if ending == "stall":
            self._sleep(reply.stall_seconds)
        # "drop" / end of a stall: close without the terminating chunk
        h.close_connection = True

    def _serve(self, h: _Handler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        path = h.path.split("?", 1)[0]
        if path not in self.routes:
            self._send_json(h, 404, self._error_body(404, f"fake: no route POST {h.path}"), {})
            return
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as e:
            self._send_json(h, 400, self._error_body(400, f"fake: bad JSON body: {e}"), {})
            return

        # A forced-tool request (the checks' model layer) is answered before ``limits``: their
        # counts (quota, admitted, rejected) stay those of the conversation's own requests.
        forced = self._forced_tool(body)
        if forced is not None:
            reply = self._answer_forced(body, forced)
            self._sleep(self.latency + reply.delay)
            if reply.is_error:
                self._send_json(h, reply.status, reply.body, reply.headers)
            else:
                self._respond(h, body, reply)
            return
        limit_headers: dict[str, str] = {}
        if self.limits is not None:
            ok, limit_headers = self.limits.check(len(raw), "openai" if "OpenAI" in self.name else "anthropic")
            if not ok:
                self._send_json(h, 429, self._error_body(429, "fake: rate limit exceeded"), limit_headers)
                return
        with self._lock:
            if self.record:
                self.requests.append(body)
                self.request_headers.append({k.lower(): v for k, v in h.headers.items()})
                self._record_extra(h, path)
            self._served += 1
            n = len(self.requests) if self.record else self._served
        reply = self._reply_for(body, n)

        if limit_headers:
            reply = dataclasses.replace(reply, headers={**limit_headers, **reply.headers})
        self._sleep(self.latency + reply.delay)
        if self._stopping.is_set():
            h.close_connection = True
            return
        if reply.is_error:
            self._send_json(h, reply.status, reply.body, reply.headers)
            return
        if getattr(reply, "raw", None) is not None:
            self._send_raw(h, reply)
            return
        self._respond(h, body, reply)

    def _reply_for(self, body: dict[str, Any], n: int) -> Any:
        """The scripted answer to request ``body`` (number ``n``): the next queued reply, else
        the handler's, else an error saying the script is exhausted. A Message Batches request
        is answered by the same code (``fake_batches``)."""
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self.handler is not None:
            try:
                reply = self.handler(body)
                if isinstance(reply, str):  # convenience
                    reply = self._text_reply(reply)
                if not isinstance(reply, self.reply_type):
                    raise TypeError(f"handler returned {reply!r}, not a Reply")
            except Exception as e:  # report it to the client and keep it for the test
                self.errors.append(traceback.format_exc())
                reply = self._error_reply(500, f"{self.name} handler raised {type(e).__name__}: {e}",
                                          {"x-should-retry": "false"})
        if reply is None:
            reply = self._error_reply(
                500, f"{self.name} script exhausted: no reply queued for request #{n} and no handler set",
                {"x-should-retry": "false"})
        return reply


@dataclasses.dataclass
class Faults:
    """What every fake server's reply record has: the status, an error body, headers, a delay,
    and the faults both servers can inject (a stream dropped, garbled or stalled after N events,
    an error event mid-stream; a raw body, trickled or repeated forever: see ``raw_body``)."""

    status: int = 200
    body: dict[str, Any] | None = None  # the error body (None for a successful reply)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0
    drop_after: int | None = None
    malformed_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 30.0
    stream_error: tuple[str, str] | None = None
    raw: bytes | None = None
    raw_type: str = "application/json"
    trickle: float = 0.0
    endless: bytes | None = None
    endless_every: float | None = None  # seconds between repeats (None: trickle, at least 10 ms)
    content_length: int | None = None  # a raw body's declared length (a lie, for a short body)


def raw_body(body: bytes | str | Any) -> bytes:
    """The bytes of a fake server's raw reply: ``body`` as it is (bytes, or a str), or any JSON
    value encoded. A raw reply is for what a real API never sends but a proxy or a broken server
    does: an HTML page, a JSON list, a message of the wrong shape, a hand-written SSE stream
    (``content_type="text/event-stream"``).

    Byte-level faults, which also apply to any other reply through ``dataclasses.replace``:
    ``trickle=S`` sends the body one byte every S seconds; ``endless=B`` then sends the bytes
    ``B`` again and again (every ``trickle`` s, at least 10 ms; ``endless_every=S`` sets the
    interval, 0 floods as fast as the client reads) until the client leaves. ``headers`` are
    sent as they are (a ``location`` with a 3xx status, a ``content-encoding`` the body does not
    have); ``content_length=N`` declares N bytes instead of chunking (more than the body: a
    body shorter than its Content-Length).
    """
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return json.dumps(body).encode()
