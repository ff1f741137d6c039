# RUN: %python %s 2>/dev/null | filecheck %s
"""ATen-level import goldens: an ExportedProgram's overloads map onto the torch-level converters,
and its weights become function parameters (after the inputs), never inputs."""

import torch
from torch import nn

from irc.api import trace
from irc.frontend.fx_importer import import_fx

torch.manual_seed(0)


def run(fn):
    print(f"// TEST: {fn.__name__}")
    fn()
    return fn


def show(ep, *inputs):
    print(import_fx(trace(ep), inputs).module)


def mlp():
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Dropout(0.2), nn.Linear(5, 2)).eval()


# Dropout (eval) vanishes; aten.linear is irt.linear; weights are arguments after %input.
# CHECK-LABEL: TEST: exported_mlp
# CHECK:       func.func @forward(%input: tensor<3x6xf32>, %p0_weight: tensor<5x6xf32>, %p0_bias: tensor<5xf32>, %p3_weight: tensor<2x5xf32>, %p3_bias: tensor<2xf32>) -> tensor<3x2xf32> {
# CHECK-NEXT:    %linear = irt.linear %input, %p0_weight, %p0_bias : (tensor<3x6xf32>, tensor<5x6xf32>, tensor<5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %relu = irt.relu %linear : tensor<3x5xf32>
# CHECK-NEXT:    %linear_1 = irt.linear %relu, %p3_weight, %p3_bias : (tensor<3x5xf32>, tensor<2x5xf32>, tensor<2xf32>) -> tensor<3x2xf32>
# CHECK-NEXT:    func.return %linear_1 : tensor<3x2xf32>
@run
def exported_mlp():
    x = torch.randn(3, 6)
    show(torch.export.export(mlp(), (x,)), x)


# addmm(bias, x, permute(w)) is matmul + add (fusion turns it back into one linear); the
# clone of the decomposed dropout is an identity.
# CHECK-LABEL: TEST: decomposed_mlp
# CHECK:       func.func @forward(%input: tensor<3x6xf32>, %p0_weight: tensor<5x6xf32>, %p0_bias: tensor<5xf32>, %p3_weight: tensor<2x5xf32>, %p3_bias: tensor<2xf32>) -> tensor<3x2xf32> {
# CHECK-NEXT:    %permute = irt.transpose %p0_weight [1, 0] : (tensor<5x6xf32>) -> tensor<6x5xf32>
# CHECK-NEXT:    %0 = irt.matmul %input, %permute : (tensor<3x6xf32>, tensor<6x5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %addmm = irt.add %0, %p0_bias : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
# CHECK-NEXT:    %relu = irt.relu %addmm : tensor<3x5xf32>
# CHECK-NEXT:    %permute_1 = irt.transpose %p3_weight [1, 0] : (tensor<2x5xf32>) -> tensor<5x2xf32>
# CHECK-NEXT:    %1 = irt.matmul %relu, %permute_1 : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
# CHECK-NEXT:    %addmm_1 = irt.add %1, %p3_bias : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
# CHECK-NEXT:    func.return %addmm_1 : tensor<3x2xf32>
@run
def decomposed_mlp():
    x = torch.randn(3, 6)
    show(torch.export.export(mlp(), (x,)).run_decompositions(), x)


class Alpha(nn.Module):
    def forward(self, x, y):
        return torch.add(x, y, alpha=2), torch.rsub(x, 1.5), x.t()


# add(x, y, alpha=2) is x + y * 2; rsub(x, 1.5) is 1.5 - x; a tuple output returns three values.
# CHECK-LABEL: TEST: alpha_and_tuple_output
# CHECK:       func.func @forward(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x2xf32>) {
# CHECK-NEXT:    %0 = irt.constant dense<2.000000e+00> : tensor<f32>
# CHECK-NEXT:    %1 = irt.mul %y, %0 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
# CHECK-NEXT:    %add = irt.add %x, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
# CHECK-NEXT:    %2 = irt.constant dense<1.500000e+00> : tensor<f32>
# CHECK-NEXT:    %rsub = irt.sub %2, %x : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
# CHECK-NEXT:    %t = irt.transpose %x [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
# CHECK-NEXT:    func.return %add, %rsub, %t : tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x2xf32>
@run
def alpha_and_tuple_output():
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    show(torch.export.export(Alpha(), (x, y)), x, y)
