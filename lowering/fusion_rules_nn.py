"""Fusion rules for the ops of `dialects/irt_nn.py`, in the form of `fusion_rules.py`."""

from __future__ import annotations

from irc.lowering.fusion_rules import FusionRule

RULES: tuple[FusionRule, ...] = ()
