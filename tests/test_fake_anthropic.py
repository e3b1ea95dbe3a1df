"""Proves agentcli.testing.fake_anthropic works with the REAL anthropic SDK (2.x, on httpx2).

Only the fake is tested here, not agentcli.  SDK behaviour pinned down by these tests
(what a tool-use loop has to handle):

* The API key is sent as ``Authorization: Bearer <key>`` (anthropic 2.x); there is NO
  ``x-api-key`` header.
* HTTP errors map to ``anthropic`` classes: 400 BadRequestError, 401 AuthenticationError,
  429 RateLimitError, 500 InternalServerError, 529 OverloadedError (a subclass of
  InternalServerError); ``exc.response.headers["retry-after"]``, ``exc.type`` and
  ``exc.api_message`` carry the details.  With ``messages.stream`` they raise on entering
  the ``with`` block.
* An ``event: error`` inside a 200 stream raises plain ``anthropic.APIStatusError`` with
  ``status_code == 200`` and ``exc.type`` the error type from the event (e.g.
  "overloaded_error") -- NOT OverloadedError.
* A stream dropped mid-body raises ``httpx2.RemoteProtocolError`` (raw transport error,
  not an ``anthropic.APIError``; the SDK does not wrap errors raised while iterating).
* A stalled stream with a client timeout raises ``httpx2.ReadTimeout`` (raw, not
  ``anthropic.APITimeoutError``).  A stall BEFORE the response headers raises
  ``anthropic.APITimeoutError``.
* A malformed SSE data line raises ``json.JSONDecodeError`` (a ValueError), raw.
  A truncated non-streaming JSON body also raises ``json.JSONDecodeError``.
* A non-streaming request whose connection closes without a response raises
  ``anthropic.APIConnectionError`` (``__cause__`` is httpx2.RemoteProtocolError).
* A stream that ends cleanly without message_delta/message_stop does not raise:
  ``get_final_message()`` returns the content with ``stop_reason is None`` (and
  ``usage.output_tokens`` left at the message_start value).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time

import anthropic
import httpx2
import pytest

from agentcli.testing.fake_anthropic import (
    FakeAnthropic,
    Reply,
    error,
    message,
    redacted_thinking_block,
    stream_events,
    text,
    text_block,
    thinking_block,
    tool_results,
    tool_use_block,
)

KEY = "sk-ant-test-key"
ARGS = dict(model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}])


@pytest.fixture(scope="module")
def _server():
    with FakeAnthropic() as f:
        yield f


@pytest.fixture(scope="module")
def _client(_server):
    # One SDK client for the module: building one costs ~35 ms (it loads CA certificates).
    with anthropic.Anthropic(api_key=KEY, base_url=_server.url, max_retries=0, timeout=5) as c:
        yield c


@pytest.fixture
def fake(_server):
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture
def client(_client, fake):
    return _client


# --------------------------------------------------------------------------- JSON


def test_json_text_and_recording(fake, client):
    fake.queue(text("Hello there."))
    msg = client.messages.create(**ARGS, system="be nice")
    assert msg.content[0].type == "text" and msg.content[0].text == "Hello there."
    assert msg.stop_reason == "end_turn"
    assert msg.role == "assistant" and msg.model == "claude-test"
    assert msg.usage.input_tokens == 10 and msg.usage.cache_read_input_tokens == 0
    assert fake.requests == [dict(ARGS, system="be nice")]
    assert fake.last_request is fake.requests[0]
    assert fake.pending == 0


def test_key_sent_as_bearer_authorization(fake, client):
    fake.queue(text("ok"))
    client.messages.create(**ARGS)
    h = fake.request_headers[0]
    assert all(k == k.lower() for k in h)
    # anthropic 2.x: the api_key goes in `Authorization: Bearer ...`; no x-api-key header.
    assert h["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in h
    assert "anthropic-version" in h
    assert h["content-type"] == "application/json"


def test_env_base_url_and_key(fake, monkeypatch):
    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for k, v in fake.env("env-key").items():
        monkeypatch.setenv(k, v)
    fake.queue(text("from env"))
    with anthropic.Anthropic(max_retries=0) as c:
        assert c.messages.create(**ARGS).content[0].text == "from env"
    assert fake.request_headers[0]["authorization"] == "Bearer env-key"


def test_json_all_block_kinds(fake, client):
    tool_input = {"order_id": "A-1", "nested": {"list": [1, 2.5, None, True], "s": 'quote " and \\ and é\n'}}
    fake.queue(
        message(
            thinking_block("Let me think.", "sig-abc=="),
            redacted_thinking_block("opaque-data"),
            text_block("Checking."),
            tool_use_block("lookup_order", tool_input, id="toolu_fixed"),
        )
    )
    msg = client.messages.create(**ARGS)
    assert [b.type for b in msg.content] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert msg.content[0].signature == "sig-abc==" and msg.content[0].thinking == "Let me think."
    assert msg.content[1].data == "opaque-data"
    assert msg.content[3].id == "toolu_fixed" and msg.content[3].input == tool_input
    assert msg.stop_reason == "tool_use"  # inferred from the tool_use block


def test_tool_use_ids_unique_and_explicit_stop_reason(fake, client):
    a, b = tool_use_block("x", {}), tool_use_block("x", {})
    assert a["id"].startswith("toolu_") and a["id"] != b["id"]
    fake.queue(message(a, stop_reason="max_tokens", usage={"output_tokens": 99}))
    msg = client.messages.create(**ARGS)
    assert msg.stop_reason == "max_tokens" and msg.usage.output_tokens == 99


# --------------------------------------------------------------------------- streaming


def test_stream_text_deltas(fake, client):
    s = "The quick brown fox jumps over the lazy dog."
    fake.queue(text(s))
    with client.messages.stream(**ARGS) as stream:
        chunks = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(chunks) >= 3 and "".join(chunks) == s
    assert final.content[0].text == s and final.stop_reason == "end_turn"
    assert final.usage.output_tokens >= 1 and final.usage.input_tokens == 10
    assert fake.last_request["stream"] is True


def test_stream_tool_input_split_arrives_whole(fake, client):
    tool_input = {"query": "héllo \"world\"\n", "ids": list(range(20)), "deep": {"a": {"b": [None, False]}}}
    reply = message(text_block("Let me look."), tool_use_block("search", tool_input))
    json_deltas = [d for n, d in stream_events(reply) if d.get("delta", {}).get("type") == "input_json_delta"]
    assert len(json_deltas) >= 3
    fake.queue(reply)
    with client.messages.stream(**ARGS) as stream:
        events = list(stream)
        final = stream.get_final_message()
    starts = [e for e in events if e.type == "content_block_start" and e.content_block.type == "tool_use"]
    assert starts[0].content_block.input == {}
    assert sum(1 for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta") >= 3
    assert final.content[1].input == tool_input and final.content[1].name == "search"
    assert final.stop_reason == "tool_use"


def test_stream_thinking_signature_preserved(fake, client):
    fake.queue(
        message(
            thinking_block("First I consider the order. Then the refund policy.", "EqQBCkYIARgCIkA=="),
            redacted_thinking_block("EmwKAhgBEgy3va3pzix"),
            text_block("Done."),
        )
    )
    with client.messages.stream(**ARGS) as stream:
        final = stream.get_final_message()
    th, red, tx = final.content
    assert th.type == "thinking" and th.thinking == "First I consider the order. Then the refund policy."
    assert th.signature == "EqQBCkYIARgCIkA=="
    assert red.type == "redacted_thinking" and red.data == "EmwKAhgBEgy3va3pzix"
    assert tx.text == "Done."
    # round-trips into a follow-up request unchanged
    assert final.to_param()["content"][0].signature == "EqQBCkYIARgCIkA=="


def test_raw_sse_wire_format(fake):
    reply = message(text_block("hi"), tool_use_block("t", {"a": 1}))
    fake.queue(reply)
    conn = http.client.HTTPConnection(fake.url.removeprefix("http://"), timeout=5)
    conn.request("POST", "/v1/messages", body=json.dumps(dict(ARGS, stream=True)), headers={"content-type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("content-type") == "text/event-stream"
    assert resp.getheader("transfer-encoding") == "chunked"
    raw = resp.read().decode()  # http.client de-chunks; a broken chunked body would raise here
    conn.close()
    names = [line[len("event: ") :] for line in raw.splitlines() if line.startswith("event: ")]
    datas = [json.loads(line[len("data: ") :]) for line in raw.splitlines() if line.startswith("data: ")]
    assert names == [n for n, _ in stream_events(reply)]
    assert [d["type"] for d in datas] == names
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert "ping" in names
    assert datas[0]["message"]["stop_reason"] is None and datas[0]["message"]["content"] == []
    assert set(datas[0]["message"]["usage"]) >= {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
    assert datas[-2]["delta"]["stop_reason"] == "tool_use" and "output_tokens" in datas[-2]["usage"]


def test_create_stream_true_raw_events(fake, client):
    fake.queue(text("abc"))
    types = [e.type for e in client.messages.create(**ARGS, stream=True)]  # the SDK drops pings
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert "ping" not in types


# --------------------------------------------------------------------------- async


def test_async_client_json_stream_and_concurrency(fake):
    async def main():
        async with anthropic.AsyncAnthropic(api_key=KEY, base_url=fake.url, max_retries=0, timeout=5) as ac:
            fake.queue(text("json"), text("streamed text here"))
            msg = await ac.messages.create(**ARGS)
            assert msg.content[0].text == "json"
            async with ac.messages.stream(**ARGS) as stream:
                chunks = [c async for c in stream.text_stream]
                final = await stream.get_final_message()
            assert "".join(chunks) == "streamed text here" == final.content[0].text

            # 60 requests served at once, not one after the other: every handler waits until all
            # 60 are inside (a server answering them one at a time breaks the barrier; its
            # timeout only stops a broken test)
            barrier = threading.Barrier(60, timeout=20)

            def handler(req):
                barrier.wait()
                return text(req["messages"][0]["content"])

            fake.handler = handler
            results = await asyncio.gather(
                *(ac.messages.create(**dict(ARGS, messages=[{"role": "user", "content": f"q{i}"}])) for i in range(60))
            )
            assert [r.content[0].text for r in results] == [f"q{i}" for i in range(60)]
            assert not barrier.broken

    asyncio.run(main())
    assert len(fake.requests) == 62


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "status, exc_class, etype",
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
def test_error_statuses(fake, client, status, exc_class, etype, streaming):
    fake.queue(error(status, "nope", headers={"retry-after": "7"}))
    with pytest.raises(exc_class) as ei:
        if streaming:
            with client.messages.stream(**ARGS) as stream:  # raises on entry
                stream.get_final_message()
        else:
            client.messages.create(**ARGS)
    e = ei.value
    assert e.status_code == status
    assert e.response.headers["retry-after"] == "7"
    assert e.type == etype and e.api_message == "nope"
    assert e.body == {"type": "error", "error": {"type": etype, "message": "nope"}}


def test_error_type_override_and_retry_after_kw(fake, client):
    fake.queue(error(529, "busy", type="overloaded_error", retry_after=2))
    with pytest.raises(anthropic.OverloadedError) as ei:
        client.messages.create(**ARGS)
    assert ei.value.response.headers["retry-after"] == "2"
    assert isinstance(ei.value, anthropic.InternalServerError)


def test_script_exhausted_is_500_and_not_retried(fake):
    with anthropic.Anthropic(api_key=KEY, base_url=fake.url, max_retries=2) as c:
        with pytest.raises(anthropic.InternalServerError, match="exhausted"):
            c.messages.create(**ARGS)
    assert len(fake.requests) == 1  # x-should-retry: false stops the SDK's retries


def test_handler_used_when_queue_empty(fake, client):
    fake.handler = lambda req: text("from handler")
    fake.queue(text("from queue"))
    assert client.messages.create(**ARGS).content[0].text == "from queue"
    assert client.messages.create(**ARGS).content[0].text == "from handler"

    def broken(req):
        raise RuntimeError("scenario bug")

    fake.handler = broken
    with pytest.raises(anthropic.InternalServerError, match="scenario bug"):
        client.messages.create(**ARGS)
    assert "RuntimeError: scenario bug" in fake.errors[-1]


def test_stream_error_event(fake, client):
    fake.queue(text("partial answer", stream_error=("overloaded_error", "Overloaded")))
    seen = []
    with pytest.raises(anthropic.APIStatusError) as ei:
        with client.messages.stream(**ARGS) as stream:
            for chunk in stream.text_stream:
                seen.append(chunk)
    # Plain APIStatusError carrying the 200 of the stream, not OverloadedError.
    assert type(ei.value) is anthropic.APIStatusError
    assert ei.value.status_code == 200
    assert ei.value.type == "overloaded_error" and ei.value.api_message == "Overloaded"
    assert "".join(seen) == "partial answer"


# --------------------------------------------------------------------------- stream faults


def test_drop_after_raises_transport_error(fake, client):
    reply = text("one two three four five six")
    names = [n for n, _ in stream_events(reply)]
    first_delta = names.index("content_block_delta")
    reply.drop_after = first_delta + 1  # just after the first text delta
    fake.queue(reply)
    seen = []
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as ei:
        with client.messages.stream(**ARGS) as stream:
            for chunk in stream.text_stream:
                seen.append(chunk)
    assert_transport_fault(ei.value, httpx2.RemoteProtocolError, anthropic.APIConnectionError)
    assert seen == [stream_events(reply)[first_delta][1]["delta"]["text"]]


def assert_transport_fault(e: BaseException, raw: type, wrapped: type) -> None:
    """A body that breaks mid-stream: the SDK raised the transport's error (``raw``) as it is
    (anthropic before 2.17), or wrapped it in its own ``wrapped`` (2.17 on); the providers take
    both for a broken response (test_provider_faults)."""
    if isinstance(e, anthropic.APIError):
        assert type(e) is wrapped and isinstance(e.__cause__, raw), (type(e), e.__cause__)
    else:
        assert isinstance(e, raw), type(e)


def test_drop_non_streaming_is_connection_error(fake, client):
    fake.queue(text("never sent", drop_after=0))
    with pytest.raises(anthropic.APIConnectionError) as ei:
        client.messages.create(**ARGS)
    assert isinstance(ei.value.__cause__, httpx2.RemoteProtocolError)
    # the connection pool recovers
    fake.queue(text("after"))
    assert client.messages.create(**ARGS).content[0].text == "after"


def test_malformed_after_raises(fake, client):
    fake.queue(text("hello world", malformed_after=3))
    with pytest.raises(json.JSONDecodeError):  # raw ValueError subclass, not anthropic.APIError
        with client.messages.stream(**ARGS) as stream:
            stream.get_final_message()
    fake.queue(text("hello world", malformed_after=0))
    with pytest.raises(json.JSONDecodeError):
        client.messages.create(**ARGS)


def test_omit_message_stop_gives_stop_reason_none(fake, client):
    fake.queue(message(text_block("cut short"), tool_use_block("t", {"x": 1}), omit_message_stop=True))
    with client.messages.stream(**ARGS) as stream:
        final = stream.get_final_message()  # no exception
    assert final.stop_reason is None
    assert final.content[0].text == "cut short" and final.content[1].input == {"x": 1}


def test_stall_after_with_client_timeout():
    fake = FakeAnthropic().start()
    try:
        # Upper bounds below the 30 s stall, generous for a busy machine: only waiting out the
        # stall (the timeout not applied, stop() not interrupting it) exceeds them.
        with anthropic.Anthropic(api_key=KEY, base_url=fake.url, max_retries=0, timeout=0.3) as c:
            fake.queue(text("slow stream", stall_after=3, stall_seconds=30))
            t0 = time.monotonic()
            with pytest.raises((httpx2.ReadTimeout, anthropic.APITimeoutError)) as ei:
                with c.messages.stream(**ARGS) as stream:
                    stream.get_final_message()
            assert_transport_fault(ei.value, httpx2.ReadTimeout, anthropic.APITimeoutError)
            assert time.monotonic() - t0 < 15
            # a stall before the response headers: the SDK wraps the timeout
            fake.queue(text("slow json", stall_after=0, stall_seconds=30))
            with pytest.raises(anthropic.APITimeoutError):
                c.messages.create(**ARGS, timeout=0.3)
        t0 = time.monotonic()
        fake.stop()  # interrupts the still-stalled handlers
        assert time.monotonic() - t0 < 15
    finally:
        fake.stop()


# --------------------------------------------------------------------------- ordering, helpers


def test_a_delay_holds_back_only_its_own_reply():
    """A delayed reply does not hold up the requests after it; stop() cuts the delay short."""
    fake = FakeAnthropic().start()  # its own server: this test stops it
    got: list = []

    def call():
        with anthropic.Anthropic(api_key=KEY, base_url=fake.url, max_retries=0, timeout=120) as c:
            try:
                got.append(c.messages.create(**ARGS).content[0].text)
            except anthropic.APIConnectionError as e:  # the server stopped mid-delay
                got.append(type(e).__name__)

    try:
        fake.queue(text("slow", delay=60), text("fast"))
        slow = threading.Thread(target=call)
        slow.start()
        deadline = time.monotonic() + 20  # a hang guard only
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        with anthropic.Anthropic(api_key=KEY, base_url=fake.url, max_retries=0, timeout=20) as c:
            assert c.messages.create(**ARGS).content[0].text == "fast"
        assert slow.is_alive() and got == []  # the first reply is still held back
    finally:
        fake.stop()
    slow.join(20)
    assert not slow.is_alive() and got == ["APIConnectionError"]


def test_tool_results_helper(fake, client):
    fake.queue(text("thanks"))
    messages = [
        {"role": "user", "content": "check order 7"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": 7}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    client.messages.create(model="claude-test", max_tokens=10, messages=messages)
    assert tool_results(fake.last_request) == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}]
    assert tool_results({"messages": [{"role": "user", "content": "plain"}]}) == []


def test_misc_api():
    fake = FakeAnthropic(latency=0.1)
    assert fake.last_request is None and fake.requests == [] and fake.latency == 0.1
    assert isinstance(text("x"), Reply) and isinstance(error(500), Reply)
    with pytest.raises(TypeError):
        fake.queue("not a reply")  # type: ignore[arg-type]
    with fake:
        assert fake.url.startswith("http://127.0.0.1:")
        fake.latency = 0
    fake.stop()  # idempotent
