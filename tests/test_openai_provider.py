"""The OpenAI-compatible provider through the real ``openai`` SDK against the fake Chat
Completions server (``agentcli.testing.fake_openai``), in-process and through the real CLI.

Real parts only: the SDK speaks HTTP to 127.0.0.1, the orders database is the demo SQLite file,
drafts are real files in a temporary folder, CLI tests run the installed console script.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.errors import ConfigError
from agentcli.events import Retry, ToolCallStarted, ToolResult
from agentcli.testing.fake_openai import (FakeOpenAI, completion, error, stream_chunks, text,
                                          tool_call, tool_messages)

MODEL = "qwen2.5:7b-instruct"
SECRET_KEY = "sk-openai-test-0123456789abcdefSECRET"


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def _server():
    with FakeOpenAI() as f:
        yield f


@pytest.fixture
def fake_openai(_server):
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture
def openai_env(cli_env, fake_openai, monkeypatch) -> dict[str, str]:
    """``cli_env`` pointed at the fake Chat Completions server (no API key: a local server)."""
    extra = {"OPENAI_BASE_URL": fake_openai.base_url, "AGENTCLI_PROVIDER": "openai",
             "AGENTCLI_MODEL": MODEL, "AGENTCLI_RETRIES": "1"}
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return {**cli_env, **extra}


def make_app(**overrides) -> App:
    return App.open(resolve(provider="openai", **overrides))


def ask_once(question: str, **overrides):
    async def go():
        app = make_app(**overrides)
        try:
            conv = app.conversation()
            conv.retry_base_delay = 0.0  # retries are counted, not waited for
            events: list = []
            builder = await app.run(conv, question, [events.append])
            return conv, builder, events
        finally:
            await app.aclose()

    return asyncio.run(go())


def draft_files(drafts_dir) -> list:
    return sorted(p for p in drafts_dir.glob("*") if p.is_file()) if drafts_dir.exists() else []


def roles(request: dict) -> list[str]:
    return [m["role"] for m in request["messages"]]


# --------------------------------------------------------------------------- the fake itself

def test_fake_streams_interleaved_fragments_and_usage_only_when_asked():
    r = completion(tool_call("a", {"x": "1234567890"}, id="call_a"),
                   tool_call("b", {"y": "abcdefghij"}, id="call_b"), interleave=True, fragments=3)
    chunks = stream_chunks(r, include_usage=True)
    assert chunks[-1] == "[DONE]" and chunks[-2]["choices"] == [] and chunks[-2]["usage"]["prompt_tokens"] == 20
    deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[:-2]
              if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert [d["index"] for d in deltas] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert deltas[0]["id"] == "call_a" and deltas[0]["function"]["name"] == "a"
    assert all("id" not in d for d in deltas[2:])
    assert "".join(d["function"]["arguments"] for d in deltas if d["index"] == 1) == '{"y": "abcdefghij"}'
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    # Not asked (or a server that ignores it): no usage anywhere.
    assert not any(isinstance(c, dict) and "usage" in c for c in stream_chunks(r))
    assert not any(isinstance(c, dict) and c.get("usage") for c in
                   stream_chunks(completion(content="x", send_usage=False), include_usage=True))
    whole = stream_chunks(completion(tool_call("a", {"x": 1}), whole_calls=True, omit_index=True))
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in whole[:-1] if c["choices"][0]["delta"].get("tool_calls")]
    assert len(calls) == 1 and "index" not in calls[0] and calls[0]["function"]["arguments"] == '{"x": 1}'


def test_fake_through_the_sdk_json_stream_and_faults(fake_openai):
    c = openai.OpenAI(api_key="k", base_url=fake_openai.base_url, max_retries=0, timeout=5)
    args = dict(model="m", messages=[{"role": "user", "content": "hi"}])
    try:
        fake_openai.queue(text("Hello there.", usage={"prompt_tokens": 7}))
        r = c.chat.completions.create(**args)
        assert r.choices[0].message.content == "Hello there." and r.choices[0].finish_reason == "stop"
        assert r.usage.prompt_tokens == 7
        assert fake_openai.requests[0] == args and fake_openai.paths == ["/v1/chat/completions"]

        fake_openai.queue(completion(tool_call("a", {"k": "v"}, id="call_1"), content="ok"))
        got = list(c.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}))
        assert got[-1].usage.total_tokens > 0 and got[-1].choices == []
        assert got[-2].choices[0].finish_reason == "tool_calls"
        assert "".join(ch.choices[0].delta.content or "" for ch in got[:-1]) == "ok"

        fake_openai.queue(text("cut", omit_finish_reason=True))
        got = list(c.chat.completions.create(**args, stream=True))
        assert all(ch.choices[0].finish_reason is None for ch in got)

        fake_openai.queue(text("x", stream_error=("server_error", "boom")))
        with pytest.raises(openai.APIError, match="boom"):
            list(c.chat.completions.create(**args, stream=True))
        fake_openai.queue(text("some text here", drop_after=2))
        with pytest.raises(openai.APIConnectionError):
            list(c.chat.completions.create(**args, stream=True))
        fake_openai.queue(text("x", malformed_after=1))
        with pytest.raises(ValueError):
            list(c.chat.completions.create(**args, stream=True))
        fake_openai.queue(error(429, "slow down", retry_after=0))
        with pytest.raises(openai.RateLimitError) as ei:
            c.chat.completions.create(**args)
        assert ei.value.response.headers["retry-after"] == "0"
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            c.chat.completions.create(**args)
    finally:
        c.close()


# --------------------------------------------------------------------------- protocol

@pytest.mark.parametrize("stream", [True, False])
def test_two_parallel_calls_interleaved_and_one_unknown_tool(openai_env, fake_openai, stream):
    """Both lookups run, the unknown tool is an ERROR result; the next request carries the
    assistant tool_calls message and one tool message per call, in call order."""
    fake_openai.queue(
        completion(tool_call("get_order_status", {"order_code": "gh56jk78mn "}, id="call_A"),
                   tool_call("get_order_status", {"order_code": "ORD-20261234",
                                                  "include_line_items": True}, id="call_B"),
                   tool_call("refund_order", {"order_code": "GH56JK78MN"}, id="call_C"),
                   content="Let me check.", interleave=True, fragments=6),
        text("GH56JK78MN waits for its payment to be matched; ORD-20261234 has shipped."),
    )
    conv, b, events = ask_once("Why no license for GH56JK78MN, and where is ORD-20261234?",
                               stream=stream)
    assert b.exit_code == 0
    res = b.result()
    assert res["status"] == "ok" and res["stop_reason"] == "end_turn" and res["turns"] == 2
    assert res["provider"] == "openai" and res["model"] == MODEL
    assert res["answer"].startswith("GH56JK78MN waits")
    assert [(t["id"], t["name"], t["is_error"]) for t in res["tool_calls"]] == [
        ("call_A", "get_order_status", False), ("call_B", "get_order_status", False),
        ("call_C", "refund_order", True)]
    assert res["tool_calls"][1]["input"] == {"order_code": "ORD-20261234", "include_line_items": True}

    first, second = fake_openai.requests
    assert first["model"] == MODEL and first.get("stream", False) is stream
    if stream:
        assert first["stream_options"] == {"include_usage": True}
    assert first["messages"][0]["role"] == "system" and "support" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {"get_order_status", "draft_reply"}
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
               for t in first["tools"])

    assert roles(second) == ["system", "user", "assistant", "tool", "tool", "tool"]
    assistant = second["messages"][2]
    assert assistant["content"] == "Let me check."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_A", "call_B", "call_C"]
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"order_code": "gh56jk78mn "}, {"order_code": "ORD-20261234", "include_line_items": True},
        {"order_code": "GH56JK78MN"}]
    tools = tool_messages(second)
    assert [m["tool_call_id"] for m in tools] == ["call_A", "call_B", "call_C"]
    a, b_, c = (m["content"] for m in tools)
    assert json.loads(a)["status"] == "pending_payment"
    assert json.loads(b_)["status"] == "shipped" and json.loads(b_)["line_items"]
    assert c.startswith("ERROR: ") and "unknown tool 'refund_order'" in c
    # The history the conversation keeps is exactly what went over the wire.
    assert conv.history == second["messages"][1:] + [
        {"role": "assistant", "content": res["answer"]}]


@pytest.mark.parametrize("shape", ["sequential", "omit_index", "whole_calls", "whole_calls_no_index"])
def test_servers_that_omit_index_or_send_whole_calls(openai_env, fake_openai, shape):
    kw = {"sequential": {}, "omit_index": {"omit_index": True}, "whole_calls": {"whole_calls": True},
          "whole_calls_no_index": {"whole_calls": True, "omit_index": True}}[shape]
    fake_openai.queue(
        completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"}, id="call_1"),
                   tool_call("get_order_status", {"order_code": "ORD-20261234"}, id="call_2"), **kw),
        text("done"))
    _, b, _ = ask_once("GH56JK78MN and ORD-20261234?")
    res = b.result()
    assert res["status"] == "ok"
    assert [(t["id"], t["input"]["order_code"], t["result"]["status"]) for t in res["tool_calls"]] == [
        ("call_1", "GH56JK78MN", "pending_payment"), ("call_2", "ORD-20261234", "shipped")]
    assert [m["tool_call_id"] for m in tool_messages(fake_openai.requests[1])] == ["call_1", "call_2"]


def test_ids_names_and_arguments_spelled_out_fragment_by_fragment(openai_env, fake_openai):
    """A hand-written stream: calls without ids (we make unique ones), a name repeated whole in
    every fragment, and arguments split mid-token across interleaved indices."""
    def tc(index, **kw):
        return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **kw}]},
                             "finish_reason": None}]}

    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        tc(1, type="function", function={"name": "get_order_status", "arguments": '{"order_'}),
        tc(0, type="function", function={"name": "get_order_status", "arguments": ""}),
        tc(0, function={"name": "get_order_status", "arguments": '{"order_code": "GH56'}),
        tc(1, function={"arguments": 'code": "ORD-2026'}),
        tc(0, function={"arguments": 'JK78MN"}'}),
        tc(1, function={"arguments": '1234"}'}),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    fake_openai.queue(completion(chunks=chunks), text("ok"))
    _, b, _ = ask_once("two orders")
    calls = b.result()["tool_calls"]
    assert [t["input"] for t in calls] == [{"order_code": "GH56JK78MN"}, {"order_code": "ORD-20261234"}]
    assert [t["name"] for t in calls] == ["get_order_status"] * 2 and not any(t["is_error"] for t in calls)
    ids = [t["id"] for t in calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    second = fake_openai.requests[1]
    assert [c["id"] for c in second["messages"][2]["tool_calls"]] == ids
    assert [m["tool_call_id"] for m in tool_messages(second)] == ids


def test_duplicate_ids_are_made_unique_and_a_missing_done_line_is_fine(openai_env, fake_openai):
    """Some servers number every call "call_0", or end the body without ``data: [DONE]``."""
    fake_openai.queue(
        completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"}, id="call_0"),
                   tool_call("get_order_status", {"order_code": "ORD-20261234"}, id="call_0"),
                   omit_done=True),
        text("ok"))
    _, b, _ = ask_once("two orders")
    calls = b.result()["tool_calls"]
    assert [t["result"]["status"] for t in calls] == ["pending_payment", "shipped"]
    ids = [t["id"] for t in calls]
    assert ids[0] == "call_0" and ids[1] != "call_0"
    assert [m["tool_call_id"] for m in tool_messages(fake_openai.requests[1])] == ids


def test_invalid_json_arguments_are_an_error_result_never_executed(openai_env, fake_openai, drafts_dir):
    """The first fragment alone is a complete, valid object; the whole is not JSON: no draft."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_D", "type": "function",
             "function": {"name": "draft_reply", "arguments": '{"text": "Hello, your order shipped."}'}}]},
            "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"text": "Hello again"}'}}]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    fake_openai.queue(completion(chunks=chunks), text("I could not save the draft."))
    conv, b, events = ask_once("Reply to the customer about ORD-20261234")
    assert draft_files(drafts_dir) == []
    (call,) = b.result()["tool_calls"]
    assert call["is_error"] and call["outcome"] == "invalid_input" and call["id"] == "call_D"
    assert "not valid JSON" in call["result"]
    second = fake_openai.requests[1]
    # The history carries the call (with arguments a server can parse) and its ERROR result.
    assert second["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"
    (tool_msg,) = tool_messages(second)
    assert tool_msg["tool_call_id"] == "call_D" and tool_msg["content"].startswith("ERROR: ")
    assert "not valid JSON" in tool_msg["content"]
    assert not any(isinstance(e, ToolResult) and not e.is_error for e in events)


@pytest.mark.parametrize("arguments", ['{"text": "Hello, your order ORD-20261234 has sh',
                                       '{"text": "Hello, your order has shipped."}'],
                         ids=["cut_mid_arguments", "arguments_happen_to_parse"])
def test_length_mid_call_executes_nothing(openai_env, fake_openai, drafts_dir, arguments):
    fake_openai.queue(completion(tool_call("draft_reply", arguments, id="call_L"),
                                 content="Drafting a reply.", finish_reason="length"),
                      text("A follow-up answer."))

    async def go():
        app = make_app()
        try:
            conv = app.conversation()
            events: list = []
            b1 = await app.run(conv, "Reply to the customer about ORD-20261234", [events.append])
            b2 = await app.run(conv, "And now just summarise.")
            return conv, b1, b2, events
        finally:
            await app.aclose()

    conv, b1, b2, events = asyncio.run(go())
    res = b1.result()
    assert b1.exit_code == 1 and res["status"] == "incomplete" and res["stop_reason"] == "max_tokens"
    assert "out of output tokens" in res["error"]
    assert draft_files(drafts_dir) == []
    assert not any(isinstance(e, (ToolCallStarted, ToolResult)) for e in events)
    assert len(fake_openai.requests) == 2  # no retry of a cut response
    # The follow-up question goes out with a valid history: the cut call answered as an error.
    follow = fake_openai.requests[1]
    assert roles(follow) == ["system", "user", "assistant", "tool", "user"]
    assert follow["messages"][2]["tool_calls"][0]["id"] == "call_L"
    (tool_msg,) = tool_messages({"messages": follow["messages"][:-1]})
    assert tool_msg["tool_call_id"] == "call_L" and tool_msg["content"].startswith("ERROR: not executed")
    assert b2.exit_code == 0 and b2.result()["answer"] == "A follow-up answer."


@pytest.mark.parametrize("finish,stop,code", [("stop", "end_turn", 0), ("length", "max_tokens", 1),
                                              ("content_filter", "refusal", 1),
                                              ("something_new", "something_new", 1)])
def test_finish_reasons_map_to_the_loop_statuses(openai_env, fake_openai, finish, stop, code):
    fake_openai.queue(text("Partial answer", finish_reason=finish))
    _, b, _ = ask_once("hello?")
    res = b.result()
    assert (res["stop_reason"], b.exit_code) == (stop, code)
    assert res["status"] == ("ok" if code == 0 else "incomplete")


def test_complete_tool_calls_under_finish_reason_stop_are_run(openai_env, fake_openai):
    """Some servers end a tool-call response with "stop": the calls are complete, so they run."""
    fake_openai.queue(completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"}, id="call_S"),
                                 finish_reason="stop"), text("done"))
    _, b, _ = ask_once("GH56JK78MN?")
    assert b.result()["tool_calls"][0]["result"]["status"] == "pending_payment"
    assert [m["tool_call_id"] for m in tool_messages(fake_openai.requests[1])] == ["call_S"]


# --------------------------------------------------------------------------- usage

def test_usage_reported_when_sent_including_cached_tokens(openai_env, fake_openai):
    fake_openai.queue(
        completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"}),
                   usage={"prompt_tokens": 120, "completion_tokens": 15,
                          "prompt_tokens_details": {"cached_tokens": 100}}),
        text("done", usage={"prompt_tokens": 200, "completion_tokens": 5}))
    _, b, events = ask_once("GH56JK78MN?")
    assert b.result()["usage"] == {"input_tokens": 20 + 200, "output_tokens": 20,
                                   "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}


@pytest.mark.parametrize("stream", [True, False])
def test_usage_absent_does_not_fail(openai_env, fake_openai, stream):
    fake_openai.queue(text("fine", send_usage=False))
    _, b, events = ask_once("hello?", stream=stream)
    assert b.exit_code == 0 and b.result()["answer"] == "fine"
    assert b.result()["usage"] == {"input_tokens": 0, "output_tokens": 0,
                                   "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def test_usage_non_streaming(openai_env, fake_openai):
    fake_openai.queue(text("fine", usage={"prompt_tokens": 33, "completion_tokens": 4}))
    _, b, _ = ask_once("hello?", stream=False)
    assert b.result()["usage"]["input_tokens"] == 33 and b.result()["usage"]["output_tokens"] == 4


# --------------------------------------------------------------------------- faults

@pytest.mark.parametrize("fault", [{"omit_finish_reason": True}, {"drop_after": 3},
                                   {"malformed_after": 2}, {"stall_after": 2, "stall_seconds": 5}])
def test_incomplete_stream_runs_nothing_and_is_retried(openai_env, fake_openai, drafts_dir, fault):
    cut = completion(tool_call("draft_reply", {"text": "Hello, your order shipped."}, id="call_X"), **fault)
    fake_openai.queue(cut, text("Recovered."))
    # a short no-data timeout only where the stream stalls: elsewhere it only makes a loaded
    # machine's slow second (the fake server's thread starved) look like a stall, exit 4
    _, b, events = ask_once("Reply to the customer", request_timeout=0.5 if "stall_after" in fault else 30)
    assert b.exit_code == 0 and b.result()["answer"] == "Recovered."
    assert draft_files(drafts_dir) == [] and b.result()["tool_calls"] == []
    assert sum(isinstance(e, Retry) for e in events) == 1
    assert len(fake_openai.requests) == 2


def test_incomplete_stream_after_retries_is_exit_4(openai_env, fake_openai, drafts_dir):
    cut = dict(omit_finish_reason=True)
    fake_openai.queue(*(completion(tool_call("draft_reply", {"text": "Hi"}), **cut) for _ in range(2)))
    _, b, _ = ask_once("Reply to the customer")
    assert b.exit_code == 4 and b.result()["status"] == "error"
    assert "finish_reason" in b.result()["error"]
    assert draft_files(drafts_dir) == []


def test_error_inside_the_stream_is_retried(openai_env, fake_openai):
    fake_openai.queue(text("x", stream_error=("server_error", "the GPU fell over")), text("ok now"))
    _, b, events = ask_once("hello?")
    assert b.exit_code == 0 and b.result()["answer"] == "ok now"
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert "the GPU fell over" in retry.reason


@pytest.mark.parametrize("status,kind,hint", [(401, "authentication", "OPENAI_API_KEY"),
                                              (404, "not_found", "--model"),
                                              (400, "bad_request", "tools are not supported")])
def test_api_errors_are_exit_4_with_a_clear_message(openai_env, fake_openai, status, kind, hint):
    fake_openai.queue(error(status, "tools are not supported by this model"))
    _, b, events = ask_once("hello?")
    assert b.exit_code == 4 and b.error.kind == kind and hint in b.error.message
    assert len(fake_openai.requests) == 1  # not retried


def test_server_errors_are_retried_by_the_sdk(openai_env, fake_openai):
    fake_openai.queue(error(503, "loading model", retry_after=0), text("ready"))
    _, b, _ = ask_once("hello?")
    assert b.exit_code == 0 and b.result()["answer"] == "ready" and len(fake_openai.requests) == 2


def test_context_overflow_is_exit_1_not_an_api_failure(openai_env, fake_openai):
    fake_openai.queue(error(400, "This model's maximum context length is 4096 tokens. However, you "
                                 "requested 5000 tokens", code="context_length_exceeded"))
    _, b, _ = ask_once("hello?")
    assert b.exit_code == 1 and b.result()["stop_reason"] == "model_context_window_exceeded"


def test_unreachable_server_is_exit_4_naming_the_server(openai_env, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    _, b, events = ask_once("hello?", retries=0)
    assert b.exit_code == 4 and b.error.kind == "connection"
    assert "cannot reach the model server at 127.0.0.1:9" in b.error.message
    assert "OPENAI_BASE_URL" in b.error.message


# --------------------------------------------------------------------------- configuration

def test_api_key_is_optional_and_sent_when_set(openai_env, fake_openai, monkeypatch):
    fake_openai.queue(text("a"), text("b"))
    ask_once("hello?")
    assert fake_openai.request_headers[0]["authorization"] == "Bearer not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    ask_once("hello?")
    assert fake_openai.request_headers[1]["authorization"] == f"Bearer {SECRET_KEY}"


@pytest.mark.parametrize("env,needle", [({"AGENTCLI_MODEL": None}, "--model"),
                                        ({"OPENAI_BASE_URL": None}, "OPENAI_BASE_URL"),
                                        ({"OPENAI_BASE_URL": "localhost:11434"}, "http://")])
def test_configuration_errors(openai_env, monkeypatch, env, needle):
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k)
        else:
            monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=needle.replace("-", r"\-")) as ei:
        make_app()
    assert ei.value.exit_code == 3


# --------------------------------------------------------------------------- the real CLI

def test_cli_json_parallel_calls_and_unknown_tool(openai_env, fake_openai, cli):
    fake_openai.queue(
        completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"}, id="call_A"),
                   tool_call("cancel_order", {"order_code": "GH56JK78MN"}, id="call_B"),
                   interleave=True, fragments=4),
        text("It waits for the payment to be matched."))
    p = cli(["ask", "--provider", "openai", "--model", "llama3.1:8b", "--json",
             "Why is GH56JK78MN not licensed?"], {**openai_env, "AGENTCLI_MODEL": ""})
    assert p.returncode == 0, p.err
    res = json.loads(p.out)
    assert res["provider"] == "openai" and res["model"] == "llama3.1:8b" and res["status"] == "ok"
    assert [(t["id"], t["is_error"]) for t in res["tool_calls"]] == [("call_A", False), ("call_B", True)]
    assert res["usage"]["input_tokens"] > 0  # the fake sends usage when asked
    assert fake_openai.requests[0]["model"] == "llama3.1:8b"
    assert [m["tool_call_id"] for m in tool_messages(fake_openai.requests[1])] == ["call_A", "call_B"]
    assert "Traceback" not in p.err


def test_cli_length_mid_call_exit_1_and_trace(openai_env, fake_openai, cli, drafts_dir):
    fake_openai.queue(completion(tool_call("draft_reply", '{"text": "Dear customer, your ord'),
                                 finish_reason="length"))
    p = cli(["ask", "Reply to the customer about ORD-20261234"], openai_env)
    assert p.returncode == 1
    assert "out of output tokens" in p.err and "Traceback" not in p.err
    assert draft_files(drafts_dir) == []


def test_cli_model_missing_is_exit_3(openai_env, fake_openai, cli):
    env = {k: v for k, v in openai_env.items() if k != "AGENTCLI_MODEL"}
    p = cli(["ask", "--provider", "openai", "Where is ORD-20261234?"], env)
    assert p.returncode == 3
    lines = p.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcli: ") and "--model" in lines[0]
    assert p.out == "" and fake_openai.requests == []


def test_cli_rejected_key_is_exit_4_without_the_key(openai_env, fake_openai, cli):
    fake_openai.queue(error(401, f"Incorrect API key provided: {SECRET_KEY}"))
    p = cli(["ask", "--json", "hello?"], {**openai_env, "OPENAI_API_KEY": SECRET_KEY})
    assert p.returncode == 4
    assert "OPENAI_API_KEY" in p.err and SECRET_KEY not in p.err + p.out
    assert fake_openai.request_headers[0]["authorization"] == f"Bearer {SECRET_KEY}"


# --------------------------------------------------------------------------- what every server accepts

def test_tool_choice_auto_and_empty_string_content_on_tool_call_messages(openai_env, fake_openai):
    fake_openai.queue(completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"})),
                      text("It is waiting for payment."))
    _, b, _ = ask_once("Where is GH56JK78MN?")
    assert b.exit_code == 0
    first, second = fake_openai.requests
    assert first["tool_choice"] == "auto" and second["tool_choice"] == "auto"
    (assistant,) = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant["content"] == "" and assistant["tool_calls"]


@pytest.mark.parametrize("body", [b"", b"data: [DONE]\n\n",
                                  b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, '
                                  b'"model": "m", "choices": [], "usage": {"prompt_tokens": 3, '
                                  b'"completion_tokens": 0, "total_tokens": 3}}\n\ndata: [DONE]\n\n'],
                         ids=["no_body", "only_done", "only_usage"])
def test_an_empty_stream_falls_back_once_to_a_plain_request(openai_env, fake_openai, drafts_dir, body):
    from agentcli.testing.fake_openai import raw

    fake_openai.queue(raw(body, "text/event-stream"),
                      completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"})),
                      text("It is waiting for payment."))
    _, b, events = ask_once("Where is GH56JK78MN?")
    assert b.exit_code == 0 and b.result()["answer"] == "It is waiting for payment."
    assert [c["name"] for c in b.result()["tool_calls"]] == ["get_order_status"]
    streamed = [r.get("stream") is True for r in fake_openai.requests]
    assert streamed == [True, False, True]  # one fallback, then streaming again


def test_the_empty_stream_fallback_is_announced_by_the_provider(openai_env, fake_openai):
    from agentcli.testing.fake_openai import raw

    fake_openai.queue(raw(b"", "text/event-stream"), text("hello"))

    async def go():
        app = make_app()
        try:
            history: list = []
            app.provider.add_user_text(history, "hi")
            return [item async for item in app.provider.respond(history, stream=True)]
        finally:
            await app.aclose()

    items = asyncio.run(go())
    (notice,) = [i for i in items if isinstance(i, Retry)]
    assert "empty stream" in notice.reason and "without streaming" in notice.reason
    assert items[-1].text == "hello" and items[-1].stop_reason == "end_turn"


def test_a_context_overflow_keeps_the_servers_own_words(openai_env, fake_openai):
    # llama-server's wording: the sizes are what a person needs to decide what to cut
    fake_openai.queue(error(400, "request (9917 tokens) exceeds the available context size (8192 "
                                 "tokens), try increasing it", code="exceed_context_size_error"))
    _, b, _ = ask_once("hello?")
    r = b.result()
    assert b.exit_code == 1 and r["stop_reason"] == "model_context_window_exceeded", r
    assert "9917 tokens" in r["error"] and "8192 tokens" in r["error"]
    assert "/new" not in r["error"]  # the advice is added where it is shown, for that command
