"""Adversarial pass (issue 14 §6 for the sessions folder): only regular files are read as
session logs, line by line with a bound, so `log list`, `log show` and provenance never hang on a
FIFO or read `/dev/zero` until memory runs out."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentcli.sessions import log as sessions


def test_log_list_and_show_never_block_on_a_fifo_or_dev_zero(cli_proc, cli_env, home):
    sdir = home / "sessions"
    sdir.mkdir(parents=True)
    good = sdir / "20261130-120000-0123456789ab.jsonl"
    good.write_text(json.dumps({"type": "session_start", "session_id": good.stem}) + "\n")
    os.mkfifo(sdir / "20991231-000000-aaaaaaaaaaaa.jsonl")  # named like the newest log
    (sdir / "20991231-000000-bbbbbbbbbbbb.jsonl").symlink_to("/dev/zero")
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    try:  # before the fix, each of these blocked forever (FIFO) or read until memory ran out
        listed = cli_proc(["log", "list"], env, timeout=20)
        shown = cli_proc(["log", "show", "20991231-000000-aaaaaaaaaaaa"], env, timeout=20)
        zero = cli_proc(["log", "show", "20991231-000000-bbbbbbbbbbbb"], env, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("a FIFO or /dev/zero in the sessions folder blocked `agentcli log`")
    assert listed.returncode == 0, listed.err
    assert good.stem in listed.out
    assert "not a regular file" in listed.err and "Traceback" not in listed.err
    for p in (shown, zero):
        assert p.returncode == 2, p.err
        assert "not a regular file" in p.err and "Traceback" not in p.err


def test_an_overlong_line_is_skipped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(sessions, "MAX_LINE_BYTES", 64)
    path = tmp_path / "s.jsonl"
    long_event = json.dumps({"type": "model_response", "text": "x" * 500})
    path.write_text("\n".join([json.dumps({"type": "a"}), long_event, json.dumps({"type": "b"})]) + "\n")
    warnings: list[str] = []
    events = list(sessions.read_events(path, warnings))
    assert [e["type"] for e in events] == ["a", "b"]
    assert warnings == ["s.jsonl: line 2 is too long and was skipped"]


def _strict(text: str):
    """``json.loads`` that refuses NaN and Infinity (what every other JSON reader does)."""
    def no(c):
        raise ValueError(f"{c} is not JSON")

    return json.loads(text, parse_constant=no)


HOSTILE_LINES = [
    {"type": "session_start", "session_id": "20261130-120000-0123456789ab", "provider": ["x"],
     "model": {"a": 1}, "ts": "yesterday"},
    {"type": "question", "text": {"not": "text"}, "customer": 5, "session_id": None},
    {"type": "model_response", "turn": 1, "stop_reason": ["x"], "text": 5, "tool_calls": "no",
     "usage": "lots"},
    {"type": "tool_result", "id": 3, "name": None, "input": None, "result": {"a": [1]},
     "is_error": "yes", "duration_ms": "fast", "outcome": "weird"},
    {"type": "retry", "turn": 1, "attempt": 2, "reason": 7, "wait_s": "soon"},
    {"type": "turn_finished", "status": "ok", "stop_reason": None, "answer": None, "turns": 2,
     "usage": {"input_tokens": -5, "output_tokens": True, "cache_read_input_tokens": 1e300,
               "cache_creation_input_tokens": 7}},
    {"type": "turn_finished", "status": "ok", "usage": {"input_tokens": 10 ** 4000}},
    {"type": 5},
    [1, 2],
]
DAMAGED = ["[" * 100_000 + "]" * 100_000, '{"type": "turn_finished", "usage": {"input_tokens": NaN}}',
           '{"type": "turn_finished", "usage": {"input_tokens": 1e400}}',
           '{"type": "turn_finished", "usage": {"input_tokens": ' + "9" * 5000 + "}}"]


def test_one_hostile_session_file_breaks_neither_log_list_nor_log_show(cli, cli_env, home):
    sdir = home / "sessions"
    sdir.mkdir(parents=True)
    bad = sdir / "20261130-120000-0123456789ab.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in HOSTILE_LINES) + "\n".join(DAMAGED) + "\n")
    good = sdir / "20261201-120000-0123456789ab.jsonl"
    good.write_text(json.dumps({"type": "session_start", "session_id": good.stem}) + "\n"
                    + json.dumps({"type": "turn_finished", "status": "ok",
                                  "usage": {"input_tokens": 12, "output_tokens": 3}}) + "\n")
    for args in (["log", "list"], ["log", "list", "--json"], ["log", "show", bad.stem],
                 ["log", "show", bad.stem, "--json"], ["log", "list", "--order", "GH56JK78MN"]):
        p = cli(args, cli_env)
        assert p.returncode == 0, (args, p.err)
        assert "internal error" not in p.err and "Traceback" not in p.err
        assert "line 10 is damaged and was skipped" in p.err or "--order" in args, (args, p.err)
    listed = {s["id"]: s for s in _strict(cli(["log", "list", "--json"], cli_env).out)}
    assert set(listed) == {bad.stem, good.stem}  # the good one is listed beside the bad one
    # only real token counts are added up: not -5, true, 1e300 or a 4001-digit number
    assert listed[bad.stem]["usage"] == {"input_tokens": 0, "output_tokens": 0,
                                         "cache_read_input_tokens": 0,
                                         "cache_creation_input_tokens": 7}
    assert listed[good.stem]["usage"]["input_tokens"] == 12
    shown = cli(["log", "show", bad.stem], cli_env).out
    assert "tokens in 0 / out 0 · cache read 0 / written 7" in shown
    _strict(cli(["log", "show", bad.stem, "--json"], cli_env).out)


def test_a_price_of_1e308_gives_no_estimate_not_infinity(cli, anthropic_env, fake_anthropic,
                                                         tmp_path):
    from agentcli.testing import fake_anthropic as fa

    (tmp_path / "agentcli.toml").write_text('[prices."claude-sonnet-5-5"]\ninput = 1e308\n'
                                            'output = 1e308\n')
    fake_anthropic.handler = lambda req: fa.text("done")
    p = cli(["ask", "--json", "Where is GH56JK78MN?"], anthropic_env, cwd=tmp_path)
    assert p.returncode == 0, p.err
    rec = _strict(p.out)
    assert rec["estimated_cost_usd"] is None and rec["usage"]["input_tokens"] > 0
    b = cli(["batch", "-"], anthropic_env, input="Where is GH56JK78MN?\n", cwd=tmp_path)
    assert b.returncode == 0 and _strict(b.out)["estimated_cost_usd"] is None, b.err


def test_every_json_sink_turns_a_non_finite_number_into_null():
    from agentcli.redact import redact_obj

    out = redact_obj({"a": float("inf"), "b": [float("nan"), 1.5, {"c": float("-inf")}], "d": 2})
    assert json.dumps(out) == '{"a": null, "b": [null, 1.5, {"c": null}], "d": 2}'
    assert redact_obj(float("nan")) is None
