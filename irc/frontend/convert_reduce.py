"""FX converters for the ops of `dialects/irt_reduce.py` (added to the importer's tables)."""

from __future__ import annotations
