"""`irc-fuse`: apply the fusion rule tables (`fusion_rules*.py`) to a fixpoint.

Each fused op records the ops it replaced, in order, as `irc.fused = ["irt.linear", "irt.relu"]`,
which kernel comments in the C++ and reports repeat.

    irc-opt model.mlir -p irc-fuse
    irc-opt model.mlir -p 'irc-fuse{disable="elementwise-chain"}'

Options:
  disable: comma-separated rule names to leave out (see `fusion_rules.RULES`).

The driver (`FusionDriver`) is a worklist, linear in the size of the function: every op is
visited once in program order, and after a rewrite only the ops whose match can have changed are
visited again (the new op, its users, the producers that lost a user, and the single-use chains
below them as far as a rule's constraints read, `FusionRule.reach`). Dead pure ops are erased on
the way, as xDSL's greedy applier does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.dead_code_elimination import is_trivially_dead
from xdsl.utils.worklist import Worklist

from irc.lowering.tensor import fusion_rules, fusion_rules_nn, fusion_rules_reduce
from irc.lowering.tensor.fusion_rules import FusionRule

# Family rules go first: they are more specific than the generic core rules.
RULES: tuple[FusionRule, ...] = (*fusion_rules_nn.RULES, *fusion_rules_reduce.RULES, *fusion_rules.RULES)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


FUSED_ATTR = "irc.fused"


def fused_names(op: Operation) -> list[str] | None:
    """The ops a fused op replaced, in order, as its `irc.fused` records them; None if it was not fused."""
    attr = op.attributes.get(FUSED_ATTR)
    return [s.data for s in attr.data] if isinstance(attr, ArrayAttr) else None


def fused_from(op: Operation) -> list[str]:
    """The original ops a (possibly fused) op computes, in order: its provenance."""
    names = fused_names(op)
    return [op.name] if names is None else names


# A fused op's provenance while the pass runs: the names, or a (producer's, consumer's) pair,
# flattened once at the end (concatenating lists at every step of a chain would be quadratic).
Provenance = tuple[str, ...] | tuple["Provenance", "Provenance"]


def _flatten(tree: Provenance) -> list[str]:
    names, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            names.append(node)
        else:
            stack.extend(reversed(node))
    return names


def _ops(region: Region) -> Iterator[Operation]:
    """The ops a rule may match, in program order: not the scalar bodies of irt ops."""
    for block in region.blocks:
        for op in block.ops:
            yield op
            if op.dialect_name() != "irt":
                for inner in op.regions:
                    yield from _ops(inner)


@dataclass
class FusionDriver:
    """Applies `rules` to a fixpoint with a worklist (see the module docstring).

    `visits` counts the ops tried, `rewrites` the fusions and erased dead ops: both grow
    linearly with the function (tests check it)."""

    rules: list[FusionRule]
    visits: int = 0
    rewrites: int = 0
    _worklist: Worklist[Operation] = field(default_factory=Worklist)
    _deferred: Worklist[Operation] = field(default_factory=Worklist)  # revisits, after the worklist
    _by_type: dict[type, list[FusionRule]] = field(default_factory=dict)
    _provenance: dict[Operation, Provenance] = field(default_factory=dict)

    def run(self, module: ModuleOp) -> None:
        for op in reversed(list(_ops(module.body))):  # a stack: pops in program order
            if not (op.regions and op.dialect_name() != "irt"):  # not a func.func
                self._worklist.push(op)
        self._reach = max((rule.reach for rule in self.rules), default=1)
        while True:
            if self._worklist:
                op = self._worklist.pop()
            elif self._deferred:
                op = self._deferred.pop()
            else:
                break
            self.visits += 1
            self._visit(op)
        for op, tree in self._provenance.items():
            if op.parent is not None:
                op.attributes[FUSED_ATTR] = ArrayAttr([StringAttr(n) for n in _flatten(tree)])

    def _rules_for(self, op: Operation) -> list[FusionRule]:
        rules = self._by_type.get(type(op))
        if rules is None:
            rules = self._by_type[type(op)] = [r for r in self.rules if isinstance(op, r.consumer)]
        return rules

    def _visit(self, op: Operation) -> None:
        if is_trivially_dead(op):
            self._erase(op)
            return
        for rule in self._rules_for(op):
            for index, operand in enumerate(op.operands):
                producer = operand.owner
                if isinstance(producer, rule.producer) and all(check(producer, op, index) for check in rule.where):
                    self._fuse(rule, producer, op, index)
                    return

    def _fuse(self, rule: FusionRule, producer: Operation, consumer: Operation, index: int) -> None:
        """Replace `consumer` by the rule's fused op; erase `producer`. The worklist sees what
        xDSL's walker would push (the new op, the consumer's users, producers left with one use),
        and the revisits of `_touch`."""
        earlier = consumer.prev_op
        fused = rule.combine(producer, consumer, index)
        block = consumer.parent
        assert block is not None
        Rewriter.insert_op(fused, InsertPoint.before(consumer))
        self._provenance[fused] = (self._take_provenance(producer), self._take_provenance(consumer))
        self._worklist.push(fused)
        for old, new in zip(consumer.results, fused.results, strict=True):
            for use in old.uses:
                self._worklist.push(use.operation)
            if old.name_hint:
                new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        added = earlier.next_op if earlier is not None else block.first_op
        while added is not None and added is not fused:  # ops the combiner built before the consumer
            self._deferred.push(added)
            added = added.next_op
        self._erase(consumer)
        self._erase(producer)
        self._touch(fused.results[0])

    def _take_provenance(self, op: Operation) -> Provenance:
        tree = self._provenance.pop(op, None)
        return tree if tree is not None else tuple(fused_from(op))

    def _erase(self, op: Operation) -> None:
        self.rewrites += 1
        operands = list(op.operands)
        for v in operands:
            if v.has_one_use() and isinstance(v.owner, Operation):
                self._worklist.push(v.owner)  # it is about to be dead
        self._worklist.remove(op)
        self._deferred.remove(op)
        self._provenance.pop(op, None)
        Rewriter.erase_op(op)
        for v in operands:
            if v.first_use is None and isinstance(v.owner, Operation):
                self._deferred.push(v.owner)  # dead now (it was used twice by `op`)
            self._touch(v)

    def _touch(self, value: SSAValue) -> None:
        """`value` changed, or lost a user: revisit the chain of single users below it, as far as
        the rules' constraints read (a producer with one user left may now fuse into it)."""
        for _ in range(self._reach):
            user = _sole_user(value)
            if user is None:
                return
            self._deferred.push(user)
            if len(user.results) != 1:
                return
            value = user.results[0]


def _sole_user(value: SSAValue) -> Operation | None:
    """The op using `value` (maybe several times), if exactly one does; stops at a second user."""
    user = None
    for use in value.uses:
        if user is None:
            user = use.operation
        elif use.operation is not user:
            return None
    return user


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
        FusionDriver(self.rules()).run(op)
