// RUN: irc-opt %s --verify-diagnostics --split-input-file

func.func @layout(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: layout must be one of panels, nk, kn, im2col, im2col_panels, direct, direct_panels, pixels, pixels_panels, winograd, got 'tn'}}
  irl.gemm "tn" %x, %w -> %y sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @strides(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %b: memref<4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: strides needs 3 entries per epilogue input (1), got 2}}
  irl.gemm kn %x, %w -> %y epilogue(%b : memref<4xf32>) sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [0, 1] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
  ^bb0(%acc: f32, %e: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @conv(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: the convolution layouts (im2col, direct, pixels and their _panels, and only they) take the convolution geometry (`conv <...>`)}}
  irl.gemm im2col %x, %w -> %y sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @attention(%q: memref<4x16x8xf32>, %o: memref<4x16x8xf32>) {
  // expected-error @+1 {{irl.attention: sizes must be [batch, Lq, Lk, E, Ev] >= 1, got [4, 16, 16, 8]}}
  irl.attention %q, %q, %q -> %o sizes [4, 16, 16, 8] rows 16 scale 0.125 causal 0 mask_strides [] parallel 1 : memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>
  func.return
}

// -----

func.func @conv_sizes(%w: memref<12x27xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: sizes [12, 64, 27] are not the per-group product of the conv geometry, [O/groups, OH*OW, C/groups*kH*kW] = [6, 64, 27]}}
  irl.gemm im2col %w, %x -> %y sizes [12, 64, 27] tiles [6, 32, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0 : memref<12x27xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @direct_strided(%w: memref<12x54xf32>, %x: memref<1x6x27x27xf32>, %y: memref<1x12x3x3xf32>) {
  // expected-error @+1 {{irl.gemm: the direct layouts copy a strided image into stride_h x stride_w phase planes, at most 64 (im2col takes any stride), got stride 9x9}}
  irl.gemm direct %w, %x -> %y sizes [12, 9, 54] tiles [6, 32, 54, 12] strides [] conv <input 1x6x27x27, output 12x3x3, kernel 3x3, stride 9x9, padding 0x0, dilation 1x1, groups 1> parallel 0 : memref<12x54xf32>, memref<1x6x27x27xf32>, memref<1x12x3x3xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @pixels_panels_grouped(%w: memref<1x27x16xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: pixels_panels reads each group's weights as whole panels: M (6) must be a multiple of the panel width (16) with groups 2}}
  irl.gemm pixels_panels %w, %x -> %y sizes [6, 64, 27] tiles [6, 64, 27, 16] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0 : memref<1x27x16xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @pixels_panels_split_panel(%w: memref<2x27x16xf32>, %x: memref<1x3x8x8xf32>, %y: memref<1x24x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: pixels_panels tasks take whole panels of 16 output channels: MS (tiles[3]) must be a multiple of 16, got 12}}
  irl.gemm pixels_panels %w, %x -> %y sizes [24, 64, 27] tiles [24, 64, 27, 12] strides [] conv <input 1x3x8x8, output 24x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 1 : memref<2x27x16xf32>, memref<1x3x8x8xf32>, memref<1x24x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @direct_panels_too_few(%w: memref<1x27x6xf32>, %x: memref<1x3x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: direct_panels reads its weights as panels [2, 27, 6] ([groups*ceil(M/R), K, R]), got [1, 27, 6]}}
  irl.gemm direct_panels %w, %x -> %y sizes [12, 64, 27] tiles [12, 64, 27, 12] strides [] conv <input 1x3x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 0 : memref<1x27x6xf32>, memref<1x3x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @pixels_panels_wrong_k(%w: memref<2x26x16xf32>, %x: memref<1x3x8x8xf32>, %y: memref<1x24x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: pixels_panels reads its weights as panels [2, 27, 16] ([groups*ceil(M/W), K, W]), got [2, 26, 16]}}
  irl.gemm pixels_panels %w, %x -> %y sizes [24, 64, 27] tiles [24, 64, 27, 32] strides [] conv <input 1x3x8x8, output 24x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 0 : memref<2x26x16xf32>, memref<1x3x8x8xf32>, memref<1x24x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @conv_groups(%w: memref<12x27xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{#irl.conv: groups (4) must divide the input (6) and output (12) channels}}
  irl.gemm im2col %w, %x -> %y sizes [3, 64, 13] tiles [6, 32, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 4> parallel 0 : memref<12x27xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @conv_syntax(%w: memref<12x27xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{#irl.conv: kernel takes NxN (sizes kernel_h, kernel_w)}}
  irl.gemm im2col %w, %x -> %y sizes [6, 64, 27] tiles [6, 32, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0 : memref<12x27xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @symbolic_sizes(%m: index, %x: memref<?x8xf32, #irt.dims<"s0">>, %w: memref<8x4xf32>, %y: memref<?x4xf32, #irt.dims<"s0">>) {
  // expected-error @+1 {{irl.gemm: sizes must be [M, N, K] >= 1, got [?, 0, 8]}}
  irl.gemm kn %x, %w -> %y sizes [%m, 0, 8] tiles [6, 16, 8, %m] strides [] parallel 0 : memref<?x8xf32, #irt.dims<"s0">>, memref<8x4xf32>, memref<?x4xf32, #irt.dims<"s0">> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @parallel_if(%m: index, %p: i1, %x: memref<?x8xf32, #irt.dims<"s0">>, %w: memref<8x4xf32>, %y: memref<?x4xf32, #irt.dims<"s0">>) {
  // expected-error @+1 {{irl.gemm: `parallel 1 if %p` is the only run-time choice of threads}}
  irl.gemm kn %x, %w -> %y sizes [%m, 4, 8] tiles [6, 16, 8, %m] strides [] parallel 0 if %p : memref<?x8xf32, #irt.dims<"s0">>, memref<8x4xf32>, memref<?x4xf32, #irt.dims<"s0">> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @conv_symbolic(%m: index, %w: memref<12x27xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: a convolution's sizes, tiles and strides are static}}
  irl.gemm im2col %w, %x -> %y sizes [6, 64, 27] tiles [6, 32, 27, %m] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 2> parallel 0 : memref<12x27xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @batch_count(%x: memref<2x4x8xf32>, %w: memref<8x4xf32>, %y: memref<2x4x4xf32>) {
  // expected-error @+1 {{irl.gemm: the batch count must be >= 1 (or a run-time size), got 0}}
  irl.gemm kn %x, %w -> %y batch [0, 32, 0, 16] sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<2x4x8xf32>, memref<8x4xf32>, memref<2x4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @batch_entries(%x: memref<2x4x8xf32>, %w: memref<8x4xf32>, %y: memref<2x4x4xf32>) {
  // expected-error @+1 {{irl.gemm: batch must be [count, sa, sb, sc], count >= 1 and strides >= 0, got [2, 32, 16]}}
  irl.gemm kn %x, %w -> %y batch [2, 32, 16] sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] parallel 0 : memref<2x4x8xf32>, memref<8x4xf32>, memref<2x4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @winograd_strided(%w: memref<16x1x8x14xf32>, %x: memref<1x8x8x8xf32>, %y: memref<1x14x4x4xf32>) {
  // expected-error @+1 {{irl.gemm: the winograd layout runs a 3x3 conv of stride 1, dilation 1 and one group, got kernel 3x3, stride 2x2, dilation 1x1, groups 1}}
  irl.gemm winograd %w, %x -> %y sizes [14, 16, 72] tiles [2, 1, 1, 1] strides [] conv <input 1x8x8x8, output 14x4x4, kernel 3x3, stride 2x2, padding 1x1, dilation 1x1, groups 1> parallel 0 : memref<16x1x8x14xf32>, memref<1x8x8x8xf32>, memref<1x14x4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @winograd_weights(%w: memref<1x8x14xf32>, %x: memref<1x8x8x8xf32>, %y: memref<1x14x8x8xf32>) {
  // expected-error @+1 {{irl.gemm: the winograd layout reads its weights as [16, ceil(M/R), C, R] = [16, ceil(14/R), 8, R], got [1, 8, 14]}}
  irl.gemm winograd %w, %x -> %y sizes [14, 64, 72] tiles [4, 1, 1, 1] strides [] conv <input 1x8x8x8, output 14x8x8, kernel 3x3, stride 1x1, padding 1x1, dilation 1x1, groups 1> parallel 0 : memref<1x8x14xf32>, memref<1x8x8x8xf32>, memref<1x14x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}
