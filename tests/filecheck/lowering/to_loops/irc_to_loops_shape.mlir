// RUN: irc-opt %s -p irc-to-loops --split-input-file | filecheck %s

// irt.slice is one copy kernel: the load index is offset + iv * stride per dimension (folded
// when the stride is 1 or the offset 0), the store goes to the result as it is.

// CHECK-LABEL: func.func @slice(%x: memref<4x8xf32>, %out0: memref<3x3xf32>) {
// CHECK:         "scf.parallel"(%c0, %c0, %c3, %c3, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      %[[R:.*]] = arith.addi %i0, %c1 : index
// CHECK-NEXT:      %[[S:.*]] = arith.muli %i1, %c2 : index
// CHECK-NEXT:      %[[C:.*]] = arith.addi %[[S]], %c2 : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %x[%[[R]], %[[C]]] : memref<4x8xf32>
// CHECK-NEXT:      memref.store %[[V]], %out0[%i0, %i1] : memref<3x3xf32>
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.slice -> 3x3"}
// CHECK-NEXT:    func.return
func.func @slice(%x: tensor<4x8xf32>) -> tensor<3x3xf32> {
  %s = irt.slice %x offsets [1, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<3x3xf32>
  func.return %s : tensor<3x3xf32>
}

// -----

// irt.concat: one copy kernel per input, each storing at its offset along the dimension (a
// size-1 input stores at a constant index).

// CHECK-LABEL: func.func @concat(%a: memref<2x3xf32>, %b: memref<2x1xf32>, %out0: memref<2x4xf32>) {
// CHECK:         "scf.parallel"(%c0, %c0, %c2, %c3, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      %[[A:.*]] = memref.load %a[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:      memref.store %[[A]], %out0[%i0, %i1] : memref<2x4xf32>
// CHECK:         }) {irc.kernel = "irt.concat -> 2x4 (input 0 at 0)"}
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c2, %c1, %c1, %c1)
// CHECK-NEXT:    ^bb0(%[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:      %[[B:.*]] = memref.load %b[%[[I]], %[[J]]] : memref<2x1xf32>
// CHECK-NEXT:      memref.store %[[B]], %out0[%[[I]], %c3] : memref<2x4xf32>
// CHECK:         }) {irc.kernel = "irt.concat -> 2x4 (input 1 at 3)"}
// CHECK-NEXT:    func.return
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %c = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %c : tensor<2x4xf32>
}

// -----

// A standalone irt.expand (its consumer does not broadcast) is a broadcasting copy: index 0 in
// the input's size-1 dimensions.

// CHECK-LABEL: func.func @expand(%x: memref<3x1xf32>, %out0: memref<4x3xf32>) {
// CHECK:         %e = memref.alloc() {alignment = 64 : i64} : memref<3x4xf32>
// CHECK-NEXT:    "scf.parallel"(%c0, %c0, %c3, %c4, %c1, %c1)
// CHECK-NEXT:    ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:      %[[X:.*]] = memref.load %x[%i0, %c0] : memref<3x1xf32>
// CHECK-NEXT:      memref.store %[[X]], %e[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    }) {irc.kernel = "irt.expand -> 3x4"}
// CHECK:         }) {irc.kernel = "irt.transpose -> 4x3"}
// CHECK-NEXT:    memref.dealloc %e : memref<3x4xf32>
func.func @expand(%x: tensor<3x1xf32>) -> tensor<4x3xf32> {
  %e = irt.expand %x : (tensor<3x1xf32>) -> tensor<3x4xf32>
  %t = irt.transpose %e [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return %t : tensor<4x3xf32>
}
