// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}reduce_max_empty_dim.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{irt.reduce: max over dimension 1 of size 0 (input 3x0) has no value; torch.amax raises for it too}}
  %0 = irt.reduce max %x [1] : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
