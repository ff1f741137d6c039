// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}return_type_mismatch.mlir:7:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{Expected arguments to have the same types as the function output types: expected [tensor<5xf32>], got [tensor<4xf32>]}}
  func.return %x : tensor<4xf32>
}
