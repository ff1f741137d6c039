"""`irc-to-loops` for the ops of `dialects/irt_reduce.py` (registered with `@lowers`)."""

from __future__ import annotations
