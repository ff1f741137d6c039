"""Autograd for `irc.compile`: a call eager PyTorch would record gets eager's gradients.

The forward runs natively; the backward recomputes the traced graph in eager PyTorch with the
same weights and differentiates it (activation recomputation, as checkpointing does), so inputs
and parameters get eager's gradients without a native backward.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree
from torch import fx

from irc.frontend.order_mutations import mutated_attributes

if TYPE_CHECKING:
    from irc.api import CompiledModule


@contextlib.contextmanager
def buffers_kept(gm: fx.GraphModule):
    """Run `gm` (to trace shapes, to recompute for a backward) without changing its buffers:
    in train mode a batch norm updates its running statistics on every run, and a graph may
    change a buffer, parameter or constant in place (`self.buf.add_(x)`)."""
    kept = list(gm.buffers()) if any(m.training for m in gm.modules()) else []
    with torch.no_grad():
        saved = [(b, b._version, b.clone()) for b in dict.fromkeys(kept + mutated_attributes(gm))]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, version, before in saved:
                # Written by the run: put back. A batch norm's kernel writes its running statistics
                # without a version bump, so the values are compared too. Untouched: leave it be,
                # since a copy would bump its version and look like an update to the weight guard.
                if b._version != version or not torch.equal(b, before):
                    b.copy_(before)


class NativeForward(torch.autograd.Function):
    """A call that eager PyTorch would record for autograd: the forward runs natively, the
    backward recomputes the graph in eager PyTorch (with the same weights) and differentiates
    it, so inputs and parameters get eager's gradients (random draws repeat the forward's: the
    CPU generator's state is kept with the call). Call under `torch.no_grad()` or
    `torch.inference_mode()` to skip this (the fastest path)."""

    @staticmethod
    def forward(ctx, cm: CompiledModule, n_inputs: int, structure: list, *args: torch.Tensor) -> Any:
        ctx.gm, ctx.n_inputs = cm.graph_module, n_inputs  # the graph of this forward, even if a rebuild follows
        # The recomputation draws the forward's random numbers again (a training-mode dropout run
        # eagerly in the forward: its mask), as torch.utils.checkpoint does.
        ctx.rng_state = torch.get_rng_state()
        ctx.cm = cm
        ctx.save_for_backward(*args)
        leaves, spec = pytree.tree_flatten(cm._call_native(args[:n_inputs]))
        structure.append(spec)
        return tuple(leaves)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor) -> Any:
        args = ctx.saved_tensors
        n = ctx.n_inputs
        inputs = [a.detach().requires_grad_(a.requires_grad) for a in args[:n]]
        wrt = [t for t in (*inputs, *args[n:]) if t.requires_grad]
        # The recomputation must not repeat the forward's side effects (a batch norm in train
        # mode updates its running statistics): the buffers are put back as they were.
        ctx.cm.backward_calls += 1
        with buffers_kept(ctx.gm), torch.random.fork_rng(devices=[]), torch.enable_grad():
            torch.set_rng_state(ctx.rng_state)
            out = ctx.gm(*inputs)
            outs = pytree.tree_leaves(out)
            pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
            got = iter(torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
                       if pairs else [None] * len(wrt))
        result = [next(got) if t.requires_grad else None for t in (*inputs, *args[n:])]
        return (None, None, None, *result)
