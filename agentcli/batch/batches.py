"""``batch --via batches``: the tool loop in rounds over the Anthropic Message Batches API.

One Message Batches request is one model call, and a question takes two to four (lookup, draft,
answer). So each question runs on the loop as it does live (``App.run``: the same tools,
validation, scope, timeouts, draft rules and grounding checks), with a :class:`Responder` in the
provider's place (``Conversation.responder``): its ``respond`` hands the request body
(``provider.request_params``) to :class:`Rounds` and waits; the result comes back as the
``ModelTurn`` a live answer would be (``provider.turn_from_message``, checked the same way).

Rounds: when every open conversation waits for its next model call, their requests go out as one
batch (split before :data:`MAX_REQUESTS` requests or :data:`MAX_BYTES` of requests); the batches
in flight are polled (``retrieve``, every tenth of a batch's age, from :data:`POLL_FIRST_S` to
:data:`POLL_MAX_S`);
an ended batch's results (in any order) feed their conversations, which run their tools locally
and ask again: the next round. Every ending:

- ``succeeded``: the answer goes on (a message that is not one is a broken answer, retried);
- ``expired``, ``canceled`` (by someone else), an overloaded or failing ``errored``: retried in a
  later batch, counted as the loop counts any retry (``--retries``);
- ``errored`` with ``invalid_request_error``: the question's error record (no retry);
- a batch still processing ``--batch-deadline`` after it was submitted is cancelled; what ended
  before the cancel goes on, the rest are error records "not finished" (exit 4), and
  ``--resume`` submits them again;
- ``--live-tail N``: once the input is read and N or fewer conversations are open, their next
  calls go to the live API (through the rate-limit gate) instead of another batch.

The grounding checks' model layer (one forced call a question, ``App.check``) is a request of a
round too (``App.forced_for``): nothing of a question goes to the live API unless the live
tail sends it there.

The state (:class:`BatchState`, ``OUTPUT.batches.json`` beside ``--output``) holds every
submitted batch: its id, round, time, and for each ``custom_id`` the question (``id``) and the
call it answers, with a digest of the request; and the answers of live-tail calls. It is
written atomically (a temporary file, fsync, rename, fsync of the folder) before each create
(the intent), after it (the id) and after each batch's results are read. ``--resume`` replays
each unfinished question from its start: a call already submitted is not submitted again but
answered from its batch (re-attached while it processes; its results read again from the API,
which keeps them 29 days). Tools run again (lookups read, a draft of the same text in the same
ticket is the same draft). A request whose digest differs from the one submitted (the order
changed since, or the model) is asked afresh: an answer to another request is never used. A
crash between a create and the write of its id is found again through ``list`` (a batch created
after the intent with the same number of requests).

``custom_id``: ``q`` + 24 hex digits of the id's hash + ``-c`` + the call's number within the
question (retries included): ``^[a-zA-Z0-9_-]{1,64}$`` whatever the line's id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from ..errors import ModelAPIError, UsageError, replace_file
from ..providers.base import ModelTurn
from ..providers.pricing import BATCH_DISCOUNT, estimate_cost
from ..providers.retry import Attempts
from .input import Item, id_key

MAX_REQUESTS = 100_000           # requests one batch may hold (the API's limit)
MAX_BYTES = 256 * 1000 * 1000    # bytes of one create request (the API's 256 MB)
BYTES_MARGIN = 64 * 1024         # the JSON around the requests, kept below the limit
POLL_FIRST_S = 0.25              # the first look at a new batch
POLL_MAX_S = 60.0                # the longest wait between two looks
POLL_SHARE = 0.1                 # ... and between, a tenth of the batch's age
SETTLE_S = 0.2                   # while input is still read: quiet this long before a round goes
API_TRIES = 6                    # a batch endpoint call failing retryably is asked again so often
MAX_OPEN = 5_000                 # conversations open at once (their next calls share a round)
STATE_VERSION = 1
LIVE = object()                  # the answer of Rounds.ask: go to the live API

_WF_ID = re.compile(r"toolu_wf_[0-9a-f]{16}")


def custom_id(qkey: str, call: int) -> str:
    h = hashlib.sha256(qkey.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"q{h}-c{call}"


def digest(params: dict[str, Any]) -> str:
    """What a request asks, as a hash: the body with the workflow mode's own random tool ids
    taken out (they differ from one replay to the next; nothing the model reads)."""
    raw = json.dumps(params, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(_WF_ID.sub("toolu_wf", raw).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def split(sizes: list[int], max_count: int = MAX_REQUESTS,
          max_bytes: int = MAX_BYTES - BYTES_MARGIN) -> list[range]:
    """Consecutive runs of requests (their encoded sizes ``sizes``) that each fit one batch."""
    out: list[range] = []
    start, total = 0, 0
    for i, n in enumerate(sizes):
        if i > start and (i - start >= max_count or total + n + 1 > max_bytes):
            out.append(range(start, i))
            start, total = i, 0
        total += n + 1
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def state_path(output: Path) -> Path:
    return output.with_name(output.name + ".batches.json")


# --------------------------------------------------------------------------- the state file


class BatchState:
    """``OUTPUT.batches.json``: see the module docstring. ``batches`` keeps insertion order
    (submission order), so the latest batch of a ``custom_id`` wins."""

    def __init__(self, path: Path):
        self.path = path
        self.batches: dict[str, dict[str, Any]] = {}
        self.live: dict[str, dict[str, Any]] = {}
        self.creating: dict[str, Any] | None = None
        self._latest: dict[str, str] = {}

    @classmethod
    def load(cls, path: Path) -> "BatchState":
        st = cls(path)
        try:
            with open(path, "rb") as f:
                raw = f.read(1 << 31)
        except FileNotFoundError:
            return st
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
                raise ValueError("not a state file of this version")
            for bid, b in data.get("batches", {}).items():
                reqs = b.get("requests")
                if not isinstance(bid, str) or not isinstance(reqs, dict):
                    raise ValueError("a batch without requests")
                for cid, r in reqs.items():
                    if not (isinstance(r, list) and len(r) == 3 and isinstance(r[0], str)
                            and type(r[1]) is int and isinstance(r[2], str)):
                        raise ValueError(f"request {cid[:80]!r} is not [id, call, digest]")
                if not isinstance(b.get("submitted_at", 0), (int, float)):
                    raise ValueError("a batch without its time")
                st.batches[bid] = b
            st.live = {k: v for k, v in (data.get("live") or {}).items() if isinstance(v, dict)}
            c = data.get("creating")
            st.creating = c if isinstance(c, dict) else None
        except (ValueError, TypeError, AttributeError, RecursionError) as e:
            raise UsageError(f"{path} is not a batches state file agentcli can read ({e}); move "
                             "it aside to start afresh (batches it names would be paid again)") from None
        st._index()
        return st

    def _index(self) -> None:
        self._latest = {cid: bid for bid, b in self.batches.items() for cid in b["requests"]}

    def latest(self, cid: str) -> str | None:
        return self._latest.get(cid)

    def add(self, bid: str, round_no: int, requests: dict[str, list[Any]]) -> None:
        self.batches[bid] = {"round": round_no, "submitted_at": time.time(), "ended": False,
                             "cancelled_at_deadline": False, "requests": requests}
        for cid in requests:
            self._latest[cid] = bid

    def save(self) -> None:
        data = {"version": STATE_VERSION, "batches": self.batches, "live": self.live,
                "creating": self.creating}
        raw = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogateescape")
        try:
            self._write(raw)
        except OSError as e:
            raise UsageError(f"cannot write the batches' state {self.path}: {e.strerror or e}; "
                             "the batches submitted so far are named in it") from None

    def _write(self, raw: bytes) -> None:
        # the state is replaced or left as it was, never a temporary file left
        replace_file(self.path, raw, prefix="." + self.path.name + ".")

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


# --------------------------------------------------------------------------- the rounds


@dataclass
class _Ask:
    cid: str
    qkey: str
    call: int
    params: dict[str, Any]
    digest: str
    future: asyncio.Future
    size: int = 0


@dataclass
class _Poll:
    next_at: float
    interval: float = POLL_FIRST_S
    cancel_sent: bool = False


@dataclass
class Stats:
    rounds: int = 0
    batches: int = 0
    requests: int = 0        # submitted to batches
    ended: int = 0           # batch results read
    live: int = 0            # calls that went to the live API (--live-tail)
    resubmitted: int = 0     # expired, canceled, overloaded: asked again
    reattached: int = 0      # answered from a batch submitted by an earlier run
    usage_batch: dict[str, int] = field(default_factory=dict)
    usage_live: dict[str, int] = field(default_factory=dict)


def _add_usage(into: dict[str, int], usage: dict[str, int]) -> None:
    for k, v in (usage or {}).items():
        if isinstance(v, int):
            into[k] = into.get(k, 0) + v


class Rounds:
    """The batches of one ``batch --via batches`` run (see the module docstring)."""

    def __init__(self, provider: Any, state: BatchState, *, deadline_s: float, live_tail: int = 0,
                 prices: dict[str, Any] | None = None, max_open: int = MAX_OPEN):
        self.provider = provider
        self.api = provider.batches
        self.state = state
        self.deadline_s = deadline_s
        self.live_tail = live_tail
        self.prices = prices
        self.max_open = max_open
        self.stats = Stats()
        self.open = 0
        self.blocked = 0
        self.input_done = False
        self.new: dict[str, _Ask] = {}
        self.waiting: dict[str, _Ask] = {}
        self.inflight: dict[str, _Poll] = {}
        self.cache: dict[str, dict[str, tuple[str, Any]]] = {}
        self.cancelled_here: set[str] = set()
        self.last_change = time.monotonic()
        self.listener: Any = None  # called with this object when something a person sees changed
        self._wake: asyncio.Future | None = None
        self._convs: dict[int, "Responder"] = {}
        self._tickets: dict[int, "Responder"] = {}

    # -- conversations -------------------------------------------------------------
    def attach(self, conv: Any, item: Item) -> None:
        r = Responder(self, conv, id_key(item.id))
        conv.responder = r
        self._convs[id(conv)] = r
        self._tickets[id(conv.ticket)] = r
        self.open += 1
        self._changed()

    def detach(self, conv: Any) -> None:
        if self._convs.pop(id(conv), None) is not None:
            self._tickets.pop(id(conv.ticket), None)
            self.open -= 1
            self._changed()

    def forced_for(self, ticket: Any) -> tuple[Any, float] | None:
        """The checks' model layer of ``ticket``'s question (``App.forced_for``): its forced call
        a request of the next round too, given as long as a batch may take."""
        r = self._tickets.get(id(ticket))
        return (r.forced, self.deadline_s + 60.0) if r is not None else None

    def price(self, conv: Any, rec: dict[str, Any]) -> None:
        """The record's cost estimate at what its calls cost: batch calls at batch prices."""
        r = self._convs.get(id(conv))
        if r is None:
            return
        model = rec.get("model")
        b = estimate_cost(model, r.usage_batch, self.prices)
        lv = estimate_cost(model, r.usage_live, self.prices)
        if b is None or lv is None:
            rec["estimated_cost_usd"] = None
        else:
            rec["estimated_cost_usd"] = round(b * BATCH_DISCOUNT + lv, 6)

    def finished_input(self) -> None:
        self.input_done = True
        self._changed()

    def _changed(self) -> None:
        self.last_change = time.monotonic()
        if self._wake is not None:
            _resolve(self._wake)
        if self.listener is not None:
            try:
                self.listener(self)
            except Exception:
                pass

    # -- one model call ------------------------------------------------------------
    async def ask(self, qkey: str, call: int, params: dict[str, Any]) -> Any:
        """The answer to one model call: a ModelTurn, or :data:`LIVE`; raises ModelAPIError."""
        cid = custom_id(qkey, call)
        d = digest(params)
        live = self.state.live.get(cid)
        if live is not None and live.get("digest") == d:
            self.stats.reattached += 1
            return ("live", self.provider.turn_from_message(live.get("message")))
        fut = asyncio.get_running_loop().create_future()
        a = _Ask(cid, qkey, call, params, d, fut)
        self.blocked += 1
        try:
            bid = self.state.latest(cid)
            b = self.state.batches.get(bid) if bid is not None else None
            if b is not None and b["requests"][cid][2] == d:  # submitted before: no second time
                self.stats.reattached += 1
                got = self.cache.get(bid, {}).pop(cid, None)
                if got is not None:
                    self._settle(a, bid, *got)
                else:  # re-attached: looked at (and its results read) by the rounds
                    self.inflight.setdefault(bid, _Poll(0.0))
                    self.waiting[cid] = a
            else:
                self.new[cid] = a
            self._changed()
            return await fut
        finally:
            self.blocked -= 1
            self.new.pop(cid, None)
            if self.waiting.get(cid) is a:
                del self.waiting[cid]
            self._changed()

    def _settle(self, a: _Ask, bid: str, kind: str, value: Any) -> None:
        """Resolve one call from its batch result."""
        if a.future.done():
            return
        if kind == "succeeded":
            a.future.set_result(("batch", value))
            return
        if kind == "broken":  # not a message: a broken answer, asked again as live ones are
            self.stats.resubmitted += 1 if getattr(value, "retryable", False) else 0
            a.future.set_exception(value)
            return
        b = self.state.batches.get(bid, {})
        if kind == "canceled" and b.get("cancelled_at_deadline"):
            if bid not in self.cancelled_here:  # an earlier run's deadline: submit it again now
                self.waiting.pop(a.cid, None)
                self.new[a.cid] = a
                self._changed()
                return
            a.future.set_exception(ModelAPIError(
                f"not finished: its batch {bid} was still processing after --batch-deadline "
                f"{_human(self.deadline_s)} and was cancelled; rerun with --resume to submit it again",
                kind="not_finished", retryable=False))
            return
        self.stats.resubmitted += 1
        if kind == "expired":
            a.future.set_exception(ModelAPIError(
                f"its batch request expired unprocessed (batch {bid})", kind="batch_expired",
                retryable=True, retry_after=0.1))
        elif kind == "canceled":
            a.future.set_exception(ModelAPIError(
                f"its batch {bid} was cancelled (not by agentcli)", kind="batch_canceled",
                retryable=True, retry_after=0.1))
        else:
            etype, msg = value if isinstance(value, tuple) else ("api_error", "")
            said = f": {msg}" if msg else ""
            if etype == "invalid_request_error":
                self.stats.resubmitted -= 1
                a.future.set_exception(ModelAPIError(
                    f"the Message Batches API refused the request as invalid{said}",
                    kind="invalid_request", retryable=False))
            elif etype in ("authentication_error", "permission_error", "billing_error",
                           "not_found_error"):
                self.stats.resubmitted -= 1
                a.future.set_exception(ModelAPIError(
                    f"the Message Batches API answered {etype}{said}",
                    kind=etype.removesuffix("_error"), retryable=False))
            else:
                a.future.set_exception(ModelAPIError(
                    f"its batch request failed ({etype}){said}",
                    kind=etype.removesuffix("_error"), retryable=True, retry_after=0.1))

    # -- the rounds ------------------------------------------------------------------
    def _round_ready(self) -> bool:
        if not self.new or self.blocked < self.open:
            return False
        return self.input_done or time.monotonic() - self.last_change >= SETTLE_S

    async def run(self) -> None:
        """The rounds, until cancelled (the batch runner ends it when every question is done)."""
        while True:
            now = time.monotonic()
            for bid in [b for b, p in self.inflight.items() if p.next_at <= now]:
                await self._look(bid)
            if self._round_ready():
                asks = list(self.new.values())
                if self.input_done and self.open <= self.live_tail:
                    for a in asks:
                        self.new.pop(a.cid, None)
                        if not a.future.done():
                            a.future.set_result(LIVE)
                else:
                    await self._submit(asks)
                continue
            waits = [p.next_at - time.monotonic() for p in self.inflight.values()]
            if self.new:
                waits.append(SETTLE_S)
            await self._sleep(max(0.0, min(waits)) if waits else None)

    async def _sleep(self, timeout: float | None) -> None:
        """Until something changed (``_changed``) or ``timeout`` s passed. A plain future:
        cancelled at once (``wait_for`` around an event's wait held a SIGTERM 5 s in 3.11)."""
        loop = asyncio.get_running_loop()
        fut = self._wake = loop.create_future()
        later = loop.call_later(timeout, _resolve, fut) if timeout is not None else None
        try:
            await fut
        finally:
            if later is not None:
                later.cancel()
            self._wake = None

    async def _api(self, what: str, fn: Any, *args: Any) -> Any:
        tries = Attempts(API_TRIES)
        while True:
            try:
                return await fn(*args)
            except ModelAPIError as e:
                step = tries.failed(e)
                if step.wait is None:
                    raise ModelAPIError(f"{what}: {step.message}", kind=e.kind,
                                        retryable=False) from None
                await asyncio.sleep(step.wait)

    async def _submit(self, asks: list[_Ask]) -> None:
        self.stats.rounds += 1
        encoded = []
        for a in asks:
            body = {"custom_id": a.cid, "params": a.params}
            a.size = len(json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            encoded.append(body)
        for part in split([a.size for a in asks]):
            chunk = [asks[i] for i in part]
            self.state.creating = {"at": time.time(), "count": len(chunk), "round": self.stats.rounds,
                                   "requests": {a.cid: [a.qkey, a.call, a.digest] for a in chunk}}
            self.state.save()
            try:
                info = await self._api("submitting a batch", self.api.create,
                                       [encoded[i] for i in part])
            except ModelAPIError as e:
                self.state.creating = None
                self.state.save()
                for a in chunk:
                    self.new.pop(a.cid, None)
                    if not a.future.done():
                        a.future.set_exception(ModelAPIError(e.message, kind=e.kind, retryable=False))
                continue
            bid = info["id"]
            self.state.add(bid, self.stats.rounds, self.state.creating["requests"])
            self.state.creating = None
            self.state.save()
            self.stats.batches += 1
            self.stats.requests += len(chunk)
            for a in chunk:
                self.new.pop(a.cid, None)
                self.waiting[a.cid] = a
            self.inflight[bid] = _Poll(time.monotonic() + POLL_FIRST_S)
            self._changed()

    async def prepare(self) -> None:
        """Before the first question: an earlier run that stopped between a create and the
        write of its id left the intent in the state; the batch it made is found (``list``: one
        created since, with as many requests) and re-attached, so it is not paid twice."""
        c = self.state.creating
        if not c:
            return
        known = set(self.state.batches)
        try:
            found = await self._api("listing the batches", self.api.list, 100)
        except ModelAPIError:
            found = []
        at = float(c.get("at") or 0)
        cands = [b for b in found if b["id"] not in known and (b.get("created_at") or 0) >= at - 5
                 and sum(b.get("request_counts", {}).values()) == c.get("count")]
        if cands:
            b = min(cands, key=lambda x: x.get("created_at") or 0)
            self.state.add(b["id"], int(c.get("round") or 0), dict(c.get("requests") or {}))
        self.state.creating = None
        self.state.save()

    async def _look(self, bid: str) -> None:
        p = self.inflight[bid]
        try:
            info = await self._api("looking at a batch", self.api.retrieve, bid)
        except ModelAPIError as e:
            self._fail_batch(bid, e)
            return
        b = self.state.batches.get(bid, {})
        if info["processing_status"] == "ended":
            await self._read(bid)
            return
        if (not p.cancel_sent and time.time() - float(b.get("submitted_at") or time.time())
                > self.deadline_s):
            try:
                await self._api("cancelling a batch", self.api.cancel, bid)
            except ModelAPIError as e:
                self._fail_batch(bid, e)
                return
            p.cancel_sent = True
            b["cancelled_at_deadline"] = True
            self.cancelled_here.add(bid)
            self.state.save()
            p.interval = POLL_FIRST_S
        # The next look: a tenth of the batch's age so far (at least POLL_FIRST_S, at most
        # POLL_MAX_S): its end is seen within 10 % of its time (a growth of 1.5x per look saw
        # a 20 s batch end at 29 s), with a few dozen looks an hour.
        age = time.time() - float(b.get("submitted_at") or time.time())
        p.interval = min(POLL_MAX_S, max(POLL_FIRST_S, POLL_SHARE * age))
        p.next_at = time.monotonic() + p.interval

    def _fail_batch(self, bid: str, e: ModelAPIError) -> None:
        """The batch cannot be looked at (after retries): its calls end with that error."""
        self.inflight.pop(bid, None)
        for cid, a in list(self.waiting.items()):
            if self.state.latest(cid) == bid and not a.future.done():
                a.future.set_exception(ModelAPIError(
                    f"{e.message} (batch {bid}; rerun with --resume to look again)",
                    kind=e.kind, retryable=False))

    async def _read(self, bid: str) -> None:
        got: dict[str, tuple[str, Any]] = {}
        try:
            async for cid, kind, value in _results(self, bid):
                got[cid] = (kind, value)
        except ModelAPIError as e:
            self._fail_batch(bid, e)
            return
        self.inflight.pop(bid, None)
        b = self.state.batches.get(bid)
        if b is not None and not b.get("ended"):
            b["ended"] = True
            self.state.save()
        self.stats.ended += len(got)
        mine = set(b["requests"]) if b is not None else set()
        for cid, (kind, value) in got.items():
            if cid not in mine:
                continue  # not ours (a proxy's mix-up): never fed to a conversation
            a = self.waiting.get(cid)
            if kind == "succeeded":
                _add_usage(self.stats.usage_batch, value.usage)
            if a is not None and self.state.latest(cid) == bid:
                self.waiting.pop(cid, None)
                self._settle(a, bid, kind, value)
            else:
                self.cache.setdefault(bid, {})[cid] = (kind, value)
        for cid, a in list(self.waiting.items()):  # asked of this batch, absent from its results
            if self.state.latest(cid) == bid and cid not in got:
                self.waiting.pop(cid, None)
                self._settle(a, bid, "errored", ("api_error", "absent from the batch's results"))
        self._changed()

    # -- what a person sees ----------------------------------------------------------
    def in_flight(self) -> int:
        return len(self.waiting)

    def cost(self) -> tuple[float | None, float | None]:
        """(estimated cost so far at batch prices, the same calls at live prices)."""
        model = self.provider.model
        b = estimate_cost(model, self.stats.usage_batch, self.prices)
        lv = estimate_cost(model, self.stats.usage_live, self.prices)
        if b is None or lv is None:
            return None, None
        return b * BATCH_DISCOUNT + lv, b + lv

    def status(self, width: int = 200) -> str:
        """The progress line's part: round, requests in flight, results read (and live), the
        cost so far at batch prices against live; shorter for a narrower terminal."""
        s = self.stats
        if width < 60:
            return f"round {s.rounds}"
        if width < 100:
            return f"round {s.rounds} · {self.in_flight()} in flight"
        cost, live = self.cost()
        money = ""
        if cost is not None:
            money = f" · est. ${cost:.4f} (live ${live:.4f})" if width >= 140 else f" · est. ${cost:.4f}"
        tail = f" · {s.live} live" if s.live else ""
        return (f"round {s.rounds} · {self.in_flight()} in flight · {s.ended} ended{tail}{money}")

    def summary(self) -> str:
        s = self.stats
        cost, live = self.cost()
        money = (f"; estimated ${cost:.4f} at batch prices (${live:.4f} live)"
                 if cost is not None else "")
        more = "".join(x for x in (
            f", {s.live} on the live API" if s.live else "",
            f", {s.resubmitted} asked again" if s.resubmitted else "",
            f", {s.reattached} from earlier batches" if s.reattached else ""))
        return (f"via batches: {s.rounds} round{'s' if s.rounds != 1 else ''}, {s.batches} "
                f"batch{'es' if s.batches != 1 else ''}, {s.requests} requests{more}{money}")


async def _results(rounds: Rounds, bid: str) -> AsyncIterator[tuple[str, str, Any]]:
    tries = Attempts(API_TRIES)
    while True:
        try:
            async for x in rounds.api.results(bid):
                yield x
            return
        except ModelAPIError as e:
            step = tries.failed(e)
            if step.wait is None:
                raise
            await asyncio.sleep(step.wait)


class Responder:
    """The model calls of one conversation, answered by the rounds (``Conversation.responder``)."""

    def __init__(self, rounds: Rounds, conv: Any, qkey: str):
        self.rounds = rounds
        self.conv = conv
        self.qkey = qkey
        self.calls = 0
        self.usage_batch: dict[str, int] = {}
        self.usage_live: dict[str, int] = {}

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[Any]:
        provider = self.rounds.provider
        self.calls += 1
        call = self.calls
        params = provider.request_params(history)
        got = await self.rounds.ask(self.qkey, call, params)
        if got is LIVE:
            self.rounds.stats.live += 1
            turn = None
            async for x in provider.respond(history, stream=stream):
                if isinstance(x, ModelTurn):
                    turn = x
                yield x
            if turn is not None:
                _add_usage(self.usage_live, turn.usage)
                _add_usage(self.rounds.stats.usage_live, turn.usage)
                if turn.message is not None:  # paid for: a resume reads it from the state
                    self.rounds.state.live[custom_id(self.qkey, call)] = {
                        "digest": digest(params), "message": {
                            "id": "msg_live", "type": "message", "role": "assistant",
                            "model": provider.model, "content": turn.message.get("content", []),
                            "stop_reason": turn.stop_reason, "stop_sequence": None,
                            "usage": turn.usage}}
                    self.rounds.state.save()
            return
        where, turn = got
        _add_usage(self.usage_live if where == "live" else self.usage_batch, turn.usage)
        yield turn

    async def forced(self, system: str, user: str, tool: dict[str, Any], *,
                     model: str | None = None) -> Any:
        """The checks' forced call (``App.check``) as a request of a round: the same numbering
        as the question's model calls (a replay asks it at the same place)."""
        provider = self.rounds.provider
        self.calls += 1
        params = provider.forced_params(system, user, tool, model=model)
        got = await self.rounds.ask(self.qkey, self.calls, params)
        if got is LIVE:
            self.rounds.stats.live += 1
            turn = await provider.forced_call(system, user, tool, model=model)
            _add_usage(self.usage_live, turn.usage)
            _add_usage(self.rounds.stats.usage_live, turn.usage)
            return turn
        where, turn = got
        _add_usage(self.usage_live if where == "live" else self.usage_batch, turn.usage)
        return turn


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


def _human(s: float) -> str:
    if s >= 3600 and s % 3600 == 0:
        return f"{s / 3600:.0f}h"
    if s >= 60 and s % 60 == 0:
        return f"{s / 60:.0f}m"
    return f"{s:g}s"
