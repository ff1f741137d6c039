// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}yield_outside_body.mlir:7:3: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: f32) -> f32 {
  // expected-error @+1 {{irt.yield must end the body of irt.elementwise or of an op's epilogue}}
  irt.yield %x : f32
}
