// RUN: irc-opt %s -p 'irc-pack-weights{inputs=1}' --split-input-file | filecheck %s

// A parameter (argument after the one input) is packed: nn.Linear's [N, K] by rows, the
// contraction becomes `irt.contract packed` with the linear's bias as its epilogue.

// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %w_packed = irt.pack %w "rows" 16 : (tensor<20x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %y = irt.contract packed %x, %w_packed epilogue(%b : tensor<20xf32>) : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<4x20xf32> attributes {irc.fused = ["irt.linear"]} {
// CHECK-NEXT:    ^bb0(%0: f32, %1: f32):
// CHECK-NEXT:      %2 = arith.addf %0, %1 : f32
// CHECK-NEXT:      irt.yield %2 : f32
// CHECK-NEXT:    }
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<20x8xf32>, %b: tensor<20xf32>) -> tensor<4x20xf32> {
  %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<20x8xf32>, tensor<20xf32>) -> tensor<4x20xf32>
  func.return %y : tensor<4x20xf32>
}

// -----

// A matmul's [K, N] rhs computed from parameters only (a transpose) is packed by columns;
// a fused epilogue and its provenance are kept.

// CHECK-LABEL: func.func @matmul_of_transposed_weight
// CHECK:         %wt_packed = irt.pack %wt "cols" 16 : (tensor<8x5xf32>) -> tensor<1x8x16xf32>
// CHECK-NEXT:    %y = irt.contract packed %x, %wt_packed : (tensor<3x8xf32>, tensor<1x8x16xf32>) -> tensor<3x5xf32> attributes {irc.fused = ["irt.matmul", "irt.relu"]} {
// CHECK:           arith.maximumf
func.func @matmul_of_transposed_weight(%x: tensor<3x8xf32>, %w: tensor<5x8xf32>) -> tensor<3x5xf32> {
  %wt = irt.transpose %w [1, 0] : (tensor<5x8xf32>) -> tensor<8x5xf32>
  %y = irt.contract matmul %x, %wt : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32> attributes {irc.fused = ["irt.matmul", "irt.relu"]} {
  ^bb0(%a: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %a, %z : f32
    irt.yield %r : f32
  }
  func.return %y : tensor<3x5xf32>
}

// -----

// A run-time rhs (the input itself, or computed from it) is not packed: packing it would cost a
// kernel per call. The GEMM engine packs such operands on the fly.

// CHECK-LABEL: func.func @runtime_rhs
// CHECK-NOT:     irt.pack
// CHECK:         irt.matmul %w, %x
func.func @runtime_rhs(%x: tensor<8x5xf32>, %w: tensor<3x8xf32>) -> tensor<3x5xf32> {
  %y = irt.matmul %w, %x : (tensor<3x8xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}

// -----

// A conv2d's weight is the lhs of its im2col product: packed by rows in panels of the register
// tile's 6 rows, [O, C, kH, kW] read as [O, C*kH*kW], and given to the conv as `packed` (the
// weight itself stays the op's meaning).

// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %w_packed = irt.pack %w "rows" 6 : (tensor<16x3x3x3xf32>) -> tensor<3x27x6xf32>
// CHECK-NEXT:    %y = irt.conv2d %x, %w packed(%w_packed : tensor<3x27x6xf32>) bias(%b : tensor<16xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
func.func @conv(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x32x32xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<16xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x32x32xf32>
  func.return %y : tensor<1x16x32x32xf32>
}

// -----

// A conv on a small plane with a long K runs with output pixels as the register tile's rows
// (`conv_on_pixels`): its weight is the rhs, packed in panels of gemm_width (16) output
// channels, [ceil(O/16), C*kH*kW, 16]. Here 32 -> 24 channels, 3x3 on 4x4: K = 288.

// CHECK-LABEL: func.func @conv_on_pixels
// CHECK-NEXT:    %w_packed = irt.pack %w "rows" 16 : (tensor<24x32x3x3xf32>) -> tensor<2x288x16xf32>
// CHECK-NEXT:    %y = irt.conv2d %x, %w packed(%w_packed : tensor<2x288x16xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
func.func @conv_on_pixels(%x: tensor<1x32x4x4xf32>, %w: tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x4x4xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32>
  func.return %y : tensor<1x24x4x4xf32>
}

// -----

// A grouped conv's panels never straddle two groups: 12 output channels per group fill whole
// 6-row panels; 8 per group are padded with zero rows to 12 first (reshape per group, concat
// zeros, reshape back), so each group has two panels of its own; a depthwise conv (1 input
// channel per group) does not run on the GEMM engine at all.

// CHECK-LABEL: func.func @grouped
// CHECK-NEXT:    %w12_packed = irt.pack %w12 "rows" 6 : (tensor<24x2x1x1xf32>) -> tensor<4x2x6xf32>
// CHECK-NEXT:    %a = irt.conv2d %x, %w12 packed(%w12_packed : tensor<4x2x6xf32>) stride
// CHECK-NEXT:    %[[G:.*]] = irt.reshape %w8 : (tensor<16x2x1x1xf32>) -> tensor<2x8x2xf32>
// CHECK-NEXT:    %[[Z:.*]] = irt.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ZS:.*]] = irt.expand %[[Z]] : (tensor<f32>) -> tensor<2x4x2xf32>
// CHECK-NEXT:    %[[P:.*]] = irt.concat %[[G]], %[[ZS]] dim 1 : (tensor<2x8x2xf32>, tensor<2x4x2xf32>) -> tensor<2x12x2xf32>
// CHECK-NEXT:    %[[F:.*]] = irt.reshape %[[P]] : (tensor<2x12x2xf32>) -> tensor<24x2xf32>
// CHECK-NEXT:    %w8_packed = irt.pack %[[F]] "rows" 6 : (tensor<24x2xf32>) -> tensor<4x2x6xf32>
// CHECK-NEXT:    %b = irt.conv2d %x, %w8 packed(%w8_packed : tensor<4x2x6xf32>) stride
// CHECK-NEXT:    %c = irt.conv2d %x, %wd stride
func.func @grouped(%x: tensor<1x4x5x5xf32>, %w12: tensor<24x2x1x1xf32>, %w8: tensor<16x2x1x1xf32>, %wd: tensor<4x1x3x3xf32>) -> (tensor<1x24x5x5xf32>, tensor<1x16x5x5xf32>, tensor<1x4x5x5xf32>) {
  %a = irt.conv2d %x, %w12 stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : (tensor<1x4x5x5xf32>, tensor<24x2x1x1xf32>) -> tensor<1x24x5x5xf32>
  %b = irt.conv2d %x, %w8 stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : (tensor<1x4x5x5xf32>, tensor<16x2x1x1xf32>) -> tensor<1x16x5x5xf32>
  %c = irt.conv2d %x, %wd stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x5x5xf32>
  func.return %a, %b, %c : tensor<1x24x5x5xf32>, tensor<1x16x5x5xf32>, tensor<1x4x5x5xf32>
}
