// RUN-ARGS: -t cpp
// expected-error @unknown {{NotImplementedError: cpp emitter: function arguments must be memrefs, got tensor<4xf32>}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
