"""Broken, slow and hostile responses, for both providers, through the real SDKs against the
fake servers on 127.0.0.1: nothing of a broken response runs, every wait is bounded, and every
failure is one line with exit 4 (never "internal error")."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.events import Retry, ToolResult
from agentcli.providers import bounds
from agentcli.testing import fake_anthropic as fa
from agentcli.testing import fake_openai as fo

# A long file (streams and responses cut at their timeouts):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long


def ask_once(provider: str, question: str, **overrides):
    async def go():
        app = App.open(resolve(provider=provider, **overrides))
        try:
            conv = app.conversation()
            conv.retry_base_delay = 0.0
            events: list = []
            builder = await app.run(conv, question, [events.append])
            return builder, events
        finally:
            await app.aclose()

    return asyncio.run(go())


def drafts(drafts_dir) -> list:
    return sorted(p for p in drafts_dir.glob("*.md")) if drafts_dir.exists() else []


def sse(events: list[tuple[str, dict]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)


def one_line_api_failure(b) -> None:
    assert b.exit_code == 4 and b.result()["status"] == "error"
    msg = b.error.message
    assert "\n" not in msg and "internal error" not in msg and len(msg) < 400


def nested(depth: int) -> dict:
    v: dict = {"order_code": "GH56JK78MN"}
    for _ in range(depth):
        v = {"x": v}
    return v


# --------------------------------------------------------------------------- anthropic: tool inputs

def _unclosed_tool_stream(partial: str, *, close: bool) -> bytes:
    """message_start, a draft_reply tool_use whose input is ``partial``, then stop_reason
    tool_use and message_stop, with or without its content_block_stop."""
    ok = fa.message(fa.tool_use_block("draft_reply", {"text": "x"}, id="toolu_CUT"))
    evs = [e for e in fa.stream_events(ok) if e[0] != "content_block_delta"]
    out = []
    for name, data in evs:
        if name == "content_block_stop":
            out.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": partial}}))
            if not close:
                continue
        out.append((name, data))
    return sse(out)


@pytest.mark.parametrize("partial", [
    '{"text": "Your refund is on its way", "order_code": "GH5',
    '{"text": "Your refund is on its way", "order_code": "GH56JK78MN"}',
], ids=["cut_unclosed", "complete_json_unclosed"])
def test_an_unfinished_streamed_tool_input_never_runs(anthropic_env, fake_anthropic, drafts_dir,
                                                      partial):
    # The block never closed (no content_block_stop): the stream is broken, whatever followed.
    fake_anthropic.queue(fa.raw(_unclosed_tool_stream(partial, close=False), "text/event-stream"),
                         fa.text("Recovered."))
    b, events = ask_once("anthropic", "Reply to the customer about GH56JK78MN")
    assert drafts(drafts_dir) == [] and b.result()["tool_calls"] == []
    assert not any(isinstance(e, ToolResult) for e in events)
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert "tool call" in retry.reason and "broken" in retry.reason
    assert b.exit_code == 0 and b.result()["answer"] == "Recovered."
    assert len(fake_anthropic.requests) == 2


BAD_INPUTS = ['{"order_code":', '{"order_code": }', '{"order_code": "GH56JK78MN", "x": NaN}',
              '{"order_code": "GH56JK78MN"} {"order_code": "again"}', '["GH56JK78MN"]',
              '{"order_code": "GH56JK78MN",}', 'order GH56JK78MN']


def _bad_input_reply(provider: str, stream: bool, raw_input: str):
    """A finished, well-formed response whose one tool call's input is ``raw_input``."""
    if provider == "openai":
        return fo.completion(fo.tool_call("get_order_status", raw_input, id="call_BAD"))
    if stream:
        ok = fa.message(fa.tool_use_block("get_order_status", {}, id="toolu_BAD"))
        out = []
        for name, data in fa.stream_events(ok):
            if name == "content_block_stop":
                out.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": raw_input}}))
            if name != "content_block_delta":
                out.append((name, data))
        return fa.raw(sse(out), "text/event-stream")
    # a whole body cannot hold bad JSON inside JSON: its analogue is an input that is a string
    body = fa.message(fa.tool_use_block("get_order_status", {}, id="toolu_BAD")).message
    body["content"][0]["input"] = raw_input
    return fa.raw(body)


@pytest.mark.parametrize("raw_input", BAD_INPUTS, ids=range(len(BAD_INPUTS)))
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no_stream"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_finished_call_with_bad_input_is_a_result_the_model_can_correct(
        provider, stream, raw_input, cli_env, monkeypatch, fake_anthropic, fake_openai,
        drafts_dir):
    # Issue 24 item 10: the model's mistake, not an API failure, and the same in both modes.
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake = fake_anthropic
        fake.queue(_bad_input_reply(provider, stream, raw_input), fa.text("Corrected."))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake = fake_openai
        fake.queue(_bad_input_reply(provider, stream, raw_input), fo.text("Corrected."))
    b, events = ask_once(provider, "Where is GH56JK78MN?", model="m", retries=0, stream=stream)
    assert not any(isinstance(e, Retry) for e in events)  # not asked again as a broken response
    (res,) = [e for e in events if isinstance(e, ToolResult)]
    assert res.is_error and res.outcome == "invalid_input" and "nothing was run" in res.result
    assert "JSON" in res.result and "\n" not in res.result
    assert b.exit_code == 0 and b.result()["answer"] == "Corrected."
    assert len(fake.requests) == 2  # the model heard of its mistake in the next request
    second = fake.requests[1]
    if provider == "anthropic":
        (tr,) = fa.tool_results(second)
        assert tr["is_error"] and tr["tool_use_id"] == "toolu_BAD"
        (call,) = [c for c in second["messages"][-2]["content"] if c["type"] == "tool_use"]
        assert call["input"] == {}  # a valid input in the history, whatever the model wrote
    else:
        tool_msg = second["messages"][-1]
        assert tool_msg["role"] == "tool" and tool_msg["content"].startswith("ERROR: ")
        assert second["messages"][-2]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_a_model_that_repeats_the_mistake_ends_at_the_turn_limit_not_in_exit_4(
        anthropic_env, fake_anthropic, cli):
    fake_anthropic.handler = lambda req: _bad_input_reply("anthropic", True, '{"order_code":')
    p = cli(["ask", "--json", "--max-turns", "3", "Where is GH56JK78MN?"], anthropic_env)
    rec = json.loads(p.out)
    assert p.returncode == 1 and rec["status"] == "incomplete" and rec["stop_reason"] == "turn_limit"
    assert [c["is_error"] for c in rec["tool_calls"]] == [True] * 3
    assert "tried" not in p.err and len(fake_anthropic.requests) == 3


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_tool_calls_past_the_bound_are_answered_not_run(provider, cli_env, monkeypatch, drafts_dir,
                                                       fake_anthropic, fake_openai):
    n = bounds.MAX_TOOL_CALLS + 4
    texts = [f"Draft number {i} for GH56JK78MN." for i in range(n)]
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake_anthropic.queue(fa.message(*(fa.tool_use_block("draft_reply", {"text": t}) for t in texts)),
                             fa.text("done"))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake_openai.queue(fo.completion(*(fo.tool_call("draft_reply", {"text": t}) for t in texts)),
                          fo.text("done"))
    b, events = ask_once(provider, "Draft replies", model="m")
    calls = b.result()["tool_calls"]
    assert len(calls) == n
    assert [c["is_error"] for c in calls] == [False] * bounds.MAX_TOOL_CALLS + [True] * 4
    assert all(c["outcome"] == "invalid_input" and "at most" in c["result"]
               for c in calls[bounds.MAX_TOOL_CALLS:])
    assert len(drafts(drafts_dir)) == bounds.MAX_TOOL_CALLS
    second = (fake_anthropic if provider == "anthropic" else fake_openai).requests[1]
    answered = (fa.tool_results(second) if provider == "anthropic" else fo.tool_messages(second))
    assert len(answered) == n  # every call paired with a result


# --------------------------------------------------------------------------- bounds on waiting

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no_stream"])
def test_a_trickling_response_is_bounded_by_the_request_timeout(provider, stream, cli_env,
                                                                monkeypatch, fake_anthropic,
                                                                fake_openai):
    """One byte every 0.05 s never trips a per-read timeout of 0.3 s; no event completes in it."""
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake, slow, ok = fake_anthropic, fa.text("This answer arrives one byte at a time."), fa.text("ok")
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake, slow, ok = fake_openai, fo.text("This answer arrives one byte at a time."), fo.text("ok")
    fake.queue(dataclasses.replace(slow, trickle=0.05), ok)
    b, events = ask_once(provider, "hello?", model="m", request_timeout=0.3, retries=1, stream=stream)
    assert b.exit_code == 0 and b.result()["answer"] == "ok"
    assert len(fake.requests) == 2
    if stream:
        (retry,) = [e for e in events if isinstance(e, Retry)]
        assert "--request-timeout" in retry.reason


FOREVER_CASES = [("anthropic", "ping"), ("anthropic", "empty"), ("anthropic", "unknown"),
                 ("openai", "keepalive"), ("openai", "empty"), ("openai", "no_choices")]


@pytest.mark.parametrize("provider,what", FOREVER_CASES)
def test_a_stream_of_pings_or_empty_events_is_no_progress(provider, what, cli_env, monkeypatch,
                                                          fake_anthropic, fake_openai):
    # Issue 24 item 4: each ping (or empty delta) used to restart the --request-timeout wait,
    # so a server sending only those held a question for the 600 s overall bound per attempt.
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake, mod = fake_anthropic, fa
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake, mod = fake_openai, fo
    # a ping every 0.05 s: eight of them within the 0.4 s timeout, each of which used to restart it
    fake.queue(mod.stream_forever(what, every=0.05), mod.text("ok"))
    b, events = ask_once(provider, "hello?", model="m", request_timeout=0.4, retries=1)
    assert b.exit_code == 0 and b.result()["answer"] == "ok"
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert "nothing new arrived for 0.4 s" in retry.reason and "--request-timeout" in retry.reason
    assert len(fake.requests) == 2


@pytest.mark.parametrize("max_tokens", [20, 300])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_text_without_end_is_broken_past_what_max_tokens_allows(provider, max_tokens, cli_env,
                                                                monkeypatch, fake_anthropic,
                                                                fake_openai):
    # A flood of text deltas as fast as the client reads: cut once it passes --max-tokens, not
    # after 16 MiB and minutes of CPU.
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake, mod = fake_anthropic, fa
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake, mod = fake_openai, fo
    fake.queue(mod.stream_forever("text", every=0), mod.text("ok"))
    b, events = ask_once(provider, "hello?", model="m", max_tokens=max_tokens, retries=1)
    assert b.exit_code == 0 and b.result()["answer"] == "ok"
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert f"past what --max-tokens {max_tokens} allows" in retry.reason
    assert "broken response" in retry.reason


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_whole_body_with_more_text_than_max_tokens_allows_is_broken(provider, cli_env,
                                                                      monkeypatch, fake_anthropic,
                                                                      fake_openai):
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake, mod = fake_anthropic, fa
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake, mod = fake_openai, fo
    fake.queue(mod.text("word " * 400), mod.text("ok"))  # 2000 characters for 10 tokens
    b, events = ask_once(provider, "hello?", model="m", max_tokens=10, retries=1, stream=False)
    assert b.exit_code == 0 and b.result()["answer"] == "ok"
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert "more text than --max-tokens 10 allows" in retry.reason


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_stream_that_never_ends_is_cut_at_the_overall_bound(provider, cli_env, monkeypatch,
                                                              fake_anthropic, fake_openai):
    monkeypatch.setattr(bounds, "MAX_RESPONSE_SECONDS", 0.4)
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        start = [e for e in fa.stream_events(fa.text("hello")) if e[0] != "message_delta"
                 and e[0] != "message_stop" and e[0] != "content_block_stop"]
        again = sse([("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": "la "}})])
        fake = fake_anthropic
        fake.queue(fa.raw(sse(start), "text/event-stream", endless=again), fa.text("ok"))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        again = b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", ' \
                b'"choices": [{"index": 0, "delta": {"content": "la "}, "finish_reason": null}]}\n\n'
        fake = fake_openai
        fake.queue(fo.raw(b"", "text/event-stream", endless=again), fo.text("ok"))
    b, events = ask_once(provider, "hello?", model="m", request_timeout=5, retries=1)
    assert b.exit_code == 0 and b.result()["answer"] == "ok"
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert "more than 0.4 s" in retry.reason


def test_a_response_over_the_size_bound_is_broken(anthropic_env, fake_anthropic, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_RESPONSE_BYTES", 4096)
    fake_anthropic.queue(*(fa.text("x" * 10_000) for _ in range(2)))
    b, _ = ask_once("anthropic", "hello?", stream=False)
    one_line_api_failure(b)
    assert "larger than" in b.error.message


# --------------------------------------------------------------------------- not a Message

def _anthropic_broken(kind: str, stream: bool) -> fa.Reply:
    good = fa.message(fa.text_block("hello"), fa.tool_use_block("get_order_status",
                                                                {"order_code": "GH56JK78MN"}))
    if kind == "html":
        return fa.raw("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
    if kind == "list":
        return fa.raw([{"type": "message"}])
    if not stream:
        body = json.loads(json.dumps(good.message))
        if kind == "content_null":
            body["content"] = None
        elif kind == "text_null":
            body["content"][0]["text"] = None
        elif kind == "usage_many":
            body["usage"]["output_tokens"] = "many"
        elif kind == "tool_input_deep":
            body["content"][1]["input"] = nested(300)
        data = json.dumps(body)
        if kind == "usage_1e400":
            data = data.replace('"output_tokens": ', '"output_tokens": 1e400, "x": ', 1)
        return fa.raw(data)
    evs = json.loads(json.dumps(fa.stream_events(good)))
    for name, d in evs:
        if kind == "content_null" and name == "message_start":
            d["message"]["content"] = None
        if kind == "text_null" and name == "content_block_delta" and d["index"] == 0:
            d["delta"]["text"] = None
        if kind == "usage_many" and name == "message_delta":
            d["usage"]["output_tokens"] = "many"
        if kind == "tool_input_deep" and name == "content_block_delta" and d["index"] == 1:
            d["delta"]["partial_json"] = ""
    data = sse([tuple(e) for e in evs])
    if kind == "tool_input_deep":
        deep = json.dumps(nested(300))
        data = data.replace(b'"partial_json": ""', b'"partial_json": ' + json.dumps(deep).encode(), 1)
    if kind == "usage_1e400":
        data = data.replace(b'"usage": {"output_tokens": ', b'"usage": {"output_tokens": 1e400, "x": ')
    return fa.raw(data, "text/event-stream")


def _openai_broken(kind: str, stream: bool) -> fo.Reply:
    if kind == "html":
        return fo.raw("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
    if kind == "list":
        return fo.raw([{"object": "chat.completion"}])
    msg = {"role": "assistant", "content": "hello", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_order_status", "arguments": '{"order_code": "GH56JK78MN"}'}}]}
    usage: dict = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    if kind == "content_null":  # no choices at all
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": None}
    else:
        if kind == "text_null":
            msg["content"] = {"text": None}
        if kind == "usage_many":
            usage["completion_tokens"] = "many"
        if kind == "tool_input_deep":
            msg["tool_calls"][0]["function"]["arguments"] = json.dumps(nested(300))
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "usage": usage,
                "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}]}
    if not stream:
        data = json.dumps(body)
    else:
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        if body["choices"] is None:
            chunks = [{**chunk, "choices": None}]
        else:
            delta = {k: v for k, v in msg.items()}
            delta["tool_calls"] = [{**tc, "index": 0} for tc in msg["tool_calls"]]
            chunks = [{**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                      {**chunk, "choices": [], "usage": usage}]
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    if kind == "usage_1e400":
        data = data.replace('"completion_tokens": 3', '"completion_tokens": 1e400')
    return fo.raw(data, "text/event-stream" if stream else "application/json")


KINDS = ["html", "list", "content_null", "text_null", "usage_many", "usage_1e400", "tool_input_deep"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no_stream"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_200_that_is_not_a_message_is_a_failed_api_call(provider, stream, kind, cli_env,
                                                          monkeypatch, fake_anthropic, fake_openai,
                                                          drafts_dir):
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake_anthropic.queue(*(_anthropic_broken(kind, stream) for _ in range(2)))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake_openai.queue(*(_openai_broken(kind, stream) for _ in range(3)))
    b, events = ask_once(provider, "Where is GH56JK78MN?", model="m", retries=1, stream=stream)
    one_line_api_failure(b)
    assert not any(isinstance(e, ToolResult) for e in events)


# --------------------------------------------------------------------------- error lines

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("status", [500, 400, 403])
def test_error_lines_carry_the_servers_own_words_cleaned(provider, status, cli_env, monkeypatch,
                                                         fake_anthropic, fake_openai):
    words = ("messages.3.content: \x1b[2Jexpected a string\u2028got null\u0085 (field "
             "'content')" + " padding" * 100)
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake_anthropic.queue(*(fa.error(status, words) for _ in range(2)))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake_openai.queue(*(fo.error(status, words) for _ in range(2)))
    b, _ = ask_once(provider, "hello?", model="m", retries=1)
    one_line_api_failure(b)
    msg = b.error.message
    assert "expected a string got null (field 'content')" in msg
    assert not any(c in msg for c in "\x1b\u2028\u0085") and len(msg) < 320


# --------------------------------------------------------------------------- a bug of ours

def _registry_json_cannot_carry():
    """The real tools, one schema holding a value JSON cannot carry: a bug of ours the SDK meets
    when it encodes the request inside ``respond``."""
    from agentcli.tools import Registry, default_registry

    reg = Registry()
    for t in default_registry():
        if t.name == "get_order_status":
            t = dataclasses.replace(t, input_schema={**t.input_schema, "examples": object()})
        reg.register(t)
    return reg


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no_stream"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_bug_of_ours_inside_respond_is_an_internal_error_not_a_retry(provider, stream, cli_env,
                                                                       monkeypatch, fake_anthropic,
                                                                       fake_openai):
    from agentcli.batch.engine import BatchRunner, Item

    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    fake = fake_anthropic if provider == "anthropic" else fake_openai

    async def go():
        app = App.open(resolve(provider=provider, model="m", retries=2, stream=stream),
                       registry=_registry_json_cannot_carry())
        try:
            conv = app.conversation()
            events: list = []
            with pytest.raises(TypeError, match="not JSON serializable"):
                await app.run(conv, "Where is GH56JK78MN?", [events.append])
            out: list[str] = []
            await BatchRunner(app, concurrency=1, emit=out.append).run([Item(1, 1, "Where is GH56JK78MN?")])
            return conv, events, out
        finally:
            await app.aclose()

    conv, events, out = asyncio.run(go())
    assert not any(isinstance(e, Retry) for e in events)  # not "broken response, retrying"
    assert conv.history == []  # the question that got no answer is rolled back
    assert fake.requests == []  # nothing was sent
    (rec,) = map(json.loads, out)
    assert rec["status"] == "error" and rec["error"].startswith("internal error (TypeError)")


def test_a_connection_error_around_our_own_exception_is_that_exception():
    # anthropic wraps whatever the HTTP client raises in APIConnectionError: a transport fault
    # or the rate-limit gate's answer is the SDK's business, anything else is a bug of ours
    import anthropic
    import httpx2

    from agentcli.providers.ratelimit import LimitAnswer
    from agentcli.providers.transport import own_bug

    def wrapped(cause: BaseException) -> anthropic.APIConnectionError:
        try:
            try:
                raise cause
            except BaseException as c:
                raise anthropic.APIConnectionError(request=httpx2.Request("POST", "http://x")) from c
        except anthropic.APIConnectionError as e:
            return e

    bug = KeyError("ours")
    assert own_bug(wrapped(bug)) is bug
    assert own_bug(wrapped(httpx2.ReadError("dropped"))) is None
    assert own_bug(wrapped(bounds.ResponseBoundExceeded("too big"))) is None
    assert own_bug(wrapped(LimitAnswer(429, wait=1.0, stopped=None, retry_after=1.0, batch=False))) is None


# --------------------------------------------------------------------------- transport words

def _body_of(provider: str) -> bytes:
    if provider == "anthropic":
        return json.dumps(fa.text("hello").message).encode()
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "hello"}}]}).encode()


TRANSPORT_FAULTS = {
    "redirect_307": (lambda mod, body, other: mod.raw(b"", status=307, headers={
        "location": other + "/v1/messages?token=abc"}),
        ("answered with a redirect (307 to http://127.0.0.1:", "does not follow redirects")),
    "redirect_301": (lambda mod, body, other: mod.raw(b"", status=301, headers={"location": "/v2"}),
                     ("answered with a redirect (301 to /v2)",)),
    "gzip_not_gzip": (lambda mod, body, other: mod.raw(body, headers={"content-encoding": "gzip"}),
                      ("does not match its content-encoding",)),
    "deflate_not_deflate": (lambda mod, body, other: mod.raw(body, headers={
        "content-encoding": "deflate"}), ("does not match its content-encoding",)),
    "shorter_than_content_length": (lambda mod, body, other: mod.raw(
        body, content_length=len(body) + 100),
        ("closed the connection before the whole response arrived", "expected")),
}


@pytest.mark.parametrize("fault", list(TRANSPORT_FAULTS))
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_transport_faults_are_said_as_what_the_server_did(provider, fault, cli_env, monkeypatch,
                                                          fake_anthropic, fake_openai):
    make, words = TRANSPORT_FAULTS[fault]
    mod = fa if provider == "anthropic" else fo
    with (fa.FakeAnthropic() if provider == "anthropic" else fo.FakeOpenAI()) as other:
        other.handler = lambda req: mod.text("answered by the redirect's target")
        if provider == "anthropic":
            monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
            fake = fake_anthropic
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
            fake = fake_openai
        fake.queue(*[make(mod, _body_of(provider), other.url)] * 2)
        b, events = ask_once(provider, "hello?", model="m", retries=0, stream=False)
        assert other.requests == []  # a redirect is not followed: nothing went elsewhere
    one_line_api_failure(b)
    msg = b.error.message
    assert "cannot reach" not in msg and all(w in msg for w in words), msg
    assert "token=abc" not in msg


def test_a_server_that_is_not_there_or_not_http_is_said_so(cli_env, monkeypatch):
    import socket
    import threading

    def server(reply: bytes | None) -> socket.socket:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)

        def serve() -> None:
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                c.recv(65536)
                if reply is not None:  # something that is not an HTTP server
                    c.sendall(reply)
                else:  # says nothing: its end of the connection closes at once
                    c.shutdown(socket.SHUT_WR)
                # Closed only once the client has left: a close with data of the client's still
                # unread (the reply not yet read, or the rest of a request that came in two
                # parts) reaches it as a reset, "lost the connection", instead. A hang bound only.
                c.settimeout(10)
                try:
                    while c.recv(65536):
                        pass
                except OSError:
                    pass
                c.close()

        threading.Thread(target=serve, daemon=True).start()
        return srv

    banner, mute = server(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"), server(None)
    b_port, m_port = banner.getsockname()[1], mute.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    cases = [(f"http://127.0.0.1:{b_port}", "sent a reply that is not valid HTTP"),
             (f"http://127.0.0.1:{m_port}", "closed the connection without answering"),
             (f"https://127.0.0.1:{b_port}", "the TLS handshake failed"),
             ("http://127.0.0.1:9", "cannot reach the Anthropic API (connection refused)")]
    try:
        for url, words in cases:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
            b, _ = ask_once("anthropic", "hello?", retries=0, stream=False)
            one_line_api_failure(b)
            assert words in b.error.message, b.error.message
    finally:
        banner.close()
        mute.close()


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_compressed_body_is_read_and_bounded_as_it_expands(provider, coding, cli_env,
                                                             monkeypatch, fake_anthropic,
                                                             fake_openai):
    import gzip
    import zlib

    monkeypatch.setattr(bounds, "MAX_RESPONSE_BYTES", 1024 * 1024)
    mod = fa if provider == "anthropic" else fo
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
        fake = fake_anthropic
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
        fake = fake_openai
    pack = gzip.compress if coding == "gzip" else zlib.compress
    body = _body_of(provider)
    bomb = body[:-1] + b" " * (8 * 1024 * 1024) + b"}"  # 8 MiB of JSON whitespace: ~8 KB packed
    assert len(pack(bomb)) < 64 * 1024
    fake.queue(mod.raw(pack(body), headers={"content-encoding": coding}),  # a well-made one
               *[mod.raw(pack(bomb), headers={"content-encoding": coding})] * 2)
    b, _ = ask_once(provider, "hello?", model="m", retries=0, stream=False)
    assert b.exit_code == 0 and b.result()["answer"] == "hello"
    b, _ = ask_once(provider, "hello?", model="m", retries=0, stream=False)
    one_line_api_failure(b)
    assert "larger than 1 MiB" in b.error.message, b.error.message


def test_a_content_encoding_nobody_asked_for_is_a_broken_response(anthropic_env, fake_anthropic):
    fake_anthropic.queue(fa.raw(b"\x00\x01", headers={"content-encoding": "br"}))
    b, _ = ask_once("anthropic", "hello?", retries=0, stream=False)
    one_line_api_failure(b)
    assert "content-encoding 'br'" in b.error.message


# --------------------------------------------------------------------------- bounds.Deadline
# One timer for a whole stream (not an asyncio.timeout per read): what asyncio.timeout promised
# must still hold.

def test_a_deadline_moved_on_while_waiting_is_waited_for_and_a_passed_one_cuts_the_wait():
    async def main():
        loop = asyncio.get_running_loop()
        d = bounds.Deadline(loop.time() + 0.05)

        async def slow():
            d.at = loop.time() + 0.2  # progress: the deadline moves on while the wait goes on
            await asyncio.sleep(0.1)
            return "done"
        assert await d.wait(slow) == "done"  # the timer fired at 0.05 s and re-armed itself
        with pytest.raises(bounds.DeadlinePassed):
            await d.wait(lambda: asyncio.sleep(5))
        called = []
        with pytest.raises(bounds.DeadlinePassed):  # passed already: the step is never started
            await d.wait(lambda: called.append(1))
        assert called == []
        d.close()
        assert asyncio.current_task().cancelling() == 0  # nothing left pending on the task
    asyncio.run(asyncio.wait_for(main(), 10))


def test_a_cancellation_the_deadline_did_not_cause_passes_through_as_it_is():
    async def main():
        loop = asyncio.get_running_loop()
        d = bounds.Deadline(loop.time() + 5)
        task = asyncio.ensure_future(d.wait(lambda: asyncio.sleep(5)))
        await asyncio.sleep(0.01)
        task.cancel()  # a Ctrl-C or a stop, not the deadline
        with pytest.raises(asyncio.CancelledError):
            await task
        # the deadline passing while the task is not waiting cancels nothing
        d2 = bounds.Deadline(loop.time() + 0.01)
        assert await d2.wait(lambda: asyncio.sleep(0, "first")) == "first"
        await asyncio.sleep(0.05)  # its timer fires now, with no wait under way
        with pytest.raises(bounds.DeadlinePassed):
            await d2.wait(lambda: asyncio.sleep(0))
        d2.close()
    asyncio.run(asyncio.wait_for(main(), 10))


def test_a_step_that_swallows_the_deadline_s_cancel_leaves_no_cancel_request_behind():
    # else a later Ctrl-C would end asyncio.run as a CancelledError, not as an interruption
    async def main():
        loop = asyncio.get_running_loop()
        d = bounds.Deadline(loop.time() + 0.02)

        async def stubborn():
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                return "kept going"
        assert await d.wait(stubborn) == "kept going"
        assert asyncio.current_task().cancelling() == 0
        d.close()
    asyncio.run(asyncio.wait_for(main(), 10))
