"""`irc-to-loops` for the ops of `dialects/irt_math.py` (registered with `@lowers`)."""

from __future__ import annotations
