// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}binary_wrong_result.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{irt.mul: result shape 5 does not match the broadcast operand shape 4}}
  %0 = irt.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
