// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}missing_colon_type.mlir:8:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x
  // expected-error @+1 {{Expected ':'}}
  func.return %0 : tensor<4xf32>
}
