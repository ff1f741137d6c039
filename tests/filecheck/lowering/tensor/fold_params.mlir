// RUN: irc-opt %s -p 'irc-fold-params{inputs=1}' --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-fold-params{inputs=1},irc-to-loops' --split-input-file | filecheck %s --check-prefix=LOOPS
// RUN: irc-opt %s -p 'irc-fold-params{inputs=1},irc-to-loops' -t cpp --split-input-file | filecheck %s --check-prefix=CPP

// Parameter-only ops (a transposed weight, a product of two parameters) move into @f__fold;
// @f reads their results as parameters, after the one it still reads itself (%s, index 2);
// %w and %b, read only by folded ops, are dropped. The literal stays with its reader.
// CHECK-LABEL: func.func @f(%x: tensor<4x8xf32>, %s: tensor<16xf32>, %wt: tensor<8x16xf32>, %bs: tensor<16xf32>) -> tensor<4x16xf32> attributes {irc.params = array<i64: 2>} {
// CHECK-NEXT:    %y = irt.matmul %x, %wt
// CHECK-NEXT:    %z = irt.add %y, %bs
// CHECK-NEXT:    %r = irt.add %z, %s
// CHECK-NEXT:    func.return %r
// CHECK:       func.func @f__fold(%w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) attributes {irc.compile_time, irc.params = array<i64: 0, 1, 2>} {
// CHECK-NEXT:    %wt = irt.transpose %w [1, 0]
// CHECK-NEXT:    %two = irt.constant
// CHECK-NEXT:    %b2 = irt.mul %b, %two
// CHECK-NEXT:    %bs = irt.mul %b2, %s
// CHECK-NEXT:    func.return %wt, %bs : tensor<8x16xf32>, tensor<16xf32>
// irc-to-loops lowers @f and leaves the compile-time function as it is; -t cpp skips it.
// LOOPS:       func.func @f(%x: memref<4x8xf32>
// LOOPS:       func.func @f__fold(%w: tensor<16x8xf32>
// LOOPS-NEXT:    %wt = irt.transpose
// CPP:         extern "C" void f(
// CPP-NOT:     f__fold
func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %s: tensor<16xf32>) -> tensor<4x16xf32> {
  %wt = irt.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = irt.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %two = irt.constant dense<2.000000e+00> : tensor<f32>
  %b2 = irt.mul %b, %two : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %bs = irt.mul %b2, %s : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %z = irt.add %y, %bs : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = irt.add %z, %s : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// Nothing depends on parameters only: the function is unchanged, no fold function, no irc.params.
// CHECK-LABEL: func.func @g(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    %y = irt.linear %x, %w
// CHECK-NEXT:    func.return %y
// CHECK-NOT:   @g__fold
func.func @g(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %y = irt.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// An op on literals whose result has symbolic sizes has no value before the call binds them: it
// stays (a causal mask the length of the sequence), and nothing folds.
// CHECK-LABEL: func.func @mask(%x: tensor<?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">> {
// CHECK-NEXT:    %t = irt.constant dense<true> : tensor<i1>
// CHECK-NEXT:    %full = irt.expand %t
// CHECK-NEXT:    %m = irt.tril %full diagonal 0
// CHECK-NEXT:    func.return %m
// CHECK-NOT:   @mask__fold
func.func @mask(%x: tensor<?x?xf32, #irt.dims<"s0", "s0">>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">> {
  %t = irt.constant dense<true> : tensor<i1>
  %full = irt.expand %t : (tensor<i1>) -> tensor<?x?xi1, #irt.dims<"s0", "s0">>
  %m = irt.tril %full diagonal 0 : tensor<?x?xi1, #irt.dims<"s0", "s0">>
  func.return %m : tensor<?x?xi1, #irt.dims<"s0", "s0">>
}
