// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}dynamic_dim_op.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{irt.relu: operand 0: type tensor<?x4xf32> has 1 dynamic dimension(s) but 0 size expression(s) (a `?` dimension needs its size in an #irt.dims attribute)}}
  %0 = irt.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
