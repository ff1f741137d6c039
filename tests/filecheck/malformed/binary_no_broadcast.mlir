// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}binary_no_broadcast.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>, %y: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.add: operand shapes 4, 3 do not broadcast}}
  %0 = irt.add %x, %y : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
