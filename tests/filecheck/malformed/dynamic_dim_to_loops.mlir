// RUN: irc-opt %s -p irc-fuse,irc-to-loops -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -p irc-fuse,irc-to-loops -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: irc-to-loops: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{irc-to-loops: dynamic dimensions are not supported yet: argument 0 of @f has type tensor<?x4xf32>; give every dimension a static size (irc compiles one version per input shape)}}
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}
