// Malformed input: a located diagnostic on stderr, exit code 1, and no Python traceback.

// RUN: not irc-opt %s 2>&1 | filecheck %s

// CHECK:      irc-opt: error: {{.*}}irc_opt_errors.mlir:{{[0-9]+}}:17
// CHECK-NEXT:   %0 = irt.relu %x : tensor<4x9xf32>
// CHECK-NEXT:                 ^^
// CHECK-NEXT:                 operand is used with type tensor<4x9xf32>, but has been previously used or defined with type tensor<4x8xf32>
// CHECK-NOT:  Traceback
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = irt.relu %x : tensor<4x9xf32>
  func.return %0 : tensor<4x8xf32>
}
