// RUN: irc-opt %s -p irc-vectorize | filecheck %s

// Stores to one buffer at the loop's index plus constants: marked only when the constants are
// at least the trip count apart (q and q + 8 over 8 trips); q and q + 1 would have lane q + 1's
// first store and lane q's second write the same place; with a trip count known only at run
// time the distance cannot be checked.

// CHECK-LABEL: func.func @offset_stores
// CHECK:         scf.for %q = %c0 to %c8 step %c1 {
// CHECK:         } {irc.vectorize}
// CHECK-NEXT:    scf.for %k = %c0 to %c8 step %c1 {
// CHECK:         }
// CHECK-NEXT:    scf.for %r = %c0 to %n step %c1 {
// CHECK:         }
// CHECK-NOT:     irc.vectorize
// CHECK:         func.return
func.func @offset_stores(%x: memref<8xf32>, %y: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %q = %c0 to %c8 step %c1 {
    %v = memref.load %x[%q] : memref<8xf32>
    memref.store %v, %y[%q] : memref<16xf32>
    %q8 = arith.addi %q, %c8 : index
    memref.store %v, %y[%q8] : memref<16xf32>
  }
  scf.for %k = %c0 to %c8 step %c1 {
    %v = memref.load %x[%k] : memref<8xf32>
    memref.store %v, %y[%k] : memref<16xf32>
    %k1 = arith.addi %k, %c1 : index
    memref.store %v, %y[%k1] : memref<16xf32>
  }
  scf.for %r = %c0 to %n step %c1 {
    %v = memref.load %x[%r] : memref<8xf32>
    memref.store %v, %y[%r] : memref<16xf32>
    %r8 = arith.addi %r, %c8 : index
    memref.store %v, %y[%r8] : memref<16xf32>
  }
  func.return
}
