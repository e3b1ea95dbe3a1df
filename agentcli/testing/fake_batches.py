"""A fake Message Batches API, served by ``FakeAnthropic`` beside its Messages API.

    POST /v1/messages/batches                 create (``requests``: ``custom_id`` + ``params``)
    GET  /v1/messages/batches/{id}            retrieve
    GET  /v1/messages/batches/{id}/results    results (JSON Lines, in an order of their own)
    POST /v1/messages/batches/{id}/cancel     cancel
    GET  /v1/messages/batches?limit=N         list (newest first)

Each request of a batch is answered when the batch is created, by the very code that answers a
live ``POST /v1/messages`` (the server's reply queue, then its ``handler``: a scenario answers a
batch request exactly as it answers a live one). What a reply becomes in the results:

- a message reply: ``succeeded`` with that message;
- an error reply: ``errored`` with its error type (``error(529)`` is an overloaded request,
  ``error(400)`` an invalid one);
- :func:`expired` / :func:`canceled` (``Reply(batch_result=...)``): that ending;
- a raw reply: ``errored`` (``api_error``).

A create takes effect at once and is answered ``create_delay`` seconds later (a client killed
in between never learns the id: ``list`` shows the batch). A batch is ``in_progress`` for
``batch_delay`` seconds (each request ends at a random moment
within it), then ``ended``; ``cancel`` makes it ``canceling``, and at the next look ``ended``
with every request that had not ended by then ``canceled``. Results come in a shuffled order
(``batch_seed``). What the fake refuses as the real API does: a ``custom_id`` outside
``^[a-zA-Z0-9_-]{1,64}$`` or used twice in a batch, more than :data:`MAX_REQUESTS` requests or a
body over :data:`MAX_BYTES`, an empty batch.

Recorded (``record=True``): ``batch_creates`` (each create's requests, in order),
``batch_cancels`` (ids), ``batch_retrieves`` (how many), ``batch_results_reads`` (ids).
Standard library only.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any

CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1000 * 1000


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Batch:
    def __init__(self, bid: str, results: list[dict[str, Any]], delay: float, rng: random.Random):
        self.id = bid
        self.created = time.time()
        self.delay = delay
        self.results = results
        # when each request ends, within the processing delay
        self.done_at = [self.created + delay * rng.uniform(0.3, 1.0) for _ in results]
        self.cancel_at: float | None = None
        self.ended_at: float | None = None

    def settle(self, now: float) -> None:
        if self.ended_at is not None:
            return
        if self.cancel_at is not None:
            for i, r in enumerate(self.results):
                if self.done_at[i] > self.cancel_at:
                    r["result"] = {"type": "canceled"}
            self.ended_at = now
        elif now >= self.created + self.delay:
            self.ended_at = now

    def status(self) -> str:
        if self.ended_at is not None:
            return "ended"
        return "canceling" if self.cancel_at is not None else "in_progress"

    def body(self, url: str) -> dict[str, Any]:
        counts = {k: 0 for k in ("processing", "succeeded", "errored", "canceled", "expired")}
        for r in self.results:
            counts["processing" if self.ended_at is None else r["result"]["type"]] += 1
        return {"id": self.id, "type": "message_batch", "processing_status": self.status(),
                "request_counts": counts, "created_at": _iso(self.created),
                "expires_at": _iso(self.created + 86400), "ended_at": _iso(self.ended_at),
                "cancel_initiated_at": _iso(self.cancel_at), "archived_at": None,
                "results_url": f"{url}/v1/messages/batches/{self.id}/results"
                if self.ended_at is not None else None}


class FakeBatches:
    """The batches of one fake server (see the module docstring)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.delay = 0.0
        self.create_delay = 0.0  # seconds between a create taking effect and its answer
        self.rng = random.Random(0)
        self._lock = threading.Lock()
        self.batches: dict[str, _Batch] = {}
        self.creates: list[list[dict[str, Any]]] = []
        self.cancels: list[str] = []
        self.retrieves = 0
        self.results_reads: list[str] = []

    def reset(self) -> None:
        with self._lock:
            self.batches.clear()
            self.creates.clear()
            self.cancels.clear()
            self.retrieves = 0
            self.results_reads.clear()

    # -- answers
    def _result(self, params: dict[str, Any]) -> dict[str, Any]:
        s = self.server
        with s._lock:
            s._served += 1
            n = s._served
        reply = s._reply_for(params, n)
        kind = getattr(reply, "batch_result", None)
        if kind in ("expired", "canceled"):
            return {"type": kind}
        if reply.is_error or getattr(reply, "raw", None) is not None:
            err = (reply.body or {}).get("error") if isinstance(reply.body, dict) else None
            err = err if isinstance(err, dict) else {"type": "api_error", "message": "fake: raw reply"}
            return {"type": "errored", "error": {"type": "error", "error": err}}
        msg = dict(reply.message)
        msg["id"] = f"msg_{uuid.uuid4().hex[:24]}"
        return {"type": "succeeded", "message": msg}

    def create(self, body: Any, size: int) -> tuple[int, dict[str, Any]]:
        reqs = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(reqs, list) or not reqs:
            return 400, _err(400, "requests: must be a non-empty list")
        if len(reqs) > MAX_REQUESTS or size > MAX_BYTES:
            return 413, _err(413, f"a batch holds at most {MAX_REQUESTS} requests and {MAX_BYTES} bytes")
        seen: set[str] = set()
        for r in reqs:
            cid = r.get("custom_id") if isinstance(r, dict) else None
            if not isinstance(cid, str) or not CUSTOM_ID.fullmatch(cid):
                return 400, _err(400, f"requests: custom_id {cid!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
            if cid in seen:
                return 400, _err(400, f"requests: custom_id {cid!r} is used twice")
            if not isinstance(r.get("params"), dict):
                return 400, _err(400, "requests: params must be an object")
            seen.add(cid)
        if self.server.record:
            with self._lock:
                self.creates.append(reqs)
        results = [{"custom_id": r["custom_id"], "result": self._result(r["params"])} for r in reqs]
        bid = f"msgbatch_{uuid.uuid4().hex[:24]}"
        with self._lock:
            b = self.batches[bid] = _Batch(bid, results, self.delay, self.rng)
        self.server._sleep(self.create_delay)  # the batch exists; its id is not told yet
        return 200, b.body(self.server.url)

    def _get(self, bid: str) -> _Batch | None:
        with self._lock:
            b = self.batches.get(bid)
            if b is not None:
                b.settle(time.time())
            return b

    def end_now(self) -> None:
        """Every batch in progress ends at the next look, each request as it was answered."""
        with self._lock:
            for b in self.batches.values():
                if b.ended_at is None and b.cancel_at is None:
                    b.delay = 0.0
                    b.done_at = [b.created] * len(b.done_at)

    def retrieve(self, bid: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.retrieves += 1
        b = self._get(bid)
        if b is None:
            return 404, _err(404, f"no batch {bid}")
        return 200, b.body(self.server.url)

    def cancel(self, bid: str) -> tuple[int, dict[str, Any]]:
        b = self._get(bid)
        if b is None:
            return 404, _err(404, f"no batch {bid}")
        with self._lock:
            self.cancels.append(bid)
            if b.ended_at is None and b.cancel_at is None:
                b.cancel_at = time.time()
        return 200, b.body(self.server.url)

    def results(self, bid: str) -> tuple[int, bytes]:
        b = self._get(bid)
        if b is None or b.ended_at is None:
            return 404, json.dumps(_err(404, f"batch {bid} has no results (yet)")).encode()
        with self._lock:
            self.results_reads.append(bid)
            lines = list(b.results)
        random.Random(f"{bid}-{len(lines)}").shuffle(lines)  # any order, as the API says
        return 200, b"".join(json.dumps(r).encode() + b"\n" for r in lines)

    def list(self, limit: int) -> dict[str, Any]:
        with self._lock:
            bs = sorted(self.batches.values(), key=lambda b: b.created, reverse=True)
        for b in bs:
            b.settle(time.time())
        data = [b.body(self.server.url) for b in bs[:max(1, min(limit, 1000))]]
        return {"data": data, "has_more": len(bs) > len(data),
                "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}

    # -- HTTP
    def serve_post(self, h: Any, path: str, raw: bytes) -> None:
        parts = path.rstrip("/").split("/")  # ["", "v1", "messages", "batches", id?, "cancel"?]
        if len(parts) == 4:
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            status, out = self.create(body, len(raw))
        elif len(parts) == 6 and parts[5] == "cancel":
            status, out = self.cancel(parts[4])
        else:
            status, out = 404, _err(404, f"fake: no route POST {path}")
        self.server._send_json(h, status, out, {})

    def serve_get(self, h: Any, path: str, query: str) -> None:
        parts = path.rstrip("/").split("/")
        if len(parts) == 4:
            limit = 20
            for kv in query.split("&"):
                k, _, v = kv.partition("=")
                if k == "limit" and v.isdigit():
                    limit = int(v)
            self.server._send_json(h, 200, self.list(limit), {})
        elif len(parts) == 5:
            status, out = self.retrieve(parts[4])
            self.server._send_json(h, status, out, {})
        elif len(parts) == 6 and parts[5] == "results":
            status, data = self.results(parts[4])
            if status != 200:
                self.server._send_json(h, status, None, {}, raw=data)
                return
            h.send_response(200)
            h.send_header("content-type", "application/binary")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            h.wfile.flush()
        else:
            self.server._send_json(h, 404, _err(404, f"fake: no route GET {path}"), {})


def _err(status: int, msg: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"fake: {msg}"}}
