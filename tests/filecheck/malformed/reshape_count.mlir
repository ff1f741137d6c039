// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}reshape_count.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{irt.reshape: cannot reshape 2x3 (6 elements) to 7 (7 elements)}}
  %0 = irt.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return %0 : tensor<7xf32>
}
