// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}type_mismatch_use.mlir:7:17: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand is used with type tensor<5xf32>, but has been previously used or defined with type tensor<4xf32>}}
  %0 = irt.relu %x : tensor<5xf32>
  func.return %0 : tensor<4xf32>
}
