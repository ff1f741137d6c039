// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-plan-memory,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Two buffers of different symbolic sizes never live at once (s0 x s1, then s0 x 16): the arena
// is the max of their ends, and its size in f32 elements that max floor-divided by 4 (it was
// max(...) / 4, which is no integer polynomial, and irc-plan-memory failed).
// CHECK-LABEL: func.func @disjoint(
// CHECK-SAME:    %arena: memref<?xf32, #irt.dims<"max({{.*}}) // 4">>
// CHECK-SAME:    irc.arena_bytes = "max(
func.func @disjoint(%x: tensor<?x16xf32, #irt.dims<"s0">>, %y: tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1xf32, #irt.dims<"s0">> {
  %a = irt.exp %y : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  %r = irt.reduce sum %a [1] keepdim : (tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  %c = irt.exp %x : tensor<?x16xf32, #irt.dims<"s0">>
  %d = irt.reduce mean %c [1] keepdim : (tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  %e = irt.add %r, %d : (tensor<?x1xf32, #irt.dims<"s0">>, tensor<?x1xf32, #irt.dims<"s0">>) -> tensor<?x1xf32, #irt.dims<"s0">>
  func.return %e : tensor<?x1xf32, #irt.dims<"s0">>
}
