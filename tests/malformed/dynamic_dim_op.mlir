func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{irt.relu: dynamic dimensions are not supported yet: operand 0 has type tensor<?x4xf32>; give every dimension a static size (irc compiles one version per input shape)}}
  %0 = irt.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
