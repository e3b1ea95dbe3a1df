"""``agentcli ask`` fed from standard input, and bare ``agentcli`` on a pipe.

The real console script runs as a subprocess (stdin, stdout and stderr are pipes) against the
fake Messages API with the real SDK; the tool call really queries the demo SQLite database.
"""

from __future__ import annotations

import json
import os

from agentcli.testing.fake_anthropic import message, text, tool_results, tool_use_block

from .conftest import user_texts

TEST_KEY = "sk-ant-test-0123456789abcdefSECRET"  # the key conftest's anthropic_env sets

EMAIL = (
    "Hello,\n"
    "\n"
    "I paid for order GH56JK78MN a week ago but still have no license.\n"
    "  Could you check?   \n"
    "\n"
    "Thanks,\n"
    "Ana\n"
)
ANSWER = "GH56JK78MN is pending_payment: the payment is not matched yet."


def user_text(req: dict) -> str:
    """The question of a request's first message (one text block)."""
    (text,) = user_texts(req["messages"][0])
    return text


def two_turns(fake) -> None:
    """Turn 1: look the order up; turn 2: answer with what the tool returned."""

    def handler(req):
        res = tool_results(req)
        if res:
            out = json.loads(res[0]["content"])
            return text(f"{out['order_code']} is {out['status']}: the payment is not matched yet.")
        return message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}))

    fake.handler = handler


def clean(p) -> None:
    assert "Traceback" not in p.err and "Traceback" not in p.out
    assert TEST_KEY not in p.err and TEST_KEY not in p.out


def test_piped_single_line_question(cli, anthropic_env, fake_anthropic):
    two_turns(fake_anthropic)
    p = cli(["ask"], anthropic_env, input="where is GH56JK78MN?\n")
    clean(p)
    assert p.returncode == 0, p.err
    assert p.out == ANSWER + "\n"  # exactly the answer on stdout
    assert user_text(fake_anthropic.requests[0]) == "where is GH56JK78MN?"
    # the trace went to stderr: the tool call and its (real database) result
    assert "get_order_status" in p.err and "pending_payment" in p.err
    assert len(fake_anthropic.requests) == 2


def test_multi_line_email_from_dash_arrives_intact_and_quiet(cli, anthropic_env, fake_anthropic):
    two_turns(fake_anthropic)
    p = cli(["ask", "-", "-q"], anthropic_env, input=EMAIL)
    clean(p)
    assert p.returncode == 0, p.err
    assert p.out == ANSWER + "\n"  # only the answer...
    assert p.err == ""  # ...and with -q no trace at all
    sent = user_text(fake_anthropic.requests[0])
    assert sent == EMAIL.rstrip("\n")  # inner blank lines and indentation kept
    assert sent.count("\n") == 6


def test_json_prints_the_one_object(cli, anthropic_env, fake_anthropic):
    two_turns(fake_anthropic)
    raw = EMAIL.encode() + b"PS: \xff\xfe\x00 sent from my phone\n"  # bytes that are not UTF-8
    p = cli(["ask", "--json"], anthropic_env, input=raw)
    clean(p)
    assert p.returncode == 0, p.err
    lines = p.out.splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["question"] == EMAIL + "PS: \ufffd\ufffd sent from my phone"
    assert user_text(fake_anthropic.requests[0]) == obj["question"]
    assert obj["answer"] == ANSWER and obj["status"] == "ok" and obj["stop_reason"] == "end_turn"
    assert obj["turns"] == 2 and obj["error"] is None and obj["provider"] == "anthropic"
    [call] = obj["tool_calls"]
    assert call["name"] == "get_order_status" and call["is_error"] is False
    assert call["result"]["status"] == "pending_payment" and call["result"]["license_issued"] is False
    assert obj["session_id"]


def test_bare_agentcli_on_a_pipe_behaves_as_ask(cli, anthropic_env, fake_anthropic):
    two_turns(fake_anthropic)
    p = cli([], anthropic_env, input=EMAIL)
    clean(p)
    assert p.returncode == 0, p.err
    assert p.out == ANSWER + "\n"  # no REPL banner or prompt: just the answer
    assert user_text(fake_anthropic.requests[0]) == EMAIL.rstrip("\n")


def test_empty_input_is_a_usage_error(cli, anthropic_env, fake_anthropic):
    for args, data in ((["ask"], ""), (["ask", "-"], " \n\t\n"), ([], "\n\n"), (["ask"], None)):
        p = cli(args, anthropic_env, input=data)  # None: stdin is /dev/null
        clean(p)
        assert p.returncode == 2, (args, data, p.err)
        assert p.out == ""
        assert len(p.err.strip().splitlines()) == 1 and "empty" in p.err
    assert fake_anthropic.requests == []  # nothing was sent to the model


def test_an_argument_wins_over_stdin(cli, anthropic_env, fake_anthropic):
    two_turns(fake_anthropic)
    p = cli(["ask", "-q", "where is GH56JK78MN?"], anthropic_env, input="ignored text\n")
    clean(p)
    assert p.returncode == 0 and p.out == ANSWER + "\n"
    assert user_text(fake_anthropic.requests[0]) == "where is GH56JK78MN?"


def test_too_long_input_is_a_usage_error(cli, anthropic_env, fake_anthropic):
    p = cli(["ask"], anthropic_env, input="x" * 100_001)
    clean(p)
    assert p.returncode == 2 and "too long" in p.err
    assert fake_anthropic.requests == []


def test_bare_agentcli_on_a_pipe_takes_asks_options(cli, anthropic_env, fake_anthropic, tmp_path):
    two_turns(fake_anthropic)
    p = cli(["-q", "--max-turns", "3", "--customer", "ana.silva@example.com"], anthropic_env, input=EMAIL)
    clean(p)
    assert p.returncode == 0, p.err
    assert p.out == ANSWER + "\n" and p.err == ""  # -q: no trace on stderr either
    # --customer reached the lookup: another customer's email makes the same order "not found"
    fake_anthropic.handler = None
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
                         text("done"))
    p = cli(["--json", "--customer", "someone.else@example.com"], anthropic_env, input=EMAIL)
    assert json.loads(p.out)["tool_calls"][0]["result"] == {"found": False, "order_code": "GH56JK78MN"}
    two_turns(fake_anthropic)
    p = cli(["--json", "--no-stream"], anthropic_env, input=EMAIL)
    clean(p)
    obj = json.loads(p.out)
    assert obj["answer"] == ANSWER and obj["status"] == "ok" and obj["turns"] == 2
    assert "stream" not in fake_anthropic.requests[-1]  # --no-stream reached the provider
    assert fake_anthropic.requests[0]["stream"] is True  # the first run streamed


def test_root_options_before_a_command_are_a_usage_error(cli, anthropic_env, fake_anthropic):
    # `agentcli --json drafts list` would otherwise run without --json, silently.
    cases = [(["--json", "drafts", "list"], "--json", "drafts"),
             (["-q", "ask", "where is GH56JK78MN?"], "--quiet", "ask"),
             (["--retries", "0", "batch", "-"], "--retries", "batch"),  # 0 is a value too
             (["--max-turns", "0", "drafts", "list"], "--max-turns", "drafts")]
    for args, flag, command in cases:
        p = cli(args, anthropic_env, input="where is GH56JK78MN?\n")
        clean(p)
        assert p.returncode == 2, (args, p.err)
        assert p.out == ""
        assert len(p.err.strip().splitlines()) == 1
        assert f"{flag} before a command" in p.err and f"agentcli {command} --help" in p.err
    assert fake_anthropic.requests == []


def test_closed_standard_input_is_a_usage_error(cli_env):
    import subprocess

    from tests.conftest import agentcli_exe

    p = subprocess.run(f"'{agentcli_exe()}' --provider offline <&-", shell=True, env=cli_env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "standard input is closed" in p.stderr


def test_odd_text_is_cleaned_not_fatal(cli, anthropic_env, fake_anthropic):
    fake_anthropic.handler = lambda req: text("Fine.")
    # a byte-order mark in front of a piped email, invalid UTF-8 in an argument
    p = cli(["ask", "--json"], anthropic_env, input="\ufeffwhere is GH56JK78MN?")
    clean(p)
    assert json.loads(p.out)["question"] == "where is GH56JK78MN?"
    p = cli(["ask", "--json", b"where is \xff GH56JK78MN?"], anthropic_env)
    clean(p)
    assert p.returncode == 0, p.err
    assert json.loads(p.out)["question"] == "where is \ufffd GH56JK78MN?"
    assert user_text(fake_anthropic.requests[-1]) == "where is \ufffd GH56JK78MN?"


def test_bad_output_streams_and_numbers_are_one_line(cli_env):
    import subprocess

    from tests.conftest import agentcli_exe

    exe = agentcli_exe()
    cases = [(f"'{exe}' ask --provider offline 'where is GH56JK78MN?' >&-", 2, "standard output is closed"),
             (f"'{exe}' ask --provider offline 'where is GH56JK78MN?' > /dev/full", 1, "No space left"),
             (f"'{exe}' batch <&-", 2, "standard input is closed"),
             (f"'{exe}' ask --provider offline --tool-timeout nan 'x'", 2, "finite number")]
    for cmd, code, words in cases:
        if "/dev/full" in cmd and not os.path.exists("/dev/full"):
            continue
        p = subprocess.run(cmd, shell=True, env=cli_env, capture_output=True, text=True, timeout=60)
        assert p.returncode == code, (cmd, p.stderr)
        assert words in p.stderr and "Traceback" not in p.stderr and "internal error" not in p.stderr


def test_a_tool_input_that_is_not_an_object_is_an_error_result_without_warnings(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(message(tool_use_block("get_order_status", "GH56JK78MN")), text("Sorry."))
    p = cli(["ask", "--no-stream", "where is GH56JK78MN?"], anthropic_env)
    clean(p)
    assert p.returncode == 0 and p.out == "Sorry.\n"
    assert "invalid_input" in p.err and "must be a JSON object" in p.err
    assert "Warning" not in p.err and "pydantic" not in p.err
