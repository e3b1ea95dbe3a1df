"""The rate-limit gate: one view of the API's limits, shared by every request of a process.

A provider owns one ``Gate``; the HTTP client it hands its SDK (``providers.transport``) calls
:meth:`Gate.before_request` before every request and :meth:`Gate.after_response` on every
response, and turns every 429/529 into the exception :meth:`Gate.limit_answer` builds
(:class:`LimitAnswer`) instead of handing that answer to the SDK. The SDKs retry nothing
(``max_retries=0``): the loop asks the retry policy (``providers.retry``) and waits, visibly.

- **Pause.** A 429 or 529 pauses *all* new requests until its ``retry-after-ms`` /
  ``retry-after`` has passed, and never less than the shared backoff: :data:`BACKOFF_FLOOR_S`
  doubling with each round of limit answers that has no clear answer between (up to
  :data:`MAX_BACKOFF_S`), so ``retry-after: 0``, ``retry-after-ms: 0`` or a date in the past
  cannot make a storm of requests. A round is the answers to requests sent before the pause
  they meet: the eight 429s of one burst of eight are one round, not eight. The
  :class:`LimitAnswer` says "handled: wait N s" (the pause left) or "stop: why".
- **Pacing.** The rate-limit headers of every response (Anthropic's
  ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``,
  OpenAI-compatible ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``) feed one bucket
  per dimension; a request whose cost (1 request; its body's size / 4 as input tokens) the
  bucket does not hold waits until it refills, instead of discovering the limit by failing.
- **Adaptive concurrency** (a batch): ``acquire``/``release`` admit at most ``limit`` questions.
  The batch learns the limit before it fans out: its first question goes alone, and the first
  answer's rate-limit headers set the start: twice the requests the limit's rate keeps in flight
  at that answer's latency, plus one, under the ``--concurrency`` ceiling (the ceiling when no
  requests limit is said). (Before, the whole first wave went out with no header known: 120 of
  a 200-question batch's answers were 429s.) The limit then drops on a limit answer (once per pause:
  an eighth when the answer carries rate-limit headers the pacing uses, else a quarter) and
  grows by one per round of clear answers.
- **Quota stop.** Any wait above ``max_wait`` (a retry-after, or what the rate-limit headers
  of a successful answer say: ``remaining: 0`` with a reset tomorrow, in 2099 or in ``1000h``),
  or limit answers with no clear answer between them for ``stall_s`` or :data:`STALL_ROUNDS`
  rounds, sets ``stopped`` (one line, why); a request that would wait beyond the bound is not
  sent at all (the hook raises the stop). A batch stops dispatching; outside a batch only the
  question that met it stops (the stop, and what the headers said, is forgotten for the next).
- **Visible waits.** Outside a batch a wait of :data:`NOTICE_S` or more (a pause, or pacing)
  is not slept inside the HTTP client, unseen: the request hook raises a :class:`LimitAnswer`
  with ``paced`` (why) and the wait, nothing reserved, and the loop shows it as a countdown
  (``providers.retry``: such a wait costs no ``--retries``) and asks again.

Header values are untrusted: unparsable, negative, NaN or huge values are ignored or clamped.
Standard library only (imported by the providers, never at ``--help``).
"""

from __future__ import annotations

import asyncio
import collections
import math
import re
import time
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, Callable

from ..errors import ModelAPIError

LIMIT_STATUSES = (429, 529)
MAX_WAIT_S = 900.0   # a wait longer than this is a quota, not a rate: stop (the quota bound)
STALL_S = 900.0      # limited and no answer through for this long: stop
STALL_ROUNDS = 10    # ... or for this many rounds of limit answers (~80 s of growing pauses)
BACKOFF_FLOOR_S = 0.1  # the shortest shared pause after a limit answer, doubling per round
MAX_BACKOFF_S = 30.0    # the longest backoff of our own (a server may ask for more)
NOTICE_S = 1.0       # outside a batch, a wait this long is shown (a countdown), not slept unseen
MAX_SENT = 20_000     # requests remembered per limit (their send times: see _Bucket.update)
_DIMS = ("requests", "tokens", "input-tokens", "output-tokens")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _num(v: Any, hi: float = 1e12) -> float | None:
    if v is None:  # a header not sent (most of them, every answer): no exception to raise
        return None
    try:
        x = float(str(v).strip()[:40])
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and 0 <= x <= hi else None


def parse_reset(v: Any, now_wall: float | None = None) -> float | None:
    """Seconds until a reset: RFC 3339 time (Anthropic), ``6m0.5s``/``120ms`` or plain seconds."""
    if v is None:
        return None
    s = str(v).strip()[:64]
    x = _num(s, 86400.0)
    if x is not None:
        return x
    if "T" in s:
        try:
            ts = datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
        return min(max(0.0, ts - (time.time() if now_wall is None else now_wall)), 86400.0)
    total, pos = 0.0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            return None
        pos = m.end()
        total += float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return min(total, 86400.0) if pos == len(s) and pos else None


def limited_wait(rounds: int, asked: float | None) -> float:
    """Seconds to pause after the ``rounds``-th limit answer in a row that asked for ``asked``
    seconds (None: it said nothing): the server's wait, never less than our own backoff, which
    doubles per round from :data:`BACKOFF_FLOOR_S` up to :data:`MAX_BACKOFF_S` (``retry-after:
    0`` from a limit that does not lift must not become a storm). The one rule for the model
    APIs' gate and the helpdesks' pushes."""
    floor = min(MAX_BACKOFF_S, BACKOFF_FLOOR_S * 2 ** min(max(rounds, 1) - 1, 10))
    return floor if asked is None else max(asked, floor)


def retry_after(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) in seconds, or None."""
    ms = _num(headers.get("retry-after-ms"), 1e10)
    if ms is not None:
        return ms / 1000.0
    v = headers.get("retry-after")
    if v is None:
        return None
    x = _num(v, 1e7)
    if x is not None:
        return x
    try:

        return max(0.0, parsedate_to_datetime(str(v)[:64]).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def read_limits(headers: Any) -> dict[str, tuple[float, float, float]]:
    """{dimension: (limit, remaining, seconds to reset)} from either API's headers."""
    out: dict[str, tuple[float, float, float]] = {}
    for dim in _DIMS:
        for pre, get in ((f"anthropic-ratelimit-{dim}-", lambda p, k: f"{p}{k}"),
                         ("x-ratelimit-", lambda p, k, d=dim: f"{p}{k}-{d}")):
            lim = _num(headers.get(get(pre, "limit")))
            if not lim:  # without a limit the others say nothing: not looked up
                continue
            rem = _num(headers.get(get(pre, "remaining")))
            reset = parse_reset(headers.get(get(pre, "reset")))
            if rem is not None and reset is not None:
                out[dim] = (lim, min(rem, lim), reset)
                break
    return out


class _Bucket:
    """What we know of one limit: a level that refills at ``rate`` units/s up to ``limit``."""

    def __init__(self) -> None:
        self.limit = 0.0
        self.level: float | None = None
        self.rate = 0.0
        self.t = 0.0
        self.full_at = 0.0
        # (when, units) of our requests sent or about to be sent, for the last minute or so:
        # those sent after an answer's request are not in its ``remaining``
        self.sent: collections.deque[tuple[float, float]] = collections.deque(maxlen=MAX_SENT)

    def now_level(self, now: float) -> float:
        assert self.level is not None
        return min(self.limit, self.level + self.rate * (now - self.t))

    def update(self, limit: float, remaining: float, reset_s: float, now: float,
               age: float = 0.0) -> None:
        """What one answer's headers say. ``age``: how long ago the request was sent (the
        server counted ``remaining`` at most that long ago: its reset, an absolute time, was
        ``reset_s + age`` away then; leaving that out paced 30 % too fast at 0.25 s latency)."""
        span = limit - remaining
        if span >= max(2.0, limit / 4) and reset_s + age > 0:
            # remaining is a whole number, rounded down: one unit less keeps the rate from
            # being overestimated (pacing a little fast meets the limit again and again). A
            # small span says little: 1 used of 20 may be 0.5 (the rate twice the truth).
            self.rate = (span - 1) / (reset_s + age)
        else:
            # Both APIs state their limits per minute; but a small span still bounds the rate
            # from below: the ``span`` units used are back by the reset. (Without that bound a
            # 2-request burst refilled at 40/s read as 2 a minute: one 30 s wait per request.)
            low = span / (reset_s + age) if span > 0 and reset_s + age > 0 else 0.0
            self.rate = max(self.rate or limit / 60.0, low)
        # The server's level now, had we sent nothing since: what it said, refilled for the
        # answer's age; less what we sent (or are about to send) after that request went.
        # (Taking the smaller of it and our own level kept the refill of the answer's age out:
        # at 0.25 s latency the batch reached 0.76 of the limit.)
        since = now - age
        later = sum(n for t, n in self.sent if t > since)
        self.limit, self.t = limit, now
        self.level = min(limit, remaining + self.rate * age) - later
        self.full_at = now + reset_s

    def wait_for(self, n: float, now: float) -> float:
        """The seconds until ``n`` units are there (0: now), nothing taken."""
        if self.level is None or n <= 0:
            return 0.0
        n = min(n, self.limit)  # a request bigger than the limit still goes once it is full
        lvl = self.now_level(now)
        if lvl >= n:
            return 0.0
        wait = (n - lvl) / self.rate if self.rate > 0 else 60.0
        # By the API's own word the bucket is full at its reset: never wait beyond that, but
        # for what our own requests sent since (our level below zero) take from it then. (The
        # reset alone let every request queued behind a burst go at once when it came.)
        beyond = max(0.0, n - lvl - self.limit)
        return min(wait, max(self.full_at - now, 0.05) + (beyond / self.rate if self.rate > 0 else 0.0))

    def reserve(self, n: float, now: float) -> float:
        """Take ``n`` units; the seconds until they are really there (0: now)."""
        wait = self.wait_for(n, now)
        if self.level is not None and n > 0:
            self.level, self.t = self.now_level(now) - min(n, self.limit), now
        if n > 0:
            while self.sent and self.sent[0][0] < now - 120.0:
                self.sent.popleft()
            self.sent.append((now + wait, min(n, self.limit) if self.limit else n))
        return wait

    def said(self, dim: str) -> str:
        """What the headers said of this limit, for a person: ``0 of 2 requests left``."""
        return f"{max(0.0, self.level or 0.0):.0f} of {self.limit:.0f} {dim} left"


class Gate:
    """See the module docstring. ``batch=True`` once a batch engine owns it."""

    def __init__(self, ceiling: int = 1, *, batch: bool = False, max_wait: float = MAX_WAIT_S,
                 stall_s: float = STALL_S, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.max_wait = max_wait
        self.stall_s = stall_s
        self.configure(ceiling, batch=batch)
        self.paused_until = 0.0
        self.limited_s = 0.0          # wall time some wait (pause or pacing) was in force
        self.limit_hits = 0           # 429/529 answers seen
        self.stopped: str | None = None
        self.listener: Callable[["Gate"], None] | None = None
        self._limited_end = 0.0
        self._buckets: dict[str, _Bucket] = {}
        self._strikes = 0             # limit answers since the last clear one
        self._rounds = 0              # rounds of them (the answers to one burst are one round)
        self._limited_since = 0.0     # when the first of them came
        self._last_drop = -math.inf
        self._credit = 0.0
        self._in_flight = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    def configure(self, ceiling: int, *, batch: bool = True) -> None:
        self.ceiling = max(1, int(ceiling))
        self.batch = batch
        # A batch learns the limit before it fans out: one question alone (the probe) until
        # the first answer's headers say the limit, then as many as it allows (:meth:`_learn`).
        self._learned = bool(getattr(self, "_buckets", None)) or not batch
        self.limit = self.ceiling if self._learned else 1
        self.start_limit: int | None = None  # what the probe's answer allowed (for a person)

    def _learn(self, limits: dict[str, tuple[float, float, float]], age: float) -> None:
        """The first answer of a batch: start at the concurrency its limit allows. The
        requests limit's rate times the answer's time in flight (``age``) is what the limit
        keeps busy; twice that and one more covers the tools' time between two calls and the
        second request of a question (the pacing holds the rate, so more is only queued)."""
        self._learned = True
        b = self._buckets.get("requests")
        if b is not None and b.rate > 0 and "requests" in limits:
            allowed = max(1, math.ceil(b.rate * max(age, 0.01)))
            self.limit = max(1, min(self.ceiling, 2 * allowed + 1))
        else:  # no requests limit said: the pacing of the others (or the blind brake) it is
            self.limit = self.ceiling
        self.start_limit = self.limit
        self._wake()
        self._changed()

    # -- what the rest of agentcli reads -------------------------------------------------
    def pause_left(self) -> float:
        return max(0.0, self.paused_until - self.clock())

    def status(self) -> str:
        """``limited 3.2 s · concurrency 6/16`` for the progress bar and the summary."""
        return f"limited {self.limited_s:.1f} s · concurrency {self.limit}/{self.ceiling}"

    def _changed(self) -> None:
        if self.listener is not None:
            try:
                self.listener(self)
            except Exception:
                pass

    def _mark_limited(self, now: float, until: float) -> None:
        start = max(now, self._limited_end)
        if until > start:
            self.limited_s += until - start
            self._limited_end = until

    def _stop(self, why: str) -> None:
        if self.stopped is None:
            self.stopped = why
            self._wake(all_=True)
            self._changed()

    def clear_stop(self) -> None:
        """Outside a batch, after a stop: the next question starts afresh (what the rate-limit
        headers said is forgotten too: the next answer says it again, if it is still so)."""
        self.stopped = None
        self.paused_until = 0.0
        self._strikes = 0
        self._rounds = 0
        self._buckets.clear()

    def check_stall(self) -> str | None:
        """Stop when limit answers have come for ``stall_s`` with no clear answer between them
        (an idle hour after one 429 is no stall); the reason, or None."""
        now = self.clock()
        if self.stopped is None and self._strikes and (now - self._limited_since > self.stall_s
                                                       or self._rounds >= STALL_ROUNDS):
            self._stop(f"the model API's rate limit has not let an answer through for "
                       f"{now - self._limited_since:.0f} s ({self._strikes} limit answers in "
                       f"{self._rounds} rounds of growing waits)")
        return self.stopped

    # -- the HTTP hooks ------------------------------------------------------------------
    async def before_request(self, body_size: int = 0) -> None:
        """Wait until a request may go: after any pause, then for the buckets to hold its cost.
        Raises :class:`LimitAnswer` instead of waiting beyond the quota bound (a stop), and,
        outside a batch, instead of waiting :data:`NOTICE_S` or more unseen (``paced``)."""
        while self.stopped is None and self.check_stall() is None:
            left = self.pause_left()
            if left <= 0:
                break
            if not self.batch and left >= NOTICE_S:
                raise self._paced(left, f"it asked to wait {_human(left)} after a limit answer")
            await asyncio.sleep(left)
        if self.stopped is not None:
            return  # let it go: its answer (a 429) ends the question without a long wait
        now = self.clock()
        costs = {"requests": 1.0, "input-tokens": body_size / 4, "tokens": body_size / 4,
                 "output-tokens": 1.0}
        waits = {d: b.wait_for(costs[d], now) for d, b in self._buckets.items()}
        dim = max(waits, key=waits.__getitem__, default=None)
        wait = waits[dim] if dim is not None else 0.0
        if dim is not None and wait > self.max_wait:
            said = self._buckets[dim].said(dim)
            self._stop(f"the model API's rate limit does not lift: its headers say the next "
                       f"request may go in {_human(wait)} ({said}; a daily or monthly quota?)")
            why = self.stopped
            if not self.batch:
                self.clear_stop()  # this question stops; the next one asks afresh
            raise LimitAnswer(429, wait=0.0, stopped=why, retry_after=None, batch=self.batch)
        if dim is not None and wait >= NOTICE_S and not self.batch:
            raise self._paced(wait, f"{self._buckets[dim].said(dim)} until its reset")
        for d, b in self._buckets.items():
            b.reserve(costs[d], now)
        if wait > 0:
            self._mark_limited(now, now + wait)
            await asyncio.sleep(wait)

    def _paced(self, wait: float, why: str) -> "LimitAnswer":
        """A wait outside a batch that a person must see: the loop shows it and asks again."""
        now = self.clock()
        self._mark_limited(now, now + wait)
        return LimitAnswer(429, wait=wait, stopped=None, retry_after=None, batch=False,
                           paced=why)

    def after_response(self, status: int, headers: Any, age: float = 0.0) -> None:
        """One answer (its status and headers; ``age``: seconds since its request was sent)."""
        now = self.clock()
        limits = read_limits(headers)
        for dim, (lim, rem, reset) in limits.items():
            self._buckets.setdefault(dim, _Bucket()).update(lim, rem, reset, now, max(0.0, age))
        if not self._learned:
            self._learn(limits, age)
        if status in LIMIT_STATUSES:
            self.limit_hits += 1
            if not self._strikes:
                self._limited_since = now
                self._rounds = 0
            self._strikes += 1
            if now >= self.paused_until:  # not one more answer to the burst the pause met
                self._rounds += 1
            after = retry_after(headers)
            if after is not None and after > self.max_wait:
                self._stop(f"the model API's rate limit does not lift: it asks to wait "
                           f"{_human(after)} (a daily or monthly quota?)")
                return
            after = limited_wait(self._rounds, after)
            until = now + after
            if until > self.paused_until:
                self.paused_until = until
            self._mark_limited(now, until)
            if now - self._last_drop > max(after, 0.5) and self.limit > 1:
                # With the limit's headers the pacing holds the rate: a gentle step down.
                # Without (a blind 429, a 529 overload) fewer in flight is the only brake.
                self.limit = max(1, self.limit - max(1, self.limit // (8 if limits else 4)))
                self._last_drop = now
                self._credit = 0.0
            self._changed()
        elif 200 <= status < 300:
            self._strikes = 0
            if self.limit < self.ceiling and now >= self.paused_until:
                self._credit += 1.0 / self.limit
                if self._credit >= 1.0:
                    self._credit = 0.0
                    self.limit += 1
                    self._wake()
                    self._changed()

    def limit_answer(self, status: int, headers: Any, body: str = "") -> "LimitAnswer":
        """What a 429/529 that :meth:`after_response` has just seen means for the request that
        met it: the exception the HTTP client raises in place of the answer."""
        why = self.check_stall()
        if why is not None and not self.batch:
            self.clear_stop()  # ask / the REPL: this question stops; the next one may try again
        return LimitAnswer(status, wait=0.0 if why else self.pause_left(), stopped=why,
                           retry_after=retry_after(headers), batch=self.batch, body=body)

    # -- adaptive concurrency (the batch's question slots) -------------------------------
    async def acquire(self) -> None:
        while self._in_flight >= self.limit and self.stopped is None:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                raise
        self._in_flight += 1

    def release(self) -> None:
        self._in_flight -= 1
        self._wake()

    def _wake(self, all_: bool = False) -> None:
        free = len(self._waiters) if all_ else max(0, self.limit - self._in_flight)
        while self._waiters and free > 0:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1


def _human(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min" if s >= 60 else f"{s:.0f} s"


class LimitAnswer(Exception):
    """A 429 or 529 the gate has in hand, raised by the HTTP client in place of the answer
    (:func:`providers.transport.http_client`): wait ``wait`` seconds (the shared pause left)
    and ask again, or stop (``stopped`` says why: a quota, or a limit letting nothing through).

    ``retry_after`` is the wait the server asked for (None: it named none), ``batch`` whether a
    batch owns the gate, ``body`` the start of the server's answer (its words for the error).
    ``paced`` (why, for a person) when no request was sent: outside a batch a wait of
    :data:`NOTICE_S` or more is the loop's to show and wait out, not the HTTP client's."""

    def __init__(self, status: int, *, wait: float, stopped: str | None,
                 retry_after: float | None, batch: bool, body: str = "",
                 paced: str | None = None) -> None:
        super().__init__(f"HTTP {status}: " + (f"stop ({stopped})" if stopped else f"wait {wait:.3f} s"))
        self.paced = paced
        self.status = status
        self.wait = wait
        self.stopped = stopped
        self.retry_after = retry_after
        self.batch = batch
        self.body = body


class RateLimited(ModelAPIError):
    """The one-line error for a :class:`LimitAnswer` (``providers.api_errors.api_error`` builds
    it): ``wait`` is the gate's, ``retry_after`` the server's (bounded), ``batch``, ``stopped``
    and ``paced`` as the answer said; ``retryable`` unless stopped. ``providers.retry`` decides."""

    def __init__(self, message: str, answer: LimitAnswer, *, kind: str,
                 retry_after: float | None) -> None:
        super().__init__(message, kind=kind, retryable=answer.stopped is None,
                         retry_after=retry_after)
        self.wait = answer.wait
        self.stopped = answer.stopped
        self.batch = answer.batch
        self.status = answer.status
        self.paced = answer.paced is not None
