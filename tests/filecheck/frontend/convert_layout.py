# RUN: %python %s | filecheck %s
"""FX import goldens for torch.roll and constant F.pad: slices and concats, no new op."""

import torch
import torch.nn.functional as F
from torch import fx

from irc.frontend.fx_importer import import_fx


def run(fn):
    print(f"// TEST: {fn.__name__}")
    fn()
    return fn


def show(model, *inputs):
    print(import_fx(fx.symbolic_trace(model), inputs).module)


# roll by 1 along dim 1: the last column, then the first three.
# CHECK-LABEL: TEST: roll
# CHECK:       func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
# CHECK-NEXT:    %0 = irt.slice %x offsets [0, 3] strides [1, 1] : (tensor<2x4xf32>) -> tensor<2x1xf32>
# CHECK-NEXT:    %1 = irt.slice %x offsets [0, 0] strides [1, 1] : (tensor<2x4xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %roll = irt.concat %0, %1 dim 1 : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>
# CHECK-NEXT:    func.return %roll : tensor<2x4xf32>
@run
def roll():
    show(lambda x: torch.roll(x, 1, 1), torch.randn(2, 4))


# A zero-width pad is the input itself; (1, 0) on the last dim is a concat with a broadcast -2.
# CHECK-LABEL: TEST: pad
# CHECK:       func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x5xf32> {
# CHECK-NEXT:    %0 = irt.constant dense<-2.000000e+00> : tensor<f32>
# CHECK-NEXT:    %1 = irt.expand %0 : (tensor<f32>) -> tensor<2x1xf32>
# CHECK-NEXT:    %pad = irt.concat %1, %x dim 1 : (tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x5xf32>
# CHECK-NEXT:    func.return %pad : tensor<2x5xf32>
@run
def pad():
    show(lambda x: F.pad(F.pad(x, (0, 0, 0, 0)), (1, 0), value=-2.0), torch.randn(2, 4))
