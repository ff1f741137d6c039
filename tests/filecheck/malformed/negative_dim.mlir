// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}negative_dim.mlir:6:25: {{.+}}
// CHECK-NOT: Traceback
// expected-error @+1 {{Expected shape type.}}
func.func @f(%x: tensor<-3x4xf32>) -> tensor<-3x4xf32> {
  func.return %x : tensor<-3x4xf32>
}
