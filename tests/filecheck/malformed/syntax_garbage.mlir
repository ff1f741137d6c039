// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}syntax_garbage.mlir:6:6: {{.+}}
// CHECK-NOT: Traceback
// expected-error @+1 {{Operation this is not registered}}
this is not IR
