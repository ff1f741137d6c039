// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}integer_tensor.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{irt.relu: operand 0 must be a tensor of f32, got tensor<4xi32>}}
  %0 = irt.relu %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
