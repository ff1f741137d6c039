"""`irc-to-loops` for the ops of `dialects/irt_math.py`.

Nothing to register: every op there is an `irt.ElementwiseOp`, lowered by the core elementwise
lowering from its own `build_scalar` (and evaluated by the reference evaluator the same way).
"""

from __future__ import annotations
