"""Settings precedence (flags > environment > agentcli.toml) and the price table."""

from __future__ import annotations

import pytest

from agentcli.config import resolve
from agentcli.errors import ConfigError, UsageError
from agentcli.pricing import estimate_cost


def test_flags_beat_env_beat_config_file(cli_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text(
        'provider = "offline"\nmodel = "from-file"\nmax_turns = 4\nretries = 7\n'
        'drafts_dir = "file-drafts"\n[prices."from-file"]\ninput = 1.0\noutput = 2.0\n')
    monkeypatch.delenv("AGENTCLI_DRAFTS_DIR")
    s = resolve()
    assert (s.model, s.max_turns, s.retries, str(s.drafts_dir)) == ("from-file", 4, 7, "file-drafts")
    monkeypatch.setenv("AGENTCLI_MODEL", "from-env")
    monkeypatch.setenv("AGENTCLI_RETRIES", "2")
    s = resolve()
    assert (s.model, s.retries) == ("from-env", 2)
    s = resolve(model="from-flag", retries=0, max_turns=9)
    assert (s.model, s.retries, s.max_turns) == ("from-flag", 0, 9)
    assert estimate_cost("from-file", {"input_tokens": 1_000_000, "output_tokens": 500_000}, resolve().prices) == 2.0


def test_provider_default_follows_the_keys(cli_env, monkeypatch):
    assert resolve().provider == "offline" and resolve().provider_source == "auto"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert resolve().provider == "openai"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    s = resolve()
    assert s.provider == "anthropic" and s.model == "claude-sonnet-5-5"
    assert resolve(provider="offline").provider == "offline"


def test_bad_values_are_usage_errors(cli_env, tmp_path, monkeypatch):
    with pytest.raises(UsageError):
        resolve(provider="gpt")
    monkeypatch.setenv("AGENTCLI_RETRIES", "many")
    with pytest.raises(UsageError, match="--retries"):
        resolve()
    monkeypatch.delenv("AGENTCLI_RETRIES")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text("provider = [unclosed")
    with pytest.raises(ConfigError, match="agentcli.toml"):
        resolve()


def test_unknown_model_has_no_cost_estimate():
    assert estimate_cost("some-local-model", {"input_tokens": 10}) is None
    assert estimate_cost("claude-sonnet-5-5", {"output_tokens": 1_000_000}) == 15.0
