// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}dynamic_dim_op.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{irt.relu: dynamic dimensions are not supported yet: operand 0 has type tensor<?x4xf32>; give every dimension a static size (irc compiles one version per input shape)}}
  %0 = irt.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
