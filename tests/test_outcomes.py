"""Honest outcomes (issue 15 items 2-3, 5): the grounding checks run after every question over the
whole ticket; their findings go to --json (`checks`), batch records, the session log and the
ticket's live draft; a question a person must look at is "incomplete" (exit 1) with a stop_reason
that says why: draft_not_saved, lookup_failed or grounding. Real tools, a real SQLite database,
real draft files; the model is scripted in-process (or the real SDK against the fake server)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.drafts.store import DraftStore
from agentcli.errors import StoreError
from agentcli.events import Checked
from agentcli.stores.sqlite import SQLiteStore
from agentcli.testing.fake_anthropic import text
from agentcli.testing.scripted import Reply, ScriptedProvider
from agentcli.tools import default_registry

LOOKUP_GH = ("get_order_status", {"order_code": "GH56JK78MN"})
GOOD_DRAFT = ("Hello, your order GH56JK78MN is waiting for payment: we have not yet matched your "
              "payment. A colleague is checking it.")


@pytest.fixture(autouse=True)
def _env(cli_env):
    return cli_env


def ask(replies, question, *, store=None, conv_questions=(), **settings):
    """Run QUESTION (after CONV_QUESTIONS, same ticket) through App.run; (builders, events, app dir)."""
    async def go():
        app = App.open(resolve(provider="offline", **settings), registry=default_registry(), store=store)
        app.provider = ScriptedProvider(replies)
        conv = app.conversation()
        events, builders = [], []
        for q in [*conv_questions, question]:
            builders.append(await app.run(conv, q, [events.append]))
        await app.aclose()
        return builders, events

    return asyncio.run(go())


def kinds(res):
    return {c["kind"] for c in res["checks"]}


# ----------------------------------------------------------------------------- grounding
def test_claims_without_any_lookup_and_an_invented_draft_id_are_incomplete():
    b, events = ask([Reply("I looked up GH56JK78MN: it has shipped. I saved draft d-1234abcd5678.")],
                    "where is GH56JK78MN")
    res = b[-1].result()
    assert res["status"] == "incomplete" and res["stop_reason"] == "grounding"
    assert b[-1].exit_code == 1
    assert {"unsupported_claim", "unknown_draft_id"} <= kinds(res)
    assert all(c["severity"] in ("error", "warning") and c["message"] for c in res["checks"])
    assert any(isinstance(e, Checked) for e in events)


def test_a_draft_about_an_order_never_looked_up_is_flagged_and_stored_on_the_draft(drafts_dir):
    bad = "Your order ORD-20261234 has shipped and GH56JK78MN is waiting for payment."
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[("draft_reply", {"text": bad})]), Reply("Drafted.")],
               "where are GH56JK78MN and ORD-20261234")
    res = b[-1].result()
    assert res["status"] == "incomplete" and "unsupported_claim" in kinds(res)
    did = res["drafts"][0]["id"]
    stored = DraftStore(drafts_dir).get(did).meta["findings"]
    assert stored and all(f["where"] == did for f in stored)
    assert any(f.get("order_code") == "ORD-20261234" for f in stored)


def test_a_refund_promise_in_a_draft_is_incomplete(drafts_dir):
    b, _ = ask([Reply(calls=[LOOKUP_GH]),
                Reply(calls=[("draft_reply", {"text": "Sorry! We will issue a full refund today."})]),
                Reply("Drafted.")], "GH56JK78MN: I want my money back")
    res = b[-1].result()
    assert res["status"] == "incomplete" and "forbidden_promise" in kinds(res)


@pytest.mark.parametrize("answer", [
    "I've sent the customer a reply.", "I replied to the customer.", "Message sent to the customer.",
    "I have emailed the customer about GH56JK78MN.", "Ich habe die Antwort an den Kunden geschickt.",
])
def test_an_answer_that_says_a_reply_was_sent_is_incomplete_even_beside_a_saved_draft(drafts_dir, answer):
    """Nothing is ever sent: a draft waits for review, so "sent" is false whatever was saved."""
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[("draft_reply", {"text": GOOD_DRAFT})]), Reply(answer)],
               "where is GH56JK78MN")
    res = b[-1].result()
    assert res["drafts"] and res["status"] == "incomplete" and "claims_sent" in kinds(res)


@pytest.mark.parametrize("answer", [
    "I saved a draft reply for review; nothing was sent.", "Once you approve it, you can send the reply.",
    "Should I email the customer?", "The customer sent a message about GH56JK78MN.", "I have not sent anything yet.",
])
def test_an_answer_about_sending_that_claims_none_stays_ok(drafts_dir, answer):
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[("draft_reply", {"text": GOOD_DRAFT})]), Reply(answer)],
               "where is GH56JK78MN")
    assert "claims_sent" not in kinds(b[-1].result())


def test_a_grounded_answer_stays_ok_with_no_findings(drafts_dir):
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[("draft_reply", {"text": GOOD_DRAFT})]),
                Reply("GH56JK78MN is waiting for payment; I saved a draft for review.")],
               "where is GH56JK78MN")
    res = b[-1].result()
    assert res["status"] == "ok" and res["stop_reason"] == "end_turn" and res["checks"] == []
    did = res["drafts"][0]["id"]
    assert not DraftStore(drafts_dir).get(did).meta.get("findings")


def test_warnings_are_listed_but_leave_ok():
    b, _ = ask([Reply(calls=[LOOKUP_GH]),
                Reply("GH56JK78MN is waiting for payment; a colleague will reply within 2 days.")],
               "where is GH56JK78MN")
    res = b[-1].result()
    assert res["status"] == "ok" and b[-1].exit_code == 0
    assert [c["severity"] for c in res["checks"]] == ["warning"] and kinds(res) == {"unconfirmed_date"}


@pytest.mark.parametrize("answer", [
    "GH56JK78MN is waiting for payment. " * 600,                       # beyond the 20,000 read
    "GH56JK78MN is waiting for payment. " + "\ufdfa" * 2000,            # NFKC makes it longer
])
def test_an_answer_the_checks_could_not_read_whole_is_never_ok(drafts_dir, answer):
    """What was not read may say anything: a not_fully_checked text is incomplete, exit 1."""
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(answer)], "where is GH56JK78MN")
    res = b[-1].result()
    assert "not_fully_checked" in kinds(res)
    assert res["status"] == "incomplete" and res["stop_reason"] == "grounding" and b[-1].exit_code == 1
    assert "not_fully_checked" in res["error"]


def test_the_whole_ticket_is_checked_not_only_the_last_question():
    """A lookup in the first question grounds a claim in the second."""
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply("Found it."),
                Reply("GH56JK78MN is waiting for payment to be matched.")],
               "and what is its status?", conv_questions=["where is GH56JK78MN"])
    assert b[-1].result()["status"] == "ok" and b[-1].result()["checks"] == []


# ----------------------------------------------------------------------------- our side failed
def test_a_draft_that_could_not_be_saved_is_incomplete(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the drafts folder should be (root can write anywhere)
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[("draft_reply", {"text": GOOD_DRAFT})]),
                Reply("GH56JK78MN is waiting for payment.")], "where is GH56JK78MN",
               drafts_dir=blocker / "drafts")
    res = b[-1].result()
    assert res["status"] == "incomplete" and res["stop_reason"] == "draft_not_saved"
    assert res["drafts"] == [] and "draft_not_saved" in kinds(res) and b[-1].exit_code == 1


class FlakyStore(SQLiteStore):
    """The real SQLite store whose first FAIL lookups fail as an unavailable database would."""

    def __init__(self, path, fail):
        super().__init__(path)
        self.fail = fail
        self.lock = threading.Lock()

    def lookup(self, *a, **kw):
        with self.lock:
            self.fail -= 1
            if self.fail >= 0:
                raise StoreError("orders database error (OperationalError)")
        return super().lookup(*a, **kw)


class SlowStore(SQLiteStore):
    inline = False

    def lookup(self, *a, **kw):
        time.sleep(0.5)
        return super().lookup(*a, **kw)


def test_lookups_failed_on_our_side_are_incomplete(demo_db):
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply("I could not reach the order system right now.")],
               "where is GH56JK78MN", store=FlakyStore(demo_db, 99))
    res = b[-1].result()
    assert res["status"] == "incomplete" and res["stop_reason"] == "lookup_failed"
    assert "GH56JK78MN" in res["error"] and b[-1].exit_code == 1


def test_a_timed_out_lookup_is_incomplete(demo_db):
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply("The lookup timed out.")], "where is GH56JK78MN",
               store=SlowStore(demo_db), tool_timeout=0.05)
    res = b[-1].result()
    assert res["tool_calls"][0]["outcome"] == "timeout"
    assert res["status"] == "incomplete" and res["stop_reason"] == "lookup_failed"


def test_a_later_successful_lookup_of_the_same_order_makes_it_ok(demo_db):
    b, _ = ask([Reply(calls=[LOOKUP_GH]), Reply(calls=[LOOKUP_GH]),
                Reply("GH56JK78MN is waiting for payment.")], "where is GH56JK78MN",
               store=FlakyStore(demo_db, 1))
    res = b[-1].result()
    assert [c["outcome"] for c in res["tool_calls"]] == ["tool_error", "ok"]
    assert res["status"] == "ok" and res["checks"] == []


def test_an_invalid_input_the_model_moved_past_is_not_incomplete():
    b, _ = ask([Reply(calls=[("get_order_status", {"order_code": "GH56"})]), Reply(calls=[LOOKUP_GH]),
                Reply("GH56JK78MN is waiting for payment.")], "where is GH56JK78MN")
    res = b[-1].result()
    assert res["tool_calls"][0]["outcome"] == "invalid_input"
    assert res["status"] == "ok" and res["checks"] == []


def test_not_found_after_only_invalid_lookups_is_a_false_not_found():
    b, _ = ask([Reply(calls=[("get_order_status", {"order_code": "GH56"})]),
                Reply("I could not find an order GH56JK78MN.")], "where is GH56JK78MN")
    res = b[-1].result()
    assert res["status"] == "incomplete" and "false_not_found" in kinds(res)


# ----------------------------------------------------------------------------- the command line
def test_cli_json_trace_exit_code_and_log_show(cli, anthropic_env, fake_anthropic):
    # each answer said twice: again after the findings went back (the repair turn)
    fake_anthropic.queue(*[text("I looked up GH56JK78MN: it has shipped. I saved draft d-1234abcd5678.")] * 2)
    p = cli(["ask", "--json", "where is GH56JK78MN"], anthropic_env)
    assert p.returncode == 1, p.err
    res = json.loads(p.out)
    assert res["status"] == "incomplete" and res["stop_reason"] == "grounding" and res["checks"]
    # a person on a pipe: the answer on stdout, each finding as one ⚑ line on stderr
    fake_anthropic.queue(*[text("I looked up GH56JK78MN: it has shipped.")] * 2)
    p = cli(["ask", "where is GH56JK78MN"], anthropic_env)
    assert p.returncode == 1 and "⚑" not in p.out
    flags = [ln for ln in p.err.splitlines() if ln.startswith("⚑ grounding: unsupported_claim")]
    assert len(flags) == 1 and "incomplete (grounding)" in p.err
    # the session log keeps the findings, and log show replays them
    p = cli(["log", "show", "last"], anthropic_env)
    assert p.returncode == 0 and "⚑ grounding: unsupported_claim" in p.out + p.err
    p = cli(["log", "list", "--json"], anthropic_env)
    assert json.loads(p.out)[0]["status"] == "incomplete"


def test_hostile_finding_text_reaches_the_terminal_cleaned(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(*[text("Order GH56JK78MN has shipped \x1b]0;pwned\x07[bold red]x[/] \u2028 today.")] * 2)
    p = cli(["ask", "where is GH56JK78MN"], anthropic_env)
    assert p.returncode == 1 and "\x1b" not in p.err and "\x07" not in p.err and "\u2028" not in p.err


def test_batch_records_carry_checks_and_the_summary_counts_them(cli, cli_env, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text("\n".join(json.dumps({"id": i, "question": q}) for i, q in
                            enumerate(["where is GH56JK78MN", "where is ORD-20261234"])) + "\n")
    p = cli(["batch", "--provider", "offline", str(qs)], cli_env)
    assert p.returncode == 0, p.err
    recs = [json.loads(ln) for ln in p.out.splitlines()]
    assert all(r["checks"] == [] and r["status"] == "ok" for r in recs)
    assert "grounding checks: 0 flagged, 0 ok with warnings" in p.err


def test_batch_summary_line_counts_grounding_apart():
    from agentcli.batch.engine import Summary

    s = Summary()
    s.add({"status": "ok", "checks": []}, 0)
    s.add({"status": "ok", "checks": [{"severity": "warning"}]}, 0)
    s.add({"status": "incomplete", "stop_reason": "grounding", "checks": [{"severity": "error"}]}, 1)
    s.add({"status": "incomplete", "stop_reason": "turn_limit", "checks": []}, 1)
    line = s.line()
    assert "2 ok" in line and "2 incomplete" in line
    assert "grounding checks: 1 flagged, 1 ok with warnings" in line


# ----------------------------------------------------------------------------- false alarms
def test_no_false_findings_over_the_demo_orders_and_the_eval_cases(tmp_path, demo_db):
    """The offline workflow over every sample order (each alone, and two at a time, with and
    without the right customer) and over the built-in eval cases: no finding at all."""
    import sqlite3

    from agentcli import evals

    with sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True) as c:
        rows = c.execute("SELECT code, customer_email FROM orders ORDER BY code LIMIT 60").fetchall()
    questions = [(f"Where is my order {code}?", None) for code, _ in rows]
    questions += [(f"Status of {a[0]} and {b[0]} please", None) for a, b in zip(rows[::2], rows[1::2])]
    questions += [(f"hi, any news on {code.lower()}? it's been a week", email) for code, email in rows[:20]]
    questions += [(f"{rows[0][0]} is mine, what about {rows[1][0]}?", rows[0][1])]
    questions += [(case.question, case.customer) for case in evals.builtin_cases() if not case.needs_model]

    async def go():
        app = App.open(resolve(provider="offline", drafts_dir=tmp_path / "d"), registry=default_registry())
        out = []
        for q, customer in questions:
            conv = app.conversation(customer=customer)
            b = await app.run(conv, q, [])
            app.close_conversation(conv)
            out.append((q, b.result()))
        await app.aclose()
        return out

    results = asyncio.run(go())
    assert len(results) >= 100
    # The one planted detail (ORD-20269999's status_detail asks to promise a refund) is quoted in
    # the staffer's summary: told as a warning (issue 23 item 2), never in the customer's draft.
    planted = [(q, r) for q, r in results if "ORD-20269999" in r["answer"]]
    assert planted and all({(c["kind"], c["severity"], c["where"]) for c in r["checks"]} ==
                           {("quoted_promise", "warning", "answer")} and r["status"] == "ok" for _, r in planted)
    flagged = [(q, r["checks"]) for q, r in results if r["checks"] and "ORD-20269999" not in r["answer"]]
    assert flagged == []


def test_an_empty_answer_with_no_draft_is_not_ok(cli, openai_env, fake_openai):
    """llama-cpp-python's server answers some turns with content "" and finish stop: the staffer
    got nothing, so the question is not "ok"."""
    from agentcli.testing.fake_openai import completion, tool_call

    fake_openai.queue(completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"})),
                      completion(content=""), completion(content=""))  # streamed, then asked again
    p = cli(["ask", "--json", "Why does order GH56JK78MN have no license yet?"], openai_env)
    r = json.loads(p.out)
    assert p.returncode == 1, p.err
    assert (r["status"], r["stop_reason"]) == ("incomplete", "no_answer")
    fake_openai.queue(completion(content="It is waiting for its payment to be matched."))
    p = cli(["ask", "--json", "Why does order GH56JK78MN have no license yet?"], openai_env)
    assert p.returncode == 0 and json.loads(p.out)["status"] == "ok"


def test_a_content_free_stream_is_asked_again_without_streaming(cli, openai_env, fake_openai):
    """A 200 stream whose choices carry nothing (llama-cpp-python failing after its 200): asked
    once more without streaming, with a notice on the trace."""
    from agentcli.testing.fake_openai import completion

    fake_openai.queue(completion(content=""), completion(content="It is waiting for its payment."))
    p = cli(["ask", "Why does order GH56JK78MN have no license yet?"], openai_env)
    assert p.returncode == 0, p.err
    assert p.out.strip() == "It is waiting for its payment."
    assert "empty stream" in p.err and "without streaming" in p.err
    first, again = fake_openai.requests
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    # asked again for one JSON response: the provider leaves streaming out (no "stream" key at
    # all, not "stream": false), with the very same conversation
    assert "stream" not in again and "stream_options" not in again
    assert again["messages"] == first["messages"] and again["tools"] == first["tools"]


@pytest.mark.parametrize("answer", ["\u200b", "\x1b[0m", "\x1b[31m\x1b[0m", "\u2800", "\u3164", "-", " \u00ad\u2060 ",
                                    "\u200b-\u200b", "\ufeff", "\u2014", "\u115f\u1160"],
                         ids=["zwsp", "esc", "escs", "braille-blank", "hangul-filler", "dash", "soft-hyphen",
                              "zwsp-dash", "bom", "em-dash", "hangul-fillers"])
def test_an_answer_with_no_visible_letter_or_digit_is_no_answer(answer):
    """Issue 23 item 6: an answer a person cannot read anything in is not "ok"."""
    b, _ = ask([Reply(answer)], "where is GH56JK78MN")
    res = b[-1].result()
    assert (res["status"], res["stop_reason"]) == ("incomplete", "no_answer"), res


def test_an_answer_of_one_digit_or_letter_is_an_answer():
    b, _ = ask([Reply("\u200b7\u200b")], "how many licenses does a team have?")
    assert b[-1].result()["stop_reason"] != "no_answer"
