"""Fake helpdesks on 127.0.0.1, one per helpdesk: :class:`FakeZendesk`, :class:`FakeFront`,
:class:`FakeHelpScout`, :class:`FakeFreshdesk`, on the shared :class:`~._http.FakeServer`.

Each records every request (``calls``: method, path, query, headers, body as sent), keeps the
notes or drafts made per ticket (``notes``), answers as the real API does (the shapes
``agentcli.helpdesk`` reads: Zendesk's audit events, Front's message, Help Scout's
``Resource-ID`` header, Freshdesk's note) and serves the listing a rerun checks.

**Its own opinion on public replies.** Independently of ``agentcli.helpdesk.rules`` (no import
of it), every request is judged as the helpdesk would take it: a Zendesk comment whose
``public`` is not ``false`` (Zendesk's default is public), a Front request that is not a
shared draft, a Help Scout reply without ``draft: true``, a Freshdesk note without ``private:
true``, or any other method or path (the endpoints that send) is a **public reply**: it is
listed in ``public_replies`` (a test asserts it stays empty) and answered 400.

Faults, queued with :meth:`fault` (each applies to the next request of its ``on``: "write" or
"check"): a status (429 with ``retry_after``, 5xx, 404, 401), ``delay`` seconds before the
answer (the note already made when ``store``), ``drop`` (the connection closed without an
answer), ``store`` (whether the note is made anyway), ``trickle`` (the answer a byte at a time),
``body`` (these bytes as the answer: HTML, a JSON bomb, escapes). ``tickets`` (None: every ticket exists)
gives 404 for the others; a wrong token is 401.

Standard library only; must not import anything else from ``agentcli``.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import itertools
import json
import re
import threading
from typing import Any
from urllib.parse import urlsplit

from ._http import FakeServer, _Handler

__all__ = ["Fault", "FakeZendesk", "FakeFront", "FakeHelpScout", "FakeFreshdesk", "FAKES"]


@dataclasses.dataclass
class Fault:
    status: int = 500
    on: str = "write"             # "write" or "check"
    store: bool = False           # make the note anyway (the answer is what fails)
    delay: float = 0.0            # seconds before the answer
    drop: bool = False            # close the connection instead of answering
    retry_after: str | None = None
    trickle: float = 0.0          # send the answer one byte every this many seconds
    body: bytes | None = None     # answer with these bytes instead (a broken or hostile answer)


@dataclasses.dataclass
class _Reply:  # FakeServer.queue's type (unused: faults are this server's own queue)
    status: int = 200


class FakeHelpdesk(FakeServer):
    name = "FakeHelpdesk"
    reply_type = _Reply
    flavour = ""
    write = ("", re.compile(""))
    check = ("", re.compile(""))

    def __init__(self, *, token: str = "hd-T0ken-9f8e7d6c5b4a", tickets: set[str] | None = None,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.token = token
        self.tickets = tickets
        self.calls: list[dict[str, Any]] = []
        self.notes: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        self.public_replies: list[dict[str, Any]] = []
        self._faults: collections.deque[Fault] = collections.deque()
        self._ids = itertools.count(9001)
        self._notes_lock = threading.Lock()
        self.arrived = threading.Event()  # set when a write arrives (the crash tests wait on it)

    # -- scripting
    def fault(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def writes(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["method"] == self.write[0]]

    def all_notes(self) -> list[dict[str, Any]]:
        with self._notes_lock:
            return [n for ns in self.notes.values() for n in ns]

    def _reset_extra(self) -> None:
        self.calls.clear()
        self._faults.clear()
        self.notes.clear()
        self.public_replies.clear()

    # -- what the helpdesk would make of a request: None (a note or draft), or why it is public
    def public(self, method: str, path: str, body: Any) -> str | None:
        raise NotImplementedError

    def expected_auth(self) -> str:
        return f"Bearer {self.token}"

    def created(self, ticket: str, note: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        raise NotImplementedError

    def listing(self, ticket: str) -> Any:
        raise NotImplementedError

    def note_of(self, body: Any) -> dict[str, Any]:
        raise NotImplementedError

    # -- serving
    def _serve_get(self, h: _Handler) -> None:
        self._serve(h)

    def _take_fault(self, on: str) -> Fault | None:
        with self._lock:
            for f in list(self._faults):
                if f.on == on:
                    self._faults.remove(f)
                    return f
        return None

    def _serve(self, h: _Handler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        u = urlsplit(h.path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = {"unparsable": raw[:200].decode("utf-8", "replace")}
        call = {"method": h.command, "path": u.path, "query": u.query, "raw_path": h.path,
                "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body}
        with self._lock:
            self.calls.append(call)
        if h.headers.get("authorization") != self.expected_auth():
            self._send_json(h, 401, {"error": "Couldn't authenticate you"}, {})
            return
        m_write = self.write[1].fullmatch(u.path)
        m_check = self.check[1].fullmatch(u.path)
        is_write = h.command == self.write[0] and m_write is not None and not u.query
        is_check = h.command == self.check[0] and m_check is not None
        why = None if is_check else self.public(h.command, u.path, body) if is_write else \
            f"{h.command} {u.path} is not the draft or private-note endpoint"
        if why:
            with self._lock:
                self.public_replies.append({**call, "why": why})
            self._send_json(h, 400, {"error": f"fake: a public reply: {why}"}, {})
            return
        ticket = (m_write or m_check).group(1)
        fault = self._take_fault("write" if is_write else "check")
        if self.tickets is not None and ticket not in self.tickets:
            self._send_json(h, 404, {"error": "RecordNotFound", "description": "Not found"}, {})
            return
        if is_write:
            self.arrived.set()
            if fault is None or fault.store:
                note = {"id": next(self._ids), **self.note_of(body)}
                with self._notes_lock:
                    self.notes[ticket].append(note)
                status, headers, answer = self.created(ticket, note)
            else:
                status, headers, answer = 0, {}, None
        else:
            with self._notes_lock:
                answer = self.listing(ticket)
            status, headers = 200, {}
        if fault is not None:
            self._sleep(fault.delay)
            if self._stopping.is_set() or fault.drop:
                h.close_connection = True
                return
            if fault.body is not None:
                self._send_json(h, fault.status, None, {}, raw=fault.body)
                return
            if fault.status >= 300 or status == 0:
                hdrs = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
                self._send_json(h, fault.status, {"error": f"fake fault {fault.status}"}, hdrs)
                return
            if fault.trickle:
                self._trickle(h, status, json.dumps(answer or {}).encode(), fault.trickle)
                return
        self._send_json(h, status, answer, headers, raw=b"" if answer is None else None)


    def _trickle(self, h: _Handler, status: int, data: bytes, step: float) -> None:
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        for i in range(len(data)):
            self._sleep(step)
            if self._stopping.is_set():
                break
            try:
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
            except OSError:  # the client gave up on it
                break
        h.close_connection = True


class FakeZendesk(FakeHelpdesk):
    name = "FakeZendesk"
    flavour = "zendesk"
    write = ("PUT", re.compile(r"/api/v2/tickets/([^/]+)\.json"))
    check = ("GET", re.compile(r"/api/v2/tickets/([^/]+)/comments\.json"))

    def public(self, method: str, path: str, body: Any) -> str | None:
        c = ((body or {}).get("ticket") or {}).get("comment") if isinstance(body, dict) else None
        if not isinstance(c, dict):
            return "an update that is not a comment"
        if c.get("public") is not False:
            return "a comment whose public is not false (Zendesk's default is a public reply)"
        return None

    def note_of(self, body: Any) -> dict[str, Any]:
        c = body["ticket"]["comment"]
        return {"body": c["body"], "public": c["public"]}

    def created(self, ticket, note):
        return 200, {}, {"ticket": {"id": int(ticket) if ticket.isdigit() else ticket},
                         "audit": {"id": note["id"] + 100000, "events": [
                             {"id": note["id"], "type": "Comment", "public": note["public"],
                              "body": note["body"]}]}}

    def listing(self, ticket):
        return {"comments": list(reversed(self.notes.get(ticket, [])))}  # sort_order=desc

    def expected_auth(self) -> str:
        if ":" in self.token:
            return "Basic " + base64.b64encode(self.token.encode()).decode()
        return f"Bearer {self.token}"


class FakeFront(FakeHelpdesk):
    name = "FakeFront"
    flavour = "front"
    write = ("POST", re.compile(r"/conversations/([^/]+)/drafts"))
    check = ("GET", re.compile(r"/conversations/([^/]+)/drafts"))

    def public(self, method, path, body):
        if not isinstance(body, dict) or body.get("mode") != "shared":
            return "a draft that is not shared (mode must be shared)"
        return None

    def note_of(self, body):
        return {"body": body["body"], "draft_mode": body["mode"]}

    def created(self, ticket, note):
        return 200, {}, {"id": f"msg_{note['id']}", "body": note["body"], "draft_mode": "shared"}

    def listing(self, ticket):
        return {"_results": [{"id": f"msg_{n['id']}", "body": n["body"]}
                             for n in self.notes.get(ticket, [])]}


class FakeHelpScout(FakeHelpdesk):
    name = "FakeHelpScout"
    flavour = "helpscout"
    write = ("POST", re.compile(r"/v2/conversations/([^/]+)/reply"))
    check = ("GET", re.compile(r"/v2/conversations/([^/]+)/threads"))

    def public(self, method, path, body):
        if not isinstance(body, dict) or body.get("draft") is not True:
            return "a reply without draft: true is sent to the customer"
        return None

    def note_of(self, body):
        return {"body": body["text"], "state": "draft", "customer": body.get("customer")}

    def created(self, ticket, note):
        return 201, {"resource-id": str(note["id"])}, None

    def listing(self, ticket):
        return {"_embedded": {"threads": [{"id": n["id"], "body": n["body"], "state": "draft",
                                           "type": "reply"}
                                          for n in reversed(self.notes.get(ticket, []))]}}


class FakeFreshdesk(FakeHelpdesk):
    name = "FakeFreshdesk"
    flavour = "freshdesk"
    write = ("POST", re.compile(r"/api/v2/tickets/([^/]+)/notes"))
    check = ("GET", re.compile(r"/api/v2/tickets/([^/]+)/conversations"))

    def public(self, method, path, body):
        if not isinstance(body, dict) or body.get("private") is not True:
            return "a note whose private is not true (Freshdesk's default)"
        return None

    def note_of(self, body):
        return {"body": body["body"], "private": body["private"]}

    def created(self, ticket, note):
        return 201, {}, {"id": note["id"], "body": note["body"], "private": True,
                         "ticket_id": int(ticket) if ticket.isdigit() else ticket}

    def listing(self, ticket):
        return [{"id": n["id"], "body": n["body"], "body_text": n["body"], "private": n["private"]}
                for n in self.notes.get(ticket, [])]

    def expected_auth(self) -> str:
        return "Basic " + base64.b64encode(f"{self.token}:X".encode()).decode()


FAKES: dict[str, type[FakeHelpdesk]] = {c.flavour: c for c in (FakeZendesk, FakeFront,
                                                              FakeHelpScout, FakeFreshdesk)}
