"""Check before spending (agentcli.cli.preflight) and ``agentcli doctor`` (issue 15 item 1, issue 14
item 5 last bullet): every run stops with exit 3 and one line before the first model call; doctor
prints every check with its fix."""

from __future__ import annotations

import json
import os

import pytest

from agentcli.cli.preflight import folder_check
from agentcli.errors import ConfigError
from agentcli.sessions.log import SessionLog

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
    if "--json" in args:  # ask --json: the spec's object says the question never ran
        r = json.loads(p.out)
        assert r["status"] == "error" and "drafts folder" in r["error"] and r["tool_calls"] == []
    else:
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


# --------------------------------------------------------------------------- issue 24 item 6

def _lock_dir(d):
    (d / ".lock").mkdir()


def _lock_fifo(d):
    os.mkfifo(d / ".lock")


def _lock_symlink(d):
    (d.parent / "elsewhere").write_text("")
    (d / ".lock").symlink_to(d.parent / "elsewhere")


def _lock_socket(d):
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d / ".lock"))
    s.close()


LOCKS = {"folder": (_lock_dir, "is a folder"), "fifo": (_lock_fifo, "is a FIFO"),
         "symlink": (_lock_symlink, "is a symbolic link"), "socket": (_lock_socket, "is a socket")}


@pytest.mark.parametrize("kind", list(LOCKS))
def test_a_drafts_lock_that_is_not_a_file_fails_doctor_and_every_run(cli, cli_env, drafts_dir,
                                                                     kind):
    make, words = LOCKS[kind]
    drafts_dir.mkdir()
    make(drafts_dir)
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    d = cli(["doctor", "--json"], env)
    assert d.returncode == 3, d.err
    (check,) = [c for c in json.loads(d.out)["checks"]
                if c["name"].startswith("drafts") and not c["ok"]]  # one check fails, the lock's
    assert check["name"] == "drafts lock" and words in check["detail"] and ".lock" in check["fix"]
    for args, inp in ((["ask", Q], None), (["batch"], Q + "\n"), (["chat"], Q + "\n")):
        p = cli(args, env, input=inp)
        assert p.returncode == 3 and words in _one_line(p.err), (args, p.err)
        assert p.out == ""


BAD_ENDPOINTS = [
    ({"ANTHROPIC_API_KEY": "sk-ant-api03\u2013abcdef"}, "provider key", "U+2013 (en dash) at position 13"),
    ({"ANTHROPIC_API_KEY": "sk-ant-\u201cabc\u201d"}, "provider key", "U+201C"),
    ({"ANTHROPIC_BASE_URL": "http://[::1"}, "provider address", "ANTHROPIC_BASE_URL is not a valid URL"),
    ({"ANTHROPIC_BASE_URL": "http://127.0.0.1:99999"}, "provider address", "Port out of range"),
    ({"ANTHROPIC_BASE_URL": "localhost:8080"}, "provider address", "must start with http://"),
    ({"HTTPS_PROXY": "http://[::1"}, "provider address", "HTTPS_PROXY is not a valid URL"),
    ({"all_proxy": "http://proxy:port"}, "provider address", "all_proxy is not a valid URL"),
]


@pytest.mark.parametrize("extra,name,words", BAD_ENDPOINTS, ids=range(len(BAD_ENDPOINTS)))
def test_a_key_or_address_that_cannot_work_is_a_configuration_error(cli, anthropic_env,
                                                                    fake_anthropic, extra, name,
                                                                    words):
    env = {**anthropic_env, **extra}
    d = cli(["doctor", "--json"], env)
    assert d.returncode == 3, d.err
    checks = json.loads(d.out)["checks"]
    (check,) = [c for c in checks if c["name"] == name]
    assert not check["ok"] and words in check["detail"] and check["fix"], check
    # said once: the provider, which refuses the same, is not built until it is fixed
    assert [c["name"] for c in checks if not c["ok"]] == [name, "provider"]
    assert "not built until" in checks[-1]["detail"] and words not in checks[-1]["detail"]
    assert "sk-ant-api03" not in d.out  # the key itself is never shown
    for args, inp in ((["ask", Q], None), (["batch"], Q + "\n"), (["chat"], Q + "\n"),
                      (["eval"], None)):
        p = cli(args, env, input=inp)
        assert p.returncode == 3, (args, p.err)
        assert words in _one_line(p.err) and "internal error" not in p.err
    assert fake_anthropic.requests == []  # nothing spent


def test_openai_key_and_base_url_are_checked_the_same_way(cli, openai_env, fake_openai):
    for extra, words in (({"OPENAI_API_KEY": "sk-proj\u2014x"}, "U+2014 (em dash)"),
                         ({"OPENAI_BASE_URL": "http://[::1"}, "OPENAI_BASE_URL is not a valid URL")):
        p = cli(["ask", Q], {**openai_env, **extra})
        assert p.returncode == 3 and words in _one_line(p.err), p.err
    assert fake_openai.requests == []


def test_a_usable_unicode_host_is_not_refused(cli, anthropic_env):
    p = cli(["doctor", "--json"], {**anthropic_env, "ANTHROPIC_BASE_URL": "http://bücher.example"})
    (check,) = [c for c in json.loads(p.out)["checks"] if c["name"] == "provider address"]
    assert check["ok"], check


def test_a_write_only_drafts_folder_fails_doctor_and_ask(cli_env, drafts_dir, tmp_path):
    import subprocess

    from tests.conftest import agentcli_exe, as_a_user

    drafts_dir.mkdir()
    drafts_dir.chmod(0o333)  # files can be made in it, but it cannot be listed
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    try:
        d = subprocess.run(as_a_user([agentcli_exe(), "doctor", "--json"]), env=env,
                           capture_output=True, text=True, timeout=60)
        a = subprocess.run(as_a_user([agentcli_exe(), "ask", Q]), env=env,
                           capture_output=True, text=True, timeout=60)
    finally:
        drafts_dir.chmod(0o700)
    assert d.returncode == 3, d.stderr
    (check,) = [c for c in json.loads(d.stdout)["checks"]
                if c["name"].startswith("drafts") and not c["ok"]]
    # the write is taken; reading the folder back is what fails
    assert check["name"] == "drafts files" and "no draft can be written" in check["detail"], check
    assert "ermission" in check["detail"], check
    assert a.returncode == 3 and "drafts" in _one_line(a.stderr), a.stderr
    assert [p.name for p in drafts_dir.iterdir()] == [".lock"]  # the probe is gone; the lock it took stays, as after a save


def test_doctor_prints_no_bold_under_no_color(cli_env):
    pexpect = pytest.importorskip("pexpect")
    from tests.conftest import agentcli_exe

    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    outs = {}
    for no_color in ("1", None):
        e = {k: v for k, v in env.items() if k != "NO_COLOR"}
        if no_color:
            e["NO_COLOR"] = no_color
        child = pexpect.spawn(agentcli_exe(), ["doctor"], env=e, encoding="utf-8", timeout=60,
                              dimensions=(40, 160))
        outs[no_color] = child.read()
        child.close()
        assert child.exitstatus == 0, outs[no_color]
    assert "\x1b[" in outs[None]  # a terminal without NO_COLOR gets colour and bold: the test sees it
    assert "\x1b[" not in outs["1"] and "all checks passed" in outs["1"]
