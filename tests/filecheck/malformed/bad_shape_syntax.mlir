// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}bad_shape_syntax.mlir:6:27: {{.+}}
// CHECK-NOT: Traceback
// expected-error @+1 {{Expected shape type.}}
func.func @f(%x: tensor<4x>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
