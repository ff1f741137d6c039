// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}matmul_result_shape.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{irt.matmul: result shape 4x2 should be 2x4}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
