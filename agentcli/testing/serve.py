"""Running a fake server in its own process (benchmarks that must not share the client's CPU).

``python -m agentcli.testing.fake_anthropic --serve [--latency S] [--handler MODULE:FUNCTION]``
prints the server's URL, then serves until standard input closes (or SIGTERM/SIGINT).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import sys
import threading
from typing import Any, Callable


def load_handler(spec: str) -> Callable[[dict[str, Any]], Any]:
    """``package.module:function`` or ``path/to/file.py:function``."""

    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise SystemExit(f"--handler wants MODULE:FUNCTION or FILE.py:FUNCTION, got {spec!r}")
    if target.endswith(".py") or os.sep in target:
        name = "_fake_server_handler_" + os.path.splitext(os.path.basename(target))[0]
        mod_spec = importlib.util.spec_from_file_location(name, target)
        if mod_spec is None or mod_spec.loader is None:
            raise SystemExit(f"--handler: cannot load {target}")
        mod = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(target)
    return getattr(mod, attr)


def serve_until_stdin_closes(server_cls: Any, prog: str, argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog=prog, description="Serve a fake API in this process until stdin closes.")
    ap.add_argument("--serve", action="store_true", help="(accepted for clarity; serving is the only mode)")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds slept before each answer")
    ap.add_argument("--handler", help="MODULE:FUNCTION or FILE.py:FUNCTION answering every request")
    ap.add_argument("--no-record", action="store_true", help="keep no request bodies (long runs)")
    args = ap.parse_args(argv)
    handler = load_handler(args.handler) if args.handler else None
    fake = server_cls(latency=args.latency, handler=handler, record=not args.no_record)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())

    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except (OSError, ValueError):
            pass
        done.set()

    with fake:
        print(fake.url, flush=True)
        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
        while not done.wait(1.0):
            pass
        if fake.errors:
            print(fake.errors[-1], file=sys.stderr)
