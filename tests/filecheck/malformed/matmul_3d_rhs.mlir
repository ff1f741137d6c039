// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}matmul_3d_rhs.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>, %w: tensor<1x3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{irt.matmul: a matmul contraction needs lhs of rank >= 1 and a 2-D rhs, got 2x3 and 1x3x4}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<1x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
