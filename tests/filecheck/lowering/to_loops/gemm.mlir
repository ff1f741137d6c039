// RUN: irc-opt %s -p irc-to-loops --split-input-file | filecheck %s
// RUN: irc-opt %s -p irc-to-loops -t cpp --split-input-file | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// The GEMM engine's lowering: one irl.gemm per contraction or convolution, its cache blocking,
// threading and epilogue operand access decided here and written on the op.

// A packed contraction: A is %x, B the packed panels; the bias is read per column (strides
// batch 0, row 0, column 1); a splat constant of the epilogue becomes a literal in its body.
// CHECK-LABEL: func.func @packed
// CHECK:         irl.gemm panels %x, %wp -> %out0 epilogue(%b : memref<20xf32>) sizes [4, 20, 8] tiles [6, 16, 8, 4] strides [0, 0, 1] parallel 0 : memref<4x8xf32>, memref<2x8x16xf32>, memref<4x20xf32> attributes {irc.kernel = "irt.contract packed (irt.linear + irt.mul) -> 4x20"} {
// CHECK-NEXT:    ^bb0(%acc: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[C:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[A:.*]] = arith.addf %acc, %{{.*}} : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[C]] : f32
// CHECK-NEXT:      irl.yield %[[M]] : f32
func.func @packed(%x: tensor<4x8xf32>, %wp: tensor<2x8x16xf32>, %b: tensor<20xf32>) -> tensor<4x20xf32> {
  %h = irt.constant dense<5.000000e-01> : tensor<f32>
  %y = irt.contract packed %x, %wp epilogue(%b, %h : tensor<20xf32>, tensor<f32>) : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<4x20xf32> attributes {irc.fused = ["irt.linear", "irt.mul"]} {
  ^bb0(%a: f32, %bias: f32, %half: f32):
    %s = arith.addf %a, %bias : f32
    %r = arith.mulf %s, %half : f32
    irt.yield %r : f32
  }
  func.return %y : tensor<4x20xf32>
}

// -----

// Run-time rhs in both layouts; a 3-D lhs is seen as [M, K] (a view, no copy), and a residual
// of the result's shape is read per row (stride N) and column.
// CHECK-LABEL: func.func @runtime_layouts
// CHECK:         irl.gemm nk %x, %w -> %y sizes [6, 6, 8]
// CHECK:         %[[A:.*]] = memref.reinterpret_cast %y3 to offset: [0], sizes: [6, 6], strides: [6, 1]
// CHECK:         irl.gemm kn %[[A]], %m -> %{{.*}} epilogue(%r : memref<2x3x5xf32>) sizes [6, 5, 6] tiles [6, 16, 6, 6] strides [0, 5, 1]
func.func @runtime_layouts(%x: tensor<6x8xf32>, %w: tensor<6x8xf32>, %m: tensor<6x5xf32>, %r: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %y = irt.linear %x, %w : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x6xf32>
  %y3 = irt.reshape %y : (tensor<6x6xf32>) -> tensor<2x3x6xf32>
  %z = irt.contract matmul %y3, %m epilogue(%r : tensor<2x3x5xf32>) : (tensor<2x3x6xf32>, tensor<6x5xf32>) -> tensor<2x3x5xf32> {
  ^bb0(%a: f32, %res: f32):
    %s = arith.addf %a, %res : f32
    irt.yield %s : f32
  }
  func.return %z : tensor<2x3x5xf32>
}

// -----

// An epilogue input that broadcasts over the batch but not the rows ([3, 5] against [2, 3, 5])
// is not affine in the flattened row: the scalar nest keeps it.
// CHECK-LABEL: func.func @not_affine
// CHECK-NOT:     irl.gemm
// CHECK:         "scf.parallel"
func.func @not_affine(%x: tensor<2x3x6xf32>, %m: tensor<6x5xf32>, %r: tensor<3x5xf32>) -> tensor<2x3x5xf32> {
  %z = irt.contract matmul %x, %m epilogue(%r : tensor<3x5xf32>) : (tensor<2x3x6xf32>, tensor<6x5xf32>) -> tensor<2x3x5xf32> {
  ^bb0(%a: f32, %res: f32):
    %s = arith.addf %a, %res : f32
    irt.yield %s : f32
  }
  func.return %z : tensor<2x3x5xf32>
}

// -----

// A convolution: per image and group, weights [O/g, C/g*kH*kW] times the im2col matrix of the
// input; the bias is added per row (output channel) first, then the fused epilogue. With stride
// 1 the image is read in place (`direct`; the engine copies it with its padding first): the
// tiles cover the virtual columns oh*10 + ow of the 10-wide padded rows, 7*10 + 8 = 78 of them.
// CHECK-LABEL: func.func @conv
// CHECK-NOT:     memref.alloc
// CHECK:         irl.gemm direct %w, %x -> %out0 epilogue(%b : memref<12xf32>) sizes [6, 64, 27] tiles [6, 48, 27, 6] strides [0, 1, 0] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0
// CPP-LABEL:   extern "C" void conv(
// CPP:           const irc_direct irc_b{x + (irc_n*6 + irc_g*3)*64, 3, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 8};
// CPP:           irc_conv_direct<9>(6, irc_a, irc_b, irc_c, irc_epi, 6, 48, 6, false);
// CHECK-NEXT:    ^bb0(%acc: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[B:.*]] = arith.addf %acc, %{{.*}} : f32
// CHECK:           arith.maximumf %[[B]]
func.func @conv(%x: tensor<1x6x8x8xf32>, %w: tensor<12x3x3x3xf32>, %b: tensor<12xf32>) -> tensor<1x12x8x8xf32> {
  %y = irt.conv2d %x, %w bias(%b : tensor<12xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x6x8x8xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x8x8xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %a, %z : f32
    irt.yield %r : f32
  }
  func.return %y : tensor<1x12x8x8xf32>
}

// -----

// The same conv with its weights packed at compile time (irc-pack-weights): A is read from the
// panels, [ceil(O/6), C/g*kH*kW, 6]; a group starts at panel g*(O/g)/6.
// CHECK-LABEL: func.func @conv_packed
// CHECK:         irl.gemm direct_panels %wp, %x -> %out0 sizes [6, 64, 27] tiles [6, 48, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0
// CPP-LABEL:   extern "C" void conv_packed(
// CPP:           const irc_prepacked<IRC_MR> irc_a{wp + irc_g*162, 27};
func.func @conv_packed(%x: tensor<1x6x8x8xf32>, %w: tensor<12x3x3x3xf32>, %wp: tensor<2x27x6xf32>) -> tensor<1x12x8x8xf32> {
  %y = irt.conv2d %x, %w packed(%wp : tensor<2x27x6xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : (tensor<1x6x8x8xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x8x8xf32>
  func.return %y : tensor<1x12x8x8xf32>
}

// -----

// A small plane with a long K (32 -> 24 channels, 3x3 on 4x4, K = 288): the `pixels` layouts,
// output pixels as the register tile's rows (`conv_on_pixels`). Its weights packed as the rhs,
// panels of 16 output channels [2, 288, 16], are read as they are (`pixels_panels`); unpacked,
// they are packed per call (`pixels`). tiles [MC, NC, KC, MS]: MC = all 4 output rows in one
// band (the padded image is copied whole: gemm_pixel_bands.mlir), NC = all 16 pixels, MS = one
// 16-channel panel per task (the default Target's two threads: a panel each). The template
// arguments are the taps, the column stride, the height of a row's run tiles (a row of 4
// pixels: one tile of 4; `pixel_run_rows`), the output rows per tile (1: two rows of 4 would
// pass this width's 6 pixels, `pixel_run_segments`), whether every run tile of a row is that
// high (true: no K loop for 3 pixels is compiled), whether the top and bottom rows skip the
// kernel rows that read padding alone (true: padded above and below), and, each row being one
// tile, which taps its first and last pixels read column padding with (irc_cols<KW, DW, PW, ER>:
// ER = 4 + 1 - 3 = 2, so the last pixel's third tap).
// CHECK-LABEL: func.func @conv_on_pixels
// CHECK:         irl.gemm pixels_panels %wp, %x -> %out0 epilogue(%b : memref<24xf32>) sizes [24, 16, 288] tiles [4, 16, 288, 16] strides [0, 1, 0] conv <input 1x32x4x4, output 24x4x4, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 0
// CHECK:         irl.gemm pixels %w, %x -> %out1 sizes [24, 16, 288] tiles [4, 16, 288, 16] strides [] conv <input 1x32x4x4, output 24x4x4, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 0
// CPP-LABEL:   extern "C" void conv_on_pixels(
// CPP:           const irc_prepacked<IRC_NR> irc_a{wp, 288};
// CPP:           irc_conv_pixels<9, 1, 4, 1, true, true, irc_cols<3, 1, 1, 2>>(24, irc_a, irc_b, irc_c, irc_epi, 4, 16, 16, false);
// CPP:           const irc_dense<IRC_NR, false> irc_a{w + irc_g*6912, 288, 24};
// CPP:           irc_conv_pixels<9, 1, 4, 1, true, true, irc_cols<3, 1, 1, 2>>(24, irc_a, irc_b, irc_c, irc_epi, 4, 16, 16, false);
func.func @conv_on_pixels(%x: tensor<1x32x4x4xf32>, %w: tensor<24x32x3x3xf32>, %wp: tensor<2x288x16xf32>, %b: tensor<24xf32>) -> (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) {
  %y = irt.conv2d %x, %w packed(%wp : tensor<2x288x16xf32>) bias(%b : tensor<24xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x4x4xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32>
  %z = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x4x4xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32>
  func.return %y, %z : tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>
}

// -----

// The same layout at column stride 2: the stride is a template argument, so the tiles of pixels
// in one output row are compiled to broadcast from one pointer at that stride (irc_pixels_task).
// Its last pixel's window ends inside the image (ER = 8 + 1 - 6 = 3 > 2): only the first pixel
// reads column padding.
// CHECK-LABEL: func.func @conv_on_pixels_stride2
// CHECK:         irl.gemm pixels %w, %x -> %out0 sizes [24, 16, 288] {{.*}} stride 2x2
// CPP-LABEL:   extern "C" void conv_on_pixels_stride2(
// CPP:           irc_conv_pixels<9, 2, 4, 1, true, true, irc_cols<3, 1, 1, 3>>(24, irc_a, irc_b, irc_c, irc_epi, 4, 16, 16, false);
func.func @conv_on_pixels_stride2(%x: tensor<1x32x8x8xf32>, %w: tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32> {
  %y = irt.conv2d %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x32x8x8xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x4x4xf32>
  func.return %y : tensor<1x24x4x4xf32>
}

// -----

// Strided windows that do not overlap (2x2 with stride 2) keep the im2col matrix, packed
// panel by panel: it is no larger than the image. Overlapping ones (3x3 with stride 2) are
// read in place from four phase planes (virtual columns oh*5 + ow: 3*5 + 4 = 19), an
// unpadded stride-1 1x1 conv from its input itself.
// CHECK-LABEL: func.func @conv_strided
// CHECK-NOT:     memref.alloc
// CHECK:         irl.gemm im2col %w2, %x -> %out0 sizes [6, 16, 12] tiles [6, 16, 12, 6] strides [] conv <input 1x3x8x8, output 6x4x4, kernel 2x2, stride 2x2, padding 0x0, dilation 1x1, groups 1> parallel 0
// CHECK:         irl.gemm direct %w, %x -> %out1 sizes [6, 16, 27] tiles [6, 16, 27, 6] strides [] conv <input 1x3x8x8, output 6x4x4, kernel 3x3, stride 2x2, padding 1x1, dilation 1x1, groups 1> parallel 0
// CHECK:         irl.gemm direct %w1, %x -> %out2 sizes [6, 64, 3] tiles [6, 32, 3, 6] strides [] conv <input 1x3x8x8, output 6x8x8, kernel 1x1, stride 1x1, padding 0x0, dilation 1x1, groups 1> parallel 0
// CPP-LABEL:   extern "C" void conv_strided(
// CPP:           const irc_im2col irc_b{x + (irc_n*3 + irc_g*3)*64, 3, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 4};
// CPP:           irc_gemm(6, 16, 12, irc_a, irc_b, irc_c, 16, irc_epi, 6, 16, 12, 6, false);
// CPP:           const irc_direct irc_b{x + (irc_n*3 + irc_g*3)*64, 3, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 4, 4};
// CPP:           irc_conv_direct<9>(6, irc_a, irc_b, irc_c, irc_epi, 6, 16, 6, false);
// CPP:           const irc_direct irc_b{x + (irc_n*3 + irc_g*3)*64, 3, 8, 8, 1, 1, 1, 1, 0, 0, 1, 1, 8, 8};
// CPP:           irc_conv_direct<1>(6, irc_a, irc_b, irc_c, irc_epi, 6, 32, 6, false);
func.func @conv_strided(%x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>, %w1: tensor<6x3x1x1xf32>, %w2: tensor<6x3x2x2xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x8x8xf32>) {
  %v = irt.conv2d %x, %w2 stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<6x3x2x2xf32>) -> tensor<1x6x4x4xf32>
  %y = irt.conv2d %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x4x4xf32>
  %z = irt.conv2d %x, %w1 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<6x3x1x1xf32>) -> tensor<1x6x8x8xf32>
  func.return %v, %y, %z : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x8x8xf32>
}

// -----

// Fewer than 6 output channels per group (depthwise): loop nests (irc_to_loops_depthwise.mlir).
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     irl.gemm
// CHECK:         "scf.parallel"
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %y = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// -----

// Attention: two GEMMs per block of queries around a row softmax; the [L, L] mask is read per
// row and column, the same for every head (batch stride 0).
// CHECK-LABEL: func.func @attention
// CHECK:         irl.attention %q, %k, %v -> %out0 mask(%m : memref<16x16xf32>) sizes [4, 16, 16, 8, 8] rows 16 scale 1.250000e-01 causal 0 mask_strides [0, 16, 1] parallel 0
func.func @attention(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %m: tensor<16x16xf32>) -> tensor<1x4x16x8xf32> {
  %o = irt.attention %q, %k, %v mask %m scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<16x16xf32>) -> tensor<1x4x16x8xf32>
  func.return %o : tensor<1x4x16x8xf32>
}

// -----

// `safe` (F.scaled_dot_product_attention's: a row masked whole gives 0, not NaN) reaches the
// engine's call.
// CHECK-LABEL: func.func @attention_safe
// CHECK:         irl.attention %q, %k, %v -> %out0 mask(%m : memref<16x16xf32>) sizes [4, 16, 16, 8, 8] rows 16 scale 1.250000e-01 causal 0 safe mask_strides [0, 16, 1] parallel 0
// CPP-LABEL:   extern "C" void attention_safe(
// CPP:           irc_attention<1>(4, 16, 16, 8, 8, q, k, v, out0, irc_score, 16, false, false, true);
func.func @attention_safe(%q: tensor<1x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>, %m: tensor<16x16xf32>) -> tensor<1x4x16x8xf32> {
  %o = irt.attention %q, %k, %v mask %m scale 0.125 safe : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<16x16xf32>) -> tensor<1x4x16x8xf32>
  func.return %o : tensor<1x4x16x8xf32>
}

// -----

// A language model's padding mask, one per batch shared by its heads ([B, 1, Lq, Lk] over B x H):
// not affine in the flattened (batch, head) index, so it is first broadcast to the scores' shape
// in a buffer of its own, then read densely; the engine still runs (the scalar nest it would fall
// back to is about 20x slower).
// CHECK-LABEL: func.func @attention_batch_mask
// CHECK:         %mask = memref.alloc() {alignment = 64 : i64} : memref<2x4x16x16xf32>
// CHECK:         }) {irc.kernel = "irt.attention -> 2x4x16x8 (its mask, broadcast)"}
// CHECK:         irl.attention %q, %k, %v -> %out0 mask(%mask : memref<2x4x16x16xf32>) sizes [8, 16, 16, 8, 8] rows 16 scale 1.250000e-01 causal 0 mask_strides [256, 16, 1]
func.func @attention_batch_mask(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %m: tensor<2x1x16x16xf32>) -> tensor<2x4x16x8xf32> {
  %o = irt.attention %q, %k, %v mask %m scale 0.125 : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x8xf32>
  func.return %o : tensor<2x4x16x8xf32>
}
