// RUN: irc-opt %s --verify-diagnostics --split-input-file

func.func @layout(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: layout must be one of packed, nk, kn, im2col, im2col-packed, got 'tn'}}
  irl.gemm "tn" %x, %w -> %y sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] conv [] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @strides(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %b: memref<4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: strides needs 3 entries per epilogue input (1), got 2}}
  irl.gemm "kn" %x, %w -> %y epilogue(%b : memref<4xf32>) sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [0, 1] conv [] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
  ^bb0(%acc: f32, %e: f32):
    irl.yield %acc : f32
  }
  func.return
}

// -----

func.func @conv(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{irl.gemm: the im2col layouts (and only they) take the 16 conv geometry values}}
  irl.gemm "im2col" %x, %w -> %y sizes [4, 4, 8] tiles [6, 16, 8, 4] strides [] conv [] parallel 0 : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32> {
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
