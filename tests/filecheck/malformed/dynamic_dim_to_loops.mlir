// RUN: irc-opt %s -p irc-fuse,irc-to-loops -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -p irc-fuse,irc-to-loops -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: irc-to-loops: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{irc-to-loops: argument 0 of @f: type tensor<?x4xf32> has 1 dynamic dimension(s) but 0 size expression(s) (a `?` dimension needs its size in an #irt.dims attribute)}}
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}
