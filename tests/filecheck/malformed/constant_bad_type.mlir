// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}constant_bad_type.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f() -> tensor<2xi32> {
  // expected-error @+1 {{irt.constant: the result must be a tensor of f32, i64 or i1, got tensor<2xi32>}}
  %0 = irt.constant dense<[1, 2]> : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
