"""The settings table (``config.SETTINGS``): every setting reachable by its flag, environment
variable and ``agentcli.toml`` key with flags > environment > file > default, each bad value
blamed on its source, the defaults in ``--help`` taken from the table, and ``agentcli.toml``
read and checked once per run (one warning for a typo, with a suggestion).

Real config files in temporary folders; commands run in this process (the ``cli`` fixture).
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
import typer.main

from agentcli import config
from agentcli.cli import app
from agentcli.config import SETTING, SETTINGS, resolve
from agentcli.errors import ConfigError, UsageError

Q = "Hi, where is my order ORD-20261234? Thanks"

# The names of ../shared/spec.md (and of the settings the next issues use): they must not move.
SPEC_NAMES = {  # setting: (flag, environment variable, settable in agentcli.toml)
    "provider": ("--provider", "AGENTCLI_PROVIDER", True),
    "model": ("--model", "AGENTCLI_MODEL", True),
    "db": ("--db", "AGENTCLI_DB", True),
    "drafts_dir": ("--drafts-dir", "AGENTCLI_DRAFTS_DIR", True),
    "drafts_url": ("--drafts-url", "AGENTCLI_DRAFTS_URL", True),
    "customer": ("--customer", "AGENTCLI_CUSTOMER", True),
    "max_turns": ("--max-turns", None, True),
    "tool_timeout": ("--tool-timeout", None, True),
    "request_timeout": ("--request-timeout", "AGENTCLI_REQUEST_TIMEOUT", True),
    "retries": ("--retries", "AGENTCLI_RETRIES", True),
    "max_tokens": ("--max-tokens", "AGENTCLI_MAX_TOKENS", True),
    "mode": ("--mode", "AGENTCLI_MODE", True),
    "json": ("--json", None, False),
    "quiet": ("--quiet", None, False),
    "stream": ("--no-stream", None, False),
    # batch --via batches (issue 27)
    "via": ("--via", "AGENTCLI_VIA", True),
    "batch_deadline": ("--batch-deadline", "AGENTCLI_BATCH_DEADLINE", True),
    "live_tail": ("--live-tail", "AGENTCLI_LIVE_TAIL", True),
    "repair": ("--no-repair", None, False),
    "prices": (None, None, True),
    "reviewer": (None, "AGENTCLI_REVIEWER", True),
    "check_model": ("--check-model", "AGENTCLI_CHECK_MODEL", True),
    "review_target": (None, None, True),
    # drafts push --to HELPDESK (issue 28): no flag for a URL or a token
    **{f"{h}_{k}": (None, f"AGENTCLI_{h.upper()}_{k.upper()}", True)
       for h in ("zendesk", "front", "helpscout", "freshdesk") for k in ("url", "token")},
    "helpdesk_timeout": ("--timeout", "AGENTCLI_HELPDESK_TIMEOUT", True),
}

# setting: (value in agentcli.toml, expected), (environment, expected), (flag, expected)
SAMPLES = {
    "provider": (('"openai"', "openai"), ("ANTHROPIC", "anthropic"), ("offline", "offline")),
    "model": (('"m-file"', "m-file"), ("m-env", "m-env"), ("m-flag", "m-flag")),
    "db": (('"/f.sqlite3"', "/f.sqlite3"), ("/e.sqlite3", "/e.sqlite3"), ("/g.sqlite3", "/g.sqlite3")),
    # relative: to agentcli.toml's folder (the working directory here), or the working directory
    "drafts_dir": (('"fd"', Path("fd").absolute), ("~/ed", Path("~/ed").expanduser()),
                   (Path("gd"), Path("gd").absolute)),
    "drafts_url": (('"postgresql://f/q"', "postgresql://f/q"), ("postgres://e/q", "postgres://e/q"),
                   ("postgresql://g/q", "postgresql://g/q")),
    "customer": (('"f@example.com"', "f@example.com"), ("Ed <e@example.com>", "e@example.com"),
                 ("g@example.com", "g@example.com")),
    "max_turns": (("4", 4), None, (6, 6)),
    "tool_timeout": (("1.5", 1.5), None, (3.0, 3.0)),
    "request_timeout": (("7", 7.0), ("8.5", 8.5), (9.0, 9.0)),
    "retries": (("0", 0), (" 1 ", 1), (2, 2)),
    "max_tokens": (("55", 55), ("66", 66), (77, 77)),
    "mode": (('"workflow"', "workflow"), ("Agent", "agent"), ("workflow", "workflow")),
    "json": (None, None, (True, True)),
    "quiet": (None, None, (True, True)),
    "stream": (None, None, (False, False)),
    "repair": (None, None, (False, False)),
    "prices": (('{m = {input = 1.0}}', {"m": {"input": 1.0}}), None, None),
    "reviewer": (('"sam"', "sam"), ("kim", "kim"), None),
    "check_model": (('"cm-file"', "cm-file"), ("cm-env", "cm-env"), ("cm-flag", "cm-flag")),
    "review_target": (('"1h30m"', timedelta(minutes=90)), None, None),
    **{f"{h}_{k}": ((f'"{h}-{k}-file-X9"', f"{h}-{k}-file-X9"), (f"{h}-{k}-env-Y8", f"{h}-{k}-env-Y8"),
                    None)
       for h in ("zendesk", "front", "helpscout", "freshdesk") for k in ("url", "token")},
    "helpdesk_timeout": (("12", 12.0), ("3.5", 3.5), (0.5, 0.5)),
    "via": (('"batches"', "batches"), ("Batches", "batches"), ("batches", "batches")),
    "batch_deadline": (('"2h"', timedelta(hours=2)), ("90s", timedelta(seconds=90)),
                       ("1h30m", timedelta(minutes=90))),
    "live_tail": (("3", 3), ("4", 4), (5, 5)),
}

# setting: a bad value (agentcli.toml, environment, flag; None: no such source) and words of
# the message whatever the source
BAD = {
    "provider": ('"gpt"', "gpt", "gpt", "unknown provider"),
    "drafts_url": ('"mysql://u:pw-0123@h/q"', "sqlite:///u:pw-0123@x", None, "postgresql://"),
    "customer": ('"Ana Silva"', "Ana Silva", "Ana Silva", "not an email address"),
    "max_turns": ("0", None, 0, "at least 1"),
    "tool_timeout": ("0", None, 0.0, "at least 0.001"),
    "request_timeout": ("0", "0", 0.0, "at least 0.001"),
    "retries": ("-1", "-1", -1, "at least 0"),
    "max_tokens": ("0", "0", 0, "at least 1"),
    "mode": ('"auto"', "auto", "auto", "unknown mode"),
    "review_target": ('"soon"', None, None, "duration such as 4h"),
    "helpdesk_timeout": ("0", "0", None, "at least 0.05"),  # its flag is on drafts push only
    # their flags are on batch only (the test's command is ask)
    "via": ('"bulk"', "bulk", None, "unknown via"),
    "batch_deadline": ('"0s"', "soon", None, "duration such as 4h"),
    "live_tail": ("-1", "-1", None, "at least 0"),
}


@pytest.fixture
def here(cli_env, tmp_path, monkeypatch):
    """The working directory is a fresh folder where agentcli.toml can be written; no setting
    comes from the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # not this machine's own file
    for s in SETTINGS:
        if s.env:
            monkeypatch.delenv(s.env, raising=False)
    return tmp_path


def test_the_table_keeps_every_name_of_the_spec():
    assert set(SETTING) == set(SPEC_NAMES) == set(SAMPLES)
    for name, (flag, env, toml) in SPEC_NAMES.items():
        s = SETTING[name]
        assert (s.flag, s.env, s.toml) == (flag, env, toml), name
    assert config.CONFIG_KEYS == tuple(n for n, (_, _, toml) in SPEC_NAMES.items() if toml)


def _value(expected):
    """An expected value, or a function giving it in the test's working directory."""
    return expected() if callable(expected) else expected


@pytest.mark.parametrize("name", list(SAMPLES))
def test_each_setting_by_file_env_and_flag_in_that_order_of_precedence(here, monkeypatch, name):
    s = SETTING[name]
    from_file, from_env, from_flag = SAMPLES[name]
    # every source the table declares has a sample, and no other
    assert (from_file is not None, from_env is not None, from_flag is not None) == (
        s.toml, s.env is not None, bool(s.flags))
    untouched = getattr(resolve(), name)
    if from_file:
        (here / "agentcli.toml").write_text(f"{name} = {from_file[0]}\n")
        assert getattr(resolve(), name) == _value(from_file[1]) != untouched
        assert config.source_of(name) == "config"
    if from_env:
        monkeypatch.setenv(s.env, from_env[0])
        assert getattr(resolve(), name) == _value(from_env[1])
        assert config.source_of(name) == "env"
    if from_flag:
        assert getattr(resolve(**{name: from_flag[0]}), name) == _value(from_flag[1])
        assert config.source_of(name, from_flag[0]) == "flag"
    assert config.resolve_setting(name, from_flag[0] if from_flag else None) == getattr(
        resolve(**({name: from_flag[0]} if from_flag else {})), name)


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_value_is_blamed_on_its_source(here, monkeypatch, name):
    s = SETTING[name]
    in_file, in_env, in_flag, words = BAD[name]
    cfg = here / "agentcli.toml"
    cfg.write_text(f"{name} = {in_file}\n")
    with pytest.raises(ConfigError) as e:
        resolve()
    assert e.value.exit_code == 3 and words in e.value.message
    assert e.value.message.startswith(f"{cfg}: {name} ") and "--" not in e.value.message
    # each source above the file wins over it, so the blame moves up with it
    if in_env is not None:
        monkeypatch.setenv(s.env, in_env)
        with pytest.raises(UsageError) as e:
            resolve()
        named = f"{s.env} ({s.flag})" if s.commands else s.env  # no flag named that no command has
        assert e.value.message.startswith(f"{named} ") and e.value.exit_code == 2
        assert words in e.value.message
    if in_flag is not None:
        with pytest.raises(UsageError) as e:
            resolve(**{name: in_flag})
        assert e.value.message.startswith(f"{s.flag} ") and words in e.value.message


def test_a_postgres_url_is_never_echoed_nor_shown_in_settings(here, monkeypatch):
    (here / "agentcli.toml").write_text('drafts_url = "mysql://u:pw-0123@h/q"\n')
    with pytest.raises(ConfigError) as e:
        resolve()
    assert "pw-0123" not in e.value.message and "mysql://" in e.value.message
    (here / "agentcli.toml").write_text('drafts_url = "postgresql://u:pw-0123@h/q"\ndb = "postgresql://u:pw-0123@h/s"\n')
    s = resolve()
    assert s.drafts_url == "postgresql://u:pw-0123@h/q"
    assert "pw-0123" not in repr(s)


@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_through_the_cli_a_bad_value_exits_2_for_flag_and_env_and_3_for_the_file(cli, cli_env, tmp_path, source):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    args = ["ask", Q]  # the offline workflow: no key in the environment
    for name, (in_file, in_env, in_flag, words) in BAD.items():
        s = SETTING[name]
        if source == "flag" and in_flag is not None and s.commands:
            p = cli([*args, s.flag, str(in_flag)], env, cwd=tmp_path)
            want, named = 2, s.flag
        elif source == "env" and in_env is not None:
            p = cli(args, {**env, s.env: in_env}, cwd=tmp_path)
            want, named = 2, s.env
        elif source == "file":
            (tmp_path / "agentcli.toml").write_text(f"{name} = {in_file}\n")
            p = cli(args, env, cwd=tmp_path)
            (tmp_path / "agentcli.toml").unlink()
            want, named = 3, f"agentcli.toml: {name} "
        else:
            continue
        assert p.returncode == want, (name, p.err)
        (line,) = p.err.splitlines()
        assert named in line and words in line and "pw-0123" not in line, line
        assert not (tmp_path / "drafts").exists()  # nothing ran


@pytest.mark.parametrize("flag, value, words", [
    ("--max-tokens", "99999999999999999999999999", "at most 1000000"),   # went to the API as it was
    ("--max-turns", "99999999999999999999999", "at most 1000"),
    ("--tool-timeout", "1e308", "at most 3600"),
    ("--request-timeout", "1e308", "at most 3600"),
    ("--model", "", "is blank"),                                       # the default model, silently
    ("--model", "   ", "is blank"),
    ("--check-model", "", "is blank"),
])
def test_a_value_past_any_sane_bound_or_a_blank_flag_is_a_usage_error(cli, cli_env, tmp_path, flag, value, words):
    p = cli(["ask", flag, value, Q], cli_env, cwd=tmp_path)
    assert p.returncode == 2, p.err
    (line,) = p.err.splitlines()
    assert flag in line and words in line, line


def test_the_drafts_folder_follows_flag_env_and_file_in_a_real_run(cli, cli_env, tmp_path):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    (tmp_path / "agentcli.toml").write_text('drafts_dir = "from-file"\n')
    ask = ["ask", "--provider", "offline", "--json", Q]
    for extra_env, extra_args, folder in (({}, [], "from-file"),
                                          ({"AGENTCLI_DRAFTS_DIR": "from-env"}, [], "from-env"),
                                          ({"AGENTCLI_DRAFTS_DIR": "from-env"}, ["--drafts-dir", "from-flag"], "from-flag")):
        p = cli([*ask, *extra_args], {**env, **extra_env}, cwd=tmp_path)
        assert p.returncode == 0, p.err
        (draft,) = json.loads(p.out)["drafts"]
        assert (tmp_path / folder / f"{draft['id']}.md").is_file()
        listed = cli(["drafts", "list", "--json", *extra_args], {**env, **extra_env}, cwd=tmp_path)
        assert [d["id"] for d in json.loads(listed.out)] == [draft["id"]]


# =========================================================================== --help

def _option_help(text: str) -> dict[str, str]:
    """Each option of a --help text -> its help, joined onto one line."""
    out: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"  (-[^\s,]+(?:, --\S+)?)(?: (?!\s)\S+)?\s{2,}(.*)", line)
        if m:
            current = m.group(1).split(", ")[-1]
            out[current] = m.group(2)
        elif current and line.startswith(" " * 10) and line.strip():
            out[current] += " " + line.strip()
        else:
            current = None
    return out


def _plain(value):
    if isinstance(value, Path):
        return f"./{value}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_help_shows_each_default_that_resolve_gives(cli, cli_env, here):
    p = cli(["ask", "--help"], cli_env)
    helps = _option_help(p.out)
    defaults = resolve(provider="offline")
    for s in SETTINGS:
        if config.MODEL not in s.commands:
            continue
        text = helps[s.flag]
        assert text.startswith(" ".join(s.help.split())), s.name
        if s.env:
            assert f"env {s.env}" in text
        if s.default_help is None and s.kind is not config.SWITCH and s.default is not None:
            assert f"default {_plain(getattr(defaults, s.name))}]" in text, (s.name, text)
    assert "default 2048]" in helps["--max-tokens"]
    assert "default AGENTCLI_HOME/drafts]" in helps["--drafts-dir"]
    assert "claude-sonnet-5-5" in helps["--model"]


def _commands():
    def walk(c, path=()):
        yield " ".join(path), c
        if hasattr(c, "list_commands"):  # the root loads its commands lazily: ask it for each
            ctx = typer.Context(c)
            for name in c.list_commands(ctx):
                yield from walk(c.get_command(ctx, name), (*path, name))

    return dict(walk(typer.main.get_command(app)))


def test_each_flag_is_on_the_commands_the_table_names_and_no_other_flag_yet():
    commands = _commands()
    model = ["", "ask", "chat", "batch", "eval", "doctor"]
    flags = {path: {o for p in c.params for o in getattr(p, "opts", [])} for path, c in commands.items()}
    for s in SETTINGS:
        if config.MODEL in s.commands:
            assert all(set(s.flags) <= flags[c] for c in model), s.name
        elif config.HELPDESK in s.commands:  # drafts push only
            assert [c for c, f in flags.items() if s.flag in f] == ["drafts push"], s.name
        elif config.BATCH in s.commands:  # batch only
            assert [c for c, f in flags.items() if s.flag in f] == ["batch"], s.name
        elif s.flags:  # declared, on no command until it is used (drafts_url)
            assert not any(s.flag in f for f in flags.values()), s.name
    for c in ("drafts list", "drafts show", "drafts edit", "drafts approve", "drafts reject", "review"):
        opt = next(p for p in commands[c].params if "--drafts-dir" in getattr(p, "opts", []))
        assert opt.help == SETTING["drafts_dir"].help_text()
    assert {"--db", "--customer", "--json"} <= flags["orders show"]


# =========================================================================== agentcli.toml

def test_a_typo_is_warned_about_once_with_a_suggestion(cli, cli_env, tmp_path):
    (tmp_path / "agentcli.toml").write_text('max_turn = 3\nreviewr = "sam"\nzz_top = 1\n')
    p = cli(["ask", "--provider", "offline", "--json", Q], cli_env, cwd=tmp_path)
    assert p.returncode == 0, p.err
    warnings = [ln for ln in p.err.splitlines() if "warning" in ln]
    assert len(warnings) == 3, p.err
    assert "unknown setting 'max_turn' is ignored; did you mean max_turns?" in warnings[0]
    assert "unknown setting 'reviewr' is ignored; did you mean reviewer?" in warnings[1]
    assert "'zz_top'" in warnings[2] and "known settings: provider, model" in warnings[2]
    assert str(tmp_path / "agentcli.toml") in warnings[0]
    (draft,) = json.loads(p.out)["drafts"]
    # a review command reads the folder and the reviewer: still one warning each, and with
    # `reviewr` ignored the login name approves (the warning said why)
    p = cli(["drafts", "approve", draft["id"]], {**cli_env, "USER": "lee"}, cwd=tmp_path)
    assert p.returncode == 0, p.err
    assert p.err.count("unknown setting 'reviewr'") == 1 and p.err.count("'max_turn'") == 1
    shown = cli(["drafts", "show", draft["id"], "--json"], cli_env, cwd=tmp_path)
    assert json.loads(shown.out)["reviewed_by"] == "lee"


def test_a_hostile_key_is_shown_cleaned(cli, cli_env, tmp_path):
    (tmp_path / "agentcli.toml").write_text('"\\u001b[31mred\\u2028x" = 1\n')
    p = cli(["ask", "--provider", "offline", Q], cli_env, cwd=tmp_path)
    (line,) = [ln for ln in p.err.splitlines() if "warning" in ln]
    assert "\x1b" not in line and "\u2028" not in line and "red" in line


def test_a_file_of_unknown_keys_is_a_few_lines_of_warning(here, capsys):
    (here / "agentcli.toml").write_text("".join(f"k{i} = {i}\n" for i in range(5000)))
    assert resolve().max_turns == 10
    err = capsys.readouterr().err.splitlines()
    assert len(err) == config.MAX_WARNINGS + 1 and err[-1].endswith(
        f"{5000 - config.MAX_WARNINGS} more unknown settings are ignored")


def test_the_file_is_read_once_per_process_and_again_when_it_changes(here, capsys):
    cfg = here / "agentcli.toml"
    cfg.write_text("max_turn = 3\nmax_tokens = 55\n")
    assert config.load_config_file().values["max_tokens"] == 55
    assert resolve().max_tokens == 55 and config.resolve_drafts_dir() == config.default_drafts_dir()
    assert capsys.readouterr().err.count("warning") == 1
    # the same size and the same modification time: still seen as new
    st = cfg.stat()
    cfg.write_text("max_turn = 3\nmax_tokens = 66\n")
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert resolve().max_tokens == 66
    assert capsys.readouterr().err.count("warning") == 1
    cfg.write_text("max_tokens = 0\nmax_turns = 'x'\n")  # a bad file stays bad on every read
    for _ in range(2):
        with pytest.raises(ConfigError, match="max_turns must be a whole number"):
            config.load_config_file()
    cfg.unlink()
    assert resolve().max_tokens == 2048 and config.config_file_in_use() is None


def test_the_loader_says_which_file_is_in_use(here, home):
    assert config.config_file_in_use() is None
    (home / "agentcli.toml").write_text('model = "from-home"\n')
    assert config.config_file_in_use() == home / "agentcli.toml"
    assert resolve(provider="anthropic").model == "from-home"
    (here / "agentcli.toml").write_text('model = "from-here"\n')  # the working directory first
    assert config.config_file_in_use() == here / "agentcli.toml"
    assert resolve(provider="anthropic").model == "from-here"
    assert config.load_config_file().values == {"model": "from-here"}
    with pytest.raises(TypeError):
        config.load_config_file().values["model"] = "x"  # read-only: it is shared


@pytest.mark.parametrize("make", ["folder", "fifo", "huge"])
def test_what_is_not_a_config_file(here, make):
    path = here / "agentcli.toml"
    if make == "folder":
        path.mkdir()
        assert config.config_file_in_use() is None
    elif make == "fifo":
        os.mkfifo(path)
        assert config.config_file_in_use() is None  # never opened: a FIFO would hang the run
    else:
        path.write_bytes(b"# " + b"x" * config.MAX_CONFIG_BYTES + b"\n")
        with pytest.raises(ConfigError, match="too large"):
            resolve()


@pytest.mark.parametrize("value,expected", [
    ("4h", timedelta(hours=4)), ("30m", timedelta(minutes=30)), ("2d", timedelta(days=2)),
    ("1w", timedelta(weeks=1)), ("1h 30m", timedelta(minutes=90)), ("90S", timedelta(seconds=90)),
    ("0.5h", timedelta(minutes=30)),
])
def test_review_target_durations(here, value, expected):
    (here / "agentcli.toml").write_text(f'review_target = "{value}"\n')
    assert resolve().review_target == expected


@pytest.mark.parametrize("value", ["0h", "", " ", "4", "h", "4 hours", "-1h", "9" * 13 + "w",
                                   "99999999999w", "1h;2m", "4h4"])
def test_review_target_refuses_what_is_not_a_duration(here, value):
    (here / "agentcli.toml").write_text(f'review_target = {json.dumps(value)}\n')
    if not value.strip():  # blank: the default, as for every text setting
        assert resolve().review_target == timedelta(hours=4)
        return
    with pytest.raises(ConfigError, match="review_target must be a duration"):
        resolve()


# =========================================================================== what a message shows

SECRET_VALUE = "Xk29sLq81mZpA0vB7cD"  # 19 characters, mixed: what a helpdesk token looks like
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzdXBwb3J0In0.Qm9ndXNTaWduYXR1cmUxMjM"


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.secret and s.toml])
@pytest.mark.parametrize("toml,said", [
    (f'["{SECRET_VALUE}"]', "an array"), ("9876543210123", "a whole number"),
    (f'{{token = "{SECRET_VALUE}"}}', "a table"), ("98765.43210123", "a number"),
])
def test_a_secret_setting_of_the_wrong_type_is_said_by_its_type_never_shown(here, name, toml, said):
    (here / "agentcli.toml").write_text(f"{name} = {toml}\n")
    with pytest.raises(ConfigError) as e:
        resolve()
    assert f"{name} must be text, got {said}" in e.value.message
    assert SECRET_VALUE not in e.value.message and "9876543210123" not in e.value.message
    assert "98765" not in e.value.message


@pytest.mark.parametrize("toml", [f'reviewer = {{token = "{SECRET_VALUE}"}}',
                                  f'model = ["{SECRET_VALUE}"]', f'agentcli = ["{SECRET_VALUE}"]',
                                  f'max_turns = {{pw = "{SECRET_VALUE}"}}'])
def test_what_a_table_or_an_array_holds_is_never_shown(here, toml):
    (here / "agentcli.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError) as e:
        resolve()
    assert SECRET_VALUE not in e.value.message
    assert "got a table" in e.value.message or "got an array" in e.value.message


def test_doctor_says_a_secret_of_the_wrong_type_without_showing_it(cli, cli_env, tmp_path):
    (tmp_path / "agentcli.toml").write_text(f'front_token = ["{JWT}"]\n')
    p = cli(["doctor", "--provider", "offline"], cli_env, cwd=tmp_path)
    assert p.returncode == 3
    assert "front_token must be text, got an array" in p.out
    assert "eyJ" not in p.out + p.err
    p = cli(["doctor", "--provider", "offline", "--json"], cli_env, cwd=tmp_path)
    assert "eyJ" not in p.out + p.err and "got an array" in p.out


def test_a_value_quoted_in_a_message_is_redacted_and_bounded(here):
    (here / "agentcli.toml").write_text(f'max_turns = "sk-ant-api03-{SECRET_VALUE * 3}"\n')
    with pytest.raises(ConfigError) as e:
        resolve()
    assert SECRET_VALUE not in e.value.message and "must be a whole number, got" in e.value.message
    (here / "agentcli.toml").write_text(f'mode = "{"x" * 5000}"\n')
    with pytest.raises(ConfigError) as e:
        resolve()
    assert len(e.value.message) < 400


# =========================================================================== control characters, long paths

PLAIN_KINDS = (config.TEXT, config.PATH, config.POSTGRES_URL)


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.kind in PLAIN_KINDS])
def test_a_control_character_is_refused_from_every_source_naming_the_key(here, monkeypatch, name):
    s = SETTING[name]
    bad = "postgresql://h/q\x00x" if s.kind is config.POSTGRES_URL else "a\x00b"
    in_toml = bad.replace("\x00", "\\u0000")
    (here / "agentcli.toml").write_text(f'{name} = "{in_toml}"\n')
    with pytest.raises(ConfigError) as e:
        resolve()
    assert e.value.message.startswith(f"{here / 'agentcli.toml'}: {name} holds a control character (U+0000")
    env_bad = bad.replace("\x00", "\x1b")  # no environment variable or argument holds a NUL
    if s.env:
        monkeypatch.setenv(s.env, env_bad)
        with pytest.raises(UsageError, match="holds a control character .U\\+001B") as e:
            resolve()
        assert e.value.message.startswith(s.env) and "\x1b" not in e.value.message
        monkeypatch.delenv(s.env)
    if s.flags:
        with pytest.raises(UsageError, match="holds a control character .U\\+001B") as e:
            resolve(**{name: env_bad})
        assert e.value.message.startswith(s.flag)


@pytest.mark.parametrize("toml,named", [('drafts_dir = "a\\u0000b"', "drafts_dir"),
                                        ('db = "x\\u0000y"', "db"),
                                        ('drafts_dir = "' + "d" * 300 + '"', "drafts_dir"),
                                        ('drafts_dir = "/tmp/' + "d/" * 2100 + '"', "drafts_dir")])
def test_a_nul_or_a_path_too_long_is_exit_3_and_a_failed_check_of_doctor(cli, cli_env, tmp_path, toml, named):
    cli_env = {k: v for k, v in cli_env.items() if k not in ("AGENTCLI_DRAFTS_DIR", "AGENTCLI_DB")}
    (tmp_path / "agentcli.toml").write_text(toml + "\n")
    p = cli(["ask", "--provider", "offline", Q], cli_env, cwd=tmp_path)
    assert p.returncode == 3, p.err
    (line,) = [ln for ln in p.err.splitlines() if "offline workflow" not in ln]
    assert f"agentcli.toml: {named} " in line and "internal error" not in line
    p = cli(["doctor", "--provider", "offline", "--json"], cli_env, cwd=tmp_path)
    assert p.returncode == 3, p.err
    checks = {c["name"]: c for c in json.loads(p.out)["checks"]}
    assert not checks[f"setting {named}"]["ok"] and checks["provider"]["ok"]
    if named == "drafts_dir":
        assert "the default" in checks["drafts folder"]["detail"]  # not "from drafts_dir in ..."


def test_a_flag_naming_a_path_too_long_is_a_usage_error(cli, cli_env, tmp_path):
    p = cli(["ask", "--provider", "offline", "--drafts-dir", str(tmp_path / ("d" * 300)), Q], cli_env)
    assert p.returncode == 2 and "--drafts-dir has a name of 300 bytes" in p.err


def test_an_agentcli_home_too_long_is_exit_3_and_doctor_lists_every_check(cli, cli_env, tmp_path):
    env = {k: v for k, v in cli_env.items() if k not in ("AGENTCLI_DRAFTS_DIR", "AGENTCLI_DB")}
    env["AGENTCLI_HOME"] = str(tmp_path / ("h" * 300))
    p = cli(["ask", "--provider", "offline", Q], env, cwd=tmp_path)
    assert p.returncode == 3 and "longer than the file system allows" in p.err, p.err
    p = cli(["doctor", "--provider", "offline", "--json"], env, cwd=tmp_path)
    assert p.returncode == 3, p.err
    checks = {c["name"]: c["ok"] for c in json.loads(p.out)["checks"]}
    assert checks["drafts folder"] is checks["database"] is False and checks["provider"] is True


# =========================================================================== where drafts go, and who is blamed

DEAD_QUEUE = "postgresql://support@127.0.0.1:9/queue"  # nothing listens on port 9


def test_a_drafts_dir_from_a_higher_source_beats_drafts_url_in_the_file(cli, cli_env, tmp_path, here, monkeypatch):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    (tmp_path / "agentcli.toml").write_text(f'drafts_url = "{DEAD_QUEUE}"\n')
    p = cli(["ask", "--provider", "offline", "--json", "--drafts-dir", "mine", Q], env, cwd=tmp_path)
    assert p.returncode == 0, p.err
    (draft,) = json.loads(p.out)["drafts"]
    assert (tmp_path / "mine" / f"{draft['id']}.md").is_file()
    listed = cli(["drafts", "list", "--json", "--drafts-dir", "mine"], env, cwd=tmp_path)
    assert listed.returncode == 0 and [d["id"] for d in json.loads(listed.out)] == [draft["id"]]
    monkeypatch.setenv("AGENTCLI_DRAFTS_DIR", "from-env")
    assert resolve().drafts_url is None and config.resolve_drafts_url() is None
    monkeypatch.delenv("AGENTCLI_DRAFTS_DIR")
    assert resolve().drafts_url == DEAD_QUEUE == config.resolve_drafts_url()
    # the queue from a higher source still wins over the folder of the file
    (tmp_path / "agentcli.toml").write_text('drafts_dir = "team"\n')
    monkeypatch.setenv("AGENTCLI_DRAFTS_URL", DEAD_QUEUE)
    assert resolve().drafts_url == DEAD_QUEUE
    assert resolve(drafts_dir=Path("flag")).drafts_url is None


def test_a_message_names_the_source_the_value_came_from(cli, cli_env, tmp_path):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    cfg = tmp_path / "agentcli.toml"
    cfg.write_text('drafts_dir = "/nonexistent-parent/sub/drafts"\n')
    p = cli(["ask", "--provider", "offline", Q], env, cwd=tmp_path)
    assert p.returncode == 3 and f"check drafts_dir in {cfg}" in p.err and "--drafts-dir" not in p.err, p.err
    p = cli(["drafts", "list", "--drafts-dir", "nowhere"], env, cwd=tmp_path)
    assert p.returncode == 3 and "point --drafts-dir at" in p.err and "AGENTCLI_DRAFTS_DIR" not in p.err, p.err
    cfg.write_text(f'drafts_url = "{DEAD_QUEUE}"\n')
    for args in (["ask", "--provider", "offline", Q], ["drafts", "list"]):
        p = cli(args, env, cwd=tmp_path)
        assert p.returncode == 3 and f"check drafts_url in {cfg} (host" in p.err, p.err
        assert "--drafts-url" not in p.err
    cfg.unlink()
    p = cli(["drafts", "list"], {**env, "AGENTCLI_DRAFTS_URL": DEAD_QUEUE}, cwd=tmp_path)
    assert p.returncode == 3 and "check AGENTCLI_DRAFTS_URL (--drafts-url) (host" in p.err, p.err


@pytest.mark.parametrize("var,value,said", [
    ("AGENTCLI_DRAFTS_DIR", "/etc/passwd/drafts", "/etc/passwd is not a folder"),
    ("AGENTCLI_HOME", "/dev/null", "/dev/null is not a folder"),
])
def test_a_file_in_the_way_of_a_folder_is_said_to_be_one(cli, cli_env, tmp_path, var, value, said):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    p = cli(["ask", "--provider", "offline", Q], {**env, var: value}, cwd=tmp_path)
    assert p.returncode == 3 and said in p.err, p.err
    assert "neither does" not in p.err and "no longer exists" not in p.err
