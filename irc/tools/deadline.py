"""A time limit on a block of Python code (SIGALRM), shared by the tools that run compilers
under a deadline (`irc bench --lm`, `lm_check`) and by tests of code that must end."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def time_limit(seconds: float | None, error: Callable[[float], BaseException]) -> Iterator[None]:
    """Raise `error(seconds)` in this thread when the block runs longer than `seconds`: Python
    code is interrupted where it runs (a compiler subprocess being waited for is left to its
    caller's cleanup). No limit when `seconds` is falsy, off the main thread (signals are
    delivered there only) or without SIGALRM."""
    usable = seconds and hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise error(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
