"""Evaluating irc-fold-params' fold function on the model's weights, and again when they change.

`irc-fold-params` (lowering/tensor/fold_params.py) moves parameter-only computations into a
compile-time function `@NAME__fold`; here it is evaluated, with the reference evaluator, on the
parameter tensors, giving the parameters the native code reads. A `FoldPlan` keeps the function
and the tensors so that an in-place update of a source weight refolds into the same storage
before the next call (`FoldPlan.guard`).
"""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass, field

import torch
from xdsl.dialects import func

from irc.lowering.tensor.fold_params import param_indices
from irc.reference import evaluate
from irc.runtime import native_guard
from irc.runtime.native_guard import NativeCheck, native_check

_VERSION = operator.attrgetter("_version")


@dataclass
class FoldPlan:
    """A fold function, the source tensors its arguments stand for, and the folded tensors its
    results fill (`outputs`, in result order)."""

    function: func.FuncOp
    sources: list[torch.Tensor]
    outputs: list[torch.Tensor] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    native: NativeCheck | None = field(default=None, repr=False)
    native_due: bool = field(default=True, repr=False)  # its library still being built: taken up later

    def __post_init__(self) -> None:
        self.versions = [t._version for t in self.sources]
        self._take_up_native()

    def _take_up_native(self) -> None:
        if native_guard.pending():
            return
        self.native_due = False
        if list(map(_VERSION, self.sources)) == self.versions:
            self.native = native_check(self.sources, versions=[True] * len(self.sources))

    def evaluate(self) -> list[torch.Tensor]:
        """The fold function's results on the sources' current values (new tensors)."""
        block = self.function.body.block
        ret = block.last_op
        values = dict(zip(block.args, (t.detach() for t in self.sources), strict=True))
        with torch.no_grad():
            for op in block.ops:
                if op is not ret:
                    values[op.results[0]] = evaluate(op, [values[v] for v in op.operands])
        assert isinstance(ret, func.ReturnOp)
        return [values[v].contiguous() for v in ret.arguments]  # the runtime passes their storage as is

    def stale(self) -> bool:
        # per forward call: C++'s "unchanged" (runtime/native_guard.py; MobileNet-v2's 126 sources
        # in irc bench's regime 42 -> 26 us), else the versions compared, walked by map() in C
        native = self.native
        if native is None and self.native_due:
            self._take_up_native()
            native = self.native
        return (native is None or native.changed()) and list(map(_VERSION, self.sources)) != self.versions

    def refold(self) -> None:
        """Evaluate the plan on the sources' current values, into the folded tensors' storage."""
        with self.lock:
            if not self.stale():
                return
            self.versions = [t._version for t in self.sources]
            if self.native is not None and not self.native.record():
                self.native = None
            with torch.no_grad():
                for target, value in zip(self.outputs, self.evaluate(), strict=True):
                    target.copy_(value)

    def guard(self, forward):
        """`forward`, refolding first whenever a source parameter changed since the last fold."""

        def guarded(*args):
            if self.stale():
                self.refold()
            return forward(*args)

        guarded.__wrapped__ = forward  # type: ignore[attr-defined]
        guarded.fold_plan = self  # type: ignore[attr-defined]  # CompiledModule.save refolds before writing
        return guarded


def fold(
    kept: list[int] | None, fold_fn: func.FuncOp | None, names: list[str], params: list[tuple[str, torch.Tensor]]
) -> tuple[list[tuple[str, torch.Tensor]], FoldPlan | None]:
    """The parameters the run-time function reads after irc-fold-params, from the imported
    `params`: those it kept (`kept`, its `irc.params`; None: all, nothing was folded), then
    `fold_fn`'s results evaluated now, named "folded:NAME" after `names`; and the plan to refold
    them (None: nothing was folded). ValueError if the functions do not fit `params`."""
    if kept is None:
        return list(params), None
    sources = (param_indices(fold_fn) or []) if fold_fn is not None else []
    if any(not 0 <= i < len(params) for i in (*kept, *sources)):
        raise ValueError(f"irc.params names parameters beyond the {len(params)} given")
    out = [params[i] for i in kept]
    if fold_fn is None:
        return out, None
    plan = FoldPlan(fold_fn, [params[i][1] for i in sources])
    plan.outputs = plan.evaluate()
    if len(names) != len(plan.outputs):
        raise ValueError(f"{len(names)} names for {len(plan.outputs)} folded parameters")
    return out + [(f"folded:{name}", t) for name, t in zip(names, plan.outputs)], plan
