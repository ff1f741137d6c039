// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}transpose_not_perm.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{irt.transpose: [0, 0] is not a permutation of 2 dimensions}}
  %0 = irt.transpose %x [0, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
