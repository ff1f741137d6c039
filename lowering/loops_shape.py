"""`irc-to-loops` for the ops of `dialects/irt_shape.py` (registered with `@lowers`)."""

from __future__ import annotations
