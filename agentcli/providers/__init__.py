"""Model providers behind one small protocol (``base.Provider``).

A provider owns its wire format: it builds the messages that go into the history and turns one
model response into a ``ModelTurn``. ``anthropic`` and ``openai`` are the only modules that
import their SDK (an import-linter contract in pyproject.toml keeps the SDKs and httpx2 inside
this package), and each is imported only when chosen (``agentcli --help`` loads none of them).

    respond(history, stream=...)  async-yields TextDelta events, then exactly one ModelTurn,
                                  or raises ModelAPIError (retryable or not); anything else
                                  is a bug of ours, never retried
    await check_api()             the models list answers (doctor --api)
    model_settings                max_tokens and timeout of every request (base.ModelSettings)
    gate                          the rate-limit gate (ratelimit.Gate), or None

Beside them: ``transport`` (the HTTP client the SDKs get: the gate's hooks, the bounds, what a
broken connection raises), ``ratelimit`` (the gate), ``retry`` (the loop's retry policy),
``api_errors`` (an SDK error as one line), ``bounds``, the wire formats (``messages_format``,
``openai_wire``), ``offline`` (the rule-based stand-in) and ``pricing``.

A ``ModelTurn`` whose ``stop_reason`` is None is incomplete: the loop never runs its tool calls.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from typing import Any, Iterator

from .base import ModelSettings, ModelTurn, Provider, ToolCall
from .offline import OfflineProvider

__all__ = ["ModelSettings", "ModelTurn", "Provider", "ToolCall", "make_provider"]


@contextlib.contextmanager
def _sdk_import(sdk: str) -> Iterator[None]:
    """Import the model SDK ``sdk`` with the cycle collector paused, then freeze what it built.

    ``import anthropic`` creates ~10^6 long-lived objects (3,500 modules, pydantic models), and
    the collector would walk them over and over while they are being built. Frozen afterwards,
    later collections (every turn of a REPL, every question of a batch) and the interpreter's
    exit never scan them again: a one-shot ``ask`` went from 1.19-1.36x the time of a bare
    ``import anthropic`` to 0.9-1.0x here. Done once per process, on the SDK's first import (a
    later freeze would also pin whatever else is alive by then).
    """
    if sdk in sys.modules:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def make_provider(settings: Any, registry: Any, system_prompt: str) -> Provider:
    """Build the provider ``settings`` (a ``config.Settings``) names, with its model and
    ``ModelSettings`` (``--max-tokens``, ``--request-timeout``), importing its SDK only now."""
    model_settings = ModelSettings.of(settings)
    if settings.provider == "anthropic":
        with _sdk_import("anthropic"):
            from .anthropic import AnthropicProvider

        return AnthropicProvider(settings.model, model_settings, registry, system_prompt)
    if settings.provider == "openai":
        with _sdk_import("openai"):
            from .openai import OpenAIProvider

        return OpenAIProvider(settings.model, model_settings, registry, system_prompt)
    return OfflineProvider(settings.model, model_settings)
