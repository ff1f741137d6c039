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

// Inputs computed in place in a concatenation's buffer (`concat_homes`): every size before the
// dim is 1, so each input is one range of the result. Concatenations are visited last first:
// %e takes %c0 (which takes %a) and %b; %c2 takes %c1 and %d. %c1's inputs already have homes
// in %e, so %c1 copies them; the argument %x is copied; %c0 is a view with no kernel at all.

// CHECK-LABEL: func.func @concat_in_place(%x: memref<1x16xf32>, %out0: memref<1x48xf32>) {
// CHECK:         %e = memref.alloc() {alignment = 64 : i64} : memref<1x48xf32>
// CHECK-NEXT:    %[[C0:.*]] = memref.reinterpret_cast %e to offset: [0], sizes: [1, 16], strides: [16, 1] : memref<1x48xf32> to memref<1x16xf32>
// CHECK-NEXT:    %a = memref.reinterpret_cast %[[C0]] to offset: [0], sizes: [1, 16], strides: [16, 1] : memref<1x16xf32> to memref<1x16xf32>
// CHECK:           memref.store %{{.*}}, %a[%i0, %i1] : memref<1x16xf32>
// CHECK:         }) {irc.kernel = "irt.relu -> 1x16"}
// CHECK-NEXT:    %b = memref.reinterpret_cast %e to offset: [16], sizes: [1, 16], strides: [16, 1] : memref<1x48xf32> to memref<1x16xf32>
// CHECK:         }) {irc.kernel = "irt.tanh -> 1x16"}
// CHECK-NEXT:    %c2 = memref.alloc() {alignment = 64 : i64} : memref<1x48xf32>
// CHECK-NEXT:    %[[C1:.*]] = memref.reinterpret_cast %c2 to offset: [0], sizes: [1, 32], strides: [32, 1] : memref<1x48xf32> to memref<1x32xf32>
// CHECK:           memref.load %a
// CHECK:         }) {irc.kernel = "irt.concat -> 1x32 (input 0 at 0)"}
// CHECK:           memref.load %b
// CHECK:         }) {irc.kernel = "irt.concat -> 1x32 (input 1 at 16)"}
// CHECK-NEXT:    %d = memref.reinterpret_cast %c2 to offset: [32], sizes: [1, 16], strides: [16, 1] : memref<1x48xf32> to memref<1x16xf32>
// CHECK:         }) {irc.kernel = "irt.sigmoid -> 1x16"}
// CHECK-NOT:     irc.kernel = "irt.concat -> 1x48 (input 0
// CHECK-NOT:     irc.kernel = "irt.concat -> 1x48 (input 1
// CHECK:         }) {irc.kernel = "irt.concat -> 1x48 (input 2 at 32)"}
// CHECK-NEXT:    "scf.parallel"
// CHECK:         }) {irc.kernel = "irt.add -> 1x48"}
// CHECK-NEXT:    memref.dealloc %e : memref<1x48xf32>
// CHECK-NEXT:    memref.dealloc %c2 : memref<1x48xf32>
// CHECK-NEXT:    func.return
func.func @concat_in_place(%x: tensor<1x16xf32>) -> tensor<1x48xf32> {
  %a = irt.relu %x : tensor<1x16xf32>
  %b = irt.tanh %x : tensor<1x16xf32>
  %c1 = irt.concat %a, %b dim 1 : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x32xf32>
  %d = irt.sigmoid %x : tensor<1x16xf32>
  %c2 = irt.concat %c1, %d dim 1 : (tensor<1x32xf32>, tensor<1x16xf32>) -> tensor<1x48xf32>
  %c0 = irt.concat %a dim 1 : (tensor<1x16xf32>) -> tensor<1x16xf32>
  %e = irt.concat %c0, %b, %x dim 1 : (tensor<1x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x48xf32>
  %r = irt.add %c2, %e : (tensor<1x48xf32>, tensor<1x48xf32>) -> tensor<1x48xf32>
  func.return %r : tensor<1x48xf32>
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
