// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}contract_epilogue_shape.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>, %r: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{irt.contract: epilogue input 0 of shape 3x4 does not broadcast to the result shape 2x4}}
  %0 = irt.contract linear %x, %w epilogue(%r : tensor<3x4xf32>) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32> {
  ^bb0(%acc: f32, %e: f32):
    irt.yield %acc : f32
  }
  func.return %0 : tensor<2x4xf32>
}
