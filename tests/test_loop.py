"""The tool-use loop through the real anthropic SDK against the fake Messages API server."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.events import DraftSaved, Retry, ToolCallStarted, ToolResult
from agentcli.stores.sqlite import SQLiteStore
from agentcli.sessions.log import read_events
from agentcli.testing.fake_anthropic import (message, redacted_thinking_block, stream_events, text,
                                             text_block, thinking_block, tool_results, tool_use_block)


def make_app(store=None, **overrides) -> App:
    settings = resolve(provider="anthropic", **overrides)
    return App.open(settings, store=store)


async def ask(app: App, question: str, conv=None, **kw):
    conv = conv or app.conversation()
    events = []
    builder = await app.run(conv, question, [events.append], **kw)
    return conv, builder, events


def run(coro):
    return asyncio.run(coro)


def ask_once(question: str, **overrides):
    """One question on a fresh App (real SDK against the fake server), closed afterwards."""

    async def go():
        app = make_app(**overrides)
        try:
            return await ask(app, question)
        finally:
            await app.aclose()

    return run(go())


class SlowStore(SQLiteStore):
    """The real SQLite store, slowed down: for timeouts, concurrency and cancellation."""
    inline = False  # slow like a remote database: the tool layer must not block the loop on it

    def __init__(self, path, delay):
        super().__init__(path)
        self.delay = delay
        self.calls = 0
        self.lock = threading.Lock()

    def lookup(self, code, customer, include_lines):
        with self.lock:
            self.calls += 1
        time.sleep(self.delay)
        return super().lookup(code, customer, include_lines)


# --------------------------------------------------------------------------- protocol

@pytest.mark.parametrize("stream", [True, False])
def test_two_calls_one_unknown_then_end_turn(anthropic_env, fake_anthropic, stream):
    """The source article's protocol test: both calls answered in ONE user message, in order."""
    fake_anthropic.queue(
        message(text_block("Let me check."),
                tool_use_block("get_order_status", {"order_code": "gh56jk78mn "}, id="toolu_A"),
                tool_use_block("refund_order", {"order_code": "GH56JK78MN"}, id="toolu_B")),
        text("The payment is not matched yet."),
    )

    conv, b, events = ask_once("Why does order GH56JK78MN have no license yet?", stream=stream)
    assert len(fake_anthropic.requests) == 2
    first, second = fake_anthropic.requests
    assert first.get("stream", False) is stream
    msgs = second["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assistant = msgs[1]["content"]
    assert [b_["type"] for b_ in assistant] == ["text", "tool_use", "tool_use"]
    assert [b_["id"] for b_ in assistant[1:]] == ["toolu_A", "toolu_B"]
    results = tool_results(second)
    assert [r["tool_use_id"] for r in results] == ["toolu_A", "toolu_B"]
    assert not results[0].get("is_error")
    found = json.loads(results[0]["content"])
    assert found["found"] is True and found["order_code"] == "GH56JK78MN"
    assert found["status"] == "pending_payment" and found["license_issued"] is False
    assert "line_items" not in found
    assert results[1]["is_error"] is True
    assert "unknown tool" in results[1]["content"] and "get_order_status" in results[1]["content"]
    r = b.result()
    assert r["status"] == "ok" and r["stop_reason"] == "end_turn" and r["turns"] == 2
    assert r["answer"] == "The payment is not matched yet."
    assert [c["is_error"] for c in r["tool_calls"]] == [False, True]
    assert b.exit_code == 0


def test_thinking_blocks_go_back_with_signatures(anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(thinking_block("The customer asks about a license.", "sig-ABC123"),
                redacted_thinking_block("opaque-redacted-data"),
                tool_use_block("get_order_status", {"order_code": "ORD-20261234"}, id="toolu_1")),
        text("Shipped."),
    )

    ask_once("Where is ORD-20261234?")
    assistant = fake_anthropic.requests[1]["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "The customer asks about a license.",
                            "signature": "sig-ABC123"}
    assert assistant[1] == {"type": "redacted_thinking", "data": "opaque-redacted-data"}
    assert assistant[2]["type"] == "tool_use" and assistant[2]["input"] == {"order_code": "ORD-20261234"}


def test_requests_mark_stable_prefix_for_prompt_caching(anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("hi"))

    ask_once("hello")
    req = fake_anthropic.requests[0]
    assert req["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert req["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {t["name"] for t in req["tools"]} == {"get_order_status", "draft_reply"}
    assert req["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert req["model"] == "claude-sonnet-5-5"


# --------------------------------------------------------------------------- stop reasons

@pytest.mark.parametrize("stop,status,code", [
    ("end_turn", "ok", 0), ("stop_sequence", "ok", 0), ("max_tokens", "incomplete", 1),
    ("refusal", "incomplete", 1), ("model_context_window_exceeded", "incomplete", 1),
])
def test_stop_reasons(anthropic_env, fake_anthropic, stop, status, code):
    fake_anthropic.queue(text("partial answer", stop_reason=stop))

    _, b, _ = ask_once("Where is ORD-20261234?")
    r = b.result()
    assert (r["status"], r["stop_reason"], b.exit_code) == (status, stop, code)
    if status != "ok":
        assert r["error"]  # a person sees why


@pytest.mark.parametrize("stop", ["max_tokens", "refusal"])
def test_tool_use_in_a_cut_or_refused_response_never_runs(anthropic_env, fake_anthropic, drafts_dir, stop):
    fake_anthropic.queue(message(
        tool_use_block("draft_reply", {"text": "We refunded you."}, id="toolu_cut"),
        stop_reason=stop))

    conv, b, events = ask_once("Customer wants a refund for ORD-20261234")
    assert not [e for e in events if isinstance(e, (ToolCallStarted, ToolResult))]
    assert not drafts_dir.exists()  # no draft: the folder is made by the first save
    assert b.exit_code == 1
    # The history stays valid for a follow-up: the unrun tool_use is answered.
    last = conv.history[-1]
    assert last["role"] == "user" and last["content"][0]["tool_use_id"] == "toolu_cut"
    assert last["content"][0]["is_error"] is True


def test_pause_turn_sends_the_message_back_and_continues(anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("Working on it…", stop_reason="pause_turn"), text("Done."))

    _, b, _ = ask_once("hello")
    assert len(fake_anthropic.requests) == 2
    msgs = fake_anthropic.requests[1]["messages"]
    assert msgs[-1]["role"] == "assistant" and msgs[-1]["content"][0]["text"] == "Working on it…"
    assert b.result()["status"] == "ok" and b.result()["turns"] == 2


def test_turn_limit_stops_with_exit_1_and_valid_history(anthropic_env, fake_anthropic):
    fake_anthropic.handler = lambda req: message(
        tool_use_block("get_order_status", {"order_code": "ORD-20261234"}))

    conv, b, _ = ask_once("loop forever", max_turns=3)
    r = b.result()
    assert len(fake_anthropic.requests) == 3
    assert (r["status"], r["stop_reason"], r["turns"], b.exit_code) == ("incomplete", "turn_limit", 3, 1)
    assert "max-turns" in r["error"]
    uses = [blk["id"] for m in conv.history if m["role"] == "assistant" for blk in m["content"]
            if blk["type"] == "tool_use"]
    answered = [blk["tool_use_id"] for m in conv.history if m["role"] == "user" and isinstance(m["content"], list)
                for blk in m["content"] if blk["type"] == "tool_result"]
    assert uses == answered and len(uses) == 3


# --------------------------------------------------------------------------- tool failures

def test_wrong_typed_input_is_an_error_result_and_the_loop_goes_on(anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN", "include_line_items": "yes"}),
                tool_use_block("get_order_status", {"order_code": 12345}),
                tool_use_block("get_order_status", {}),
                tool_use_block("get_order_status", {"order_code": "'; DROP TABLE orders; --"}),
                tool_use_block("draft_reply", {"text": ["not", "a", "string"]})),
        text("Sorry, let me retry."),
    )

    _, b, _ = ask_once("GH56JK78MN?")
    results = tool_results(fake_anthropic.requests[1])
    assert len(results) == 5 and all(r["is_error"] for r in results)
    assert "boolean" in results[0]["content"]
    assert "string" in results[1]["content"]
    assert "missing" in results[2]["content"]
    assert "not a valid order code" in results[3]["content"]
    assert "ORD-20261234" in results[3]["content"]  # tells the model the right format
    for r in results:
        assert "Traceback" not in r["content"] and "SELECT" not in r["content"]
    assert b.result()["status"] == "ok"
    assert [c["outcome"] for c in b.result()["tool_calls"]] == ["invalid_input"] * 5


def test_unknown_order_is_a_business_answer_not_an_error(anthropic_env, fake_anthropic):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "ZZ99ZZ99ZZ"})), text("Not found."))

    _, b, _ = ask_once("ZZ99ZZ99ZZ?")
    (res,) = tool_results(fake_anthropic.requests[1])
    assert not res.get("is_error")
    assert json.loads(res["content"]) == {"found": False, "order_code": "ZZ99ZZ99ZZ"}
    assert b.result()["tool_calls"][0]["outcome"] == "not_found"


def test_tool_timeout_is_cancelled_and_reported(anthropic_env, fake_anthropic, demo_db):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})), text("Slow."))
    store = SlowStore(demo_db, delay=1.0)

    _, b, _ = ask_once("GH56JK78MN?", store=store, tool_timeout=0.1)
    (res,) = tool_results(fake_anthropic.requests[1])
    assert res["is_error"] is True and "timed out" in res["content"]
    assert b.result()["tool_calls"][0]["outcome"] == "timeout"
    # the loop ended its turn, but the lookup never answered: a person must look (issue 15)
    assert b.result()["status"] == "incomplete" and b.result()["stop_reason"] == "lookup_failed"


def test_read_only_calls_of_one_turn_run_concurrently(anthropic_env, fake_anthropic, demo_db):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_1"),
                tool_use_block("get_order_status", {"order_code": "ORD-20261234"}, id="toolu_2")),
        text("Both checked."))
    store = SlowStore(demo_db, delay=0.3)

    _, _, events = ask_once("GH56JK78MN and ORD-20261234?", store=store)
    kinds = [type(e).__name__ for e in events if isinstance(e, (ToolCallStarted, ToolResult))]
    # Both calls started before either finished: they overlapped.
    assert kinds == ["ToolCallStarted", "ToolCallStarted", "ToolResult", "ToolResult"]
    assert [r["tool_use_id"] for r in tool_results(fake_anthropic.requests[1])] == ["toolu_1", "toolu_2"]


def test_draft_calls_run_in_order_and_identical_text_is_one_draft(anthropic_env, fake_anthropic, drafts_dir):
    fake_anthropic.queue(
        message(tool_use_block("draft_reply", {"text": "Hello A", "order_code": "GH56JK78MN"}, id="t1"),
                tool_use_block("draft_reply", {"text": "Hello B"}, id="t2"),
                tool_use_block("draft_reply", {"text": "Hello A", "order_code": "GH56JK78MN"}, id="t3")),
        text("Saved."))

    _, b, events = ask_once("draft it")
    started = [e.id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["t1", "t2", "t3"]
    results = [json.loads(r["content"]) for r in tool_results(fake_anthropic.requests[1])]
    assert results[0]["draft_id"] == results[2]["draft_id"] != results[1]["draft_id"]
    assert all(r["status"] == "pending_review" for r in results)
    assert len(list(drafts_dir.glob("d-*.md"))) == 2
    saved = [e for e in events if isinstance(e, DraftSaved)]
    assert [s.created for s in saved] == [True, True, False]
    assert len(b.result()["drafts"]) == 2


# --------------------------------------------------------------------------- broken streams

def _events_until_first_input_delta(reply) -> int:
    evs = stream_events(reply)
    for i, (name, data) in enumerate(evs):
        if name == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            return i + 1
    raise AssertionError("no input delta")


def test_stream_dropped_after_tool_use_started_runs_nothing_and_retries(anthropic_env, fake_anthropic, drafts_dir):
    reply = message(tool_use_block("draft_reply", {"text": "We will refund you."}))
    cut = message(tool_use_block("draft_reply", {"text": "We will refund you."}),
                  drop_after=_events_until_first_input_delta(reply))
    fake_anthropic.queue(cut, text("Sorry, I cannot promise that."))

    async def go():
        app = make_app()
        conv = app.conversation()
        conv.retry_base_delay = 0.01  # the retry is counted, not its backoff (0.5 s)
        try:
            return await ask(app, "refund?", conv=conv)
        finally:
            await app.aclose()

    _, b, events = run(go())
    assert not [e for e in events if isinstance(e, ToolCallStarted)]
    assert not drafts_dir.exists()  # no draft: the folder is made by the first save
    assert [e.attempt for e in events if isinstance(e, Retry)] == [2]
    assert b.result()["status"] == "ok" and b.exit_code == 0
    assert len(fake_anthropic.requests) == 2
    assert fake_anthropic.requests[0]["messages"] == fake_anthropic.requests[1]["messages"]


@pytest.mark.parametrize("fault", [{"omit_message_stop": True}, {"malformed_after": 4},
                                   {"stream_error": ("overloaded_error", "Overloaded")}])
def test_broken_stream_after_retries_is_exit_4_and_nothing_runs(anthropic_env, fake_anthropic, fault):
    fake_anthropic.handler = lambda req: message(
        tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}), **fault)

    async def go():
        app = make_app(retries=1)
        app.provider  # noqa: B018
        conv = app.conversation()
        conv.retry_base_delay = 0.01
        try:
            return await ask(app, "GH56JK78MN?", conv=conv)
        finally:
            await app.aclose()

    conv, b, events = run(go())
    assert not [e for e in events if isinstance(e, ToolCallStarted)]
    assert len(fake_anthropic.requests) == 2  # one try + one retry
    r = b.result()
    assert r["status"] == "error" and b.exit_code == 4 and r["error"]
    assert r["tool_calls"] == []


def test_stalled_stream_times_out_and_is_retried(anthropic_env, fake_anthropic):
    fake_anthropic.queue(message(text_block("Let me ch"), stall_after=3, stall_seconds=5), text("Done."))

    async def go():
        app = make_app(request_timeout=0.3)
        conv = app.conversation()
        conv.retry_base_delay = 0.01
        try:
            return await ask(app, "hi", conv=conv)
        finally:
            await app.aclose()

    _, b, events = run(go())
    assert any(isinstance(e, Retry) for e in events)
    assert b.result()["answer"] == "Done." and b.exit_code == 0


# --------------------------------------------------------------------------- conversation state

def test_follow_up_question_carries_the_first_exchange(anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_x")),
        text("Payment not matched."),
        text("Shorter: unpaid."),
    )

    async def go():
        app = make_app()
        try:
            conv, _, _ = await ask(app, "GH56JK78MN?")
            return await ask(app, "make it shorter", conv=conv)
        finally:
            await app.aclose()

    run(go())
    msgs = fake_anthropic.requests[2]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[-1]["content"][0]["text"] == "make it shorter"


def test_cancel_mid_tool_leaves_valid_history_and_next_question_works(anthropic_env, fake_anthropic, demo_db, home):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_slow")),
                         text("Next answer."))
    store = SlowStore(demo_db, delay=2.0)

    async def go():
        app = make_app(store=store)
        conv = app.conversation()
        seen = []

        def on_event(e):
            seen.append(e)
            if isinstance(e, ToolCallStarted):
                task.cancel()

        task = asyncio.ensure_future(app.run(conv, "GH56JK78MN?", [on_event]))
        with pytest.raises(asyncio.CancelledError):
            await task
        b = await app.run(conv, "and now?", [])
        await app.aclose()
        return conv, b

    conv, b = run(go())
    second = fake_anthropic.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    res = second[2]["content"][0]
    assert res["type"] == "tool_result" and res["tool_use_id"] == "toolu_slow" and res["is_error"]
    assert second[2]["content"][-1] == {"type": "text", "text": "and now?",
                                        "cache_control": {"type": "ephemeral"}}
    assert b.result()["answer"] == "Next answer."
    log = list(read_events(home / "sessions" / f"{conv.session_id}.jsonl"))
    assert any(e["type"] == "cancelled" for e in log)


def test_cancel_during_model_request_rolls_the_question_back(anthropic_env, fake_anthropic):
    fake_anthropic.latency = 2.0
    fake_anthropic.queue(text("never seen"))

    async def go():
        app = make_app()
        conv = app.conversation()
        task = asyncio.ensure_future(app.run(conv, "first", []))
        deadline = time.monotonic() + 20  # a hang guard only
        while not fake_anthropic.requests:  # at the server, which holds it for 2 s: in flight
            assert time.monotonic() < deadline and not task.done(), "the request never arrived"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await app.aclose()
        return conv

    conv = run(go())
    assert conv.history == []


def test_session_log_holds_every_tool_call(anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "ORD-20261234"})),
                         text("Shipped."))

    conv, _, _ = ask_once("ORD-20261234?")
    path = home / "sessions" / f"{conv.session_id}.jsonl"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    events = list(read_events(path))
    types = [e["type"] for e in events]
    assert types[0] == "session_start" and "question" in types and types[-1] == "checked" and "turn_finished" in types
    (tr,) = [e for e in events if e["type"] == "tool_result"]
    assert tr["name"] == "get_order_status" and tr["input"] == {"order_code": "ORD-20261234"}
    assert tr["result"]["status"] == "shipped" and tr["is_error"] is False
    assert isinstance(tr["duration_ms"], float)
    assert "sk-ant" not in path.read_text()


def test_api_failure_rolls_back_an_unanswered_question(anthropic_env, fake_anthropic):
    from agentcli.testing.fake_anthropic import error

    fake_anthropic.queue(error(401, "bad key"), text("Second works."))

    async def go():
        app = make_app(retries=0)
        try:
            conv, b1, _ = await ask(app, "first")
            assert b1.exit_code == 4 and conv.history == []
            return await ask(app, "second", conv=conv)
        finally:
            await app.aclose()

    _, b2, _ = run(go())
    assert b2.result()["answer"] == "Second works."
    assert [m["content"][0]["text"] for m in fake_anthropic.requests[1]["messages"]] == ["second"]


@pytest.mark.parametrize("status", [429, 529, 500, 503])
def test_retryable_http_errors_are_retried_honouring_retry_after(anthropic_env, fake_anthropic, status):
    from agentcli.testing.fake_anthropic import error

    fake_anthropic.queue(error(status, "busy", headers={"retry-after": "0.2"}), text("Recovered."))

    async def go():
        app = make_app(retries=2)
        try:
            t0 = time.monotonic()
            out = await ask(app, "hi")
            return out, time.monotonic() - t0
        finally:
            await app.aclose()

    (_, b, events), elapsed = run(go())
    assert b.result()["answer"] == "Recovered." and b.exit_code == 0
    assert len(fake_anthropic.requests) == 2
    # the wait is the server's retry-after (what is left of it), not the loop's own backoff of
    # 0.5 s +-25 %; and it was waited: a sleep never ends early, so this lower bound holds on
    # any machine (it is no timing goal)
    (retry,) = [e for e in events if isinstance(e, Retry)]
    assert 0 < retry.wait_s <= 0.2 and "busy" in retry.reason
    assert elapsed >= 0.2


def test_retries_zero_means_one_attempt(anthropic_env, fake_anthropic):
    from agentcli.testing.fake_anthropic import error

    fake_anthropic.queue(error(529, "overloaded"), text("never"))

    _, b, _ = ask_once("hi", retries=0)
    assert b.exit_code == 4 and len(fake_anthropic.requests) == 1
    assert "overloaded" in b.result()["error"]


def test_a_repeated_tool_use_id_does_not_merge_calls_in_the_record(anthropic_env, fake_anthropic, drafts_dir):
    # The API never repeats an id; a model server that does must not make --json misreport.
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_same"),
                tool_use_block("get_order_status", {"order_code": "ORD-20261234"}, id="toolu_same"),
                tool_use_block("draft_reply", {"text": "Hello, we are on it."}, id="toolu_same")),
        text("Done."))
    _, builder, _ = ask_once("two orders and a draft")
    calls = builder.result()["tool_calls"]
    by_name = sorted(calls, key=lambda c: (c["name"], c["input"].get("order_code") or ""))
    assert [(c["name"], c["input"].get("order_code")) for c in by_name] == [
        ("draft_reply", None), ("get_order_status", "GH56JK78MN"), ("get_order_status", "ORD-20261234")]
    assert [c["result"].get("status") for c in by_name[1:]] == ["pending_payment", "shipped"]
    # the draft shared the lookups' response: refused (by position, not by the repeated id)
    assert by_name[0]["is_error"] and by_name[0]["result"].startswith("not saved")


def test_lone_surrogates_from_the_model_become_replacement_characters(anthropic_env, fake_anthropic, drafts_dir):
    # Legal JSON ("\ud800"), impossible to encode: it must neither kill the draft nor the next
    # request. (Streamed, the SDK's own accumulator refuses it inside tool input: a broken
    # stream, retried; whole responses reach us.)
    fake_anthropic.queue(
        message(text_block("Checking \ud800."),
                tool_use_block("draft_reply", {"text": "Hello \ud800 there.", "order_code": "GH56JK78MN"})),
        text("Saved."))
    _, builder, _ = ask_once("draft a reply", stream=False)
    res = builder.result()
    assert res["status"] == "ok" and res["answer"].endswith("Saved.")
    assert res["tool_calls"][0]["result"]["status"] == "pending_review"
    (draft,) = drafts_dir.glob("*.md")
    assert "Hello \ufffd there." in draft.read_text()
    assert fake_anthropic.requests[1]["messages"][1]["content"][0]["text"] == "Checking \ufffd."
