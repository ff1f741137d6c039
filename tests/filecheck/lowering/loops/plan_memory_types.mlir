// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// int64 and bool intermediates are planned too, each element type in its own region of the arena
// (f32 from 0, i64 from byte 384, i1 from byte 640): no place is ever seen through two types, so
// C++'s type-based aliasing rules cannot reorder a write past another type's access. An
// elementwise kernel writes in place of an input of its own element type only (%t over %m).
// CHECK-LABEL: func.func @types(%x: memref<4x8xf32>, %ids: memref<4x8xi64>, %out0: memref<4x8xf32>, %out1: memref<4x8xi64>, %arena: memref<176xf32>) attributes {irc.arena_bytes = 704 : i64, irc.intermediate_bytes = 704 : i64, irc.buffers = 6 : i64, irc.in_place = 1 : i64}
// CHECK:         %e = memref.reinterpret_cast %arena to offset: [0], sizes: [4, 8], strides: [8, 1] : memref<176xf32> to memref<4x8xf32>
// CHECK:         %i = memref.reinterpret_cast %arena to offset: [96], sizes: [4, 8], strides: [8, 1] : memref<176xf32> to memref<4x8xi64, strided<[8, 1], offset: 96>>
// CHECK:         %m = memref.reinterpret_cast %arena to offset: [160], sizes: [4, 8], strides: [8, 1] : memref<176xf32> to memref<4x8xi1, strided<[8, 1], offset: 160>>
// CHECK:         %t = memref.reinterpret_cast %arena to offset: [160], sizes: [4, 8], strides: [8, 1] : memref<176xf32> to memref<4x8xi1, strided<[8, 1], offset: 160>>
// CHECK:         %f = memref.reinterpret_cast %arena to offset: [32],
// CHECK:         %g = memref.reinterpret_cast %arena to offset: [64],
// CHECK-NOT:     memref.alloc

// In C++ an int64 or bool view of the f32 arena is a pointer cast at its f32 offset.
// CPP:         int64_t* __restrict__ i = reinterpret_cast<int64_t*>(arena + 96);
// CPP:         bool* __restrict__ m = reinterpret_cast<bool*>(arena + 160);
func.func @types(%x: tensor<4x8xf32>, %ids: tensor<4x8xi64>) -> (tensor<4x8xf32>, tensor<4x8xi64>) {
  %e = irt.exp %x : tensor<4x8xf32>
  %i = irt.cast %e : (tensor<4x8xf32>) -> tensor<4x8xi64>
  %s = irt.cumsum %i dim 1 : tensor<4x8xi64>
  %m = irt.cmp gt %s, %ids : (tensor<4x8xi64>, tensor<4x8xi64>) -> tensor<4x8xi1>
  %t = irt.tril %m diagonal 0 : tensor<4x8xi1>
  %f = irt.cast %t : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %g = irt.cumsum %f dim 0 : tensor<4x8xf32>
  %h = irt.add %g, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %h, %s : tensor<4x8xf32>, tensor<4x8xi64>
}
