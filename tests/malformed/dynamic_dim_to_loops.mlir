// RUN-ARGS: -p irc-fuse,irc-to-loops -t cpp
// expected-error @unknown {{irc-to-loops: dynamic dimensions are not supported yet: argument 0 of @f has type tensor<?x4xf32>; give every dimension a static size (irc compiles one version per input shape)}}
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}
