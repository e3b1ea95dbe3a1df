"""Check before spending (agentcli.cli.preflight) and ``agentcli doctor`` (issue 15 item 1, issue 14
item 5 last bullet): every run stops with exit 3 and one line before the first model call; doctor
prints every check with its fix."""

from __future__ import annotations

import json
import os

import pytest

from agentcli.cli.preflight import folder_check
from agentcli.sessions.log import SessionLog
from agentcli.errors import ConfigError

Q = "where is GH56JK78MN"


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args,inp", [
    (["ask", "-q", Q], None),
    (["ask", "--json", Q], None),
    (["chat"], Q + "\n"),
    (["batch"], Q + "\n"),
    (["eval", "--drafts-dir", "/proc/nope/drafts"], None),
])
def test_unwritable_drafts_folder_stops_every_run_with_3(cli, cli_env, args, inp):
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline", "AGENTCLI_DRAFTS_DIR": "/proc/nope/drafts"}
    p = cli(args, env, input=inp)
    assert p.returncode == 3, p.err
    assert "drafts folder" in _one_line(p.err) and "--drafts-dir" in p.err
    assert p.out == ""


@pytest.mark.parametrize("args,inp", [(["ask", Q], None), (["chat"], Q + "\n"), (["batch"], Q + "\n"),
                                      (["eval"], None)])
def test_unwritable_sessions_folder_is_3_everywhere(cli, cli_env, tmp_path, args, inp):
    home = tmp_path / "home-file"
    home.write_text("not a folder")  # root can write anywhere: a file in the way is what fails
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline", "AGENTCLI_HOME": str(home)}
    p = cli(args, env, input=inp)
    assert p.returncode == 3, (p.out, p.err)
    line = _one_line(p.err)
    assert "sessions folder" in line and "is not a folder" in line and "AGENTCLI_HOME" in line
    assert p.out == ""


def test_drafts_folder_that_is_a_file(cli, cli_env, tmp_path):
    f = tmp_path / "drafts"
    f.write_text("x")
    p = cli(["ask", "--provider", "offline", "--drafts-dir", str(f), Q], cli_env)
    assert p.returncode == 3 and "is not a folder" in p.err


@pytest.mark.parametrize("value", ["", "   ", "sk-ant-abc\n", " sk-ant-abc"])
def test_blank_or_dirty_anthropic_key_is_a_configuration_error(cli, cli_env, value):
    env = {**cli_env, "ANTHROPIC_API_KEY": value, "AGENTCLI_PROVIDER": "anthropic"}
    p = cli(["ask", Q], env)
    assert p.returncode == 3, p.err
    assert "ANTHROPIC_API_KEY" in _one_line(p.err)
    assert "sk-ant-abc" not in p.err


def test_empty_key_never_silently_falls_back_to_offline(cli, cli_env):
    p = cli(["ask", Q], {**cli_env, "ANTHROPIC_API_KEY": ""})
    assert p.returncode == 3 and "set but empty" in _one_line(p.err)
    # naming the offline provider is a choice, and then the empty key does not matter
    p = cli(["ask", "-q", "--provider", "offline", Q], {**cli_env, "ANTHROPIC_API_KEY": ""})
    # the offline workflow looks GH56JK78MN up and saves a grounded draft: a finished question
    assert p.returncode == 0, p.err
    assert "GH56JK78MN" in p.out and "status pending_payment" in p.out
    assert "using the offline workflow" in _one_line(p.err) and "empty" not in p.err


def test_folder_check_creates_nothing_and_leaves_nothing(tmp_path):
    target = tmp_path / "a" / "b"
    c = folder_check("drafts folder", target, "fix")
    assert c.ok and "will be created" in c.detail
    assert not (tmp_path / "a").exists()
    existing = tmp_path / "d"
    existing.mkdir()
    assert folder_check("x", existing, "fix").ok and list(existing.iterdir()) == []


def test_full_disk_under_the_session_log_names_the_session_log(tmp_path):
    (tmp_path / "s1.jsonl").symlink_to("/dev/full")
    log = SessionLog(tmp_path, "s1")
    with pytest.raises(ConfigError) as e:
        log.record({"type": "question", "text": "x"})
    assert "session log" in e.value.message and "space" in e.value.message
    log.close()


# ----------------------------------------------------------------------------- doctor
def test_doctor_all_pass(cli, cli_env):
    p = cli(["doctor", "--provider", "offline"], cli_env)
    assert p.returncode == 0, p.out + p.err
    for name in ("drafts folder", "sessions folder", "database", "provider key"):
        assert f"✓ {name}" in p.out
    assert not os.path.exists(cli_env["AGENTCLI_DRAFTS_DIR"])  # probed, not left behind


def test_doctor_lists_every_failure_with_its_fix(cli, cli_env, tmp_path):
    env = {**cli_env, "AGENTCLI_DRAFTS_DIR": "/proc/nope", "AGENTCLI_DB": str(tmp_path / "none.db")}
    p = cli(["doctor", "--provider", "anthropic", "--json"], env)
    assert p.returncode == 3
    d = json.loads(p.out)
    bad = {c["name"]: c for c in d["checks"] if not c["ok"]}
    # the provider is not built without its key: said, not skipped
    assert set(bad) == {"drafts folder", "database", "provider key", "provider"}, d
    assert bad["drafts folder"]["fix"] and bad["provider key"]["fix"]
    assert "not built until the provider key is fixed" in bad["provider"]["detail"]
    assert d["ok"] is False
    # the same, for a person
    p = cli(["doctor", "--provider", "anthropic"], env)
    assert p.returncode == 3 and p.out.count("✗ ") == 4 and "fix:" in p.out


def test_doctor_api_asks_the_models_list(cli, anthropic_env, fake_anthropic):
    p = cli(["doctor", "--api", "--json"], anthropic_env)
    assert p.returncode == 0, p.out + p.err
    api = [c for c in json.loads(p.out)["checks"] if c["name"] == "model API"][0]
    assert api["ok"] and "/v1/models" in api["detail"]
    assert fake_anthropic.requests == []  # no message was sent: nothing was spent
    fake_anthropic.models_status = 401
    p = cli(["doctor", "--api", "--json"], anthropic_env)
    assert p.returncode == 3
    api = [c for c in json.loads(p.out)["checks"] if c["name"] == "model API"][0]
    assert not api["ok"] and "ANTHROPIC_API_KEY" in api["detail"]
    assert "SECRET" not in p.out


def test_doctor_api_openai(cli, openai_env):
    p = cli(["doctor", "--api"], openai_env)
    assert p.returncode == 0 and "✓ model API" in p.out, p.out + p.err


def test_doctor_without_api_never_reaches_the_network(cli, cli_env):
    env = {**cli_env, "ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    p = cli(["doctor", "--provider", "anthropic"], env)
    assert p.returncode == 0 and "model API" not in p.out
    p = cli(["doctor", "--provider", "anthropic", "--api"], env)
    assert p.returncode == 3 and "✗ model API" in p.out
