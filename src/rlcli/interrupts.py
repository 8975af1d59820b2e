"""Stop signals, SIGINT (Ctrl-C) and SIGTERM (a scheduler, ``docker stop``), handed to a callback
for as long as a ``with`` block runs: the trainer's loop and the multi-seed parent use it."""

from __future__ import annotations

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
    ignored when the block starts (SIGINT of a background job, ``nohup``) stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, lambda signum, frame: handler(signum)) for signum in STOP_SIGNALS
                if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
