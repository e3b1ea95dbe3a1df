"""`agentcli ask`, `orders show` and `db init` as a user runs them: the real console script."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentcli.testing.fake_anthropic import error, message, text, tool_use_block

from .conftest import TEST_KEY

SPEC_KEYS = {"question", "customer", "answer", "status", "stop_reason", "error", "turns",
             "tool_calls", "drafts", "usage", "provider", "model", "session_id", "checks",
             "estimated_cost_usd",  # beyond the spec: the estimated cost (issue 9)
             "repair",  # beyond the spec: the repair turn, or null (issue 23)
             "checks_run"}  # beyond the spec: which layers of the grounding checks ran (issue 23)
QUICKSTART_Q = "Why does order GH56JK78MN have no license yet?"


def no_traceback(p):
    assert "Traceback" not in p.err and "Traceback" not in p.out


def test_offline_quickstart_works_with_no_key(cli, cli_env, drafts_dir, home):
    p = cli(["ask", QUICKSTART_Q], cli_env)
    assert p.returncode == 0, p.err
    no_traceback(p)
    assert "offline workflow" in p.err and p.err.count("offline workflow") == 1
    assert "GH56JK78MN" in p.out and "pending_payment" in p.out
    assert "→ get_order_status" in p.err and "← get_order_status ok" in p.err and " ms)" in p.err
    (draft,) = drafts_dir.glob("d-*.md")
    body = draft.read_text()
    assert "pending_review" in body and "match your payment" in body
    assert len(list((home / "sessions").glob("*.jsonl"))) == 1


def test_offline_json_is_labelled(cli, cli_env):
    p = cli(["ask", "--json", QUICKSTART_Q], cli_env)
    assert p.returncode == 0, p.err
    r = json.loads(p.out)
    assert set(r) == SPEC_KEYS
    assert r["provider"] == "offline" and r["status"] == "ok"
    assert [c["name"] for c in r["tool_calls"]] == ["get_order_status", "draft_reply"]
    assert r["drafts"] and r["drafts"][0]["path"].endswith(".md")


def test_piped_stdout_gets_exactly_the_answer(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
        text("The payment has not been matched to the order yet."))
    p = cli(["ask", QUICKSTART_Q], anthropic_env)
    assert p.returncode == 0, p.err
    assert p.out == "The payment has not been matched to the order yet.\n"
    assert "get_order_status" in p.err and "offline" not in p.err
    assert fake_anthropic.request_headers[0]["authorization"] == f"Bearer {TEST_KEY}"


def test_quiet_has_no_trace(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
                         text("Unpaid."))
    p = cli(["ask", "-q", QUICKSTART_Q], anthropic_env)
    assert p.returncode == 0 and p.out == "Unpaid.\n" and p.err == ""


def test_json_output_has_exactly_the_spec_fields(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "ORD-20261234"}, id="toolu_1")),
        message(tool_use_block("draft_reply", {"text": "Your order shipped.", "order_code": "ORD-20261234"}, id="toolu_2")),
        text("Drafted.", usage={"input_tokens": 50, "output_tokens": 7, "cache_read_input_tokens": 40}))
    p = cli(["ask", "--json", "--customer", "ben.okafor@example.net", "Where is ORD-20261234?"], anthropic_env)
    assert p.returncode == 0, p.err
    r = json.loads(p.out)
    assert set(r) == SPEC_KEYS
    assert r["customer"] == "ben.okafor@example.net" and r["answer"] == "Drafted."
    assert (r["status"], r["stop_reason"], r["error"], r["turns"]) == ("ok", "end_turn", None, 3)
    assert r["provider"] == "anthropic" and r["model"] == "claude-sonnet-5-5" and r["session_id"]
    c1, c2 = r["tool_calls"]
    assert {"id", "name", "input", "result", "is_error", "duration_ms"} <= set(c1)
    assert c1["result"]["status"] == "shipped" and c1["is_error"] is False
    assert isinstance(c1["duration_ms"], float)
    assert c2["result"]["status"] == "pending_review"
    assert r["drafts"] == [{"id": c2["result"]["draft_id"], "path": c2["result"]["path"]}]
    assert set(r["usage"]) == {"input_tokens", "output_tokens", "cache_read_input_tokens",
                               "cache_creation_input_tokens"}
    assert r["usage"]["cache_read_input_tokens"] >= 40
    u = r["usage"]
    expected = (u["input_tokens"] * 3 + u["output_tokens"] * 15 + u["cache_read_input_tokens"] * 0.3
                + u["cache_creation_input_tokens"] * 3.75) / 1e6
    assert r["estimated_cost_usd"] == pytest.approx(expected, abs=1e-6) and expected > 0


@pytest.mark.parametrize("stop", ["max_tokens", "refusal"])
def test_incomplete_answers_exit_1_with_a_reason(cli, anthropic_env, fake_anthropic, stop):
    fake_anthropic.queue(text("Partial", stop_reason=stop))
    p = cli(["ask", "hello"], anthropic_env)
    assert p.returncode == 1
    assert f"stopped ({stop})" in p.err
    no_traceback(p)


def test_turn_limit_exit_1(cli, anthropic_env, fake_anthropic):
    fake_anthropic.handler = lambda req: message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}))
    p = cli(["ask", "--max-turns", "2", "--json", "x"], anthropic_env)
    assert p.returncode == 1
    r = json.loads(p.out)
    assert r["stop_reason"] == "turn_limit" and r["status"] == "incomplete" and r["turns"] == 2


@pytest.mark.parametrize("status,needle", [(401, "API key"), (500, "failed"), (429, "rate limited"),
                                           (529, "overloaded"), (400, "refused the request")])
def test_api_errors_are_one_line_and_exit_4(cli, anthropic_env, fake_anthropic, status, needle):
    fake_anthropic.handler = lambda req: error(status, "boom " + TEST_KEY, headers={"retry-after-ms": "10"})
    p = cli(["ask", "--retries", "1", "hello"], anthropic_env)
    assert p.returncode == 4, p.err
    no_traceback(p)
    lines = [line for line in p.err.splitlines() if line.strip()]
    # one error line; a retryable failure is first retried once, visibly, with its reason
    retried = status in (500, 429, 529)
    assert len(lines) == 1 + retried and needle in lines[-1] and lines[-1].startswith("agentcli: ")
    if retried:
        assert lines[0].startswith("↻ model call 1 failed: ") and needle in lines[0]
        assert "tried 2 times" in lines[-1] and len(fake_anthropic.requests) == 2
    assert TEST_KEY not in p.err + p.out


def test_unreachable_api_exit_4(cli, anthropic_env):
    env = {**anthropic_env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    p = cli(["ask", "--retries", "0", "--json", "hello"], env)
    assert p.returncode == 4
    r = json.loads(p.out)
    assert r["status"] == "error" and "reach" in r["error"]
    no_traceback(p)


@pytest.mark.parametrize("args,code,needle", [
    (["ask", "--max-turns", "abc", "x"], 2, "max-turns"),
    (["ask", "--provider", "gpt", "x"], 2, "unknown provider"),
    (["ask", "--bogus", "x"], 2, "bogus"),
    (["ask", "   "], 2, "empty"),
    (["ask", "--provider", "anthropic", "x"], 3, "ANTHROPIC_API_KEY"),
    (["ask", "--db", "/nonexistent/orders.sqlite3", "x"], 3, "does not exist"),
    (["ask", "--db", "postgres_typo://u:hunter2@h/db", "x"], 3, "unsupported database"),
    # a misspelt URL is not taken for a SQLite path (its "does not exist" showed the password)
    (["ask", "--db", "postgresql:/u:hunter2@h/db", "x"], 3, "postgresql:/ where a URL has postgresql://"),
    (["ask", "--db", "postgres//u:hunter2@h/db", "x"], 3, "postgres// where a URL has postgres://"),
    (["ask", "--db", "postgressql://u:hunter2@h/db", "x"], 3, "did you mean postgresql://?"),
    (["ask", "--db", "sqlite:orders.db", "x"], 3, "sqlite: where a URL has sqlite://"),
    (["ask", "--db", "mysql:/u:hunter2@h/db", "x"], 3, "unsupported database"),
    (["ask", "--db", "sqlite:///u:hunter2@h/db", "x"], 3, "holds a user:password@host"),  # a server's, no path
    (["orders", "show", "--db", "postgresql:/u:hunter2@h/db", "GH56JK78MN"], 3, "unsupported database"),
    (["db", "init", "--db", "postgresql:/u:hunter2@h/db"], 3, "unsupported database"),
    (["doctor", "--db", "postgresql:/u:hunter2@h/db"], 3, "✗ database: unsupported database"),
    (["orders", "show", "not-a-code"], 2, "not a valid order code"),
])
def test_usage_and_config_errors(cli, cli_env, args, code, needle, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    p = cli(args, cli_env, cwd=cwd)
    assert p.returncode == code, (p.out, p.err)
    assert needle in p.err + p.out
    assert "hunter2" not in p.err + p.out
    assert list(cwd.iterdir()) == []  # no file made of a URL
    no_traceback(p)


def test_orders_show(cli, cli_env):
    p = cli(["orders", "show", "--json", " gh56jk78mn "], cli_env)
    assert p.returncode == 0
    r = json.loads(p.out)
    assert r["order_code"] == "GH56JK78MN" and r["line_items"][0]["sku"] == "PHX-PRO"
    p = cli(["orders", "show", "--json", "--customer", "ben.okafor@example.net", "GH56JK78MN"], cli_env)
    assert p.returncode == 1 and json.loads(p.out) == {"found": False, "order_code": "GH56JK78MN"}
    p = cli(["orders", "show", "ORD-20261234"], cli_env)
    assert p.returncode == 0 and "shipped" in p.out and "USB-KEY" in p.out


def test_db_init_creates_under_home_and_at_a_path(cli, cli_env, home, tmp_path):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DB"}
    p = cli(["db", "init", "--orders", "50"], env)
    assert p.returncode == 0, p.err
    assert (home / "orders.sqlite3").exists() and "50 orders" in p.err
    p = cli(["db", "init"], env)
    assert p.returncode == 3 and "--force" in p.err
    target = tmp_path / "x" / "o.sqlite3"
    p = cli(["db", "init", "--db", f"sqlite:///{target}", "--orders", "20"], env)
    assert p.returncode == 0 and target.exists()


def test_demo_database_is_created_on_first_use(cli, cli_env, home):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DB"}
    p = cli(["orders", "show", "--json", "ORD-20261234"], env)
    assert p.returncode == 0 and json.loads(p.out)["status"] == "shipped"
    assert (home / "orders.sqlite3").exists()


def test_secrets_never_reach_outputs_logs_or_drafts(cli, anthropic_env, fake_anthropic, home, drafts_dir):
    fake_anthropic.queue(
        message(tool_use_block("draft_reply", {"text": f"Echoing {TEST_KEY} back"})),
        text(f"The key is {TEST_KEY}"))
    p = cli(["ask", "--json", "leak?"], anthropic_env)
    assert p.returncode == 0
    produced = p.out + p.err
    for f in list(home.rglob("*")) + list(drafts_dir.rglob("*")):
        if f.is_file():
            produced += f.read_text(errors="replace")
    assert TEST_KEY not in produced
    assert "***" in produced


def test_python_dash_m_and_version(cli_env):
    p = subprocess.run([sys.executable, "-m", "agentcli", "--version"], env=cli_env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("agentcli ")


LIGHT_CHECK = """
import sys
sys.argv = ["agentcli", *sys.argv[1:]]
from agentcli.cli import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"anthropic", "openai", "prompt_toolkit", "psycopg", "psycopg_pool", "httpx", "httpx2", "pydantic"})
md = "rich.markdown" in sys.modules
sys.stderr.write(f"EXIT={code} HEAVY=" + ",".join(heavy) + (",rich.markdown" if md else "") + "\\n")
"""


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"], ["orders", "show", "GH56JK78MN"],
                                  ["drafts", "list"], ["log", "list"]])
def test_light_commands_import_no_sdk(cli_env, args, drafts_dir):
    drafts_dir.mkdir(exist_ok=True)
    p = subprocess.run([sys.executable, "-c", LIGHT_CHECK, *args], env=cli_env, capture_output=True, text=True)
    line = [ln for ln in p.stderr.splitlines() if ln.startswith("EXIT=")]
    # The command itself must have worked: a crash before the heavy imports proves nothing.
    assert line == ["EXIT=0 HEAVY="], p.stderr


@pytest.mark.parametrize("args,env_extra,code,said", [
    (["--max-turns", "0", "hi"], {}, 2, "--max-turns must be at least 1"),
    (["--ticket", "bad\x1bid", "hi"], {}, 2, "a ticket id is"),
    (["   "], {}, 2, "the question is empty"),
    (["where is GH56JK78MN?"], {"AGENTCLI_DB": "/nonexistent/orders.db"}, 3, "does not exist"),
])
def test_json_says_error_on_stdout_when_the_question_never_ran(cli, cli_env, args, env_extra,
                                                                code, said):
    # a script reads one object from standard output whatever happened, with the spec's fields
    p = cli(["ask", "--json", *args], {**cli_env, **env_extra})
    assert p.returncode == code
    r = json.loads(p.out)
    assert SPEC_KEYS <= set(r) and r["status"] == "error" and said in r["error"]
    assert (r["answer"], r["turns"], r["tool_calls"], r["drafts"]) == ("", 0, [], [])
    assert said in p.err and "\x1b" not in p.out  # the same one line on stderr


def test_without_json_a_question_that_never_ran_prints_nothing_on_stdout(cli, cli_env):
    p = cli(["ask", "--max-turns", "0", "hi"], cli_env)
    assert p.returncode == 2 and p.out == "" and "--max-turns" in p.err
