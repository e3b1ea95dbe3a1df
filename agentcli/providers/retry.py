"""Retry policy for one model call: which failures are asked again, after how long, and when the
question gives up.

The SDKs retry nothing (``max_retries=0``): after each failed attempt ``Conversation.ask`` asks
:meth:`Attempts.failed` and either shows the retry as a ``Retry`` event (its reason and wait)
and waits, or ends the question with the error (after rolling back what it added).

- **What is retried**: what the provider marks ``retryable`` — 429, 529 and other overloads,
  5xx, timeouts and connection failures before the response, an error event inside a 200
  stream, an incomplete or broken response — at most ``--retries`` times. A 401, 403, 404 or
  400 ends the question at once, and so does a server's ``x-should-retry: false``.
- **The wait**: the server's ``retry-after`` (bounded by ``api_errors.MAX_RETRY_AFTER``), else
  :data:`BASE_DELAY` doubling per attempt with ±25 % jitter (so a batch's failures do not all
  come back at the same instant).
- **Rate limits** (:class:`~agentcli.providers.ratelimit.RateLimited`, a 429/529 the gate took
  in hand): when the gate stops (a quota's retry-after beyond its bound, or a limit that lets
  nothing through), the question ends with that reason. In a batch the wait is the gate's
  shared pause and the answer costs no ``--retries`` (the batch waits its turn; the gate's
  stall bound stops it otherwise), up to :data:`MAX_LIMITED` per model call. Outside a batch
  it counts as any retry; a server asking a second or more is waited out at the gate's pause,
  a shorter or unnamed wait is the ordinary one above.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..errors import ModelAPIError
from .ratelimit import RateLimited

BASE_DELAY = 0.5  # seconds before the first retry when the server named no wait
MAX_LIMITED = 100  # limit answers one model call may absorb in a batch (the stall bound aside)


@dataclass(frozen=True)
class Verdict:
    """After a failed attempt: ``wait`` seconds, then the next attempt; or (``wait`` None) the
    question ends with ``message``."""

    wait: float | None
    message: str  # the Retry event's reason, or the error line ("... (tried 3 times)")
    kind: str


class Attempts:
    """The attempts at one model call; ``number`` is the attempt being made (from 1)."""

    def __init__(self, retries: int, base_delay: float = BASE_DELAY) -> None:
        self.retries = retries
        self.base_delay = base_delay
        self.number = 1
        self.absorbed = 0

    def failed(self, e: ModelAPIError) -> Verdict:
        """Attempt ``number`` failed with ``e``: retry (``number`` is then the next attempt's,
        unchanged when a batch absorbed a limit answer) or give up."""
        n = self.number
        limited = isinstance(e, RateLimited)
        if limited and e.stopped is None and e.batch and self.absorbed < MAX_LIMITED:
            self.absorbed += 1
            return Verdict(round(e.wait, 3), e.message, e.kind)
        if not e.retryable or n > self.retries:
            return Verdict(None, e.message if n == 1 else f"{e.message} (tried {n} times)", e.kind)
        self.number += 1
        if limited and (e.batch or (e.retry_after or 0.0) >= 1.0):
            wait = e.wait
        else:
            wait = e.retry_after or self.base_delay * 2 ** (n - 1) * (0.75 + random.random() / 2)
        return Verdict(round(wait, 3), e.message, e.kind)
