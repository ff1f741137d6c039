// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory,irc-parallelize -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Symbolic sizes: buffers of s0 x 16 and s0 x s1 floats. Sizes that depend on the call cannot
// be compared, so each slot goes above every slot live at the same time (largest first at a
// nominal size): the s0 x s1 chain (%d, %e written in place) at 0, %a/%c (in place) above it,
// %b above both. The arena is an expression too; offsets are index operands computed at entry.
// A slot's end is remembered as a polynomial bound: alignment - 1 bytes of slack (63) for each
// offset that is no multiple of 64 for every s0, s1 (here the two above 4 * s0 * s1 bytes), and
// the arena rounded up once more.
// CHECK-LABEL: func.func @chain(%s0: index, %s1: index, %x: memref<?x16xf32, #irt.dims<"s0">>, %y: memref<?x?xf32, #irt.dims<"s0", "s1">>, %out0: memref<?x16xf32, #irt.dims<"s0">>, %out1: memref<?x?xf32, #irt.dims<"s0", "s1">>, %arena: memref<?xf32, #irt.dims<"32 * s0 + 16 * ((4 * s0 * s1 + 189) // 64)">>) attributes {irc.arena_bytes = "128 * s0 + 64 * ((4 * s0 * s1 + 189) // 64)", irc.intermediate_bytes = "192 * s0 + 8 * s0 * s1", irc.buffers = 5 : i64, irc.in_place = 2 : i64}
// CHECK:         %a = memref.reinterpret_cast %arena to offset: [%[[AT_A:.*]]], sizes: [%s0, 16], strides: [16, 1]
// CHECK:         %b = memref.reinterpret_cast %arena to offset: [%[[AT_B:.*]]], sizes: [%s0, 16], strides: [16, 1]
// CHECK:         %c = memref.reinterpret_cast %arena to offset: [%[[AT_A]]], sizes: [%s0, 16]
// CHECK:         %d = memref.reinterpret_cast %arena to offset: [0], sizes: [%s0, %s1], strides: [%s1, 1]
// CHECK:         %e = memref.reinterpret_cast %arena to offset: [0], sizes: [%s0, %s1], strides: [%s1, 1]
// CHECK-NOT:     memref.alloc

// The entry point takes this thread's arena grown to the call's size; OpenMP or not is decided
// per call from the work expression (irc-parallelize).
// CPP:         extern "C" void chain(const int64_t s0, const int64_t s1,
// CPP:           #pragma omp parallel for collapse(1) schedule(static) if(48 * s0 >= 65536)
// CPP:           #pragma omp parallel for collapse(1) schedule(static) if(3 * s0 * s1 >= 65536)
// CPP:         irc_thread_arena(128 * s0 + 64 * ((4 * s0 * s1 + 189) / 64))
func.func @chain(%x: tensor<?x16xf32, #irt.dims<"s0">>, %y: tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> (tensor<?x16xf32, #irt.dims<"s0">>, tensor<?x?xf32, #irt.dims<"s0", "s1">>) {
  %a = irt.exp %x : tensor<?x16xf32, #irt.dims<"s0">>
  %b = irt.tanh %a : tensor<?x16xf32, #irt.dims<"s0">>
  %c = irt.add %a, %b : (tensor<?x16xf32, #irt.dims<"s0">>, tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<?x16xf32, #irt.dims<"s0">>
  %d = irt.exp %y : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  %e = irt.exp %d : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  %f = irt.mul %c, %c : (tensor<?x16xf32, #irt.dims<"s0">>, tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<?x16xf32, #irt.dims<"s0">>
  %g = irt.sigmoid %e : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  func.return %f, %g : tensor<?x16xf32, #irt.dims<"s0">>, tensor<?x?xf32, #irt.dims<"s0", "s1">>
}
