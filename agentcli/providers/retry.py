"""Retry policy for one model call: which failures are asked again, after how long, and when the
question gives up.

The SDKs retry nothing (``max_retries=0``): after each failed attempt ``Conversation.ask`` asks
:meth:`Attempts.failed` and either shows the retry as a ``Retry`` event (its reason and wait)
and waits, or ends the question with the error (after rolling back what it added).

- **What is retried**: what the provider marks ``retryable`` — 429, 529 and other overloads,
  5xx, timeouts and connection failures before the response, an error event inside a 200
  stream, an incomplete or broken response — at most ``--retries`` times. A 401, 403, 404 or
  400 ends the question at once, and so does a server's ``x-should-retry: false``.
- **The wait**: the server's ``retry-after`` (bounded by ``api_errors.MAX_RETRY_AFTER``, and
  never under :data:`MIN_WAIT`); without one, or with ``retry-after: 0``, :data:`BASE_DELAY`
  doubling per attempt with ±25 % jitter (so a batch's failures do not all come back at the
  same instant), at most :data:`MAX_DELAY`.
- **How many**: ``--retries`` is at most :data:`~agentcli.config.MAX_RETRIES`
  (``config.SETTINGS``): with our own backoff a model call gives up within
  0.5 + 1 + 2 + 4 + 8 + 16 + 30 + 30 + 30 + 30 s, under three minutes (a server's retry-after,
  60 s at most each, can make it longer).
- **Rate limits** (:class:`~agentcli.providers.ratelimit.RateLimited`, a 429/529 the gate took
  in hand): the wait is the gate's shared pause (the server's word, never less than the gate's
  growing backoff). When the gate stops (a quota beyond its bound, or a limit that lets
  nothing through), the question ends with that reason. In a batch the answer costs no
  ``--retries`` (the batch waits its turn; the gate's stall bound stops it otherwise), up to
  :data:`MAX_LIMITED` per model call. Outside a batch it counts as any retry, except a
  ``paced`` wait (no request was sent: the gate asks the loop to show a wait of a second or
  more as a countdown), which costs none, up to :data:`MAX_PACED` per model call.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..config import MAX_RETRIES
from ..errors import ModelAPIError
from .ratelimit import RateLimited

BASE_DELAY = 0.5  # seconds before the first retry
MAX_DELAY = 30.0  # the longest backoff of our own between two attempts
MIN_WAIT = 0.1  # the shortest wait before a retry, whatever a server's retry-after says
MAX_LIMITED = 100  # limit answers one model call may absorb in a batch (the stall bound aside)
MAX_PACED = 10  # visible rate-limit waits one model call may absorb outside a batch


@dataclass(frozen=True)
class Verdict:
    """After a failed attempt: ``wait`` seconds, then the next attempt; or (``wait`` None) the
    question ends with ``message``."""

    wait: float | None
    message: str  # the Retry event's reason, or the error line ("... (tried 3 times)")
    kind: str
    paced: bool = False  # a wait for the rate limit before sending, not a failed attempt


class Attempts:
    """The attempts at one model call; ``number`` is the attempt being made (from 1)."""

    def __init__(self, retries: int, base_delay: float = BASE_DELAY) -> None:
        self.retries = min(retries, MAX_RETRIES)
        self.base_delay = base_delay
        self.number = 1
        self.absorbed = 0
        self.paced = 0

    def backoff(self, n: int) -> float:
        """Our own wait before attempt ``n + 1``: doubling, jittered, at most :data:`MAX_DELAY`."""
        return min(MAX_DELAY, self.base_delay * 2 ** min(n - 1, 16) * (0.75 + random.random() / 2))

    def failed(self, e: ModelAPIError) -> Verdict:
        """Attempt ``number`` failed with ``e``: retry (``number`` is then the next attempt's,
        unchanged when a batch absorbed a limit answer) or give up."""
        n = self.number
        limited = isinstance(e, RateLimited)
        if limited and e.stopped is None and e.paced and self.paced < MAX_PACED:
            self.paced += 1
            return Verdict(round(e.wait, 3), e.message, e.kind, paced=True)
        if limited and e.stopped is None and e.batch and self.absorbed < MAX_LIMITED:
            self.absorbed += 1
            return Verdict(round(e.wait, 3), e.message, e.kind)
        if not e.retryable or n > self.retries:
            return Verdict(None, e.message if n == 1 else f"{e.message} (tried {n} times)", e.kind)
        self.number += 1
        if limited:
            wait = e.wait  # the gate's shared pause: the server's word, never below its backoff
        elif e.retry_after:  # the server's word, but 1 ms is no wait
            wait = max(e.retry_after, MIN_WAIT)
        else:  # none, or retry-after: 0
            wait = self.backoff(n)
        return Verdict(round(wait, 3), e.message, e.kind)
