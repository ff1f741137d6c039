"""`irc-fuse`: apply the fusion rule tables (`fusion_rules*.py`) to a fixpoint.

Each fused op records the ops it replaced, in order, as `irc.fused = ["irt.linear", "irt.relu"]`,
which kernel comments in the C++ and reports repeat.

    irc-opt model.mlir -p irc-fuse
    irc-opt model.mlir -p 'irc-fuse{disable="elementwise-chain"}'

Options:
  disable: comma-separated rule names to leave out (see `fusion_rules.RULES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from irc.lowering import fusion_rules, fusion_rules_nn, fusion_rules_reduce
from irc.lowering.fusion_rules import FusionRule

# Family rules go first: they are more specific than the generic core rules.
RULES: tuple[FusionRule, ...] = (*fusion_rules_nn.RULES, *fusion_rules_reduce.RULES, *fusion_rules.RULES)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


FUSED_ATTR = "irc.fused"


def fused_from(op: Operation) -> list[str]:
    """The original ops a (possibly fused) op computes, in order: its provenance."""
    attr = op.attributes.get(FUSED_ATTR)
    return [s.data for s in attr.data] if isinstance(attr, ArrayAttr) else [op.name]


@dataclass
class ApplyFusionRule(RewritePattern):
    """The generic driver: matches one rule at a consumer op, tries each operand's producer."""

    rule: FusionRule

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.rule.consumer):
            return
        for index, operand in enumerate(op.operands):
            producer = operand.owner
            if not isinstance(producer, self.rule.producer):
                continue
            if not all(check(producer, op, index) for check in self.rule.where):
                continue
            fused = self.rule.combine(producer, op, index)
            fused.attributes[FUSED_ATTR] = ArrayAttr([StringAttr(n) for n in fused_from(producer) + fused_from(op)])
            if op.results[0].name_hint:
                fused.results[0].name_hint = op.results[0].name_hint
            rewriter.replace(op, fused)
            rewriter.erase(producer)
            return


@dataclass(frozen=True)
class IrcFusePass(ModulePass):
    name = "irc-fuse"

    disable: str = ""

    def rules(self) -> list[FusionRule]:
        names = [n.strip() for n in self.disable.split(",") if n.strip()]
        unknown = [n for n in names if n not in RULES_BY_NAME]
        if unknown:
            raise ValueError(
                f"irc-fuse: unknown rule(s) {', '.join(unknown)}; the rules are {', '.join(RULES_BY_NAME)}"
            )
        return [r for r in RULES if r.name not in names]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [ApplyFusionRule(rule) for rule in self.rules()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
