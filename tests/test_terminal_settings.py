"""Issue 18 settings: --max-tokens (flag, env, agentcli.toml) sent to the model; an empty
ANTHROPIC_API_KEY is a configuration error; every retry is the loop's own, shown with its reason."""

from __future__ import annotations

from agentcli.testing import fake_anthropic as fa
from agentcli.testing import fake_openai as fo


def test_max_tokens_reaches_both_providers_from_flag_env_and_config(cli, anthropic_env, fake_anthropic,
                                                                    openai_env, fake_openai, tmp_path):
    fake_anthropic.queue(fa.text("a"), fa.text("b"))
    assert cli(["ask", "--max-tokens", "77", "hi"], anthropic_env).returncode == 0
    assert cli(["ask", "hi"], {**anthropic_env, "AGENTCLI_MAX_TOKENS": "99"}).returncode == 0
    assert [r["max_tokens"] for r in fake_anthropic.requests] == [77, 99]
    (tmp_path / "agentcli.toml").write_text("max_tokens = 55\n")
    fake_openai.queue(fo.text("c"))
    assert cli(["ask", "hi"], openai_env, cwd=tmp_path).returncode == 0
    assert fake_openai.requests[-1]["max_tokens"] == 55


def test_a_bad_max_tokens_is_one_line_blaming_its_source(cli, cli_env, tmp_path):
    p = cli(["ask", "--max-tokens", "0", "hi"], cli_env)
    assert p.returncode == 2 and p.err.strip() == "agentcli: --max-tokens must be at least 1, got 0"
    p = cli(["ask", "hi"], {**cli_env, "AGENTCLI_MAX_TOKENS": "lots"})
    assert p.returncode == 2 and "AGENTCLI_MAX_TOKENS (--max-tokens)" in p.err
    (tmp_path / "agentcli.toml").write_text('max_tokens = "lots"\n')
    p = cli(["ask", "hi"], cli_env, cwd=tmp_path)
    assert p.returncode == 3 and "max_tokens must be a whole number" in p.err


def test_the_max_tokens_stop_says_how_to_raise_it(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(fa.text("I was about to", stop_reason="max_tokens"))
    p = cli(["ask", "--max-tokens", "64", "hi"], anthropic_env)
    assert p.returncode == 1
    assert "ran out of output tokens (64)" in p.err and "raise --max-tokens" in p.err


def test_an_empty_anthropic_key_is_a_configuration_error_not_offline(cli, cli_env):
    for value in ("", "   "):
        p = cli(["ask", "ORD-20261234?"], {**cli_env, "ANTHROPIC_API_KEY": value})
        assert p.returncode == 3, p.err
        assert p.err.strip().startswith("agentcli: ANTHROPIC_API_KEY is set but empty")
        assert "offline workflow (rule-based" not in p.err and p.out == ""
    # asked for explicitly, the offline workflow still runs
    p = cli(["ask", "--provider", "offline", "ORD-20261234?"], {**cli_env, "ANTHROPIC_API_KEY": ""})
    assert p.returncode == 0


def test_overload_and_429_retries_are_the_loops_and_shown_with_their_reason(cli, anthropic_env,
                                                                           fake_anthropic):
    soon = {"retry-after-ms": "50"}  # the server's wait, honoured: no backoff of 0.5 s and up
    fake_anthropic.queue(fa.error(529, "Overloaded", headers=soon), fa.error(429, "slow down", headers=soon),
                         fa.text("done"))
    p = cli(["ask", "--retries", "2", "hi"], anthropic_env)
    assert p.returncode == 0 and p.out == "done\n"
    assert len(fake_anthropic.requests) == 3  # the SDK retried nothing on its own
    retries = [ln for ln in p.err.splitlines() if "retrying in" in ln]
    assert len(retries) == 2
    assert "overloaded (529)" in retries[0] and "Overloaded" in retries[0]
    assert "rate limited" in retries[1] and "slow down" in retries[1]


def test_a_final_rate_limit_in_ask_gives_no_batch_advice(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(*[fa.error(429, "slow down", headers={"retry-after-ms": "50"})] * 2)
    p = cli(["ask", "--retries", "1", "hi"], anthropic_env)
    assert p.returncode == 4
    (line,) = [ln for ln in p.err.splitlines() if "rate limited" in ln and "retrying" not in ln]
    assert line.startswith("agentcli: ") and "tried 2 times" in line
    assert "concurrency" not in line and "wait a minute" in line


def test_a_context_overflow_in_ask_says_shorten_not_new_ticket(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(fa.error(400, "prompt is too long: 250000 tokens > 200000 maximum"))
    p = cli(["ask", "hello"], anthropic_env)
    assert p.returncode == 1
    assert "context window" in p.err and "shorten the question" in p.err and "/new" not in p.err


def test_a_stalled_stream_names_the_flag_not_the_exception(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(*[fa.text("This answer stalls.", stall_after=2, stall_seconds=5)] * 2)
    p = cli(["ask", "--request-timeout", "0.2", "--retries", "1", "hello"], anthropic_env)
    assert p.returncode == 4
    assert "--request-timeout" in p.err


def test_a_dropped_stream_is_said_in_words_not_the_exception(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(*[fa.text("This answer is cut.", drop_after=3)] * 2)
    p = cli(["ask", "--retries", "1", "hello"], anthropic_env)
    assert p.returncode == 4
    assert "closed the connection in the middle of the response" in p.err, p.err
    for jargon in ("ReadTimeout", "RemoteProtocolError", "TimeoutException", "httpx"):
        assert jargon not in p.err


def test_a_directory_as_db_is_called_a_directory(cli, cli_env, tmp_path):
    p = cli(["ask", "--provider", "offline", "--db", str(tmp_path), "ORD-20261234?"], cli_env)
    assert p.returncode == 3
    assert f"orders database {tmp_path} is a directory" in p.err
