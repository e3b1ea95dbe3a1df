"""``agentcli batch``: input detection, input-order output under concurrency, --output/--resume
after a kill, per-question isolation, exit codes, progress on a terminal.

The real console script runs as a subprocess against the fake Messages API (real SDK, real HTTP),
the two batches killed and resumed against the fake Chat Completions server (the openai SDK loads
in ~0.95 s of CPU against anthropic's ~1.6 s; the kill is the point there), the demo SQLite
database and real draft / session files. A few tests drive ``BatchRunner``
in-process with a real ``App`` where a subprocess could not observe the property (lazy input).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentcli.batch.engine import BatchRunner, read_done
from agentcli.batch.input import Item, id_key, parse_line
from agentcli.testing.fake_anthropic import error, message, text, tool_results, tool_use_block

from .conftest import user_texts

# A long file (batches killed and resumed, concurrency):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

TEST_KEY = "sk-ant-test-0123456789abcdefSECRET"  # the key conftest's anthropic_env sets


def agentcli_exe() -> str:
    import shutil

    exe = Path(sys.executable).parent / "agentcli"
    return str(exe) if exe.exists() else shutil.which("agentcli")


CODES = ["GH56JK78MN", "ORD-20261234", "ORD-20260001", "KL12MN34PQ", "ORD-20265555",
         "RF98ZX76CV", "CN11CN22CN", "ORD-20269999"]
CODE_RE = re.compile(r"\b(ORD-\d{8}|[A-Z0-9]{10})\b")
NO_RETRY = {"x-should-retry": "false"}


def first_question(req: dict) -> str:
    (text,) = user_texts(req["messages"][0])
    return text


def scenario(delays: dict[str, float] | None = None, special=None):
    """Two turns per question: get_order_status on the code in the question, then an answer that
    repeats the question's code and the status the tool returned."""

    def handler(req: dict):
        q = first_question(req)
        if special is not None:
            r = special(q, req)
            if r is not None:
                return r
        d = (delays or {}).get(q, 0.0)
        res = tool_results(req)
        if res:
            out = json.loads(res[0]["content"])
            return text(f"{out.get('order_code')}: {out.get('status', 'not found')}", delay=d)
        m = CODE_RE.search(q)
        if not m:
            return text("no order code in the question", delay=d)
        return message(tool_use_block("get_order_status", {"order_code": m.group(1)}), delay=d)

    return handler


def openai_question(req: dict) -> str:
    """``first_question`` of a Chat Completions request: its first user message."""
    return next(m["content"] for m in req["messages"] if m["role"] == "user")


def openai_scenario(delays: dict[str, float] | None = None):
    """``scenario`` in Chat Completions terms (for the fake of ``agentcli.testing.fake_openai``):
    the same two turns per question, the same texts."""
    from agentcli.testing import fake_openai as fo

    def handler(req: dict):
        q = openai_question(req)
        d = (delays or {}).get(q, 0.0)
        res = [m for m in req["messages"] if m["role"] == "tool"]
        if res:
            out = json.loads(res[0]["content"])
            return fo.text(f"{out.get('order_code')}: {out.get('status', 'not found')}", delay=d)
        m = CODE_RE.search(q)
        if not m:
            return fo.text("no order code in the question", delay=d)
        return fo.completion(fo.tool_call("get_order_status", {"order_code": m.group(1)}), delay=d)

    return handler


def records(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def first_turns(fake) -> list[str]:
    """Questions of the requests that started a question (no tool results yet)."""
    return [first_question(r) for r in list(fake.requests) if not tool_results(r)]


def no_traceback(p) -> None:
    assert "Traceback" not in p.err and "Traceback" not in p.out
    assert TEST_KEY not in p.err and TEST_KEY not in p.out


# --------------------------------------------------------------------------- input lines


def test_parse_line_detects_plain_and_jsonl_per_line():
    assert parse_line(1, "   \r\n") is None
    it = parse_line(3, "where is GH56JK78MN?\r\n")
    assert (it.id, it.question, it.customer, it.error) == (3, "where is GH56JK78MN?", None, None)
    it = parse_line(4, '{"id": "T-9", "question": "line one\\nline two", "customer": " a@b.c "}')
    assert (it.id, it.question, it.customer, it.error) == ("T-9", "line one\nline two", "a@b.c", None)
    it = parse_line(5, '{"question": "q"}')
    assert (it.id, it.error) == (5, None)  # id defaults to the line number
    for bad, why in [('{"id": 1, "question": ', "not valid JSON"),
                     ('{"id": 1}', '"question" must be a string'),
                     ('{"id": true, "question": "q"}', '"id" must be'),
                     ('{"id": 2, "question": "q", "customer": 7}', '"customer" must be'),
                     ('{"id": 2, "question": "   "}', "empty")]:
        it = parse_line(6, bad)
        assert it.error is not None and why in it.error and it.error.startswith("line 6:"), bad
    assert id_key(7) == id_key("7") and id_key("a") != id_key("b")


# --------------------------------------------------------------------------- the CLI


def test_mixed_plain_jsonl_and_malformed_lines_from_stdin(cli, anthropic_env, fake_anthropic, home):
    fake_anthropic.handler = scenario()
    data = (
        "What is the status of GH56JK78MN?\n"
        '{"id": "T-1", "question": "Customer asks about ORD-20261234", "customer": "ben.okafor@example.net"}\n'
        "\n"
        '{"id": "T-2", "question": "broken\n'
        '{"id": "T-3", "question": "Is GH56JK78MN paid?", "customer": "ben.okafor@example.net"}\n'
        '{"id": "T-4"}\n'
        "and KL12MN34PQ?\n")
    p = cli(["batch", "--concurrency", "3", "-q"], anthropic_env, input=data)
    no_traceback(p)
    recs = records(p.out)
    # a malformed line keeps its id when it has a usable one, else its line number
    assert [r["id"] for r in recs] == [1, "T-1", 4, "T-3", "T-4", 7]
    by = {r["id"]: r for r in recs}
    assert by[1]["status"] == "ok" and by[1]["answer"] == "GH56JK78MN: pending_payment"
    assert by["T-1"]["customer"] == "ben.okafor@example.net"
    assert by["T-1"]["answer"] == "ORD-20261234: shipped"
    # T-3 is another customer's order: the per-line customer scopes the lookup.
    assert by["T-3"]["tool_calls"][0]["result"] == {"found": False, "order_code": "GH56JK78MN"}
    for bad, line in ((4, 4), ("T-4", 6)):
        assert by[bad]["status"] == "error" and by[bad]["error"].startswith(f"line {line}:")
        assert by[bad]["turns"] == 0 and by[bad]["session_id"] is None
    assert by[7]["answer"] == "KL12MN34PQ: license_issued"
    # the spec's --json object plus id
    for key in ("question", "customer", "answer", "status", "stop_reason", "error", "turns",
                "tool_calls", "drafts", "usage", "provider", "model", "session_id"):
        assert all(key in r for r in recs), key
    # one session (and one session log) per question
    sids = [r["session_id"] for r in recs if r["status"] == "ok"]
    assert len(sids) == 4 == len(set(sids))
    for sid in sids:
        assert (home / "sessions" / f"{sid}.jsonl").is_file()
    assert len(first_turns(fake_anthropic)) == 4  # malformed lines never reach the model
    assert p.returncode == 1  # unusable input lines: a person must look
    assert p.err == ""  # -q: no summary line (and never a progress bar in a pipe)


def test_input_order_output_under_concurrency_and_isolated_drafts(cli, anthropic_env,
                                                                  fake_anthropic, tmp_path,
                                                                  drafts_dir):
    """The server answers in a shuffled order (first questions slowest); stdout keeps the input
    order, --output gets completion order. Every question also drafts the SAME reply text at the
    same time: each ticket still gets its own draft."""
    same_text = "Hello, we are looking into your order. Best regards"
    qs = [f"q{i}: where is {CODES[i % len(CODES)]}?" for i in range(8)]
    delays = {q: 0.04 * (8 - i) for i, q in enumerate(qs)}
    # The first question goes alone until its first answer (the rate-limit gate learns the
    # limit before the fan-out): slow enough that it still ends last.
    delays[qs[0]] = 0.6

    def with_draft(q, req):
        code = CODE_RE.search(q).group(1)
        n = len(req["messages"])
        if n == 1:
            return None  # the lookup first: a draft beside it would be refused
        if n == 3:
            return message(tool_use_block("draft_reply", {"text": same_text, "order_code": code}),
                           delay=delays[q])
        return text(f"{code}: drafted", delay=delays[q])

    fake_anthropic.handler = scenario(delays, special=with_draft)
    f = tmp_path / "q.txt"
    f.write_text("\n".join(qs) + "\n")
    out = tmp_path / "records.jsonl"
    p = cli(["batch", str(f), "--concurrency", "8", "--output", str(out)], anthropic_env)
    no_traceback(p)
    assert p.returncode == 0, p.err
    recs = records(p.out)
    assert [r["id"] for r in recs] == list(range(1, 9))
    for i, r in enumerate(recs):  # each record carries its own question's answer
        assert r["question"] == qs[i]
        assert r["answer"].startswith(CODES[i % len(CODES)] + ":")
        assert r["tool_calls"][0]["input"] == {"order_code": CODES[i % len(CODES)]}
    # --output got them as they completed: not the input order.
    file_ids = [r["id"] for r in records(out.read_text())]
    assert sorted(file_ids) == list(range(1, 9)) and file_ids != list(range(1, 9))
    assert file_ids[-1] == 1  # the slowest question finished last
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    # identical draft text from eight tickets at once: eight drafts, each naming its own ticket
    draft_ids = [r["drafts"][0]["id"] for r in recs]
    assert len(set(draft_ids)) == 8 == len(list(drafts_dir.glob("d-*.md")))
    for r in recs:
        body = (drafts_dir / Path(r["drafts"][0]["path"]).name).read_text()
        assert same_text in body and r["session_id"] in body and r["question"] in body


def test_exit_codes_and_per_question_isolation(cli, anthropic_env, fake_anthropic, tmp_path):
    def special(q, req):
        if "API-FAIL" in q:
            return error(500, "boom", headers=NO_RETRY)
        if "CUT" in q:
            return text("half an ans", stop_reason="max_tokens")
        if "LOOP" in q:  # asks for a tool on every turn
            return message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}))
        return None

    fake_anthropic.handler = scenario(special=special)
    f = tmp_path / "q.txt"

    # Every kind of outcome in one batch: the others are still answered, and an API failure
    # sets the exit code (4) over the incomplete ones (1 on their own: see the in-process test).
    f.write_text("GH56JK78MN please\nAPI-FAIL ORD-20261234\nCUT KL12MN34PQ\nLOOP\n"
                 "ORD-20260001 please\n")
    p = cli(["batch", str(f), "--concurrency", "2", "--max-turns", "2"], anthropic_env)
    no_traceback(p)
    assert p.returncode == 4
    recs = records(p.out)
    assert [r["status"] for r in recs] == ["ok", "error", "incomplete", "incomplete", "ok"]
    assert [r["stop_reason"] for r in recs] == ["end_turn", "server_error", "max_tokens",
                                                "turn_limit", "end_turn"]
    assert "500" in recs[1]["error"] and recs[1]["session_id"]
    assert recs[4]["answer"] == "ORD-20260001: delivered"
    assert "5 answered (2 ok, 2 incomplete, 1 failed)" in p.err  # the summary line
    assert "/5" not in p.err and "\x1b[" not in p.err  # no progress bar when stderr is a pipe


RESUME_QS = [f"ticket {i}: status of {CODES[i % len(CODES)]}" for i in range(20)]
SIGTERM_QS = [f"ticket {i}: status of {CODES[i % len(CODES)]}" for i in range(30)]


@pytest.fixture(scope="module")
def terminated_batches(tmp_path_factory, demo_db):
    """Two real batches, a fake API each, both started at once (their starts overlap) and each
    sent SIGTERM once it has written some records: "resume" (20 questions, 0.03 s a model call,
    at 6 records) and "sigterm" (30 questions, 0.2 s a call, at 3 records). The model is the
    openai provider's (``openai_scenario``): the signal, the records and the resume are the
    point, and its SDK loads in ~0.95 s of CPU against anthropic's ~1.6 s.
    -> {name: (process, its stderr, fake, env, question file, records file, home)}; the fakes
    stay up for the module (the resume test goes on with its own)."""
    import contextlib

    from agentcli.testing.fake_openai import FakeOpenAI

    from .conftest import clean_env

    cases = {"resume": (RESUME_QS, 0.03, "2", 6), "sigterm": (SIGTERM_QS, 0.2, "3", 3)}
    with contextlib.ExitStack() as stack:
        started, done = {}, {}
        try:
            for name, (qs, delay, concurrency, _) in cases.items():
                fake = stack.enter_context(FakeOpenAI())
                fake.handler = openai_scenario({q: delay for q in qs})
                base = tmp_path_factory.mktemp(f"batch-{name}")
                home = base / "home"
                env = clean_env(home, demo_db, AGENTCLI_DRAFTS_DIR=str(base / "drafts"),
                                COLUMNS="200", OPENAI_BASE_URL=fake.base_url, AGENTCLI_PROVIDER="openai",
                                AGENTCLI_MODEL="fake-model", AGENTCLI_RETRIES="1")
                f, out = base / "q.txt", base / "records.jsonl"
                f.write_text("\n".join(qs) + "\n")
                proc = subprocess.Popen([agentcli_exe(), "batch", str(f), "--concurrency", concurrency,
                                         "--output", str(out)], env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                started[name] = (proc, fake, env, f, out, home)
            waiting = dict(started)  # each signalled as soon as it has its records, as alone
            deadline = time.monotonic() + 20.0
            while waiting:
                for name, (proc, fake, env, f, out, home) in list(waiting.items()):
                    if out.exists() and out.read_bytes().count(b"\n") >= cases[name][3]:
                        proc.send_signal(signal.SIGTERM)
                        del waiting[name]
                    else:
                        assert proc.poll() is None, f"{name}: the batch ended before it could be killed"
                assert time.monotonic() < deadline, f"never reached their records: {sorted(waiting)}"
                time.sleep(0.02)
            for name, (proc, fake, env, f, out, home) in started.items():
                _, err = proc.communicate(timeout=20)
                done[name] = (proc, err.decode(), fake, env, f, out, home)
        finally:
            for proc, *_ in started.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        yield done


@pytest.mark.slow
def test_resume_after_a_kill_loses_nothing_and_repeats_nothing(terminated_batches, cli):
    proc, _, fake_openai, openai_env, f, out, _ = terminated_batches["resume"]
    qs = RESUME_QS
    first = records(out.read_text())
    done_first = {r["id"] for r in first}
    assert 6 <= len(done_first) < 20
    def first_turns(fake) -> list[str]:  # (this batch's fake speaks Chat Completions)
        return [openai_question(r) for r in list(fake.requests)
                if not any(m["role"] == "tool" for m in r["messages"])]

    asked_before = len(first_turns(fake_openai))
    # Harder: one finished question later failed at the API (tried again on resume), and the
    # kill cut a record in half (ignored; the next record starts on its own line).
    failed_id = sorted(done_first)[0]
    with out.open("a") as fh:
        fh.write(json.dumps({"id": failed_id, "status": "error", "stop_reason": "server_error"})
                 + "\n" + '{"id": 999, "status": "o')
    done_first.discard(failed_id)

    p = cli(["batch", str(f), "--concurrency", "4", "--output", str(out), "--resume"], openai_env)
    no_traceback(p)
    assert p.returncode == 0, p.err
    asked_again = first_turns(fake_openai)[asked_before:]
    # only the questions without a record were asked again
    assert sorted(asked_again) == sorted(q for i, q in enumerate(qs) if i + 1 not in done_first)
    assert sorted(r["id"] for r in records(p.out)) == sorted(set(range(1, 21)) - done_first)
    lines = out.read_text().splitlines()
    assert '{"id": 999, "status": "o' in lines  # the cut record stays alone on its line
    ok_ids = [json.loads(x)["id"] for x in lines if '"status": "ok"' in x]
    # every question answered exactly once, plus the retry of the one marked as failed
    assert sorted(ok_ids) == sorted([*range(1, 21), failed_id])
    assert f"{len(done_first)} skipped" in p.err
    assert read_done(out) == {str(i) for i in range(1, 21)}


def test_resume_reads_final_records_only(tmp_path):
    from agentcli.batch.engine import RecordFile

    out = tmp_path / "records.jsonl"
    out.write_text(
        json.dumps({"id": 1, "status": "ok"}) + "\n"
        + json.dumps({"id": "2", "status": "error", "stop_reason": "server_error"}) + "\n"
        + json.dumps({"id": 4, "status": "error", "stop_reason": "invalid_input"}) + "\n"
        + json.dumps({"id": 5, "status": "incomplete"}) + "\n"
        + json.dumps({"id": 6, "status": "error", "stop_reason": "timeout"}) + "\n"
        + json.dumps({"id": 6, "status": "ok"}) + "\n"  # the last record of an id wins
        + "not json\n"
        + '{"id": 3, "status": "o')  # cut by a kill mid-write
    assert read_done(out) == {"1", "4", "5", "6"}
    assert read_done(tmp_path / "none.jsonl") == set()
    rf = RecordFile(out)
    rf.write(b'{"id": 3, "status": "ok"}\n')
    rf.close()
    assert out.read_text().splitlines()[-2:] == ['{"id": 3, "status": "o', '{"id": 3, "status": "ok"}']
    assert read_done(out) == {"1", "3", "4", "5", "6"}





def test_usage_and_configuration_errors(cli, anthropic_env, cli_env, tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("GH56JK78MN?\n")
    cases = [
        (["batch", str(tmp_path / "missing.txt")], anthropic_env, 2, "cannot read"),
        (["batch", str(f), "--resume"], anthropic_env, 2, "--resume needs --output"),
        (["batch", str(f), "--concurrency", "0"], anthropic_env, 2, "concurrency"),
        (["batch", str(f), "--provider", "anthropic"], cli_env, 3, "ANTHROPIC_API_KEY"),
    ]
    for args, env, code, words in cases:
        p = cli(args, env)
        assert p.returncode == code, (args, p.err)
        assert words in p.err and p.out == ""
        no_traceback(p)


def test_rejected_key_stops_dispatching(cli, anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.handler = lambda req: error(401, "invalid x-api-key")
    f = tmp_path / "q.txt"
    f.write_text("".join(f"ORD-2026123{i % 10} ?\n" for i in range(20)))
    out = tmp_path / "records.jsonl"
    p = cli(["batch", str(f), "--concurrency", "2", "--output", str(out)], anthropic_env)
    no_traceback(p)
    assert p.returncode == 4
    assert "batch stopped" in p.err and "--resume" in p.err
    assert 1 <= len(fake_anthropic.requests) <= 4  # not 20 doomed requests
    recs = records(p.out)
    assert all(r["status"] == "error" for r in recs)
    # still one record per question, in order: the ones never sent say so
    assert [r["id"] for r in recs] == list(range(1, 21))
    assert sum("not attempted" in r["error"] for r in recs) >= 16
    # ... and --resume, with the key fixed, answers all of them
    fake_anthropic.handler = lambda req: text("Fine.")
    p = cli(["batch", str(f), "--output", str(out), "--resume"], anthropic_env)
    assert p.returncode == 0, p.err
    assert [r["id"] for r in records(p.out)] == list(range(1, 21))


def test_input_quirks_bom_surrogates_duplicates(cli, anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.handler = lambda req: text("Fine.")
    f = tmp_path / "q.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "t1", "question": "where is GH56JK78MN",
                                                   "customer": "someone.else@example.com"}).encode() + b"\n"
                  + b'{"id": "s", "question": "hi \\ud800 there"}\n'
                  + b'{"id": "t1", "question": "same id again"}\n'
                  + b"a plain line\n"
                  + b'{"id": 4, "question": "collides with plain line 4"}\n')
    out = tmp_path / "out.jsonl"
    p = cli(["batch", str(f), "--output", str(out)], anthropic_env)
    no_traceback(p)
    recs = records(p.out)
    assert [r["id"] for r in recs] == ["t1", "s", "t1", 4, 4]
    # the BOM did not turn the first JSON line into plain text: its customer scope holds
    assert recs[0]["status"] == "ok" and recs[0]["customer"] == "someone.else@example.com"
    # a lone surrogate is replaced, not sent (no encoder takes it)
    assert recs[1]["status"] == "ok" and recs[1]["question"] == "hi \ufffd there"
    assert recs[2]["stop_reason"] == "duplicate_id" and "already used" in recs[2]["error"]
    assert recs[3]["status"] == "ok"
    assert recs[4]["stop_reason"] == "duplicate_id"
    assert p.returncode == 1  # the duplicates are input errors
    # --resume: the duplicates' records do not stand for the first lines' answers
    p = cli(["batch", str(f), "--output", str(out), "--resume"], anthropic_env)
    assert [r["stop_reason"] for r in records(p.out)] == ["duplicate_id", "duplicate_id"]
    assert "3 skipped" in p.err


def test_output_onto_the_input_is_refused(cli, anthropic_env, fake_anthropic, tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "a", "question": "where is GH56JK78MN?"}\n')
    p = cli(["batch", str(f), "--output", str(f)], anthropic_env)
    assert p.returncode == 2 and "is the input file" in p.err and p.out == ""
    assert fake_anthropic.requests == []
    assert f.read_text().count("\n") == 1


def test_progress_bar_on_a_terminal(cli_env, tmp_path):
    # The bar does not depend on the provider: the offline workflow keeps this test quick.
    pexpect = pytest.importorskip("pexpect")
    f = tmp_path / "q.txt"
    f.write_text("GH56JK78MN?\nORD-20261234?\n{bad\n")
    env = {**cli_env, "COLUMNS": "200", "TERM": "xterm", "AGENTCLI_PROVIDER": "offline"}
    child = pexpect.spawn(agentcli_exe(), ["batch", str(f)], env=env, encoding="utf-8",
                          timeout=30, dimensions=(40, 200))
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert not re.search(r"\x1b\[[\d;]*m", screen)  # NO_COLOR (cli_env): no colour, no bold
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert "3/3" in screen and "1 failed" in screen  # counted as the summary counts it
    # a person reads a line a question, not JSON
    assert "✓ 1  ok" in screen and "✗ 3  error" in screen and '"id": 1' not in screen
    assert child.exitstatus == 1
    child = pexpect.spawn(agentcli_exe(), ["batch", "--json", str(f)], env=env, encoding="utf-8",
                          timeout=30, dimensions=(40, 200))
    child.expect(pexpect.EOF)
    child.close()
    assert '"id": 1' in child.before and '"id": 3' in child.before  # --json: JSON Lines there too


def test_ctrl_c_while_waiting_for_piped_input(cli_env):
    """Ctrl-C with the input pipe idle: exit 130 at once, records already printed stay printed
    (no hang on a blocked read, no interpreter abort)."""
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    r, w = os.pipe()
    proc = subprocess.Popen([agentcli_exe(), "batch"], env=env, stdin=r, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    os.close(r)
    try:
        os.write(w, b"status of ORD-20261234\n")
        first = json.loads(proc.stdout.readline())  # answered; now waiting for the next line
        assert first["id"] == 1 and first["status"] == "ok"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        os.close(w)
        if proc.poll() is None:
            proc.kill()
    err = err.decode()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Fatal" not in err and "Traceback" not in err


def test_pipe_reader_splits_lines_and_cuts_long_ones():
    from agentcli.lines import FdLines

    r, w = os.pipe()
    os.write(w, b"one\n\ntwo-is-long\nlast")
    os.close(w)
    lines = FdLines(r)
    assert [lines.readline(8) for _ in range(6)] == [b"one\n", b"\n", b"two-is-l", b"ong\n",
                                                     b"last", b""]
    os.close(r)


# --------------------------------------------------------------------------- in-process engine


def test_input_is_read_lazily_with_bounded_work(anthropic_env, fake_anthropic, demo_db):
    """A slow first question must not let the runner swallow the whole input: it pulls at most
    ``window`` lines ahead of the oldest unfinished record."""
    from agentcli.app import App
    from agentcli.config import resolve

    qs = [f"n{i}: ORD-20261234" for i in range(30)]
    fake_anthropic.handler = scenario({qs[0]: 0.5})
    pulled = []
    printed: list[tuple[int, int]] = []  # (id, lines pulled when it was printed)

    def source():
        for i, q in enumerate(qs, 1):
            pulled.append(i)
            yield Item(i, i, q)

    async def main():
        app = App.open(resolve(), pool_size=4)
        try:
            runner = BatchRunner(app, concurrency=4, window=10,
                                 emit=lambda line: printed.append((json.loads(line)["id"], len(pulled))))
            return await runner.run(source())
        finally:
            await app.aclose()

    summary = asyncio.run(main())
    assert summary.exit_code == 0 and summary.ok == 30
    assert [i for i, _ in printed] == list(range(1, 31))
    # when the slow head finally printed, at most window (+1 being acquired) lines had been read
    assert printed[0][1] <= 11


def test_exit_code_is_1_when_only_incomplete(anthropic_env, fake_anthropic):
    from agentcli.app import App
    from agentcli.config import resolve

    fake_anthropic.handler = scenario(
        special=lambda q, req: text("cut", stop_reason="max_tokens") if "CUT" in q else None)

    async def main(items):
        app = App.open(resolve(), pool_size=2)
        try:
            return await BatchRunner(app, concurrency=2, emit=lambda line: None).run(items)
        finally:
            await app.aclose()

    s = asyncio.run(main([Item(1, 1, "GH56JK78MN?"), Item(2, 2, "CUT ORD-20261234")]))
    assert (s.exit_code, s.ok, s.incomplete, s.errors) == (1, 1, 1, 0)
    s = asyncio.run(main([Item(1, 1, "GH56JK78MN?"), Item(2, "b", "ORD-20261234?")]))
    assert (s.exit_code, s.ok) == (0, 2)


@pytest.mark.slow
def test_sigterm_stops_a_batch_cleanly(terminated_batches):
    """`timeout 3600 agentcli batch ...`: SIGTERM cancels what is in flight like Ctrl-C does,
    keeps every finished record and session log, says so in one line and exits 143."""
    proc, err, _, _, _, out, home = terminated_batches["sigterm"]
    assert proc.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err
    done = records(out.read_text())  # every line whole
    assert 3 <= len(done) < 30 and all(r["status"] == "ok" for r in done)
    from agentcli.sessions.log import read_events

    logs = [list(read_events(p)) for p in (home / "sessions").glob("*.jsonl")]
    assert any(any(e.get("type") == "cancelled" for e in evs) for evs in logs)  # in flight: cancelled


def test_a_line_nested_too_deeply_is_an_error_record_and_resume_survives_it(cli, cli_env, tmp_path):
    deep = '{"id": "deep", "question": ' + "[" * 100_000 + "]" * 100_000 + "}"
    src = tmp_path / "q.jsonl"
    src.write_text("Where is GH56JK78MN?\n" + deep + "\n" + '{"id": 3, "question": "Where is ORD-20261234?"}\n')
    out = tmp_path / "out.jsonl"
    p = cli(["batch", str(src), "--output", str(out), "-q"], cli_env)
    assert p.returncode == 1, p.err
    recs = [json.loads(ln) for ln in p.out.splitlines()]
    assert [r["status"] for r in recs] == ["ok", "error", "ok"]
    assert "nested too deeply" in recs[1]["error"] and "Traceback" not in p.err
    with open(out, "a") as f:  # a record file that holds such a line too
        f.write(deep + "\n")
    p = cli(["batch", str(src), "--output", str(out), "--resume", "-q"], cli_env)
    assert p.returncode == 0, p.err
    assert p.out == ""  # everything was already answered


@pytest.mark.parametrize("customer", [" ", "Ana Silva", "ana@", 5])
def test_a_batch_lines_bad_customer_is_an_error_record(customer):
    it = parse_line(7, json.dumps({"id": "c", "question": "where is GH56JK78MN?", "customer": customer}))
    assert it.question is None and it.error and "line 7" in it.error and "customer" in it.error


def test_a_batch_lines_named_customer_is_reduced_to_the_address():
    it = parse_line(1, json.dumps({"question": "q", "customer": "Ana Silva <ana.silva@example.com>"}))
    assert it.customer == "ana.silva@example.com"


def test_stdout_closed_by_its_reader_says_where_the_records_are(cli_env, tmp_path):
    """`batch -o FILE ... | head -1`: the batch stopped with exit 1 and not a word, though its
    records were in FILE and `--resume` goes on from them."""
    from .conftest import agentcli_exe

    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(json.dumps({"id": f"q{i:03d}", "question": "Where is GH56JK78MN?"}) + "\n"
                          for i in range(200)))
    out = tmp_path / "out.jsonl"
    p = subprocess.Popen([agentcli_exe(), "batch", "--provider", "offline", "-o", str(out), str(qs)],
                         env=cli_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline()  # the first record, then the reader goes away
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 1
    (line,) = [x for x in err.splitlines() if "standard output was closed" in x]
    n = len(out.read_text().splitlines())
    assert f"after {n} answered" in line and f"--resume -o {out}" in line, err
    assert n < 200 and "Traceback" not in err
