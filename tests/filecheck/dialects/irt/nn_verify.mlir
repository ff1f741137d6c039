// RUN: irc-opt %s --verify-diagnostics --split-input-file

// The CNN ops' verifiers: each message names the op, what is wrong, and the shapes involved.

func.func @channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: weight 4x2x3x3 expects 2 input channels (2 per group x 1 groups), input 1x3x8x8 has 3}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: groups = 4 must divide the input channels (4) and the output channels (6)}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 4 : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{irt.conv2d: result shape 1x4x8x8 should be 1x4x4x4 (input 1x3x8x8, weight 4x3x3x3, stride [2, 2], padding [1, 1], dilation [1, 1])}}
  %0 = irt.conv2d %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: bias must be [4] (one per output channel), got 4x1x1}}
  %0 = irt.conv2d %x, %w bias(%b : tensor<4x1x1xf32>) stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @kernel_too_big(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) -> tensor<1x4x0x0xf32> {
  // expected-error @+1 {{irt.conv2d: the dilated kernel 5x5 does not fit the padded input 1x3x4x4}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x0x0xf32>
  func.return %0 : tensor<1x4x0x0xf32>
}

// -----

func.func @stride_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: stride must be >= 1, got [0, 1]}}
  %0 = irt.conv2d %x, %w stride [0, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @not_4d(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: the input must be 4-D (N, C, H, W), got 3x8x8}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @epilogue_without_body(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: 1 epilogue input(s) but no epilogue body to use them}}
  %0 = irt.conv2d %x, %w epilogue(%r : tensor<1x4x6x6xf32>) stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @epilogue_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{irt.conv2d: epilogue input 0 of shape 4 does not broadcast to the result shape 1x4x6x6}}
  %0 = irt.conv2d %x, %w epilogue(%r : tensor<4xf32>) stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  ^bb0(%acc: f32, %e: f32):
    %s = arith.addf %acc, %e : f32
    irt.yield %s : f32
  }
  func.return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @bn_stats(%x: tensor<1x4x5x5xf32>, %s: tensor<4xf32>) -> tensor<1x4x5x5xf32> {
  // expected-error @+1 {{irt.batch_norm: mean must be 4x1x1 (per channel of input 1x4x5x5) or a scalar, got 4}}
  %0 = irt.batch_norm %x, %s, %s, %s, %s eps 1.000000e-05 : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  func.return %0 : tensor<1x4x5x5xf32>
}

// -----

func.func @bn_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.batch_norm: the input must be 2-D, 3-D or 4-D (N, C, ...), got 4}}
  %0 = irt.batch_norm %x, %s, %s, %s, %s eps 1.000000e-05 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @pool_result(%x: tensor<1x2x9x9xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{irt.max_pool2d: result shape 1x2x4x4 should be 1x2x5x5 (input 1x2x9x9, kernel [3, 3], stride [2, 2], padding [1, 1])}}
  %0 = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x2x9x9xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @pool_padding(%x: tensor<1x2x9x9xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error @+1 {{irt.avg_pool2d: padding [2, 2] must be at most half the kernel [2, 2]}}
  %0 = irt.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [2, 2] : (tensor<1x2x9x9xf32>) -> tensor<1x2x6x6xf32>
  func.return %0 : tensor<1x2x6x6xf32>
}

// -----

func.func @adaptive(%x: tensor<1x2x9x9xf32>) -> tensor<1x3x2x2xf32> {
  // expected-error @+1 {{irt.adaptive_avg_pool2d: result 1x3x2x2 must keep N and C of input 1x2x9x9 and have a positive output size}}
  %0 = irt.adaptive_avg_pool2d %x : (tensor<1x2x9x9xf32>) -> tensor<1x3x2x2xf32>
  func.return %0 : tensor<1x3x2x2xf32>
}

// -----

func.func @conv_packed_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %wp: tensor<2x27x6xf32>) -> tensor<1x16x8x8xf32> {
  // expected-error @+1 {{irt.conv2d: packed weight 2x27x6 should be [ceil(16/R), 27, R], the weight 16x3x3x3 in panels of R rows}}
  %0 = irt.conv2d %x, %w packed(%wp : tensor<2x27x6xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %0 : tensor<1x16x8x8xf32>
}

// -----

// 8 output channels per group in 6-row panels: 2 panels per group (zero rows after each
// group's 8), not ceil(16/6) = 3 panels that straddle the groups.
func.func @conv_packed_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<16x2x3x3xf32>, %wp: tensor<3x18x6xf32>) -> tensor<1x16x8x8xf32> {
  // expected-error @+1 {{irt.conv2d: packed weight 3x18x6 should be [2 * ceil(8/R), 18, R], the weight 16x2x3x3 in panels of R rows, each of its 2 groups' rows in panels of their own}}
  %0 = irt.conv2d %x, %w packed(%wp : tensor<3x18x6xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x4x8x8xf32>, tensor<16x2x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %0 : tensor<1x16x8x8xf32>
}

// -----

func.func @conv_winograd_packed_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %wp: tensor<16x2x3x6xf32>) -> tensor<1x16x8x8xf32> {
  // expected-error @+1 {{irt.conv2d: Winograd-packed weight 16x2x3x6 should be [16, ceil(16/R), 3, R] (irt.pack "winograd" of a 3x3 weight, groups 1), the weight is 16x3x3x3 in 1 group(s)}}
  %0 = irt.conv2d %x, %w packed(%wp : tensor<16x2x3x6xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %0 : tensor<1x16x8x8xf32>
}
