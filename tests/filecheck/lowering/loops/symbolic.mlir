// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize | filecheck %s
// RUN: irc-opt %s -p irc-to-loops,irc-vectorize,irc-parallelize -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// The loop passes on run-time bounds. irc-vectorize: a loop whose trip count is a size value is
// vectorized as any other (its accesses decide), it just is not chunked (chunking needs a
// constant trip count of at least 256); a row of 512 static elements with run-time rows still
// is. A nest with run-time outer dimensions counts them as many (`split`). irc-parallelize
// writes its work estimate as an expression of the sizes (its policy: lowering/loops/parallelize.py).
// CHECK-LABEL: func.func @f(%s0: index, %s1: index,
// CHECK:         scf.for %j = %c0 to %c512 step %c1 iter_args
// CHECK:         } {irc.reduction = "max", irc.vectorize, irc.chunk = 64 : i64}
// CHECK:         }) {irc.kernel = "irt.softmax -> s0x512", irc.work = "{{.*}}s0{{.*}}",
// CHECK:         scf.for %r = %c0 to %s1 step %c1 iter_args
// CHECK:         } {irc.reduction = "add", irc.vectorize}
// CHECK:         }) {irc.kernel = "irt.reduce -> s0", irc.work = "{{.*}}s1{{.*}}",
// CHECK:         "scf.parallel"(%c0, %c0, %s0, %s1, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.exp -> s0xs1", irc.vectorize, irc.simd = "split", irc.work = "{{.*}}",
func.func @f(%x: tensor<?x512xf32, #irt.dims<"s0">>, %y: tensor<?x?xf32, #irt.dims<"s0", "s1">>)
    -> (tensor<?x512xf32, #irt.dims<"s0">>, tensor<?xf32, #irt.dims<"s0">>, tensor<?x?xf32, #irt.dims<"s0", "s1">>) {
  %p = irt.softmax %x dim 1 : tensor<?x512xf32, #irt.dims<"s0">>
  %s = irt.reduce sum %y [1] : (tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<?xf32, #irt.dims<"s0">>
  %e = irt.exp %y : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  func.return %p, %s, %e : tensor<?x512xf32, #irt.dims<"s0">>, tensor<?xf32, #irt.dims<"s0">>, tensor<?x?xf32, #irt.dims<"s0", "s1">>
}
