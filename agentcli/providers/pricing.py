"""Estimated cost of a question from its token usage: a small price table, overridable.

Prices are US dollars per million tokens. Override or add models in ``agentcli.toml``::

    [prices."claude-sonnet-5-5"]
    input = 3.0
    output = 15.0
    cache_read = 0.3
    cache_write = 3.75

A model's table may set only some of its prices: the others are the built-in ones of that model
(0 for a model of its own). ``agentcli.toml`` checks the tables (``config.PRICE_KEYS``, numbers
of at least 0; an unknown key is warned about). An unknown model has no estimate (``None``),
never a made-up number.
"""

from __future__ import annotations

import math
from typing import Any

from ..config import PRICE_KEYS

PRICES: dict[str, dict[str, float]] = {
    "claude-sonnet-5-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_read": 0.10, "cache_write": 1.25},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_read": 0.50, "cache_write": 6.25},
    "offline-rules-v1": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0},
}

# The Message Batches API bills every token at half the live price (``batch --via batches``).
BATCH_DISCOUNT = 0.5


def price_for(model: str | None, overrides: dict[str, Any] | None = None) -> dict[str, float] | None:
    if not model:
        return None
    override = (overrides or {}).get(model)
    if not isinstance(override, dict):
        override = None
    if override is None and model not in PRICES:
        return None
    p = {**PRICES.get(model, {}), **(override or {})}  # a price not set is the built-in one
    try:
        out = {k: float(p.get(k, 0.0)) for k in PRICE_KEYS}
    except (TypeError, ValueError, OverflowError):
        return None
    # nan/inf would print as NaN/Infinity: not JSON. An unusable price is no estimate.
    return out if all(0.0 <= v < float("inf") for v in out.values()) else None


def estimate_cost(model: str | None, usage: dict[str, int], overrides: dict[str, Any] | None = None) -> float | None:
    p = price_for(model, overrides)
    if p is None:
        return None
    cost = (usage.get("input_tokens", 0) * p["input"] + usage.get("output_tokens", 0) * p["output"]
            + usage.get("cache_read_input_tokens", 0) * p["cache_read"]
            + usage.get("cache_creation_input_tokens", 0) * p["cache_write"]) / 1_000_000
    # a huge price (1e308 in agentcli.toml) overflows to inf: no estimate, not "Infinity"
    return round(cost, 6) if math.isfinite(cost) else None
