// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}oversized_tensor.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<9223372036854775807x4xf32>) -> tensor<9223372036854775807x4xf32> {
  // expected-error @+1 {{irt.relu: operand 0 has type tensor<9223372036854775807x4xf32>: 3.69e+19 elements, more than a 64-bit size can address}}
  %0 = irt.relu %x : tensor<9223372036854775807x4xf32>
  func.return %0 : tensor<9223372036854775807x4xf32>
}
