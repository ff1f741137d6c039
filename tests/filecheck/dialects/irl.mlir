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

// Sizes known only at call time are index operands in the mixed lists (as MLIR's
// memref.subview), and so are the tiles and strides computed from them; `parallel 1 if %p`
// decides the threads at call time.
// CHECK-LABEL: func.func @symbolic
// CHECK-NEXT:    irl.gemm nk %x, %w -> %y epilogue(%r : memref<?x?xf32, #irt.dims<"s0", "s1">>) sizes [%s0, %s1, 8] tiles [%mc, 16, 8, %ms] strides [0, %s1, 1] parallel 1 if %p : memref<?x8xf32, #irt.dims<"s0">>, memref<?x8xf32, #irt.dims<"s1">>, memref<?x?xf32, #irt.dims<"s0", "s1">> {
// CHECK:         irl.attention %q, %k, %v -> %o mask(%m : memref<?x?xf32, #irt.dims<"s0", "s1">>) sizes [4, %s0, %s1, 8, 8] rows 64 scale 1.250000e-01 causal 0 mask_strides [0, %s1, 1] parallel 1 if %p : memref<4x?x8xf32, #irt.dims<"s0">>, memref<4x?x8xf32, #irt.dims<"s1">>, memref<4x?x8xf32, #irt.dims<"s1">>, memref<4x?x8xf32, #irt.dims<"s0">>
func.func @symbolic(%s0: index, %s1: index, %mc: index, %ms: index, %p: i1, %x: memref<?x8xf32, #irt.dims<"s0">>,
                    %w: memref<?x8xf32, #irt.dims<"s1">>, %r: memref<?x?xf32, #irt.dims<"s0", "s1">>, %y: memref<?x?xf32, #irt.dims<"s0", "s1">>,
                    %q: memref<4x?x8xf32, #irt.dims<"s0">>, %k: memref<4x?x8xf32, #irt.dims<"s1">>, %v: memref<4x?x8xf32, #irt.dims<"s1">>,
                    %m: memref<?x?xf32, #irt.dims<"s0", "s1">>, %o: memref<4x?x8xf32, #irt.dims<"s0">>) {
  irl.gemm nk %x, %w -> %y epilogue(%r : memref<?x?xf32, #irt.dims<"s0", "s1">>) sizes [%s0, %s1, 8] tiles [%mc, 16, 8, %ms] strides [0, %s1, 1] parallel 1 if %p : memref<?x8xf32, #irt.dims<"s0">>, memref<?x8xf32, #irt.dims<"s1">>, memref<?x?xf32, #irt.dims<"s0", "s1">> {
  ^bb0(%acc: f32, %res: f32):
    %s = arith.addf %acc, %res : f32
    irl.yield %s : f32
  }
  irl.attention %q, %k, %v -> %o mask(%m : memref<?x?xf32, #irt.dims<"s0", "s1">>) sizes [4, %s0, %s1, 8, 8] rows 64 scale 0.125 causal 0 mask_strides [0, %s1, 1] parallel 1 if %p : memref<4x?x8xf32, #irt.dims<"s0">>, memref<4x?x8xf32, #irt.dims<"s1">>, memref<4x?x8xf32, #irt.dims<"s1">>, memref<4x?x8xf32, #irt.dims<"s0">>
  func.return
}

// A batched product: `batch [count, sa, sb, sc]`, the n-th product reading A, B, C that many
// elements further on (0: a shared operand).
// CHECK-LABEL: func.func @batched
// CHECK-NEXT:    irl.gemm nk %q, %k -> %s batch [%b, %sq, 0, %ss] sizes [%s0, %s1, 8] tiles [6, 16, 8, 6] strides [] parallel 1 if %p : memref<?x?x8xf32, #irt.dims<"s2", "s0">>, memref<?x8xf32, #irt.dims<"s1">>, memref<?x?x?xf32, #irt.dims<"s2", "s0", "s1">> {
func.func @batched(%s0: index, %s1: index, %b: index, %sq: index, %ss: index, %p: i1, %q: memref<?x?x8xf32, #irt.dims<"s2", "s0">>,
                   %k: memref<?x8xf32, #irt.dims<"s1">>, %s: memref<?x?x?xf32, #irt.dims<"s2", "s0", "s1">>) {
  irl.gemm nk %q, %k -> %s batch [%b, %sq, 0, %ss] sizes [%s0, %s1, 8] tiles [6, 16, 8, 6] strides [] parallel 1 if %p : memref<?x?x8xf32, #irt.dims<"s2", "s0">>, memref<?x8xf32, #irt.dims<"s1">>, memref<?x?x?xf32, #irt.dims<"s2", "s0", "s1">> {
  ^bb0(%acc: f32):
    irl.yield %acc : f32
  }
  func.return
}
