// RUN: irc-opt %s -p irc-fuse,irc-to-loops | filecheck %s
// RUN: irc-opt %s -p irc-fuse,irc-to-loops -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p irc-fuse,irc-to-loops -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// Symbolic sizes at the loop level: the function takes each symbol as an index argument first
// (named after it; the caller binds it from an argument's size), loop bounds and allocation
// sizes are those arguments or computed from them once at the entry, and memrefs keep their
// #irt.dims layout (strides follow from it). A reshape is a view with run-time sizes.
// CHECK-LABEL: func.func @f(%s0: index, %x: memref<?x8xf32, #irt.dims<"s0">>, %y: memref<8xf32>, %out0: memref<?x8xf32, #irt.dims<"s0">>) {
// CHECK:         %[[N:.*]] = arith.muli %s0, %c8 : index
// CHECK:         %r = memref.alloc(%s0) {alignment = 64 : i64} : memref<?x8xf32, #irt.dims<"s0">>
// CHECK:         "scf.parallel"(%c0, %c0, %s0, %c8, %c1, %c1)
// CHECK:         }) {irc.kernel = "irt.elementwise (irt.add + irt.relu) -> s0x8"}
// CHECK:         memref.reinterpret_cast %r to offset: [0], sizes: [%s0, 2, 4], strides: [8, 4, 1] : memref<?x8xf32, #irt.dims<"s0">> to memref<?x2x4xf32, #irt.dims<"s0">>
// CHECK:         memref.reinterpret_cast %t to offset: [0], sizes: [%[[N]]], strides: [1] : memref<?x2x4xf32, #irt.dims<"s0">> to memref<?xf32, #irt.dims<"8 * s0">>

// In C++ the symbol is an int64_t parameter; the argv twin reads it from its slot as an integer.
// CPP:         extern "C" void f(const int64_t s0, float* __restrict__ x, float* __restrict__ y, float* __restrict__ out0)
// CPP:           std::aligned_alloc(64, 64 * ((32 * s0 + 63) / 64))
// CPP:           for (int64_t i0 = 0; i0 < s0; ++i0)
// CPP:         extern "C" void f__argv(void* const* a) { const int64_t s0 = static_cast<int64_t>(reinterpret_cast<intptr_t>(a[0])); f(s0,
// CPP:         return "{\"args\":[[\"index\",[]],[\"float32\",[\"s0\",8]],[\"float32\",[8]],[\"float32\",[\"s0\",8]]]}"
func.func @f(%x: tensor<?x8xf32, #irt.dims<"s0">>, %y: tensor<8xf32>) -> tensor<?x8xf32, #irt.dims<"s0">> {
  %a = irt.add %x, %y : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<8xf32>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %r = irt.relu %a : tensor<?x8xf32, #irt.dims<"s0">>
  %t = irt.reshape %r : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x2x4xf32, #irt.dims<"s0">>
  %u = irt.reshape %t : (tensor<?x2x4xf32, #irt.dims<"s0">>) -> tensor<?xf32, #irt.dims<"8 * s0">>
  %v = irt.reshape %u : (tensor<?xf32, #irt.dims<"8 * s0">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %w = irt.mul %v, %x : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  func.return %w : tensor<?x8xf32, #irt.dims<"s0">>
}
