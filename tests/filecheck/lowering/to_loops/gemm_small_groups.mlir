// RUN: irc-opt %s -p 'irc-to-loops{threads=1}' | filecheck %s
// RUN: irc-opt %s -p 'irc-to-loops{threads=1}' -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// `conv_on_engine`: a conv with more than one input channel per group runs on the GEMM engine
// whatever its output channels per group (a tile as tall as they are: 4 rows for ResNeXt-50's
// groups of 4, one for a one-channel head); a depthwise conv (one input channel per group, here
// a multiplier of 2) keeps the vectorized row-wise nest.
// CHECK-LABEL: func.func @small_groups
// CHECK:         irl.gemm direct %w, %x -> %out0 sizes [4, 81, 36] {{.*}} groups 8>
// CHECK-LABEL: func.func @one_channel_out
// CHECK:         irl.gemm direct %w, %x -> %out0 sizes [1, 81, 144] {{.*}} groups 1>
// CHECK-LABEL: func.func @depthwise_times_two
// CHECK-NOT:     irl.gemm
// CHECK:         scf.parallel
// CHECK:         func.return
func.func @small_groups(%x: tensor<1x32x9x9xf32>, %w: tensor<32x4x3x3xf32>) -> tensor<1x32x9x9xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : (tensor<1x32x9x9xf32>, tensor<32x4x3x3xf32>) -> tensor<1x32x9x9xf32>
  func.return %y : tensor<1x32x9x9xf32>
}
func.func @one_channel_out(%x: tensor<1x16x9x9xf32>, %w: tensor<1x16x3x3xf32>) -> tensor<1x1x9x9xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x16x9x9xf32>, tensor<1x16x3x3xf32>) -> tensor<1x1x9x9xf32>
  func.return %y : tensor<1x1x9x9xf32>
}
func.func @depthwise_times_two(%x: tensor<1x8x9x9xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x9x9xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : (tensor<1x8x9x9xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x9x9xf32>
  func.return %y : tensor<1x16x9x9xf32>
}
