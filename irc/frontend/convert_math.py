"""FX converters for the ops of `dialects/irt_math.py` (added to the importer's tables)."""

from __future__ import annotations
