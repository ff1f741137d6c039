// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}linear_contracting.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{irt.linear: contracting dimensions differ: lhs 2x3 has 3, rhs 4x5 has 5 (linear expects rhs as [N, K])}}
  %0 = irt.linear %x, %w : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
