// RUN: irc-opt %s -p 'irc-to-loops{strict=true}' --split-input-file | filecheck %s
// strict=true: the scalar nests (contractions and attention take the GEMM engine otherwise, see to_loops/gemm.mlir).

// A fused linear+relu: outputs become caller-provided buffers, (i0, i1) one scf.parallel,
// the reduction an scf.for carrying the accumulator, the epilogue runs on it before one store.

// CHECK-LABEL: func.func @contract(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %b: memref<16xf32>, %out0: memref<4x16xf32>) {
// CHECK-NOT:     memref.alloc
// CHECK:         "scf.parallel"(%c0, %c0, %c4, %c16, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[SUM:.*]] = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = memref.load %x[%i0, %k] : memref<4x8xf32>
// CHECK-NEXT:        %[[W:.*]] = memref.load %w[%i1, %k] : memref<16x8xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:        %[[A:.*]] = arith.addf %acc, %[[P]] : f32
// CHECK-NEXT:        scf.yield %[[A]] : f32
// CHECK-NEXT:      } {irc.reduction = "add"}
// CHECK-NEXT:      %[[B:.*]] = memref.load %b[%i1] : memref<16xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[SUM]], %[[B]] : f32
// CHECK:           %[[R:.*]] = arith.maximumf %[[S]]
// CHECK-NEXT:      memref.store %[[R]], %out0[%i0, %i1] : memref<4x16xf32>
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.contract linear (irt.linear + irt.relu) -> 4x16"}
// CHECK-NEXT:    func.return
func.func @contract(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %r = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> attributes {irc.fused = ["irt.linear", "irt.relu"]} {
  ^bb0(%acc: f32, %e0: f32):
    %0 = arith.addf %acc, %e0 : f32
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.maximumf %0, %1 : f32
    irt.yield %2 : f32
  }
  func.return %r : tensor<4x16xf32>
}

// -----

// Unfused: the intermediate gets an allocation, freed before the return. Broadcast operands
// are loaded with index 0 in their size-1 dimensions; a splat constant becomes a scalar.

// CHECK-LABEL: func.func @unfused(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %r: memref<4x1xf32>, %out0: memref<4x16xf32>) {
// CHECK:         %y = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK:         memref.load %w[%k, %i1] : memref<8x16xf32>
// CHECK:         }) {irc.kernel = "irt.matmul -> 4x16"}
// CHECK:         ^bb0(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[Y:.*]] = memref.load %y[%[[I]], %[[J]]] : memref<4x16xf32>
// CHECK-NEXT:      %[[R:.*]] = memref.load %r[%[[I]], %c0] : memref<4x1xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[Y]], %[[R]] : f32
// CHECK-NEXT:      memref.store %[[S]], %[[T:.*]][%[[I]], %[[J]]]
// CHECK:         }) {irc.kernel = "irt.add -> 4x16"}
// CHECK:           arith.constant 5.000000e-01 : f32
// CHECK:         }) {irc.kernel = "irt.mul -> 4x16"}
// CHECK:         memref.dealloc %y : memref<4x16xf32>
// CHECK:         memref.dealloc %[[T]] : memref<4x16xf32>
// CHECK-NEXT:    func.return
func.func @unfused(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %y = irt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = irt.add %y, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %c = irt.constant dense<5.000000e-01> : tensor<f32>
  %m = irt.mul %a, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  func.return %m : tensor<4x16xf32>
}

// -----

// Views and copies: reshape is a reinterpret_cast; a returned reshape is computed into a view
// of its output buffer; a transpose is a permuted copy; a returned argument is copied out.

// CHECK-LABEL: func.func @views(%x: memref<2x6xf32>, %out0: memref<12xf32>, %out1: memref<6x2xf32>, %out2: memref<2x6xf32>) {
// CHECK-NOT:     memref.alloc
// CHECK:         %[[V:.*]] = memref.reinterpret_cast %out0 to offset: [0], sizes: [2, 6], strides: [6, 1] : memref<12xf32> to memref<2x6xf32>
// CHECK:           memref.store %{{.*}}, %[[V]][%i0, %i1] : memref<2x6xf32>
// CHECK:         }) {irc.kernel = "irt.sigmoid -> 2x6"}
// CHECK:         ^bb0(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[E:.*]] = memref.load %x[%[[J]], %[[I]]] : memref<2x6xf32>
// CHECK-NEXT:      memref.store %[[E]], %out1[%[[I]], %[[J]]] : memref<6x2xf32>
// CHECK:         }) {irc.kernel = "irt.transpose -> 6x2"}
// CHECK:         }) {irc.kernel = "copy to out2"}
// CHECK-NEXT:    func.return
func.func @views(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<6x2xf32>, tensor<2x6xf32>) {
  %s = irt.sigmoid %x : tensor<2x6xf32>
  %f = irt.reshape %s : (tensor<2x6xf32>) -> tensor<12xf32>
  %t = irt.transpose %x [1, 0] : (tensor<2x6xf32>) -> tensor<6x2xf32>
  func.return %f, %t, %x : tensor<12xf32>, tensor<6x2xf32>, tensor<2x6xf32>
}

// -----

// NHWC -> NCHW: H and W stay adjacent, so the transpose is [1, 300, 3] -> [1, 3, 300] through
// views; its output rows (300 columns) are too wide to walk untiled, so each parallel iteration
// copies a tile of 3 rows x 60 columns (the largest tiles up to 16 x 64 that divide 3 and 300).
// The tile's `b` loop is marked irc.transpose: the C++ emitter prints it as one irc_transpose call.
// CHECK-LABEL: func.func @nhwc_to_nchw
// CHECK:         %[[IN:.*]] = memref.reinterpret_cast %x to offset: [0], sizes: [1, 300, 3], strides: [900, 3, 1] : memref<1x20x15x3xf32> to memref<1x300x3xf32>
// CHECK-NEXT:    %[[OUT:.*]] = memref.reinterpret_cast %out0 to offset: [0], sizes: [1, 3, 300], strides: [900, 300, 1] : memref<1x3x20x15xf32> to memref<1x3x300xf32>
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c0, %c1, %c1, %c5, %c1, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index, %i2: index):
// CHECK-NEXT:      %[[B0:.*]] = arith.muli %i1, %c3 : index
// CHECK-NEXT:      %[[B1:.*]] = arith.addi %[[B0]], %c3 : index
// CHECK-NEXT:      %[[A0:.*]] = arith.muli %i2, %c60 : index
// CHECK-NEXT:      %[[A1:.*]] = arith.addi %[[A0]], %c60 : index
// CHECK-NEXT:      scf.for %b = %[[B0]] to %[[B1]] step %c1 {
// CHECK-NEXT:        scf.for %a = %[[A0]] to %[[A1]] step %c1 {
// CHECK-NEXT:          %[[V:.*]] = memref.load %[[IN]][%i0, %a, %b] : memref<1x300x3xf32>
// CHECK-NEXT:          memref.store %[[V]], %[[OUT]][%i0, %b, %a] : memref<1x3x300xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      } {irc.transpose}
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.transpose -> 1x3x20x15"}
func.func @nhwc_to_nchw(%x: tensor<1x20x15x3xf32>) -> tensor<1x3x20x15xf32> {
  %t = irt.transpose %x [0, 3, 1, 2] : (tensor<1x20x15x3xf32>) -> tensor<1x3x20x15xf32>
  func.return %t : tensor<1x3x20x15xf32>
}
