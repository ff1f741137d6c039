# RUN: %python %s | filecheck %s
"""FX import goldens: modules, functions and methods become irt ops; parameters become arguments."""

import operator

import torch
import torch.nn.functional as F
from torch import fx, nn

from irc.frontend.fx_importer import import_fx


def run(fn):
    print(f"// TEST: {fn.__name__}")
    fn()
    return fn


def show(model, *inputs):
    print(import_fx(fx.symbolic_trace(model), inputs).module)


# CHECK-LABEL: TEST: sequential_mlp
# CHECK:       func.func @forward(%input: tensor<3x7xf32>, %p0_weight: tensor<5x7xf32>, %p0_bias: tensor<5xf32>, %p3_weight: tensor<2x5xf32>) -> tensor<3x2xf32> {
# CHECK-NEXT:    %p0 = irt.linear %input, %p0_weight, %p0_bias : (tensor<3x7xf32>, tensor<5x7xf32>, tensor<5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %p1 = irt.relu %p0 : tensor<3x5xf32>
# CHECK-NEXT:    %p3 = irt.linear %p1, %p3_weight : (tensor<3x5xf32>, tensor<2x5xf32>) -> tensor<3x2xf32>
# CHECK-NEXT:    %p4 = irt.gelu %p3 approx tanh : tensor<3x2xf32>
# CHECK-NEXT:    func.return %p4 : tensor<3x2xf32>
@run
def sequential_mlp():
    m = nn.Sequential(nn.Linear(7, 5), nn.ReLU(), nn.Dropout(0.1), nn.Linear(5, 2, bias=False), nn.GELU("tanh"))
    show(m.eval(), torch.randn(3, 7))


# CHECK-LABEL: TEST: functions_and_methods
# CHECK:       func.func @forward(%x: tensor<2x3x4xf32>, %y: tensor<12xf32>, %w: tensor<5x12xf32>) -> (tensor<2x5xf32>, tensor<5x2xf32>) {
# CHECK-NEXT:    %flatten = irt.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
# CHECK-NEXT:    %[[C:.*]] = irt.constant dense<2.000000e+00> : tensor<f32>
# CHECK-NEXT:    %mul = irt.mul %[[C]], %flatten : (tensor<f32>, tensor<2x12xf32>) -> tensor<2x12xf32>
# CHECK-NEXT:    %add = irt.add %mul, %y : (tensor<2x12xf32>, tensor<12xf32>) -> tensor<2x12xf32>
# CHECK-NEXT:    %sigmoid = irt.sigmoid %add : tensor<2x12xf32>
# CHECK-NEXT:    %t = irt.transpose %w [1, 0] : (tensor<5x12xf32>) -> tensor<12x5xf32>
# CHECK-NEXT:    %matmul = irt.matmul %sigmoid, %t : (tensor<2x12xf32>, tensor<12x5xf32>) -> tensor<2x5xf32>
# CHECK-NEXT:    %relu = irt.relu %matmul : tensor<2x5xf32>
# CHECK-NEXT:    %view = irt.reshape %relu : (tensor<2x5xf32>) -> tensor<5x2xf32>
# CHECK-NEXT:    %[[D:.*]] = irt.constant dense<3.000000e+00> : tensor<f32>
# CHECK-NEXT:    %truediv = irt.div %view, %[[D]] : (tensor<5x2xf32>, tensor<f32>) -> tensor<5x2xf32>
# CHECK-NEXT:    func.return %relu, %truediv : tensor<2x5xf32>, tensor<5x2xf32>
@run
def functions_and_methods():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(5, 12))

        def forward(self, x, y):
            h = torch.sigmoid(operator.mul(2, torch.flatten(x, 1)) + y)
            r = torch.matmul(h, self.w.t()).relu()
            return r, r.view(5, 2) / 3

    show(M(), torch.randn(2, 3, 4), torch.randn(12))


# CHECK-LABEL: TEST: plain_function
# CHECK:       func.func @forward(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
# CHECK-NEXT:    %sub = irt.sub %a, %b
# CHECK-NEXT:    %tanh = irt.tanh %sub
# CHECK-NEXT:    %gelu = irt.gelu %tanh : tensor<4x4xf32>
# CHECK-NEXT:    func.return %gelu
@run
def plain_function():
    def f(a, b):
        return F.gelu(torch.tanh(a - b))

    show(f, torch.randn(4, 4), torch.randn(4, 4))
