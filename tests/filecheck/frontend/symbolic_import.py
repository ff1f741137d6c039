# RUN: %python %s 2>/dev/null | filecheck %s
"""Symbolic import goldens: declared dynamic dimensions become `?` sizes with #irt.dims
expressions (s0, s1 numbered in input order; two dimensions declared with one name are one
symbol), sizes computed from them are expressions, and a size used as a number is `irt.size`."""

import torch
from torch import fx

from irc.frontend.fx_importer import import_fx
from irc.frontend.symbolic_import import DynamicDim


def run(fn):
    print(f"// TEST: {fn.__name__}")
    fn()
    return fn


# CHECK-LABEL: TEST: batch_and_length
# CHECK:       func.func @forward(%x: tensor<?x?x8xf32, #irt.dims<"s0", "s1">>, %y: tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x8x?xf32, #irt.dims<"s0", "s1">>
# CHECK:         irt.add %x, %y : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>, tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
# CHECK:         irt.transpose %{{.*}} [0, 2, 1] : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<?x8x?xf32, #irt.dims<"s0", "s1">>
# CHECK:         %[[N:.*]] = irt.size %x "s1" : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<f32>
# CHECK:         irt.mul %{{.*}}, %[[N]]
@run
def batch_and_length():
    def f(x, y):
        h = (x + y).transpose(1, 2)
        return h * x.shape[1]

    gm = fx.symbolic_trace(f)
    dynamic = [{0: DynamicDim("batch"), 1: DynamicDim("length")}, {0: DynamicDim("length")}]
    print(import_fx(gm, [torch.randn(2, 3, 8), torch.randn(3, 8)], dynamic=dynamic).module)
