"""``batch --via batches``: the tool loop in rounds over the Message Batches API (issue 27).

The real anthropic SDK against the fake Messages + Message Batches API (``agentcli.testing``),
the demo SQLite database, real draft, record and state files. The scenario of ``test_batch``
answers a batch request exactly as it answers a live one (the fake's reply code is shared), so
``--via batches`` and ``--via live`` are compared record for record.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agentcli.batch.batches import custom_id, split, state_path
from agentcli.testing.fake_anthropic import (
    canceled,
    error,
    expired,
    message,
    tool_use_block,
)

from .test_batch import CODES, agentcli_exe, first_question, records, scenario

STABLE = ("id", "question", "customer", "answer", "status", "stop_reason", "turns", "drafts",
          "provider", "model", "checks")


def lines(n: int) -> str:
    out = []
    for i in range(n):
        out.append(json.dumps({"id": f"T-{i}", "question": f"Where is order {CODES[i % len(CODES)]}?"}))
    return "\n".join(out) + "\n"


def stable(rec: dict) -> dict:
    out = {k: rec[k] for k in STABLE}
    out["tool_calls"] = [{k: c[k] for k in ("name", "input", "result", "is_error")} for c in rec["tool_calls"]]
    return out


def test_batches_give_the_same_records_in_input_order_as_live(cli, anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.handler = scenario()
    fake_anthropic.batch_delay = 0.2
    qs = tmp_path / "q.jsonl"
    qs.write_text(lines(12))
    live = cli(["batch", str(qs), "-o", str(tmp_path / "live.jsonl")], anthropic_env)
    assert live.returncode == 0, live.err
    n_live = len(fake_anthropic.requests)
    p = cli(["batch", str(qs), "--via", "batches", "-o", str(tmp_path / "b.jsonl")], anthropic_env)
    assert p.returncode == 0, p.err
    assert len(fake_anthropic.requests) == n_live  # no live request: every call went in a batch
    creates = fake_anthropic.batches.creates
    # round 1: the lookups; round 2: the answers; round 3: the grounding checks' model layer
    # (its forced call a batch request too: none went live)
    assert [len(c) for c in creates] == [12, 12, 12]
    assert all(r["params"].get("tool_choice", {}).get("type") == "tool" for r in creates[2])
    assert fake_anthropic.forced_requests[12:] == []  # the live run's twelve, none after
    a, b = records(live.out), records(p.out)
    assert [r["id"] for r in b] == [f"T-{i}" for i in range(12)]
    assert [stable(r) for r in a] == [stable(r) for r in b]
    for r in b:  # the batch price: half the live estimate of the same tokens
        live_r = next(x for x in a if x["id"] == r["id"])
        assert r["estimated_cost_usd"] == pytest.approx(live_r["estimated_cost_usd"] / 2, abs=1e-6)
    assert "via batches: 3 rounds, 3 batches, 36 requests" in p.err
    assert not state_path(tmp_path / "b.jsonl").exists()  # all done: nothing left to re-attach to


def test_custom_ids_are_valid_for_any_line_id_and_batches_split_before_the_limits():
    import re
    for qkey in ["T-1", "x" * 5000, "ü\u2028\x1b[31m", "", json.dumps([1, {"a": None}])]:
        cid = custom_id(qkey, 17)
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid)
    assert custom_id("a", 1) != custom_id("b", 1) and custom_id("a", 1) != custom_id("a", 2)
    assert split([10] * 7, max_count=3, max_bytes=10**9) == [range(0, 3), range(3, 6), range(6, 7)]
    assert split([40, 40, 40], max_count=100, max_bytes=90) == [range(0, 2), range(2, 3)]
    assert split([500], max_count=100, max_bytes=90) == [range(0, 1)]  # alone, however big
    assert split([]) == []


def _q(i: int) -> str:
    return f"Where is order {CODES[i % len(CODES)]}?"


def once(kinds: dict[str, list]):
    """A scenario that answers a question's first requests with ``kinds[question]`` (in order),
    then as ``scenario`` does."""
    base = scenario()
    left = {q: list(v) for q, v in kinds.items()}

    def handler(req):
        q = first_question(req)
        if left.get(q):
            return left[q].pop(0)
        return base(req)
    return handler


def test_expired_canceled_and_overloaded_requests_go_again_invalid_ones_are_error_records(
        cli, anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.handler = once({_q(0): [expired()], _q(1): [canceled(), error(529, type="overloaded_error")],
                                   _q(2): [error(400, "messages: bad", type="invalid_request_error")]})
    qs = tmp_path / "q.jsonl"
    qs.write_text(lines(4))
    p = cli(["batch", str(qs), "--via", "batches", "--retries", "3", "-o", str(tmp_path / "o.jsonl")],
            anthropic_env)
    assert p.returncode == 4, p.err
    recs = {r["id"]: r for r in records(p.out)}
    assert [recs[f"T-{i}"]["status"] for i in range(4)] == ["ok", "ok", "error", "ok"]
    assert "refused the request as invalid: messages: bad" in recs["T-2"]["error"]
    assert len(fake_anthropic.requests) == 0
    # each failed request came back in a later batch under a new custom_id, never twice in one
    ids = [r["custom_id"] for c in fake_anthropic.batches.creates for r in c]
    assert len(ids) == len(set(ids))
    assert "asked again" in p.err
    # the error record is final for nothing: --resume asks it again (the state stays for that)
    assert state_path(tmp_path / "o.jsonl").exists()


def test_a_batch_past_the_deadline_is_cancelled_and_resume_finishes_it(cli, anthropic_env,
                                                                       fake_anthropic, tmp_path):
    fake_anthropic.handler = scenario()
    fake_anthropic.batch_delay = 3600  # a batch that does not end by itself
    qs, out = tmp_path / "q.jsonl", tmp_path / "o.jsonl"
    qs.write_text(lines(3))
    p = cli(["batch", str(qs), "--via", "batches", "--batch-deadline", "1s", "-o", str(out)],
            anthropic_env)
    assert p.returncode == 4, p.err
    recs = records(p.out)
    assert [r["status"] for r in recs] == ["error"] * 3
    assert all(r["stop_reason"] == "not_finished" and "--batch-deadline 1s" in r["error"] for r in recs)
    assert len(fake_anthropic.batches.cancels) >= 1
    fake_anthropic.batch_delay = 0.1
    p = cli(["batch", str(qs), "--via", "batches", "--resume", "-o", str(out)], anthropic_env)
    assert p.returncode == 0, p.err
    assert [r["status"] for r in records(p.out)] == ["ok"] * 3
    assert len(fake_anthropic.batches.creates) == 4  # the cancelled one, then three rounds


def test_live_tail_finishes_the_last_conversations_on_the_live_api(cli, anthropic_env,
                                                                   fake_anthropic, tmp_path):
    base = scenario()

    def handler(req):  # T-0 looks its order up twice: one round more than the others
        if first_question(req) == _q(0) and sum(m["role"] == "assistant" for m in req["messages"]) == 1:
            return message(tool_use_block("get_order_status", {"order_code": CODES[0]}))
        return base(req)
    fake_anthropic.handler = handler
    qs = tmp_path / "q.jsonl"
    qs.write_text(lines(4))
    p = cli(["batch", str(qs), "--via", "batches", "--live-tail", "1", "-o", str(tmp_path / "o.jsonl")],
            anthropic_env)
    assert p.returncode == 0, p.err
    assert [len(c) for c in fake_anthropic.batches.creates] == [4, 4, 4]
    # T-0's last call (its checks' forced call), live
    assert len(fake_anthropic.requests) == 0 and len(fake_anthropic.forced_requests) == 1
    assert "1 on the live API" in p.err
    assert [r["status"] for r in records(p.out)] == ["ok"] * 4


@pytest.mark.parametrize("provider", ["openai", "offline"])
def test_via_batches_needs_the_anthropic_provider(cli, cli_env, tmp_path, provider):
    env = {**cli_env, "AGENTCLI_PROVIDER": provider, "AGENTCLI_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9"}
    p = cli(["batch", "-", "--via", "batches", "-o", str(tmp_path / "o.jsonl")], env, input="q\n")
    assert p.returncode == 2
    assert p.err.strip().splitlines()[-1].endswith(
        f"--via batches needs the Anthropic provider (the Message Batches API); --provider {provider} has none: use --via live")


def test_via_batches_needs_output_and_an_old_state_needs_resume(cli, anthropic_env, tmp_path):
    p = cli(["batch", "-", "--via", "batches"], anthropic_env, input="q\n")
    assert p.returncode == 2 and "--via batches needs --output FILE" in p.err
    out = tmp_path / "o.jsonl"
    state_path(out).write_text('{"version": 1, "batches": {}}')
    p = cli(["batch", "-", "--via", "batches", "-o", str(out)], anthropic_env, input="q\n")
    assert p.returncode == 2 and "add --resume to go on with them" in p.err
    for bad in ('{"version": 1, "batches": [[[', '{"version": 1, "batches": {"b": {"requests": {"c": [1]}}}}',
                '{"version": 1, "batches": {"b": {"requests": {"c": ["i", "1", "d"]}}}}', '[]', '{"version": 9}'):
        state_path(out).write_text(bad)
        p = cli(["batch", "-", "--via", "batches", "--resume", "-o", str(out)], anthropic_env, input="q\n")
        assert p.returncode == 2 and "is not a batches state file" in p.err, (bad, p.err)
    for bad in ("0s", "soon", "-1h"):
        p = cli(["batch", "-", "--via", "batches", "--batch-deadline", bad, "-o", str(out)],
                anthropic_env, input="q\n")
        assert p.returncode == 2 and "--batch-deadline" in p.err
    assert "Traceback" not in p.err


def _wait_for(cond, what: str, limit: float = 30.0) -> None:
    """A hang guard only (nothing here asserts on time)."""
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.05)


def _state_batches(out: Path) -> dict:
    try:
        return json.loads(state_path(out).read_text()).get("batches", {})
    except (OSError, ValueError):
        return {}


def _module_env(base: Path, demo_db: Path, fake) -> dict[str, str]:
    """``anthropic_env`` for a module fixture: a clean environment, a home and drafts folder of
    BASE, the demo database, FAKE's Messages API and a (fake) key."""
    from .conftest import clean_env, fake_api

    return clean_env(base / "home", demo_db, AGENTCLI_DRAFTS_DIR=str(base / "drafts"),
                     COLUMNS="200", **fake_api(fake.url))


KILLS = [(mode, when) for mode in ("agent", "workflow") for when in ("after_submit", "inside_create")]
PROGRESS_COLS = [40, 80, 160]


def _drain(terms) -> None:
    """Read what each Term's child has written so far, without waiting (a child whose terminal
    is full would wait for its reader)."""
    import pexpect

    for t in terms:
        try:
            while True:
                data = t.child.read_nonblocking(65536, timeout=0)
                t.raw += data
                t.stream.feed(data)
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass


@pytest.fixture(scope="module")
def batch_processes(tmp_path_factory, demo_db):
    """The module's real ``batch --via batches`` processes, started together so that their
    starts (each imports the SDK) and their waits (for a kill point, for the rounds) overlap:

    - for each (mode, when) of KILLS: five questions against a fake API of its own, killed
      (SIGKILL) between a batch's submission and its results (``after_submit``) or inside the
      create, before it learnt the batch's id (``inside_create``); then ``--resume`` (in this
      process);
    - six questions on a terminal of each width of PROGRESS_COLS (one fake API, each its own
      home, drafts and batches), read to their end.

    -> ({(mode, when): (creates at the kill, the resume's CompletedProcess, the fake, output)},
        {cols: (Term with .status, output file)})"""
    import contextlib

    from agentcli.testing.fake_anthropic import FakeAnthropic

    from .conftest import run_in_process
    from .test_screens import Term

    runs, progress = {}, {}
    with contextlib.ExitStack() as stack:
        try:
            shared = stack.enter_context(FakeAnthropic())
            shared.handler = scenario()  # the same for every progress process (it keeps no state)
            shared.batch_delay = 0.6
            for cols in PROGRESS_COLS:
                base = tmp_path_factory.mktemp(f"progress{cols}")
                env = _module_env(base, demo_db, shared)  # (Term sets COLUMNS to the width)
                qs, out = base / "q.jsonl", base / "o.jsonl"
                qs.write_text(lines(6))
                progress[cols] = (Term(["batch", str(qs), "--via", "batches", "-o", str(out)], env, cols), out)
            terms = [t for t, _ in progress.values()]
            for mode, when in KILLS:
                fake = stack.enter_context(FakeAnthropic())
                fake.handler = scenario()
                fake.batch_delay = 3600
                if when == "inside_create":
                    fake.batches.create_delay = 3600
                base = tmp_path_factory.mktemp(f"kill-{mode}-{when}")
                env = {**_module_env(base, demo_db, fake), "AGENTCLI_MODE": mode}
                qs, out = base / "q.jsonl", base / "o.jsonl"
                qs.write_text(lines(5))
                proc = subprocess.Popen([agentcli_exe(), "batch", str(qs), "--via", "batches", "-o", str(out)],
                                        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
                runs[mode, when] = (proc, fake, env, qs, out)
            for (mode, when), (proc, fake, env, qs, out) in runs.items():
                if when == "after_submit":
                    _wait_for(lambda: _drain(terms) or _state_batches(out), "a batch id in the state file")
                else:
                    # the batch exists and the fake holds the create's answer: the process
                    # waits inside the create
                    _wait_for(lambda: _drain(terms) or (fake.batches.creates and fake.batches.batches),
                              "a create held")
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            killed = {}
            for key, (proc, fake, env, qs, out) in runs.items():
                at_kill = len(fake.batches.creates)
                fake.batches.create_delay = 0.0
                fake.batches.end_now()
                fake.batch_delay = 0.05
                p = run_in_process(["batch", str(qs), "--via", "batches", "--resume", "-o", str(out)], env)
                killed[key] = (at_kill, p, fake, out)
                _drain(terms)
            for t in terms:  # read in turn: a child waits on its full terminal at worst
                t.pump(until=b"round 1")
            for t in terms:
                t.status = t.finish()
        finally:
            for proc, *_ in runs.values():
                if proc.poll() is None:
                    proc.kill()
                proc.communicate(timeout=30)
            for t, _ in progress.values():
                t.child.close(force=True)
    return killed, progress


@pytest.fixture(scope="module")
def killed_then_resumed(batch_processes):
    return batch_processes[0]


@pytest.fixture(scope="module")
def progress_runs(batch_processes):
    return batch_processes[1]


@pytest.mark.slow
@pytest.mark.parametrize("when", ["after_submit", "inside_create"])
@pytest.mark.parametrize("mode", ["agent", "workflow"])
def test_sigkill_then_resume_never_pays_twice(killed_then_resumed, when, mode):
    """The real process killed between a batch's submission and its results (or inside the
    create, before it learnt the batch's id): --resume re-attaches, and the fake API sees no
    second create of any request."""
    at_kill, p, fake_anthropic, out = killed_then_resumed[mode, when]
    assert at_kill == 1
    assert p.returncode == 0, p.err
    assert [r["status"] for r in records(p.out)] == ["ok"] * 5
    ids = [r["custom_id"] for c in fake_anthropic.batches.creates for r in c]
    # each request once: round 1 before the kill, rounds 2 and 3 (the checks) after it
    # (workflow mode: our code made the lookups, the model's one call per question is round 1's)
    rounds = 3 if mode == "agent" else 2
    assert len(ids) == len(set(ids)) == 5 * rounds
    assert len(fake_anthropic.batches.creates) == rounds
    assert "5 from earlier batches" in p.err
    assert not state_path(out).exists()


@pytest.mark.slow
@pytest.mark.parametrize("cols", PROGRESS_COLS)
def test_progress_on_a_terminal_fits_and_says_round_in_flight_and_cost(progress_runs, cols):
    from .test_screens import ANSI

    t, out = progress_runs[cols]
    assert t.status == 0
    raw_lines = ANSI.sub(b"", t.raw).replace(b"\r", b"\n").split(b"\n")
    assert max(len(x.decode("utf-8", "replace")) for x in raw_lines) <= cols
    shown = t.text()
    assert "round 3" in shown and "6/6" in shown  # the last state of the progress line
    if cols >= 80:
        assert "0 in flight" in shown
    if cols >= 160:
        assert "18 ended" in shown and "est. $" in shown and "(live $" in shown
    summary = " ".join(ln.strip() for ln in shown.splitlines())
    assert "via batches: 3 rounds" in summary
    assert len(records(out.read_text())) == 6


def test_hostile_results_are_never_fed_as_answers(cli, anthropic_env, fake_anthropic, tmp_path):
    """A succeeded result whose message is not a Messages API message, a raw body where a reply
    should be, a tool input nested past the bound: each is a broken or failed answer, asked
    again in a later batch; the question ends ok on the next answer, and nothing of the broken
    ones ran."""
    from agentcli.testing.fake_anthropic import Reply, raw

    deep: dict = {}
    cur = deep
    for _ in range(60):
        cur["a"] = {}
        cur = cur["a"]
    not_a_message = Reply(message={"id": "m", "type": "message", "role": "assistant",
                                   "content": "\x1b[31mnot a list", "stop_reason": "end_turn",
                                   "usage": {"input_tokens": 1, "output_tokens": 1}})
    fake_anthropic.handler = once({
        _q(0): [not_a_message],
        _q(1): [raw(b"<html>proxy</html>", "text/html")],
        _q(2): [message(tool_use_block("get_order_status", {"order_code": CODES[2], "x": deep}))],
    })
    qs = tmp_path / "q.jsonl"
    qs.write_text(lines(3))
    p = cli(["batch", str(qs), "--via", "batches", "--retries", "2", "-o", str(tmp_path / "o.jsonl")],
            anthropic_env)
    assert p.returncode == 0, p.err
    recs = records(p.out)
    assert [r["status"] for r in recs] == ["ok"] * 3
    for r in recs:  # only the good answers' calls ran
        assert [c["input"] for c in r["tool_calls"]] == [{"order_code": CODES[recs.index(r)]}]
    assert "\x1b[31m" not in p.err and "Traceback" not in p.err
    assert "3 asked again" in p.err


@pytest.mark.slow
def test_sigterm_keeps_the_state_and_resume_goes_on(anthropic_env, fake_anthropic, tmp_path, cli):
    fake_anthropic.handler = scenario()
    fake_anthropic.batch_delay = 3600
    qs, out = tmp_path / "q.jsonl", tmp_path / "o.jsonl"
    qs.write_text(lines(3))
    proc = subprocess.Popen([agentcli_exe(), "batch", str(qs), "--via", "batches", "-o", str(out)],
                            env=anthropic_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _state_batches(out), "a batch id in the state file")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    err = err.decode()
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert len(_state_batches(out)) == 1
    fake_anthropic.batches.end_now()
    fake_anthropic.batch_delay = 0.05
    p = cli(["batch", str(qs), "--via", "batches", "--resume", "-o", str(out)], anthropic_env)
    assert p.returncode == 0, p.err
    assert len(fake_anthropic.batches.creates) == 3


def test_live_tail_answers_are_kept_and_not_paid_twice_on_resume(cli, anthropic_env, fake_anthropic,
                                                                 tmp_path):
    base = scenario()
    failed = []

    def handler(req):  # T-1's second call fails once, as an invalid request (no retry)
        if first_question(req) == _q(1) and len(req["messages"]) > 1 and not failed:
            failed.append(True)
            return error(400, "fake: refused once", type="invalid_request_error")
        return base(req)
    fake_anthropic.handler = handler
    qs, out = tmp_path / "q.jsonl", tmp_path / "o.jsonl"
    qs.write_text(lines(2))
    p = cli(["batch", str(qs), "--via", "batches", "--live-tail", "10", "-o", str(out)], anthropic_env)
    assert p.returncode == 4, p.err
    assert [r["status"] for r in records(p.out)] == ["ok", "error"]
    assert fake_anthropic.batches.creates == [] and len(fake_anthropic.requests) == 4
    fake_anthropic.reset()
    fake_anthropic.handler = base
    p = cli(["batch", str(qs), "--via", "batches", "--live-tail", "10", "--resume", "-o", str(out)],
            anthropic_env)
    assert p.returncode == 0, p.err
    assert [r["status"] for r in records(p.out)] == ["ok"]
    # T-1's first call (its lookup) came from the state: only the call that failed was asked again
    assert len(fake_anthropic.requests) == 1 and len(fake_anthropic.requests[0]["messages"]) == 3
