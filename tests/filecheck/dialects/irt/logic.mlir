// RUN: IRC_ROUNDTRIP
// RUN: IRC_GENERIC_ROUNDTRIP
// RUN: irc-opt %s -p irc-fuse --split-input-file | filecheck %s --check-prefix=FUSED

// int64 and bool (i1) tensors: casts, comparisons, logic, integer arithmetic and where on a
// bool condition print in their custom form and parse back to the same text.

// CHECK-LABEL: func.func @mask
// CHECK-NEXT:    %zero = irt.constant dense<0> : tensor<i64>
// CHECK-NEXT:    %min = irt.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK-NEXT:    %f = irt.cast %ids : (tensor<2x5xi64>) -> tensor<2x5xf32>
// CHECK-NEXT:    %lt = irt.cmp lt %x, %f : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xi1>
// CHECK-NEXT:    %eq = irt.cmp eq %ids, %zero : (tensor<2x5xi64>, tensor<i64>) -> tensor<2x5xi1>
// CHECK-NEXT:    %and = irt.and %lt, %eq : (tensor<2x5xi1>, tensor<2x5xi1>) -> tensor<2x5xi1>
// CHECK-NEXT:    %or = irt.or %and, %m : (tensor<2x5xi1>, tensor<5xi1>) -> tensor<2x5xi1>
// CHECK-NEXT:    %xor = irt.xor %or, %m : (tensor<2x5xi1>, tensor<5xi1>) -> tensor<2x5xi1>
// CHECK-NEXT:    %not = irt.not %xor : tensor<2x5xi1>
// CHECK-NEXT:    %w = irt.where %not, %x, %min : (tensor<2x5xi1>, tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
// CHECK-NEXT:    func.return %w : tensor<2x5xf32>
func.func @mask(%x: tensor<2x5xf32>, %ids: tensor<2x5xi64>, %m: tensor<5xi1>) -> tensor<2x5xf32> {
  %zero = irt.constant dense<0> : tensor<i64>
  %min = irt.constant dense<-3.40282347E+38> : tensor<f32>
  %f = irt.cast %ids : (tensor<2x5xi64>) -> tensor<2x5xf32>
  %lt = irt.cmp lt %x, %f : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xi1>
  %eq = irt.cmp eq %ids, %zero : (tensor<2x5xi64>, tensor<i64>) -> tensor<2x5xi1>
  %and = irt.and %lt, %eq : (tensor<2x5xi1>, tensor<2x5xi1>) -> tensor<2x5xi1>
  %or = irt.or %and, %m : (tensor<2x5xi1>, tensor<5xi1>) -> tensor<2x5xi1>
  %xor = irt.xor %or, %m : (tensor<2x5xi1>, tensor<5xi1>) -> tensor<2x5xi1>
  %not = irt.not %xor : tensor<2x5xi1>
  %w = irt.where %not, %x, %min : (tensor<2x5xi1>, tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  func.return %w : tensor<2x5xf32>
}

// Fused, the chain is one irt.elementwise whose body takes each input as its own element type
// (i64 ids, an i1 mask) and yields the result's: torch's float comparisons are ordered (olt),
// i64 ones signed; not is xor with true; where selects on the i1 itself.
// FUSED-LABEL: func.func @mask
// FUSED:         %w = irt.elementwise ins(%ids, %zero, %ids, %x, %m, %m, %x, %min : tensor<2x5xi64>, tensor<i64>, tensor<2x5xi64>, tensor<2x5xf32>, tensor<5xi1>, tensor<5xi1>, tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
// FUSED-NEXT:    ^bb0(%x0: i64, %x1: i64, %x2: i64, %x3: f32, %x4: i1, %x5: i1, %x6: f32, %x7: f32):
// FUSED-NEXT:      %0 = arith.cmpi eq, %x0, %x1 : i64
// FUSED-NEXT:      %1 = arith.sitofp %x2 : i64 to f32
// FUSED-NEXT:      %2 = arith.cmpf olt, %x3, %1 : f32
// FUSED-NEXT:      %3 = arith.andi %2, %0 : i1
// FUSED-NEXT:      %4 = arith.ori %3, %x4 : i1
// FUSED-NEXT:      %5 = arith.xori %4, %x5 : i1
// FUSED-NEXT:      %6 = arith.constant true
// FUSED-NEXT:      %7 = arith.xori %5, %6 : i1
// FUSED-NEXT:      %8 = arith.select %7, %x6, %x7 : f32
// FUSED-NEXT:      irt.yield %8 : f32

// -----

// Casts between every pair of element types, and integer arithmetic.
// CHECK-LABEL: func.func @casts
// CHECK:         %b = irt.cast %x : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %i = irt.cast %x : (tensor<4xf32>) -> tensor<4xi64>
// CHECK-NEXT:    %bi = irt.cast %b : (tensor<4xi1>) -> tensor<4xi64>
// CHECK-NEXT:    %bf = irt.cast %b : (tensor<4xi1>) -> tensor<4xf32>
// CHECK-NEXT:    %ib = irt.cast %i : (tensor<4xi64>) -> tensor<4xi1>
// CHECK-NEXT:    %s = irt.add %i, %bi : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    %d = irt.sub %s, %one : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// CHECK-NEXT:    %p = irt.mul %d, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    %n = irt.neg %p : tensor<4xi64>
// CHECK-NEXT:    %k = irt.not %n : tensor<4xi64>
// CHECK-NEXT:    %c = irt.cmp ge %ib, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// FUSED-LABEL: func.func @casts
// FUSED:         %k = irt.elementwise ins(%b, %i, %one : tensor<4xi1>, tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// FUSED-NEXT:    ^bb0(%x0: i1, %x1: i64, %x2: i64):
// FUSED-NEXT:      %0 = arith.extui %x0 : i1 to i64
// FUSED-NEXT:      %1 = arith.addi %x1, %0 : i64
// FUSED-NEXT:      %2 = arith.subi %1, %x2 : i64
// FUSED-NEXT:      %3 = arith.muli %2, %2 : i64
// FUSED-NEXT:      %4 = arith.constant 0 : i64
// FUSED-NEXT:      %5 = arith.subi %4, %3 : i64
// FUSED-NEXT:      %6 = arith.constant -1 : i64
// FUSED-NEXT:      %7 = arith.xori %5, %6 : i64
// FUSED-NEXT:      irt.yield %7 : i64
// FUSED:         %c = irt.elementwise ins(%i, %b : tensor<4xi64>, tensor<4xi1>) -> tensor<4xi1>
// FUSED-NEXT:    ^bb0(%x0_1: i64, %x1_1: i1):
// FUSED-NEXT:      %8 = arith.constant 0 : i64
// FUSED-NEXT:      %9 = arith.cmpi ne, %x0_1, %8 : i64
// FUSED-NEXT:      %10 = arith.cmpi uge, %9, %x1_1 : i1
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xf32>, tensor<4xi1>) {
  %one = irt.constant dense<1> : tensor<i64>
  %b = irt.cast %x : (tensor<4xf32>) -> tensor<4xi1>
  %i = irt.cast %x : (tensor<4xf32>) -> tensor<4xi64>
  %bi = irt.cast %b : (tensor<4xi1>) -> tensor<4xi64>
  %bf = irt.cast %b : (tensor<4xi1>) -> tensor<4xf32>
  %ib = irt.cast %i : (tensor<4xi64>) -> tensor<4xi1>
  %s = irt.add %i, %bi : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %d = irt.sub %s, %one : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %p = irt.mul %d, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %n = irt.neg %p : tensor<4xi64>
  %k = irt.not %n : tensor<4xi64>
  %c = irt.cmp ge %ib, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %k, %bf, %c : tensor<4xi64>, tensor<4xf32>, tensor<4xi1>
}

// -----

// Symbolic sizes: the logic ops are elementwise, written for them.
// CHECK-LABEL: func.func @symbolic
// CHECK:         %m = irt.cmp ne %ids, %pad : (tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<i64>) -> tensor<?x?xi1, #irt.dims<"s0", "s1">>
func.func @symbolic(%ids: tensor<?x?xi64, #irt.dims<"s0", "s1">>) -> tensor<?x?xf32, #irt.dims<"s0", "s1">> {
  %pad = irt.constant dense<0> : tensor<i64>
  %m = irt.cmp ne %ids, %pad : (tensor<?x?xi64, #irt.dims<"s0", "s1">>, tensor<i64>) -> tensor<?x?xi1, #irt.dims<"s0", "s1">>
  %f = irt.cast %m : (tensor<?x?xi1, #irt.dims<"s0", "s1">>) -> tensor<?x?xf32, #irt.dims<"s0", "s1">>
  func.return %f : tensor<?x?xf32, #irt.dims<"s0", "s1">>
}
