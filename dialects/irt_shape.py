"""`irt` ops: Layout and data movement beyond reshape/transpose: slice, concat, expand, gather (embedding).
"""

from __future__ import annotations

OPS: list = []
ATTRS: list = []
