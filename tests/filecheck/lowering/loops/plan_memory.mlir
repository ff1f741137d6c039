// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory --split-input-file | filecheck %s
// RUN: irc-opt %s -p 'irc-to-loops,irc-plan-memory{in-place=false}' --split-input-file | filecheck %s --check-prefix=NOINPLACE

// A chain: five 256-byte intermediates fit in a 512-byte arena, a trailing function argument.
// %a lives until the add (two slots are needed while %b/%c are alive); %c is written in place
// of %b, %d in place of %a (the add reads %c and %a at exactly the element it stores), %f in
// place of %d through its reshape view %e; views of planned buffers view the arena directly.

// CHECK-LABEL: func.func @chain(%x: memref<4x16xf32>, %out0: memref<4x16xf32>, %arena: memref<128xf32>) attributes {irc.arena_bytes = 512 : i64, irc.intermediate_bytes = 1280 : i64, irc.buffers = 5 : i64, irc.in_place = 3 : i64} {
// CHECK-NOT:     memref.alloc
// CHECK:         %a = memref.reinterpret_cast %arena to offset: [0], sizes: [4, 16], strides: [16, 1] : memref<128xf32> to memref<4x16xf32>
// CHECK:         }) {irc.kernel = "irt.relu -> 4x16"}
// CHECK-NEXT:    %b = memref.reinterpret_cast %arena to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<128xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
// CHECK:         }) {irc.kernel = "irt.sigmoid -> 4x16"}
// CHECK-NEXT:    %c = memref.reinterpret_cast %arena to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<128xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
// CHECK:         }) {irc.kernel = "irt.tanh -> 4x16"}
// CHECK-NEXT:    %d = memref.reinterpret_cast %arena to offset: [0], sizes: [4, 16], strides: [16, 1] : memref<128xf32> to memref<4x16xf32>
// CHECK:           memref.load %c[%{{.*}}] : memref<4x16xf32, strided<[16, 1], offset: 64>>
// CHECK-NEXT:      memref.load %a[%{{.*}}] : memref<4x16xf32>
// CHECK:           memref.store %{{.*}}, %d[%{{.*}}] : memref<4x16xf32>
// CHECK:         }) {irc.kernel = "irt.add -> 4x16"}
// CHECK-NEXT:    %e = memref.reinterpret_cast %arena to offset: [0], sizes: [64], strides: [1] : memref<128xf32> to memref<64xf32>
// CHECK-NEXT:    %f = memref.reinterpret_cast %arena to offset: [0], sizes: [64], strides: [1] : memref<128xf32> to memref<64xf32>
// CHECK:         }) {irc.kernel = "irt.relu -> 64"}
// CHECK-NEXT:    %g = memref.reinterpret_cast %arena to offset: [0], sizes: [16, 4], strides: [4, 1] : memref<128xf32> to memref<16x4xf32>
// CHECK:         }) {irc.kernel = "irt.transpose -> 4x16"}
// CHECK-NOT:     memref.dealloc
// CHECK:         func.return

// Without in-place writes, liveness alone: %a, %b and %c are alive together at the tanh, so
// three slots; %d reuses %b's, and its reshape %e views the arena at %d's offset; %f reuses %a's.

// NOINPLACE-LABEL: func.func @chain(%x: memref<4x16xf32>, %out0: memref<4x16xf32>, %arena: memref<192xf32>) attributes {irc.arena_bytes = 768 : i64, irc.intermediate_bytes = 1280 : i64, irc.buffers = 5 : i64, irc.in_place = 0 : i64} {
// NOINPLACE:     %a = memref.reinterpret_cast %arena to offset: [0],
// NOINPLACE:     %b = memref.reinterpret_cast %arena to offset: [64],
// NOINPLACE:     %c = memref.reinterpret_cast %arena to offset: [128],
// NOINPLACE:     %d = memref.reinterpret_cast %arena to offset: [64],
// NOINPLACE:     %e = memref.reinterpret_cast %arena to offset: [64], sizes: [64], strides: [1] : memref<192xf32> to memref<64xf32, strided<[1], offset: 64>>
// NOINPLACE:     %f = memref.reinterpret_cast %arena to offset: [0],
func.func @chain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = irt.relu %x : tensor<4x16xf32>
  %b = irt.sigmoid %a : tensor<4x16xf32>
  %c = irt.tanh %b : tensor<4x16xf32>
  %d = irt.add %c, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = irt.reshape %d : (tensor<4x16xf32>) -> tensor<64xf32>
  %f = irt.relu %e : tensor<64xf32>
  %g = irt.reshape %f : (tensor<64xf32>) -> tensor<16x4xf32>
  %h = irt.transpose %g [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  func.return %h : tensor<4x16xf32>
}

// -----

// Overlapping lifetimes get disjoint slots: %a (until the transpose), %b (until the add) and %t
// are alive together at the transpose. The transpose must not write %t over %a (it reads %a
// at another element than it stores); the add writes %c over %b.

// CHECK-LABEL: func.func @overlap(%x: memref<8x8xf32>, %out0: memref<8x8xf32>, %arena: memref<192xf32>) attributes {irc.arena_bytes = 768 : i64, irc.intermediate_bytes = 1024 : i64, irc.buffers = 4 : i64, irc.in_place = 1 : i64} {
// CHECK:         %a = memref.reinterpret_cast %arena to offset: [0], sizes: [8, 8], strides: [8, 1] : memref<192xf32> to memref<8x8xf32>
// CHECK:         %b = memref.reinterpret_cast %arena to offset: [64], sizes: [8, 8], strides: [8, 1] : memref<192xf32> to memref<8x8xf32, strided<[8, 1], offset: 64>>
// CHECK:         %t = memref.reinterpret_cast %arena to offset: [128], sizes: [8, 8], strides: [8, 1] : memref<192xf32> to memref<8x8xf32, strided<[8, 1], offset: 128>>
// CHECK:           memref.load %a[%[[J:.*]], %[[I:.*]]] : memref<8x8xf32>
// CHECK-NEXT:      memref.store %{{.*}}, %t[%[[I]], %[[J]]]
// CHECK:         }) {irc.kernel = "irt.transpose -> 8x8"}
// CHECK-NEXT:    %c = memref.reinterpret_cast %arena to offset: [64], sizes: [8, 8], strides: [8, 1] : memref<192xf32> to memref<8x8xf32, strided<[8, 1], offset: 64>>
func.func @overlap(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = irt.relu %x : tensor<8x8xf32>
  %b = irt.sigmoid %x : tensor<8x8xf32>
  %t = irt.transpose %a [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = irt.add %t, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = irt.tanh %c : tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}

// -----

// A broadcast read is not in place (%a is read at column 0 for every column of %b), so %a and
// %b, alive together at the add, get disjoint 64-byte aligned slots (the larger one first).

// CHECK-LABEL: func.func @broadcast(%x: memref<4x1xf32>, %y: memref<4x8xf32>, %out0: memref<4x8xf32>, %arena: memref<48xf32>) attributes {irc.arena_bytes = 192 : i64, irc.intermediate_bytes = 144 : i64, irc.buffers = 2 : i64, irc.in_place = 0 : i64} {
// CHECK:         %a = memref.reinterpret_cast %arena to offset: [32], sizes: [4, 1], strides: [1, 1] : memref<48xf32> to memref<4x1xf32, strided<[1, 1], offset: 32>>
// CHECK:         %b = memref.reinterpret_cast %arena to offset: [0], sizes: [4, 8], strides: [8, 1] : memref<48xf32> to memref<4x8xf32>
// CHECK:           memref.load %a[%{{.*}}, %c0]
func.func @broadcast(%x: tensor<4x1xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = irt.relu %x : tensor<4x1xf32>
  %b = irt.add %a, %y : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = irt.tanh %b : tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

// No intermediate: no arena argument.

// CHECK-LABEL: func.func @none(%x: memref<4xf32>, %out0: memref<4xf32>) attributes {irc.arena_bytes = 0 : i64, irc.intermediate_bytes = 0 : i64, irc.buffers = 0 : i64, irc.in_place = 0 : i64} {
func.func @none(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = irt.relu %x : tensor<4xf32>
  func.return %a : tensor<4xf32>
}
