"""Issue 14.4: secrets never reach any output, and non-secrets are left alone.

A secret is checked everywhere it can leave: stdout, stderr (trace, retry and error lines), the
--json object, the session log file and ``log show``, draft files and ``drafts show``, batch
records, ``orders show``. "Leaked" means the key, or any 16 characters copied out of it, can be
read once the text is shown (escape sequences and invisible characters removed).
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentcli.drafts.store import DraftStore
from agentcli.redact import (
    SecretsHeld,
    ascii_json_redacted,
    clean_for_terminal,
    looks_like_secret,
    redact,
    redact_obj,
)
from agentcli.stores import init_sqlite
from agentcli.testing.fake_anthropic import error, message, text, tool_use_block

KEY = "sk-ant-api03-" + "Qx7Lp2Vb9Tn4Rk8Wm3Zc6Yh1Fd5Gs0Ja" * 3 + "-AA"  # shaped like a real key
OTHER = "sk-proj-" + "Hq4Nz8Ck2Pw6Vt0Lb5" * 3  # a key we were never given: found by its shape
SHOWN = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?"
                   r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")

# Ways to hide a key from a plain substring search, that a terminal (or reader) undoes.
SPLITS = [
    lambda k: k[:3] + "\x1b[0m" + k[3:],                   # the example
    lambda k: k[:20] + "\x1b]8;;http://x\x07" + k[20:],     # an OSC hyperlink in the middle
    lambda k: "\x1b[31m" + k[:10] + "\x1b[1m" + k[10:30] + "\x1b[0m" + k[30:],
    lambda k: k[:7] + "\u200b" + k[7:],                     # zero-width space
    lambda k: k[:15] + "\u00ad" + k[15:],                   # soft hyphen
    lambda k: k[:9] + "\x07\x08" + k[9:],                   # bell, backspace
    lambda k: k[:12] + "\u2066" + k[12:],                   # bidi isolate
    lambda k: k[:5] + "\ufeff" + k[5:40] + "\x9b0m" + k[40:],  # BOM, 8-bit CSI
]


def leaked(text: str, key: str = KEY) -> bool:
    seen = SHOWN.sub("", text)
    return any(key[i:i + 16] in seen for i in range(0, len(key) - 15))


@pytest.fixture
def real_key(anthropic_env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return {**anthropic_env, "ANTHROPIC_API_KEY": KEY}


def everything(home, drafts_dir) -> str:
    files = [*home.rglob("*"), *drafts_dir.rglob("*")] if drafts_dir.exists() else [*home.rglob("*")]
    return "".join(f.read_text("utf-8", "replace") for f in files if f.is_file())


# ------------------------------------------------------------------------------- the rule

@pytest.mark.parametrize("value", ["ollama", "lm-studio", "none", "test", "sk-no-key-required", "EMPTY",
                                   "test-key", "my local key", "postgres", "LMStudio", "12345678",
                                   "sk-1234", "", None, "abc", "aaaaaaaaaa1"])
def test_placeholders_and_words_are_not_secrets(value):
    assert not looks_like_secret(value)


@pytest.mark.parametrize("value", [KEY, OTHER, "hunter22", "p@ss@w0rd", "s3cr@t-99",
                                   "0123456789abcdef0123", "AbCdEfGhIjKlMnOpQr"])
def test_keys_and_passwords_are_secrets(value):
    assert looks_like_secret(value)


@pytest.mark.parametrize("placeholder", ["ollama", "lm-studio", "none", "test", "EMPTY", "sk-no-key-required"])
def test_a_placeholder_key_never_corrupts_text(placeholder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", placeholder)
    monkeypatch.setenv("PGPASSWORD", "postgres")
    s = (f"I run {placeholder} locally; see /home/ana/tests/{placeholder}/test_x.py, "
         "postgresql is fine, none of this is secret, EMPTY box, sk-no-key-required")
    assert redact(s) == s
    assert redact_obj({"path": s, s: [s]}) == {"path": s, s: [s]}


@pytest.mark.parametrize("split", range(len(SPLITS)))
@pytest.mark.parametrize("key", [KEY, OTHER])
def test_a_key_split_by_invisible_text_is_found(split, key, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # OTHER is found by its shape alone
    s = "before " + SPLITS[split](key) + " after"
    for out in (redact(s), clean_for_terminal(s)):
        assert not leaked(out, key) and "before " in out and " after" in out


def test_pieces_and_escaped_forms_of_a_known_key(monkeypatch):
    key = "Zq9!x\"Lp2\\Vb9/Tn4@Rk8 é-Wm3Zc6Yh1Fd5"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    from urllib.parse import quote

    for s in (key[5:30], json.dumps(key), json.dumps({"k": key}), quote(key, safe=""),
              "x" + key[:3] + "\\u001b[0m" + key[3:]):
        assert key[8:24] not in redact(s), s


def test_passwords_in_context_and_credential_shapes():
    assert redact("postgresql://app:p@ss@w0rd@db:5432/shop") == "postgresql://app:***@db:5432/shop"
    assert redact("host=db password=postgres user=app") == "host=db password=*** user=app"
    assert redact("GET /v1?api_key=Zz81abc&x=1") == "GET /v1?api_key=***&x=1"
    assert redact("Authorization: Bearer eyJhbGciOi.J9x.y") == "Authorization: Bearer ***"
    assert redact("x-api-key: " + KEY) == "x-api-key: ***"
    # header names in any case, as HTTP allows (the cheap pre-check once missed these)
    assert redact("X-Api-Key: abcdefgh12345678") == "X-Api-Key: ***"
    assert redact("BeArEr abcdefgh12345678xyz") == "BeArEr ***"
    assert redact("AUTHORIZATION: Basic dXNlcjpwYXNzd29yZA==") == "AUTHORIZATION: Basic ***"
    # as re.IGNORECASE reads them: a dotless i, a Kelvin sign (the pre-check once missed these)
    assert redact("authorızation: abcdefgh12345678") == "authorızation: ***"
    assert redact("x-api-\u212aey: abcdefgh12345678") == "x-api-\u212aey: ***"
    # every shape, each alone in its text ("github_pat_" plus digits once passed the pre-check)
    for s in ("ghp_" + "a1B2" * 10, "github_pat_" + "1" * 30, "AIza" + "0" * 32,
              "AKIA" + "ABCDEFGHIJ234567", "xoxb-1234567890-abcdef", "rk_test_" + "0" * 20,
              "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"):
        assert redact(f"see {s} here") == "see *** here"
    for s in ("bearer instruments", "the task-management-system-2024 doc", "sk-this-is-not-a-real-key",
              "http://host:8080/a/b", "ana@example.com", "Ana Silva <ana@example.com>", "GH56JK78MN",
              "Kunde:ana@example.com", "Re:ana@example.com thanks", "at 10:30 ana@example.com/x"):
        assert redact(s) == s


@pytest.mark.parametrize("text,shown", [
    # a URL whose "://" is misspelt, and the SQLite path one became: the password still stands
    # as a password (user:PASSWORD@host, then a path, a port or a query)
    ("postgresql:/support:Tr0ub4dor3xyz@replica/shop", "postgresql:/support:***@replica/shop"),
    ("postgres//support:pw@replica/shop", "postgres//support:***@replica/shop"),
    ("orders database /work/postgres/support:pw@host/db does not exist",
     "orders database /work/postgres/support:***@host/db does not exist"),
    ("postgresql;//app:s3cretPW@db", "postgresql;//app:***@db"),              # ';' for ':'
    (" postgresql:/app:s3cretPW@db", " postgresql:/app:***@db"),
    ("https:/admin:hunter2secret@x.zendesk.com", "https:/admin:***@x.zendesk.com"),  # no path after the host
    ("sqlite:///support:p@ss@w0rd@db:5432/x", "sqlite:///support:***@db:5432/x"),
    ("mysql:/u:hunter2@h?sslmode=require", "mysql:/u:***@h?sslmode=require"),
])
def test_a_password_without_the_urls_slashes_is_still_a_password(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize("text", ["Please confirm your address, email:ana.new@example.com? Thanks.",
                                  "See help:support@shop.example/faq.", "E-Mail:ben.okafor@example.net?",
                                  "mailto:ana@example.com?subject=Order", "Kunde:ana@example.com", "C:/orders.db"])
def test_an_address_in_prose_is_no_password(text, drafts_dir):
    """A reply is kept verbatim: an email address after a word and a colon is no user:password."""
    assert redact(text) == text
    d, _ = DraftStore(drafts_dir).save(text=text, ticket="HD-1")
    assert DraftStore(drafts_dir).get(d.id).text == text


@pytest.mark.parametrize("unit", ["x://a:b@", "/a:b@c!", "postgres//u:", "a:b@" * 3, "u:p@h/"])
def test_redaction_of_a_long_hostile_text_is_linear(unit):
    """Every credential shape is read in linear time: 28 KB of "/a:b@c!" took a second, 112 KB
    fifteen (each '@' tried from every start); 800 KB here finishes well inside the test's timeout."""
    text = unit * (800_000 // len(unit))
    shown = redact(text, ["never-in-it-0123"])
    assert shown == text or "***" in shown


def test_redaction_leaves_everything_else_byte_for_byte(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    s = "a\x1b[31mred\x1b[0m\u200b\u2028b " + KEY + " \x1b]0;t\x07 end"
    assert redact(s) == "a\x1b[31mred\x1b[0m\u200b\u2028b *** \x1b]0;t\x07 end"


def test_secrets_held_for_a_block_and_read_again_after_it(monkeypatch):
    """App.run reads the secrets once per event (SecretsHeld): inside the block the key set
    before it is hidden everywhere; a key set later is hidden once the block is over. The
    memo of short strings belongs to one set of secrets: a string seen before the key was set
    is redacted again after."""
    other = "Wq3Er5Ty7Ui9Op1As2Df4Gh" * 3  # a key of no known shape: hidden only once configured
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert redact_obj({"k": other[:60]}) == {"k": other[:60]}  # not a secret yet: remembered as is
    with SecretsHeld():
        assert redact_obj({KEY: [KEY, {"x": "a " + KEY}]}) == {"***": ["***", {"x": "a ***"}]}
        assert clean_for_terminal("\x1b[1m" + KEY) == "***"
        with SecretsHeld():
            assert redact("key " + KEY) == "key ***"
        assert redact(KEY[5:40]) == "***"
    monkeypatch.setenv("OPENAI_API_KEY", other)
    assert redact_obj({"k": other[:60], "t": KEY}) == {"k": "***", "t": "***"}
    assert redact("x " + other + " " + KEY) == "x *** ***"


# Strings made of what redaction reacts to: pieces of keys, credential hints, escapes and
# invisible characters, quotes and backslashes, non-ASCII, and plain words.
_PIECES = st.sampled_from([KEY, KEY[:30], KEY[20:70], OTHER, "s", OTHER[1:], KEY[:8], KEY[8:19], "sk-", "://",
                           "=", "@", ":", "a:b@c", "pw",
                           "postgresql://u:p4ss@db/x", "Bearer abcdefgh1234", "BEARER ", "x-Api-Key: ", "Authorization: ",
                           "AKIA", "AIza", "SK-", "ghp_", "rk_live_", "-----BEGIN ", "\x1b[0m", "\u200b", "\x7f",
                           "\\", '"', "\u00e9", "\ud800", "\n", " ", "GH56JK78MN", "order", "x"])
_TEXT = st.lists(_PIECES, max_size=6).map("".join)
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12)


@pytest.mark.parametrize("configured", [False, True])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_JSONISH)
@example(value={"t": "s\u200b" + OTHER[1:]})  # a key split by an escaped character: no hint in the dump
@example(value=["s\x1b[0m" + OTHER[1:], KEY[:8] + "\u00ad" + KEY[8:19]])
def test_the_session_logs_json_line_is_the_dump_of_the_redacted_value(configured, value, monkeypatch):
    """ascii_json_redacted skips the walk of redact_obj when the dump shows nothing to redact:
    its line is always exactly the walked one's, with a key configured or not."""
    if configured:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    else:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert ascii_json_redacted(value) == json.dumps(redact_obj(value), ensure_ascii=True, default=str)


def test_a_held_read_spans_awaits_in_its_own_task_only(monkeypatch):
    """App.run holds the secrets for a whole question, across its awaits: another task (a
    batch's other conversation) is not inside the block and sees a change at once, and a value
    add_secret registers inside the block (a database password met mid-question) is hidden at
    once too."""
    import asyncio

    import agentcli.redact as redact_module

    monkeypatch.setattr(redact_module, "_extra", set())
    other = "Wq3Er5Ty7Ui9Op1As2Df4Gh" * 2
    password = "Zp9-xQ4!vR7#tL2m"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def main() -> None:
        started, changed = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            with SecretsHeld():
                assert redact("a " + KEY) == "a ***"
                started.set()
                await changed.wait()
                assert redact("b " + other) == "b " + other  # the environment as read at the start
                redact_module.add_secret(password)
                assert redact("pw " + password) == "pw ***"
            assert redact("c " + other) == "c ***"  # read again after the block

        async def elsewhere() -> None:
            await started.wait()
            monkeypatch.setenv("OPENAI_API_KEY", other)
            assert redact("d " + other) == "d ***"  # not in the block: read at the call
            changed.set()

        await asyncio.gather(holder(), elsewhere())

    asyncio.run(main())


def test_redact_obj_takes_the_deepest_json():
    v = json.loads("[" * 900 + json.dumps(KEY) + "]" * 900)
    out = redact_obj(v, [KEY])
    assert KEY not in json.dumps(out)
    both = redact_obj({KEY: 1, "***": 2}, [KEY])  # two keys that redact alike stay two entries
    assert sorted(both.values()) == [1, 2] and KEY not in json.dumps(both)


# ------------------------------------------------------------------------------- every output

def test_a_split_key_in_model_text_reaches_no_output(cli, real_key, fake_anthropic, home, drafts_dir):
    hidden = SPLITS[0](KEY)
    fake_anthropic.queue(message(tool_use_block("draft_reply", {"text": f"Your key is {hidden} ok",
                                                                "order_code": "GH56JK78MN"})),
                         text(f"Answer: {SPLITS[3](KEY)} and {SPLITS[1](OTHER)}"))
    p = cli(["ask", "--json", "where is GH56JK78MN?"], real_key)
    assert p.returncode == 0, p.err
    assert not leaked(p.out + p.err) and not leaked(p.out + p.err, OTHER)
    assert not leaked(everything(home, drafts_dir)) and not leaked(everything(home, drafts_dir), OTHER)
    (draft,) = drafts_dir.glob("d-*.md")
    sid = json.loads(p.out)["session_id"]
    for args in (["log", "show", sid], ["log", "show", "--json", sid],
                 ["drafts", "show", draft.stem], ["drafts", "show", "--json", draft.stem],
                 ["drafts", "list"], ["drafts", "list", "--json"]):
        q = cli(args, real_key)
        assert q.returncode == 0, (args, q.err)
        assert not leaked(q.out + q.err) and not leaked(q.out + q.err, OTHER), args


def test_a_key_as_tool_name_and_input_key(cli, real_key, fake_anthropic, home, drafts_dir):
    fake_anthropic.queue(message(tool_use_block(SPLITS[2](KEY), {"q": 1}),
                                 tool_use_block("lookup_order", {SPLITS[0](KEY): "x", KEY: {OTHER: 1},
                                                                 "order_code": "GH56JK78MN"})),
                         text("Done."))
    p = cli(["ask", "--json", "hi"], real_key)
    assert "Traceback" not in p.err
    assert not leaked(p.out + p.err) and not leaked(p.out + p.err, OTHER)
    assert not leaked(everything(home, drafts_dir)) and not leaked(everything(home, drafts_dir), OTHER)
    q = cli(["log", "list"], real_key)
    for line in q.out.splitlines():
        r = cli(["log", "show", line.split("\t")[0]], real_key)
        assert not leaked(r.out + r.err) and not leaked(r.out + r.err, OTHER)


def test_a_key_in_a_failing_streams_retry_line(cli, real_key, fake_anthropic, home):
    fake_anthropic.queue(error(529, f"overloaded; your key {SPLITS[0](KEY)} {SPLITS[4](OTHER)}"),
                         text("Fine."))
    p = cli(["ask", "hi"], real_key)
    assert p.returncode == 0, p.err
    assert not leaked(p.out + p.err) and not leaked(p.out + p.err, OTHER)
    fake_anthropic.queue(error(400, f"bad request {SPLITS[5](KEY)}"))
    p = cli(["ask", "hi"], real_key)
    assert p.returncode == 4 and len(p.err.strip().splitlines()) == 1, p.err
    assert not leaked(p.out + p.err) and not leaked(everything(home, home / "none"))


def test_every_batch_record_is_redacted(cli, real_key, fake_anthropic, tmp_path, home):
    f = tmp_path / "q.jsonl"
    lines = [{"id": KEY, "question": f"first {SPLITS[0](OTHER)}"},
             {"id": KEY, "question": f"duplicate {SPLITS[1](KEY)}"},
             {"id": SPLITS[0](KEY), "question": "dup after cleaning? " + OTHER},
             *({"id": f"n{i}", "question": f"never sent {SPLITS[i % len(SPLITS)](KEY)}"} for i in range(6))]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines) + "not json " + KEY + "\n")
    fake_anthropic.handler = lambda req: error(401, "invalid x-api-key " + KEY)
    out = tmp_path / "records.jsonl"
    p = cli(["batch", str(f), "--concurrency", "1", "--output", str(out)], real_key)
    assert p.returncode == 4, p.err
    recs = [json.loads(x) for x in p.out.splitlines()]
    assert len(recs) == len(lines) + 1
    # one at a time: the first is refused (the key), which stops the batch; the second is a
    # duplicate id (told apart before dispatch); every later line is not attempted
    assert [r["status"] for r in recs] == ["error"] * len(recs)
    assert [r.get("stop_reason") for r in recs[:2]] == ["authentication", "duplicate_id"]
    assert all(r["error"].startswith("not attempted") for r in recs[2:]), recs
    for where in (p.out, p.err, out.read_text(), everything(home, home / "none")):
        assert not leaked(where) and not leaked(where, OTHER)


def test_placeholder_keys_leave_questions_and_paths_alone(cli, openai_env, fake_openai, monkeypatch, tmp_path):
    from agentcli.testing.fake_openai import text as otext

    drafts = tmp_path / "test" / "ollama-drafts"
    drafts.parent.mkdir()  # a drafts folder is created only inside a folder that exists
    monkeypatch.setenv("OPENAI_API_KEY", "ollama")
    env = {**openai_env, "OPENAI_API_KEY": "ollama", "AGENTCLI_DRAFTS_DIR": str(drafts)}
    fake_openai.queue(otext("Use ollama with the test model; none needed."))
    q = "Does ollama work offline? my test path is /srv/test/ollama"
    p = cli(["ask", "--json", q], env)
    assert p.returncode == 0, p.err
    out = json.loads(p.out)
    assert out["question"] == q and out["answer"] == "Use ollama with the test model; none needed."
    assert "***" not in p.out


def test_database_text_and_orders_show(cli, cli_env, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    db = tmp_path / "o.sqlite3"
    init_sqlite(db, 20)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE orders SET status_detail = ? WHERE code = 'GH56JK78MN'",
                 (f"note {SPLITS[0](KEY)} / {SPLITS[3](OTHER)} password=postgres",))
    conn.commit()
    conn.close()
    env = {**cli_env, "AGENTCLI_DB": str(db), "OPENAI_API_KEY": KEY}
    for args in (["orders", "show", "GH56JK78MN"], ["orders", "show", "--json", "GH56JK78MN"],
                 ["ask", "--json", "where is GH56JK78MN?"]):
        p = cli(args, env)
        assert p.returncode == 0, (args, p.err)
        assert not leaked(p.out + p.err) and not leaked(p.out + p.err, OTHER), args
        assert "postgres" not in p.out


def test_bad_flag_values_and_customers_show_no_key(cli, real_key):
    for args in (["ask", "--max-turns", SPLITS[0](KEY), "hi"], ["ask", "--customer", KEY, "hi"],
                 ["ask", "--tool-timeout", OTHER, "hi"], ["drafts", "show", KEY],
                 ["log", "show", SPLITS[1](KEY)], ["drafts", "list", "--since", OTHER]):
        p = cli(args, real_key)
        assert p.returncode == 2, (args, p.returncode, p.err)
        assert not leaked(p.out + p.err) and not leaked(p.out + p.err, OTHER), (args, p.err)
        assert "\x1b" not in p.err


def test_history_file_is_redacted_as_seen(tmp_path, monkeypatch):
    pytest.importorskip("prompt_toolkit")
    from agentcli.cli.history import _redacting_file_history

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    h = _redacting_file_history(tmp_path / "hist")
    for split in SPLITS:
        h.store_string("my key " + split(KEY) + " and " + split(OTHER))
    body = (tmp_path / "hist").read_text()
    assert not leaked(body) and not leaked(body, OTHER) and body.count("my key") == len(SPLITS)


def test_line_separators_reach_the_terminal_as_visible_newlines():
    from agentcli.redact import clean_for_terminal

    shown = clean_for_terminal("one\u2028two\u2029three\u0085four")
    assert "\u2028" not in shown and "\u2029" not in shown and "\u0085" not in shown
    assert shown.split("\n")[:2] == ["one", "two"] and shown.split("\n")[2].startswith("three")


def test_what_a_person_types_into_a_draft_is_redacted_like_the_models_text(cli, real_key, drafts_dir,
                                                                          tmp_path, home):
    """Issue 24 item 5: the configured key typed as a reject reason, set as the reviewer's name, or
    pasted in the editor never lands in the (team-readable) draft file."""
    from agentcli.drafts.store import DraftStore

    store = DraftStore(drafts_dir)
    a, _ = store.save(text="First reply.", ticket="T-1", session_id="s1")
    b, _ = store.save(text="Second reply.", ticket="T-2", session_id="s2")
    env = {**real_key, "AGENTCLI_REVIEWER": f"lee {KEY}"}
    assert cli(["drafts", "reject", a.id, "--reason", f"contains {SPLITS[2](KEY)}"], env).returncode == 0
    script = tmp_path / "ed.py"
    script.write_text("import sys\np = sys.argv[1]\ns = open(p).read()\n"
                      f"open(p, 'w').write(s.replace('Second reply.', 'Second reply, key {KEY}.'))\n")
    p = cli(["drafts", "edit", b.id], {**env, "EDITOR": f"{sys.executable} {script}", "VISUAL": ""})
    assert p.returncode == 0, p.err
    files = "".join(f.read_text() for f in drafts_dir.glob("d-*.md"))
    assert not leaked(files) and not leaked(everything(home, drafts_dir))
    # the edit and the decision are recorded all the same, the key as ***
    assert store.get(b.id).text == "Second reply, key ***." and store.get(a.id).meta["status"] == "rejected"
    assert store.get(a.id).meta["history"][-1]["who"] == "lee ***"


@pytest.mark.parametrize("db", ["postgresql;//app:s3cretPW9@db", " postgresql:/app:s3cretPW9@db", "p:/app:s3cretPW9@db/x",
                                "1x:/app:s3cretPW9@db", "postgres/app:s3cretPW9@db/shop",
                                "a" * 50 + ":/app:s3cretPW9@db"])
def test_a_database_url_with_a_typo_never_shows_its_password(cli, cli_env, tmp_path, db):
    """Whatever the typo before it, a value holding user:password@host is a URL, not a SQLite
    path: `orders show`, `doctor` and `db init` refuse it (exit 3) without naming it, and db init
    makes no folders of it."""
    env = {**cli_env, "AGENTCLI_DB": db}
    for args in (["orders", "show", "GH56JK78MN"], ["doctor", "--provider", "offline"]):
        p = cli(args, env)
        assert p.returncode == 3 and "s3cretPW9" not in p.out + p.err, (args, p.out, p.err)
    work = tmp_path / "work"
    work.mkdir()
    p = cli(["db", "init", "--db", db], cli_env, cwd=work)
    assert p.returncode == 3 and "s3cretPW9" not in p.out + p.err and list(work.iterdir()) == [], p.err
