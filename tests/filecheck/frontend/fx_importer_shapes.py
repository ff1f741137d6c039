# RUN: %python %s | filecheck %s
"""FX import goldens for math and shape ops: shape queries fold away, slices and chunks become
irt.slice (+ irt.reshape), factories become constants or extra parameters, expands disappear
where the consumer broadcasts, and compile-time masks become f32 operands of irt.where."""

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


# size()/dim() and the assertion fold away; chunk is two slices; int indices drop dimensions.
# CHECK-LABEL: TEST: shape_queries
# CHECK:       func.func @forward(%x: tensor<2x3x4xf32>) -> (tensor<2x5xf32>, tensor<1x3x2xf32>) {
# CHECK-NEXT:    %view = irt.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
# CHECK-NEXT:    %getitem = irt.slice %view offsets [0, 0] strides [1, 1] : (tensor<2x12xf32>) -> tensor<2x6xf32>
# CHECK-NEXT:    %getitem_1 = irt.slice %view offsets [0, 6] strides [1, 1] : (tensor<2x12xf32>) -> tensor<2x6xf32>
# CHECK-NEXT:    %getitem_2 = irt.slice %getitem offsets [0, 1] strides [1, 1] : (tensor<2x6xf32>) -> tensor<2x5xf32>
# CHECK-NEXT:    %getitem_3 = irt.slice %getitem_1 offsets [0, 0] strides [1, 1] : (tensor<2x6xf32>) -> tensor<2x5xf32>
# CHECK-NEXT:    %mul = irt.mul %getitem_2, %getitem_3 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
# CHECK-NEXT:    %getitem_4 = irt.slice %x offsets [1, 0, 0] strides [1, 1, 2] : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
# CHECK-NEXT:    func.return %mul, %getitem_4 : tensor<2x5xf32>, tensor<1x3x2xf32>
@run
def shape_queries():
    def f(x):
        torch._assert(x.dim() == 3, "3-D input")
        h = x.view(x.size(0), -1)
        a, b = h.chunk(2, dim=1)
        return a[:, 1:] * b[:, :-1], x[-1, None, ..., ::2]

    show(f, torch.randn(2, 3, 4))


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.Sequential(nn.ReLU6(), nn.LeakyReLU(0.2), nn.SiLU(), nn.Hardswish(), nn.Hardsigmoid(),
                                  nn.ReLU(inplace=True))

    def forward(self, x):
        return torch.clamp(self.acts(x), min=-1.0) ** 2 + torch.rsqrt(x.abs() + 1).exp() - F.relu6(-x)


# CHECK-LABEL: TEST: math_modules
# CHECK:       func.func @forward(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
# CHECK-NEXT:    %acts = irt.relu6 %x : tensor<3x5xf32>
# CHECK-NEXT:    %acts_1 = irt.leaky_relu %acts slope 2.000000e-01 : tensor<3x5xf32>
# CHECK-NEXT:    %acts_2 = irt.silu %acts_1 : tensor<3x5xf32>
# CHECK-NEXT:    %acts_3 = irt.hardswish %acts_2 : tensor<3x5xf32>
# CHECK-NEXT:    %acts_4 = irt.hardsigmoid %acts_3 : tensor<3x5xf32>
# CHECK-NEXT:    %acts_5 = irt.relu %acts_4 : tensor<3x5xf32>
# CHECK-NEXT:    %clamp = irt.clamp %acts_5 min -1.000000e+00 : tensor<3x5xf32>
# CHECK-NEXT:    %pow = irt.pow %clamp exponent 2.000000e+00 : tensor<3x5xf32>
# CHECK-NEXT:    %abs = irt.abs %x : tensor<3x5xf32>
# CHECK-NEXT:    %[[C0:.*]] = irt.constant dense<1.000000e+00> : tensor<f32>
# CHECK-NEXT:    %add = irt.add %abs, %[[C0]] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %rsqrt = irt.rsqrt %add : tensor<3x5xf32>
# CHECK-NEXT:    %exp = irt.exp %rsqrt : tensor<3x5xf32>
# CHECK-NEXT:    %add_1 = irt.add %pow, %exp : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %neg = irt.neg %x : tensor<3x5xf32>
# CHECK-NEXT:    %relu6 = irt.relu6 %neg : tensor<3x5xf32>
# CHECK-NEXT:    %sub = irt.sub %add_1, %relu6 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    func.return %sub : tensor<3x5xf32>
@run
def math_modules():
    show(Activations(), torch.randn(3, 5))


# A 5-element factory prints inline; the 20-element one is the extra parameter %cst (never
# printed); a splat (zeros) added to a full-shape operand is one number.
# CHECK-LABEL: TEST: factories
# CHECK:       func.func @forward(%x: tensor<4x5xf32>, %cst: tensor<4x5xf32>) -> tensor<4x5xf32> {
# CHECK-NEXT:    %[[C0:.*]] = irt.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<5xf32>
# CHECK-NEXT:    %mul = irt.mul %x, %[[C0]] : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
# CHECK-NEXT:    %add = irt.add %mul, %cst : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
# CHECK-NEXT:    %[[C1:.*]] = irt.constant dense<0.000000e+00> : tensor<f32>
# CHECK-NEXT:    %add_1 = irt.add %add, %[[C1]] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
# CHECK-NEXT:    func.return %add_1 : tensor<4x5xf32>
@run
def factories():
    def f(x):
        n, m = x.shape
        small = torch.arange(m).float()
        big = torch.arange(n * m, dtype=torch.float32).reshape(n, m)
        return x * small + big + torch.zeros((n, m))

    show(f, torch.randn(4, 5))


# `e` feeds a broadcasting add and a cat, so it stays an irt.expand (an expand read only by
# broadcasting ops would import as nothing: see tests/test_math_shape.py).
# CHECK-LABEL: TEST: expand_and_cat
# CHECK:       func.func @forward(%x: tensor<3x1xf32>, %y: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x12xf32>) {
# CHECK-NEXT:    %expand = irt.expand %x : (tensor<3x1xf32>) -> tensor<3x4xf32>
# CHECK-NEXT:    %add = irt.add %expand, %y : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK-NEXT:    %permute = irt.transpose %y [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
# CHECK-NEXT:    %expand_1 = irt.expand %permute : (tensor<4x3xf32>) -> tensor<2x4x3xf32>
# CHECK-NEXT:    %flatten = irt.reshape %expand_1 : (tensor<2x4x3xf32>) -> tensor<8x3xf32>
# CHECK-NEXT:    %t = irt.transpose %flatten [1, 0] : (tensor<8x3xf32>) -> tensor<3x8xf32>
# CHECK-NEXT:    %cat = irt.concat %expand, %t dim 1 : (tensor<3x4xf32>, tensor<3x8xf32>) -> tensor<3x12xf32>
# CHECK-NEXT:    func.return %add, %cat : tensor<3x4xf32>, tensor<3x12xf32>
@run
def expand_and_cat():
    def f(x, y):
        e = x.expand(3, 4)
        return e + y, torch.cat([e, y.permute(1, 0).expand(2, 4, 3).flatten(0, 1).t()], dim=1)

    show(f, torch.randn(3, 1), torch.randn(3, 4))


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)).bool())

    def forward(self, s):
        return s.masked_fill(~self.mask, float("-inf"))


# A bool buffer is a compile-time value: ~mask folds, then becomes an f32 0/1 constant.
# CHECK-LABEL: TEST: constant_mask
# CHECK:       func.func @forward(%s: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
# CHECK-NEXT:    %[[C0:.*]] = irt.constant dense<[[0.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
# CHECK-NEXT:    %[[C1:.*]] = irt.constant dense<0xff800000> : tensor<f32>
# CHECK-NEXT:    %masked_fill = irt.where %[[C0]], %[[C1]], %s : (tensor<4x4xf32>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
# CHECK-NEXT:    func.return %masked_fill : tensor<2x4x4xf32>
@run
def constant_mask():
    show(Masked(), torch.randn(2, 4, 4))
