// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Four buffers of sizes no one of which is known to be the largest (s0 x s1, s0 x 16, s0 x 1):
// offsets are aligned maxima of the ends below them, but a placed slot's end is remembered as
// a polynomial bound (the coefficient-wise max of the ends below, here their sum), so no max
// nests in another (sympy's simplification of nested maxima grew with every buffer). The arena
// in f32 elements is a floor division by 4 of the bytes (once max(...) / 4, no integer
// polynomial, and irc-plan-memory failed).
// CHECK-LABEL: func.func @disjoint(
// CHECK-SAME:    %arena: memref<?xf32, #irt.dims<"16 * ((72 * s0 + 4 * s0 * s1 + 189) // 64)">>
// CHECK-SAME:    irc.arena_bytes = "64 * ((72 * s0 + 4 * s0 * s1 + 189) // 64)"
// %r lives across %a and %c: it goes at the aligned max of their ends, computed at entry.
// CHECK:         %[[TOP:.*]] = arith.maxsi
// CHECK:         %a = memref.reinterpret_cast %arena to offset: [0]
// CHECK:         %r = memref.reinterpret_cast %arena to offset: [%
// CHECK:         %c = memref.reinterpret_cast %arena to offset: [0]
func.func @disjoint(%x: tensor<?x16xf32, #irt.dims<"s0">>, %y: tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1xf32, #irt.dims<"s0">> {
  %a = irt.exp %y : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  %r = irt.reduce sum %a [1] keepdim : (tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  %c = irt.exp %x : tensor<?x16xf32, #irt.dims<"s0">>
  %d = irt.reduce mean %c [1] keepdim : (tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  %e = irt.add %r, %d : (tensor<?x1xf32, #irt.dims<"s0">>, tensor<?x1xf32, #irt.dims<"s0">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  func.return %e : tensor<?x1xf32, #irt.dims<"s0">>
}
