"""Settings precedence (flags > environment > agentcli.toml) and the price table."""

from __future__ import annotations

import pytest

from agentcli.config import resolve
from agentcli.errors import ConfigError, UsageError
from agentcli.providers.pricing import estimate_cost


def test_flags_beat_env_beat_config_file(cli_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text(
        'provider = "offline"\nmodel = "from-file"\nmax_turns = 4\nretries = 7\n'
        'drafts_dir = "file-drafts"\n[prices."from-file"]\ninput = 1.0\noutput = 2.0\n')
    monkeypatch.delenv("AGENTCLI_DRAFTS_DIR")
    s = resolve()
    # a relative drafts_dir in agentcli.toml is the file's folder's, wherever the command runs
    assert (s.model, s.max_turns, s.retries, s.drafts_dir) == ("from-file", 4, 7, tmp_path / "file-drafts")
    monkeypatch.setenv("AGENTCLI_MODEL", "from-env")
    monkeypatch.setenv("AGENTCLI_RETRIES", "2")
    s = resolve()
    assert (s.model, s.retries) == ("from-env", 2)
    s = resolve(model="from-flag", retries=0, max_turns=9)
    assert (s.model, s.retries, s.max_turns) == ("from-flag", 0, 9)
    assert estimate_cost("from-file", {"input_tokens": 1_000_000, "output_tokens": 500_000}, resolve().prices) == 2.0


def test_provider_default_follows_the_keys(cli_env, monkeypatch):
    assert resolve().provider == "offline"
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


@pytest.mark.parametrize("toml,words", [
    ("max_turns = inf", "max_turns must be a whole number"),
    ("retries = 1e400", "retries must be a whole number"),
    ("drafts_dir = 5", "drafts_dir must be text"),
    ('drafts_dir = ["a"]', "drafts_dir must be text"),
    ("request_timeout = true", "request_timeout must be a number"),
    ("prices = 3", "prices must be a table"),
])
def test_config_values_of_the_wrong_type_are_configuration_errors(cli_env, tmp_path, monkeypatch, toml, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError, match=words):
        resolve()


def test_config_file_oddities(cli_env, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "agentcli.toml"
    cfg.write_bytes(b"\xff\xfe = 1\n")  # not UTF-8
    with pytest.raises(ConfigError, match="cannot read"):
        resolve()
    cfg.write_text("max_turn = 3\n")  # a typo: warned about, not silently ignored
    assert resolve().max_turns == 10
    assert "unknown setting 'max_turn'" in capsys.readouterr().err
    for bad in ("nan", "inf", "-inf"):
        monkeypatch.setenv("AGENTCLI_REQUEST_TIMEOUT", bad)
        with pytest.raises(UsageError, match="finite"):
            resolve()


def test_unusable_prices_give_no_estimate_rather_than_invalid_json():
    for v in (float("nan"), float("inf"), -1.0, "cheap"):
        assert estimate_cost("m", {"input_tokens": 10}, {"m": {"input": v}}) is None


@pytest.mark.parametrize("toml,key", [
    ("max_turns = 0", "max_turns"), ("tool_timeout = inf", "tool_timeout"),
    ("retries = -1", "retries"), ('provider = "gpt"', "provider"), ('customer = " "', "customer"),
    ('customer = "Ana Silva"', "customer"), ("request_timeout = nan", "request_timeout"),
])
def test_bad_values_in_the_config_file_name_the_file_and_the_key(cli_env, tmp_path, monkeypatch, toml, key):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError) as e:
        resolve()
    assert e.value.exit_code == 3
    assert str(tmp_path / "agentcli.toml") in e.value.message and f"{key} " in e.value.message
    assert "--" not in e.value.message  # no flag was given: do not blame one


def test_a_config_file_nested_too_deeply_is_a_configuration_error(cli_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        resolve()


@pytest.mark.parametrize("value,expected", [
    ("ana.silva@example.com", "ana.silva@example.com"),
    ("  Ana Silva <ana.silva@example.com> ", "ana.silva@example.com"),
    ('"Silva, Ana" <ana.silva@example.com>', "ana.silva@example.com"),
])
def test_a_customer_is_an_address_or_a_named_address(cli_env, monkeypatch, value, expected):
    assert resolve(customer=value).customer == expected
    monkeypatch.setenv("AGENTCLI_CUSTOMER", value)
    assert resolve().customer == expected


@pytest.mark.parametrize("value", [" ", "", "Ana Silva", "ana@", "@example.com", "a@b@c",
                                   "ana silva@example.com", "Ana <>", "ana@example.com\u2028x",
                                   "ana@example.com, ben@example.net", "x" * 300 + "@example.com"])
def test_a_blank_or_malformed_customer_is_refused_everywhere(cli_env, monkeypatch, value):
    with pytest.raises(UsageError, match="--customer"):
        resolve(customer=value)
    monkeypatch.setenv("AGENTCLI_CUSTOMER", value)
    with pytest.raises(UsageError, match="AGENTCLI_CUSTOMER"):  # set but empty too: fail closed
        resolve()


@pytest.mark.parametrize("price,said", [
    ('"abc"', "got 'abc'"), ("-3", "got -3"), ("nan", "got nan"), ("inf", "got inf"),
    ("true", "got True"), ("[1]", "got an array"),
])
def test_a_bad_price_is_a_configuration_error_naming_the_model_and_the_key(cli, cli_env, tmp_path, price, said):
    cfg = tmp_path / "agentcli.toml"
    cfg.write_text(f'[prices."claude-sonnet-5-5"]\noutput = 15.0\ninput = {price}\n')
    p = cli(["ask", "--provider", "offline", "ORD-20261234?"], cli_env, cwd=tmp_path)
    assert p.returncode == 3, p.err
    (line,) = [ln for ln in p.err.splitlines() if "offline workflow" not in ln]
    assert f"{cfg}: prices of 'claude-sonnet-5-5': input must be a number of at least 0" in line
    assert said in line


def test_a_price_table_that_is_not_a_table_is_refused(cli_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text('[prices]\nmy-model = 3\n')
    with pytest.raises(ConfigError, match="prices of 'my-model' must be a table of input, output"):
        resolve()


def test_an_unknown_price_key_is_warned_about_with_the_closest_one(cli_env, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text('[prices."my-model"]\ninptu = 3.0\noutput = 15.0\n')
    prices = resolve().prices
    err = capsys.readouterr().err
    assert "unknown price 'inptu' of 'my-model' is ignored; did you mean input?" in err
    assert estimate_cost("my-model", {"output_tokens": 1_000_000}, prices) == 15.0


def test_a_price_not_set_for_a_known_model_is_its_built_in_price(cli_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agentcli.toml").write_text('[prices."claude-sonnet-5-5"]\noutput = 10\n')
    prices = resolve().prices
    assert prices == {"claude-sonnet-5-5": {"output": 10.0}}
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    assert estimate_cost("claude-sonnet-5-5", usage, prices) == 3.0 + 10.0  # not 0 + 10
