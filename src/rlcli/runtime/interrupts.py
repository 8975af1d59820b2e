"""Stop signals, SIGINT (Ctrl-C) and SIGTERM (a scheduler, ``docker stop``), handed to a callback
for as long as a ``with`` block runs: the trainer's loop and the multi-seed parent use it."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_stop_signals(handler: Callable[[int], None]) -> Iterator[None]:
    """Call ``handler(signum)`` for each SIGINT and SIGTERM inside the block, then restore the
    previous handlers.

    Outside the main thread, where Python cannot install handlers, nothing changes. A signal
    ignored when the block starts (SIGINT of a background job, ``nohup``) stays ignored. A process
    forked inside the block (an async env's worker) takes the signal's default action instead.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def handle(signum: int, frame) -> None:
        if os.getpid() != owner:
            # A forked child (an async env's worker) that inherited the handler: the default action,
            # so that its parent can stop it.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        handler(signum)

    previous = {
        signum: signal.signal(signum, handle)
        for signum in STOP_SIGNALS
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextmanager
def held_stop_signals() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM during the block: yields the list the signals that came are appended
    to, for the caller to act on after it. For imports of C extensions (torch), which a Python
    exception raised in the middle of their initialisation can abort."""
    held: list[int] = []
    with on_stop_signals(held.append):
        yield held
