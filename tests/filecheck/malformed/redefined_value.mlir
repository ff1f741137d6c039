// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}redefined_value.mlir:8:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x : tensor<4xf32>
  // expected-error @+1 {{SSA value %0 is already defined}}
  %0 = irt.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
