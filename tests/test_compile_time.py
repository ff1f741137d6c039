"""Compile time grows linearly with the model: irc-fuse and irc-plan-memory on long chains.

The checks count work (ops built, ops visited, liveness lookups) instead of timing it, so they
are exact and never flaky; quadratic code exceeds the bounds by orders of magnitude.
"""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, Region
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint

from irc.context import irc_context
from irc.dialects.irt import core as irt
from irc.lowering.loops import plan_memory
from irc.lowering.loops.plan_memory import PlanMemoryPass
from irc.lowering.tensor.irc_fuse import FUSED_ATTR, FusionDriver, IrcFusePass
from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass


def chain(n: int, op=irt.ReluOp) -> ModuleOp:
    """func @forward(%x) { n unary ops in a row }."""
    t = TensorType(f32, [4, 8])
    block = Block(arg_types=[t])
    b = Builder(InsertPoint.at_end(block))
    v = block.args[0]
    for _ in range(n):
        v = b.insert(op(v)).result
    b.insert(func.ReturnOp(v))
    return ModuleOp([func.FuncOp("forward", ((t,), (t,)), Region(block))])


@pytest.fixture
def ops_built(monkeypatch):
    """Counts every xDSL operation constructed (clones included) while the test runs."""
    count = [0]
    init = Operation.__init__

    def counting(self, *args, **kwargs):
        count[0] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(Operation, "__init__", counting)
    return count


def test_fusing_a_long_chain_builds_a_linear_number_of_ops(ops_built):
    n = 3000
    module = chain(n)
    ops_built[0] = 0
    IrcFusePass().apply(irc_context(), module)
    (fused, ret) = module.body.block.first_op.body.block.ops
    assert isinstance(fused, irt.ElementwiseFusedOp)
    assert [s.data for s in fused.attributes[FUSED_ATTR].data] == ["irt.relu"] * n
    assert len(list(fused.body.block.ops)) == 2 * n + 1  # n x (constant 0, maximumf), yield
    # Each step builds the new relu's scalar ops, a yield and the fused op: about 4 per op.
    # Copying the growing body at every step (as irc-fuse did) builds n^2 = 9,000,000.
    assert ops_built[0] <= 6 * n


def test_the_fusion_worklist_visits_each_op_a_bounded_number_of_times():
    n = 3000
    driver = FusionDriver(IrcFusePass().rules())
    driver.run(chain(n))
    assert driver.rewrites == 2 * (n - 1)  # each fusion erases the producer and the consumer
    assert driver.visits <= 4 * n


def test_fusion_reaches_a_fixpoint_on_real_models():
    """A second irc-fuse finds nothing left to fuse: the worklist missed no opportunity."""
    from irc.api import trace
    from irc.frontend.fx_importer import import_fx
    from irc.models import get_model

    for name in ("resnet18", "transformer-block", "cnn"):
        model, inputs = get_model(name).build()
        module = import_fx(trace(model), inputs).module
        IrcFusePass().apply(irc_context(), module)
        once = str(module)
        driver = FusionDriver(IrcFusePass().rules())
        driver.run(Parser(irc_context(), once).parse_module())
        assert driver.rewrites == 0, name


def test_planning_memory_of_a_long_chain_does_linear_work(monkeypatch):
    """Liveness lookups per buffer stay constant: no scan of every buffer per loop (in place)
    nor of every placed buffer per new one (packing)."""
    n = 600
    lookups = [0]
    for name in ("start", "end"):
        prop = getattr(plan_memory.Buffer, name)

        def counting(self, _get=prop.fget):
            lookups[0] += 1
            return _get(self)

        monkeypatch.setattr(plan_memory.Buffer, name, property(counting))
    for in_place in (True, False):
        module = chain(n, irt.TanhOp)
        IrcToLoopsPass().apply(irc_context(), module)
        lookups[0] = 0
        PlanMemoryPass(in_place=in_place).apply(irc_context(), module)
        fn = module.body.block.first_op
        assert fn.attributes[plan_memory.BUFFERS].value.data == n - 1
        assert lookups[0] <= 8 * n, f"in_place={in_place}: {lookups[0]} lookups for {n} buffers"


def ladder(n: int) -> str:
    """Three chains of symbolic sizes (s0 x s1, s0 x 16, s1 x s1), each step adding the value
    from two steps back, so buffers of different sizes live across each other."""
    types = {"a": '!A', "b": '!B', "c": '!C'}
    lines = [
        '!A = tensor<?x?xf32, #irt.dims<"s0", "s1">>',
        '!B = tensor<?x16xf32, #irt.dims<"s0">>',
        '!C = tensor<?x?xf32, #irt.dims<"s1", "s1">>',
        "func.func @ladder(%a0: !A, %b0: !B, %c0: !C) -> (!A, !B, !C) {",
    ]
    for name, t in types.items():
        lines.append(f"  %{name}1 = irt.exp %{name}0 : {t}")
    for k in range(2, n):
        for name, t in types.items():
            lines.append(f"  %{name}{k} = irt.add %{name}{k - 1}, %{name}{k - 2} : ({t}, {t}) -> {t}")
    lines.append(f"  func.return %a{n - 1}, %b{n - 1}, %c{n - 1} : !A, !B, !C")
    lines.append("}")
    return "\n".join(lines)


def test_planning_symbolic_sizes_stays_flat_and_sound():
    """Symbolic offsets are short polynomial bounds, not maxima nested in maxima: those grew
    with every buffer and sympy's simplification with them (ten steps of this ladder took 31 s
    and offsets of 4,445 characters; a Llama's plan took ten minutes). And the plan is sound: at
    several sizes, buffers live at the same time never share a byte, and all fit the arena."""
    from irc.dialects.symbolic import evaluate

    for steps, in_place in ((10, False), (40, False), (40, True)):
        module = Parser(irc_context(), ladder(steps)).parse_module()
        IrcToLoopsPass().apply(irc_context(), module)
        plan = plan_memory.FunctionPlan(module.body.block.first_op, plan_memory.ALIGN)
        slots, arena = plan.pack(in_place=in_place)
        longest = max(len(str(b.offset)) for b in plan.buffers.values())
        assert longest < 200 and len(str(arena)) < 200, (steps, longest, arena)
        slot_of = {id(b): n for n, s in enumerate(slots) for b in s.members}  # written in place: one slot
        buffers = [b for b in plan.buffers.values() if b.uses]
        assert len(buffers) == 3 * (steps - 2) and (len(slots) < len(buffers)) == in_place
        for values in ({"s0": 2, "s1": 3}, {"s0": 1, "s1": 40}, {"s0": 7, "s1": 1}, {"s0": 0, "s1": 5}):
            at = [(slot_of[id(b)], b.start, b.end, evaluate(b.offset, values), evaluate(b.bytes, values)) for b in buffers]
            size = evaluate(arena, values)
            for i, (slot, start, end, offset, n) in enumerate(at):
                assert offset % plan_memory.ALIGN == 0 and offset + n <= size
                for slot2, start2, end2, offset2, n2 in at[i + 1 :]:
                    if slot != slot2 and start <= end2 and start2 <= end and n and n2:  # live together
                        assert offset + n <= offset2 or offset2 + n2 <= offset, values
