"""Rate limits for the fake servers: requests per second, input tokens per minute, a quota.

``FakeServer.limits = Limits(...)`` makes the fake answer as the real APIs do: every answer
carries the rate-limit headers (Anthropic's ``anthropic-ratelimit-*`` or OpenAI-compatible
``x-ratelimit-*``, by the server's flavour), and a request beyond a limit gets 429 with
``retry-after`` (whole seconds, rounded up) and ``retry-after-ms``. Token buckets, as the
Messages API documents: a limit of N per window refills continuously at N / window.

Standard library only; must not import anything else from ``agentcli``.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timezone


class _Bucket:
    def __init__(self, capacity: float, window_s: float):
        self.capacity = float(capacity)
        self.rate = self.capacity / window_s
        self.level = self.capacity
        self.t = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now

    def wait_for(self, n: float) -> float:
        n = min(n, self.capacity)
        return 0.0 if self.level >= n else (n - self.level) / self.rate

    def reset_in(self) -> float:
        return (self.capacity - self.level) / self.rate


class Limits:
    """Limits one fake server enforces (thread-safe: the fake answers in many threads).

    ``requests_per_s``: request rate (bucket of ``burst`` requests, default one second's worth);
    ``input_tokens_per_min``: input tokens (a request's body bytes / 4, as the client estimates);
    ``quota``: after this many admitted requests every request gets 429 with a retry-after of
    ``quota_retry_after`` seconds (a daily quota). ``window_scale`` shrinks the minute of the
    token limit (tests: 0.05 makes it 3 s).
    """

    def __init__(self, *, requests_per_s: float | None = None, burst: float | None = None,
                 input_tokens_per_min: float | None = None, window_scale: float = 1.0,
                 quota: int | None = None, quota_retry_after: float = 3600.0):
        self.req = _Bucket(burst or max(1.0, requests_per_s), (burst or max(1.0, requests_per_s))
                           / requests_per_s) if requests_per_s else None
        self.tok = _Bucket(input_tokens_per_min, 60.0 * window_scale) if input_tokens_per_min else None
        self.quota = quota
        self.quota_retry_after = quota_retry_after
        self.admitted = 0
        self.rejected = 0
        self.admitted_tokens = 0
        self._lock = threading.Lock()

    def check(self, body_size: int, flavour: str) -> tuple[bool, dict[str, str]]:
        """(admitted, headers for the answer) for a request of ``body_size`` bytes."""
        tokens = body_size / 4
        with self._lock:
            now = time.monotonic()
            for b in (self.req, self.tok):
                if b is not None:
                    b.refill(now)
            if self.quota is not None and self.admitted >= self.quota:
                wait = self.quota_retry_after
            else:
                wait = max(self.req.wait_for(1) if self.req else 0.0,
                           self.tok.wait_for(tokens) if self.tok else 0.0)
            ok = wait <= 0
            if ok:
                self.admitted += 1
                self.admitted_tokens += int(tokens)
                if self.req:
                    self.req.level -= 1
                if self.tok:
                    self.tok.level -= min(tokens, self.tok.capacity)
            else:
                self.rejected += 1
            headers = self._headers(flavour)
        if not ok:
            headers["retry-after"] = str(max(1, math.ceil(wait)))
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        return ok, headers

    def _headers(self, flavour: str) -> dict[str, str]:
        h: dict[str, str] = {}
        for dim, b in (("requests", self.req), ("input-tokens", self.tok)):
            if b is None:
                continue
            lim, rem, reset = int(b.capacity), max(0, int(b.level)), b.reset_in()
            if flavour == "openai":
                d = "tokens" if dim == "input-tokens" else dim
                h[f"x-ratelimit-limit-{d}"] = str(lim)
                h[f"x-ratelimit-remaining-{d}"] = str(rem)
                h[f"x-ratelimit-reset-{d}"] = f"{reset * 1000:.0f}ms"
            else:
                at = datetime.fromtimestamp(time.time() + reset, timezone.utc)
                h[f"anthropic-ratelimit-{dim}-limit"] = str(lim)
                h[f"anthropic-ratelimit-{dim}-remaining"] = str(rem)
                h[f"anthropic-ratelimit-{dim}-reset"] = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return h
