"""What a person sees on a terminal (issue 18): ``ask`` and the REPL in a pseudo-terminal at 60
and 120 columns, the screen rendered by a terminal emulator (pyte) and compared as text; pipes
compared byte for byte (in-process). Few and fast: the fake API answers at once. Where the model
plays no part (the banner, reading a paste, the REPL's habits), the REPL runs with the offline
provider: no SDK import (1-2 s of every cold start), the same terminal code. Where the model's
turns are shown but the provider's own words are not (the trace at 60 columns, ``-q``, keys typed
while an answer runs), the openai provider answers: the same loop and renderer, an SDK that
loads in half the time of anthropic's (0.9 s of CPU against 2)."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pexpect
import pyte
import pytest

from agentcli.sessions.log import read_events
from agentcli.testing import fake_openai as fo
from agentcli.testing.fake_anthropic import error, message, text, text_block, tool_use_block


GUARD_S = 20  # a hang guard only
REPLY = ("Hello Ana,\n\nyour payment for order GH56JK78MN is being matched to the order. We will "
         "write again as soon as it is done.\n\nKind regards")
ANSWER = "## Summary\n\nOrder **GH56JK78MN** is waiting for its payment.\n\n- draft saved for review"


def exe() -> str:
    p = Path(sys.executable).parent / "agentcli"
    return str(p) if p.exists() else "agentcli"


def scripted(fake) -> None:
    fake.queue(
        message(text_block("I'll look up the order first."),
                tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}),
                delay=0.4),  # a model that takes a moment: the spinner shows (not for instant steps)
        message(text_block("Found it. Drafting a reply."),
                tool_use_block("draft_reply", {"text": REPLY, "order_code": "GH56JK78MN"})),
        text(ANSWER))


def scripted_openai(fake) -> None:
    """``scripted`` in Chat Completions terms: the same turns, texts and calls."""
    fake.queue(
        fo.completion(fo.tool_call("get_order_status", {"order_code": "GH56JK78MN"}),
                      content="I'll look up the order first.", delay=0.4),
        fo.completion(fo.tool_call("draft_reply", {"text": REPLY, "order_code": "GH56JK78MN"}),
                      content="Found it. Drafting a reply."),
        fo.text(ANSWER))


def spawn(args, env, cols, cwd, rows=60, extra_env=None):
    env = {**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": str(cols),
           "LINES": str(rows), "AGENTCLI_DRAFTS_DIR": "drafts"}
    env.pop("NO_COLOR", None)  # cli_env sets it; a staffer's terminal has colour by default
    env.update(extra_env or {})
    return pexpect.spawn(exe(), args, env=env, cwd=str(cwd), timeout=GUARD_S,
                         dimensions=(rows, cols))


class Screen:
    """A terminal emulator fed with everything the child wrote."""

    def __init__(self, cols: int, rows: int = 60):
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""

    def feed(self, data: bytes) -> None:
        self.raw += data
        self.stream.feed(data)

    def text(self) -> str:
        lines = [ln.rstrip() for ln in self.screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)


def normalised(screen: str, tmp: Path | None = None) -> str:
    screen = re.sub(r"\(\d+\.\d ms\)", "(N ms)", screen)
    screen = re.sub(r"tokens, \d+\.\d s\)", "tokens, N s)", screen)  # the checks' model call
    if tmp is not None:  # the drafts folder is shown as it really is: absolute
        screen = screen.replace(f"{tmp}/drafts/", "TMP/drafts/")
    return re.sub(r"d-[0-9a-f]{12}", "d-ID", screen)


def read_to_end(child, cols) -> Screen:
    """Everything CHILD writes until it ends, on a Screen of COLS columns (``.status`` its exit)."""
    s = Screen(cols)
    try:
        while True:
            try:
                s.feed(child.read_nonblocking(65536, timeout=GUARD_S))
            except pexpect.EOF:
                break
    finally:
        child.close(force=True)
    s.status = child.exitstatus
    return s


def run_ask(env, cols, cwd, *args) -> Screen:
    return read_to_end(spawn(["ask", *args], env, cols, cwd), cols)


# The lookup's line, wrapped at words: where it breaks depends on the width of its duration
# ("(8.1 ms)" or "(1234.5 ms)" on a busy machine), so it is compared as one line and its
# wrapping checked on its own.
LOOKUP = ("← get_order_status ok (N ms): GH56JK78MN pending_payment · PhotoFlux Pro license · "
          "placed 2026-11-20 · “payment received, not yet matched to the order”")


def lookup_block(screen: str, cols: int) -> str:
    """SCREEN with the lookup's wrapped lines (from "← get_order_status" to the blank line
    after them) replaced by one "<LOOKUP>" line, once they are found to be LOOKUP wrapped
    greedily at spaces within COLS columns."""
    lines = screen.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("← get_order_status"))
    end = lines.index("", start)
    block = lines[start:end]
    assert normalised(" ".join(block)) == LOOKUP, block
    for line, nxt in zip(block, block[1:]):  # no line could have taken the next one's first word
        assert len(line) <= cols and len(line) + 1 + len(nxt.split(" ")[0]) > cols, block
    return "\n".join(lines[:start] + ["<LOOKUP>"] + lines[end:])


DRAFT_60 = """\
✎ draft d-ID saved: pending review, nothing was
sent
  TMP/drafts/d-ID.md
  │ Hello Ana,
  │
  │ your payment for order GH56JK78MN is being matched to
  │ the order. We will write again as soon as it is done.
  │
  │ Kind regards"""
DRAFT_120 = """\
✎ draft d-ID saved: pending review, nothing was sent
  TMP/drafts/d-ID.md
  │ Hello Ana,
  │
  │ your payment for order GH56JK78MN is being matched to the order. We will write again as soon as it is done.
  │
  │ Kind regards"""


# case: (columns, arguments, provider); the same script either way (anthropic at 120 columns)
ASKED = {"ask-60": (60, ["Reply to Ana about GH56JK78MN"], "openai"),
         "ask-120": (120, ["Reply to Ana about GH56JK78MN"], "anthropic"),
         "quiet-80": (80, ["-q", "Reply to Ana about GH56JK78MN"], "openai")}
CHECK_MODEL = {"anthropic": "claude-sonnet-5-5", "openai": "fake-model"}  # the checks' line


def openai_api(fake) -> dict[str, str]:
    """The settings that point a CLI at a fake Chat Completions server (as ``openai_env``)."""
    return {"OPENAI_BASE_URL": fake.base_url, "AGENTCLI_PROVIDER": "openai",
            "AGENTCLI_MODEL": "fake-model", "AGENTCLI_RETRIES": "1"}


@pytest.fixture(scope="module")
def asked(tmp_path_factory, demo_db):
    """``ask`` on a terminal for each case of ASKED, the scripted model (a fake API each) and a
    folder each as the working directory: the processes run at once, so their starts overlap.
    -> {case: (Screen with .status, the working directory)}"""
    import contextlib

    from agentcli.testing.fake_anthropic import FakeAnthropic

    from .conftest import clean_env, fake_api

    children, done = {}, {}
    with contextlib.ExitStack() as stack:
        try:
            for case, (cols, args, provider) in ASKED.items():
                if provider == "anthropic":
                    fake = stack.enter_context(FakeAnthropic())
                    scripted(fake)
                    api = fake_api(fake.url)
                else:
                    fake = stack.enter_context(fo.FakeOpenAI())
                    scripted_openai(fake)
                    api = openai_api(fake)
                cwd = tmp_path_factory.mktemp(case)
                env = clean_env(cwd / "home", demo_db, **api)
                children[case] = (spawn(["ask", *args], env, cols, cwd), cols, cwd)
            for case, (child, cols, cwd) in children.items():  # read in turn
                done[case] = (read_to_end(child, cols), cwd)
        finally:
            for child, _, _ in children.values():
                child.close(force=True)
    return done


@pytest.mark.slow
@pytest.mark.parametrize("cols", [60, 120])
def test_ask_on_a_terminal(asked, cols):
    """Each text block apart, the lookup on one (word-wrapped) line, the draft once as quoted text,
    the answer last, set apart and rendered as Markdown (no ##, no **); ids never split."""
    s, tmp_path = asked[f"ask-{cols}"]
    assert s.status == 0
    want = "\n".join([
        "I'll look up the order first.",
        '→ get_order_status {"order_code": "GH56JK78MN"}',
        "<LOOKUP>",
        "",
        "Found it. Drafting a reply.",
        "→ draft_reply (order GH56JK78MN)",
        DRAFT_60 if cols == 60 else DRAFT_120,
        "",
        "Summary",
        "",
        "Order GH56JK78MN is waiting for its payment.",
        "",
        " • draft saved for review",
        # the grounding checks' model layer is a model call of its own, shown (issue 23)
        f"✓ checks: floor + model ({CHECK_MODEL[ASKED[f'ask-{cols}'][2]]}: 0 tokens, N s)"])
    # the path is whole when it fits, else broken after a "/" (never wider than the terminal)
    screen = lookup_block(s.text().replace("/\n    ", "/"), cols)
    assert normalised(screen, tmp_path) == want, normalised(screen, tmp_path)
    assert all(len(ln) <= cols for ln in s.text().splitlines())
    (draft,) = (tmp_path / "drafts").glob("d-*.md")
    assert s.text().count(draft.stem) == 2  # id and path, each whole on its line
    assert b"waiting for the model" in s.raw  # the spinner ran while the model was asked


@pytest.mark.slow
def test_ask_on_a_terminal_shows_every_retry_with_its_reason(anthropic_env, fake_anthropic, tmp_path):
    # (the countdown of a wait of a second or more: tests/test_ratelimit.py, on the renderer)
    fake_anthropic.queue(error(529, "Overloaded", headers={"retry-after-ms": "300"}), text("Done."))
    anthropic_env = {**anthropic_env, "AGENTCLI_CHECK_MODEL": "off"}  # one model call a question
    s = run_ask(anthropic_env, 120, tmp_path, "--retries", "1", "hello")
    assert s.status == 0
    retry, answer = s.text().split("\n")
    # the wait is what is left of the server's 0.3 s when the retry is decided: its tenths depend
    # on the machine, so the line is compared up to them
    m = re.fullmatch(r"↻ model call 1 failed: the Anthropic API is overloaded \(529\): Overloaded; "
                     r"retrying in (\d\.\d) s \(try 2\)", retry)
    assert m and 0 < float(m.group(1)) <= 0.3, retry
    assert answer == "Done."
    assert len(fake_anthropic.requests) == 2


def test_ask_on_a_pipe_is_raw_markdown_byte_for_byte(cli, anthropic_env, fake_anthropic):
    scripted(fake_anthropic)
    p = cli(["ask", "Reply to Ana about GH56JK78MN"], anthropic_env)
    assert p.returncode == 0
    assert p.stdout == (ANSWER + "\n").encode()
    lines = p.err.splitlines()
    assert lines[0] == "model: I'll look up the order first."
    assert lines[3] == "model: Found it. Drafting a reply."
    assert lines[4] == "→ draft_reply (order GH56JK78MN)"
    assert lines[5].startswith("✎ draft d-") and lines[6].startswith("  ") and lines[6].endswith(".md")
    assert lines[7:-1] == ["  │ " + ln if ln else "  │" for ln in REPLY.split("\n")]
    assert lines[-1].startswith("✓ checks: floor + model (claude-sonnet-5-5: ")


@pytest.mark.slow
def test_quiet_on_a_terminal_keeps_text_blocks_apart(asked):
    s, _ = asked["quiet-80"]
    assert s.status == 0
    # -q: the answer only; the model's in-between words ("I'll look up the order first.") are trace
    assert s.text() == ("Summary\n\nOrder GH56JK78MN is waiting for its payment.\n\n"
                        " • draft saved for review")


def repl(env, cols, cwd, extra_env=None):
    child = spawn(["chat"], env, cols, cwd, extra_env=extra_env)
    s = Screen(cols)

    def until(needle: bytes) -> None:
        deadline = time.monotonic() + GUARD_S
        while needle not in s.raw:
            if time.monotonic() > deadline:
                raise AssertionError(f"never shown: {needle!r}\n{s.text()}")
            try:
                s.feed(child.read_nonblocking(65536, timeout=0.2))
            except pexpect.TIMEOUT:
                pass

    return child, s, until


def offline(cli_env) -> dict[str, str]:
    """``cli_env`` with the offline provider: the REPL and ``ask`` without a model SDK."""
    return {**cli_env, "AGENTCLI_PROVIDER": "offline"}


def questions_logged(home: Path) -> list[str]:
    return [e["text"] for log in sorted((home / "sessions").glob("*.jsonl"))
            for e in read_events(log) if e["type"] == "question"]


def test_repl_paste_habits_and_leaving(cli_env, home, tmp_path, demo_db):
    """A paste without bracketed paste (all lines written at once) is one question, even when
    its first line starts with "/"; /drafs gets a "did you mean"; /usage with a word is refused;
    `exit` leaves without asking anything and the drafts of the session are listed."""
    child, s, until = repl(offline(cli_env), 60, tmp_path)
    try:
        until("›".encode())
        email = ["/home page says my order is late.", "Order GH56JK78MN.", "Thanks, Ana"]
        child.send("\r".join(email) + "\r")  # one write: the way a paste arrives
        until(b"for review")  # the offline answer: "I saved a reply as draft ... for review"
        until(b"\xe2\x80\xba")  # the next prompt
        mark = len(s.raw)
        child.send("/drafs\r")
        until(b"did you mean /drafts?")
        child.send("/usage extra\r")
        until(b"takes no argument")
        child.send("exit\r")
        until(b"saved in this session")
        child.expect(pexpect.EOF)
        s.feed(child.before or b"")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    # the banner's path is never cut: whole, or broken after a "/" to fit 60 columns
    assert str(demo_db.resolve()) in re.sub(r"/\s+", "/", s.text())
    assert all(len(ln) <= 60 for ln in s.text().splitlines())
    assert questions_logged(home) == ["\n".join(email)]  # one question; `exit` asked nothing
    tail = s.raw[mark:].decode("utf-8", "replace")
    assert "unknown command /drafs; did you mean /drafts?" in re.sub(r"\s+", " ", tail)
    (draft,) = (tmp_path / "drafts").glob("d-*.md")
    assert draft.stem in s.text().split("saved in this session")[-1]


def test_a_pasted_colour_code_at_the_prompt_keeps_the_question(cli_env, home, tmp_path):
    # Issue 24 item 8, in a real pseudo-terminal: the bytes of "Hi \x1b[31mthere" as a terminal
    # without bracketed paste delivers them. What is tested is the prompt's reading of them, so
    # the offline provider answers (no SDK); the question as asked is the session log's, the
    # very text a model provider is sent (loop.Conversation._ask logs it, then adds it).
    child, s, until = repl(offline(cli_env), 100, tmp_path)
    try:
        until("›".encode())
        child.send("Hi \x1b[31mthere, where is GH56JK78MN?\r")
        until(b"for review")  # the offline answer: "I saved a reply as draft ... for review"
        mark = s.raw.rindex(b"for review")
        deadline = time.monotonic() + GUARD_S
        while "›".encode() not in s.raw[mark:] and time.monotonic() < deadline:  # the next prompt
            try:
                s.feed(child.read_nonblocking(65536, timeout=0.2))
            except pexpect.TIMEOUT:
                pass
        child.send("\x04")
        child.expect(pexpect.EOF)
        s.feed(child.before or b"")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert b"Traceback" not in s.raw and b"Press ENTER" not in s.raw
    assert questions_logged(home) == ["Hi there, where is GH56JK78MN?"]


def test_no_color_means_no_style_at_all(cli_env, tmp_path):
    child, s, until = repl(offline(cli_env), 120, tmp_path, {"NO_COLOR": "1"})
    try:
        until(b"Ctrl-D or /exit leaves")
        # the banner only: the prompt that may follow in the same read is prompt_toolkit's
        banner = s.raw[:s.raw.index(b"Ctrl-D or /exit leaves") + len(b"Ctrl-D or /exit leaves")]
        until("›".encode())
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert b"chat \xe2\x80\x94 one ticket at a time" in banner
    assert not re.search(rb"\x1b\[[0-9;]*m", banner), banner  # no bold, dim or colour


def test_ask_dash_on_a_terminal_says_what_it_waits_for(cli_env, home, tmp_path):
    child = spawn(["ask", "-"], offline(cli_env), 80, tmp_path)
    try:
        child.expect("paste the question, then press Ctrl-D")
        child.send("Where is my order\rGH56JK78MN?\r")
        child.sendeof()
        child.expect("status pending_payment")  # the offline workflow looked the order up
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert questions_logged(home) == ["Where is my order\nGH56JK78MN?"]  # both lines, one question


@pytest.mark.slow
def test_keys_typed_while_an_answer_runs_are_not_echoed_but_kept(openai_env, fake_openai,
                                                                  tmp_path):
    fake_openai.queue(fo.text("First answer.", delay=1.0), fo.text("Second answer."))
    child, s, until = repl(openai_env, 80, tmp_path)
    try:
        until("›".encode())
        child.send("first\r")
        until(b"waiting for the model")
        child.send("typed ahead")
        until(b"First answer.")
        shown_during = s.raw.split(b"First answer.")[0]
        until(b"typed ahead")  # the next prompt has it, ready to edit or send
        child.send("\r")
        until(b"Second answer.")
        until(b"\xe2\x80\xba")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert b"typed ahead" not in shown_during  # not echoed into the spinner line
    assert fake_openai.requests[1]["messages"][-1] == {"role": "user", "content": "typed ahead"}
