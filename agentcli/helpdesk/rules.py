"""What a helpdesk request may be: the allowlist, the ticket rule and the ONE guard.

Each helpdesk module (``zendesk``, ``front``, ``helpscout``, ``freshdesk``) declares a
:class:`Helpdesk`: the one write it may make (exact method and path template: a private note or
a draft, never a public reply), the one read that checks whether a note is already there, the
strict pattern of its ticket ids, how a body is built and how the non-public flag is checked.

:func:`guard` is asserted on every request right before it is sent (``helpdesk.send`` calls it
on the request object the HTTP client is about to put on the wire) and on every line ``drafts
export`` writes. It refuses, before anything is sent:

- a base URL that is not ``https://host[:port]`` (``http://`` only for 127.0.0.1 / localhost,
  the tests' fake helpdesks), with a user name or password, a path, a query or a fragment, or a
  host that is not plain ASCII letters, digits, dots and hyphens;
- a method and path that are not exactly one of the helpdesk's templates filled with a ticket id
  that fully matches its pattern (so ``1/../../users``, ``1?x``, ``1#x``, ``%2F``, spaces, line
  breaks and look-alike Unicode digits never reach a path), a query other than the template's;
- a write body that is not exactly the shape the template needs with the non-public flag set as
  required (Zendesk ``public: false``, Front ``mode: "shared"``, Help Scout ``draft: true``,
  Freshdesk ``private: true``; ``is`` comparisons: ``0``, ``"false"`` or ``null`` are refused)
  and no other key; a read with a body;
- a header outside the few we set.

Standard library only: ``drafts export`` imports no HTTP client.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from ..errors import ConfigError

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_HOST_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
HEADERS = frozenset({"host", "accept", "accept-encoding", "connection", "user-agent",
                     "content-type", "content-length", "authorization"})
MAX_BODY_CHARS = 64 * 1024  # a draft is at most 20,000 characters; escaped HTML at most ~5x less


class Refused(ConfigError):
    """A request the guard will not let go (exit 3: the configuration or our code is wrong,
    never the helpdesk). Nothing was sent."""


@dataclass(frozen=True)
class Route:
    """One allowed request: ``method``, a ``path`` template with one ``{id}`` and a fixed
    ``query`` ("" for none)."""
    method: str
    path: str
    query: str = ""

    def fill(self, ticket: str) -> str:
        return self.path.replace("{id}", ticket)


@dataclass(frozen=True)
class Helpdesk:
    """A helpdesk as our code allows it to be used (see the module docstring)."""
    name: str                  # zendesk: the --to value, the settings' prefix
    title: str                 # Zendesk: for people
    write: Route               # the one write: a private note or a draft
    check: Route               # the one read: the ticket's notes or drafts
    id_re: re.Pattern[str]     # a ticket id, fully matched (ASCII only)
    id_words: str              # "a Zendesk ticket number (digits)" for messages
    what: str                  # "an internal note" / "a shared draft": what a push makes
    build: Callable[[str, Mapping[str, Any]], dict[str, Any]]   # (text, draft meta) -> body
    is_private: Callable[[Any], bool]                            # the body's exact shape and flag
    needs: Callable[[Mapping[str, Any]], str | None]             # why a draft cannot go, or None
    auth: Callable[[str], str]                                   # token -> Authorization value
    created_id: Callable[[Mapping[str, str], Any], str | None]   # (headers, json) -> its id
    find: Callable[[Any, str, str], str | None]                  # (listing, draft id, text) -> id
    default_url: str = ""      # a hint for the README / errors ("https://SUBDOMAIN.zendesk.com")

    @property
    def env_url(self) -> str:
        return f"AGENTCLI_{self.name.upper()}_URL"

    @property
    def env_token(self) -> str:
        return f"AGENTCLI_{self.name.upper()}_TOKEN"


def ticket_ok(hd: Helpdesk, ticket: Any) -> bool:
    return isinstance(ticket, str) and ticket.isascii() and hd.id_re.fullmatch(ticket) is not None


def check_base_url(hd: Helpdesk, base: Any) -> str:
    """The configured base URL, checked (``Refused`` otherwise) and without a trailing "/"."""
    where = f"{hd.env_url} (or {hd.name}_url in agentcli.toml)"
    if not isinstance(base, str) or not base.strip():
        raise Refused(f"no {hd.title} URL: set {where}, e.g. {hd.default_url}")
    b = base.strip()
    if not b.isascii() or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in b):
        raise Refused(f"the {hd.title} URL in {where} holds spaces, controls or non-ASCII "
                      "characters: give it as https://host")
    try:
        u = urlsplit(b)
        port = u.port
    except ValueError:
        raise Refused(f"the {hd.title} URL in {where} is not a URL: give it as https://host") from None
    host = u.hostname or ""
    if u.username is not None or u.password is not None or "@" in u.netloc:
        raise Refused(f"the {hd.title} URL in {where} holds a user name or password: put the "
                      f"token in {hd.env_token} instead, and the URL as https://host")
    if u.query or u.fragment or "?" in b or "#" in b:
        raise Refused(f"the {hd.title} URL in {where} has a query or fragment: give it as https://host")
    if u.path not in ("", "/"):
        raise Refused(f"the {hd.title} URL in {where} has a path ({u.path[:40]!r}): give only "
                      "https://host; agentcli adds the API's path itself")
    if u.scheme == "http" and host in LOCAL_HOSTS:
        pass  # the fake helpdesks of the tests, on this machine
    elif u.scheme != "https":
        raise Refused(f"the {hd.title} URL in {where} must start with https:// (http:// only "
                      "for 127.0.0.1 or localhost)")
    if not host or not (_HOST_RE.fullmatch(host) or host == "::1"):
        raise Refused(f"the {hd.title} URL in {where} names no valid host")
    if port == 0:
        raise Refused(f"the {hd.title} URL in {where} names port 0")
    netloc = u.netloc.lower()
    if port == {"https": 443, "http": 80}[u.scheme]:  # as the HTTP client writes it: no default port
        netloc = netloc.rsplit(":", 1)[0]
    return f"{u.scheme}://{netloc}"


def _routes(hd: Helpdesk) -> tuple[Route, Route]:
    return hd.write, hd.check


def guard(hd: Helpdesk, base: str, method: str, url: str, body: bytes | None,
          ticket: str, headers: Any = ()) -> None:
    """Assert, right before sending, that this exact request is one our code allows (see the
    module docstring); ``Refused`` otherwise. ``url`` is the whole URL as it will be sent,
    ``body`` the bytes of the body (None or b"" for none), ``headers`` the header names."""
    root = check_base_url(hd, base)
    if not ticket_ok(hd, ticket):
        raise Refused(f"not sent: {ticket[:40]!r} is not {hd.id_words}" if isinstance(ticket, str)
                      else "not sent: no ticket id")
    route = next((r for r in _routes(hd) if r.method == method), None)
    if route is None:
        raise Refused(f"not sent: {hd.title} takes no {str(method)[:10]} request from agentcli")
    expected = root + route.fill(ticket) + (f"?{route.query}" if route.query else "")
    if url != expected:
        raise Refused(f"not sent: the request's address is not {hd.title}'s {route.method} "
                      f"{route.path} for ticket {ticket}")
    u = urlsplit(url)
    if u.fragment or (u.query != route.query) or f"{u.scheme}://{u.netloc}" != root:
        raise Refused(f"not sent: the request's address is not {hd.title}'s {route.path}")
    if not re.fullmatch(re.escape(route.path).replace(re.escape("{id}"), hd.id_re.pattern), u.path):
        raise Refused(f"not sent: the request's path is not {hd.title}'s {route.path}")
    for name in headers:
        if str(name).lower() not in HEADERS:
            raise Refused(f"not sent: agentcli sets no {str(name)[:40]!r} header")
    if route is hd.check:
        if body:
            raise Refused(f"not sent: a {hd.title} check carries no body")
        return
    try:
        parsed = json.loads(body or b"")
    except (ValueError, UnicodeDecodeError):
        raise Refused(f"not sent: the body of a {hd.title} request is not JSON") from None
    if not hd.is_private(parsed):
        raise Refused(f"not sent: the body would not make {hd.what} in {hd.title} (the "
                      "non-public flag is missing or wrong, or the body has other fields)")


def exact(obj: Any, keys: set[str]) -> bool:
    """``obj`` is a JSON object with exactly ``keys``."""
    return isinstance(obj, dict) and set(obj) == keys


def text_field(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= MAX_BODY_CHARS


def as_html(text: str) -> str:
    """Plain reply text as the HTML body the draft and note endpoints take: escaped (a draft's
    ``<script>`` or ``<b>`` is shown as typed, never run or rendered), lines kept."""
    return "<br>\n".join(html.escape(line, quote=False) for line in text.split("\n"))


_TAG_RE = re.compile(r"<[^>]{0,2000}>")


def plain(body: Any) -> str:
    """The words of a helpdesk's stored body (HTML or text), whitespace collapsed: what a note
    already there is compared by."""
    if not isinstance(body, str):
        return ""
    s = re.sub(r"<br\s*/?>", "\n", body[:4 * MAX_BODY_CHARS], flags=re.IGNORECASE)
    s = html.unescape(_TAG_RE.sub(" ", s))
    return " ".join(s.split())


def same_words(stored: Any, text: str) -> bool:
    """Does a stored draft hold our text? Its words in order, within what the helpdesk may have
    wrapped around them (a signature, a quote); a short text must be the whole draft."""
    words, have = " ".join(text.split()), plain(stored)
    if not words:
        return False
    return have == words or (len(words) >= 40 and words in have)


def marker(draft_id: str) -> str:
    """The line an internal note ends with: how a rerun finds a note already made."""
    return f"[agentcli draft {draft_id}]"


def items(data: Any, *path: str) -> list[dict[str, Any]]:
    """The list of objects at ``path`` in a listing (``[]`` when the shape is not that)."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return [x for x in data if isinstance(x, dict)][:1000] if isinstance(data, list) else []


def ident(v: Any) -> str | None:
    """A helpdesk's id of a note or draft, as text (bounded; None unless a plain id)."""
    if isinstance(v, bool) or v is None:
        return None
    s = str(v)
    return s if re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", s) else None
