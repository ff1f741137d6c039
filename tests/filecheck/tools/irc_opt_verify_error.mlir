// A verifier failure without --verify-diagnostics: exit code 1, a header naming the failing
// op's file:line:col and the message, then the module annotated at that op; no traceback.

// RUN: not irc-opt %s 2>&1 | filecheck %s

// CHECK:      irc-opt: error: {{.*}}irc_opt_verify_error.mlir:12:8: irt.linear: contracting dimensions differ: lhs 4x8 has 8, rhs 16x9 has 9
// CHECK:      "irt.linear"(%x, %w)
// CHECK-NEXT: ^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify
// CHECK-NOT:  Traceback
func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x9xf32>) -> tensor<4x16xf32> {
  %0 = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x9xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}
