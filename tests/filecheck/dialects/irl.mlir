// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP

// The loop-level ops of the GEMM engine print in their custom form and parse back (the layout
// is a keyword, the convolution geometry an #irl.conv with named sizes).

// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    irl.gemm panels %x, %wp -> %y epilogue(%b : memref<20xf32>) sizes [4, 20, 8] tiles [6, 16, 8, 4] strides [0, 0, 1] parallel 0 : memref<4x8xf32>, memref<2x8x16xf32>, memref<4x20xf32> {
// CHECK-NEXT:    ^bb0(%acc: f32, %bias: f32):
// CHECK-NEXT:      %s = arith.addf %acc, %bias : f32
// CHECK-NEXT:      irl.yield %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    irl.attention %q, %k, %v -> %o sizes [4, 16, 16, 8, 8] rows 16 scale 1.250000e-01 causal 1 mask_strides [] parallel 1 : memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>
func.func @gemm(%x: memref<4x8xf32>, %wp: memref<2x8x16xf32>, %b: memref<20xf32>, %y: memref<4x20xf32>,
                %q: memref<4x16x8xf32>, %k: memref<4x16x8xf32>, %v: memref<4x16x8xf32>, %o: memref<4x16x8xf32>) {
  irl.gemm panels %x, %wp -> %y epilogue(%b : memref<20xf32>) sizes [4, 20, 8] tiles [6, 16, 8, 4] strides [0, 0, 1] parallel 0 : memref<4x8xf32>, memref<2x8x16xf32>, memref<4x20xf32> {
  ^bb0(%acc: f32, %bias: f32):
    %s = arith.addf %acc, %bias : f32
    irl.yield %s : f32
  }
  irl.attention %q, %k, %v -> %o sizes [4, 16, 16, 8, 8] rows 16 scale 0.125 causal 1 mask_strides [] parallel 1 : memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>, memref<4x16x8xf32>
  func.return
}

// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    irl.gemm im2col_panels %wp, %x -> %y sizes [6, 64, 27] tiles [6, 32, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x2, padding 1x0, dilation 1x1, groups 2> parallel 0 : memref<2x27x6xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
func.func @conv(%wp: memref<2x27x6xf32>, %x: memref<1x6x8x8xf32>, %y: memref<1x12x8x8xf32>) {
  irl.gemm im2col_panels %wp, %x -> %y sizes [6, 64, 27] tiles [6, 32, 27, 6] strides [] conv <input 1x6x8x8, output 12x8x8, kernel 3x3, stride 1x2, padding 1x0, dilation 1x1, groups 2> parallel 0 : memref<2x27x6xf32>, memref<1x6x8x8xf32>, memref<1x12x8x8xf32> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}
