// RUN: irc-opt %s -p irc-to-loops | filecheck %s
// RUN: irc-opt %s -p 'irc-pipeline{inputs=2}' -t cpp | filecheck %s --check-prefix=CPP
// RUN: irc-opt %s -p 'irc-pipeline{inputs=2}' -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// int64 and bool tensors at the loop level: memrefs of i64 and i1, loads and stores of their
// elements, allocations and views of their element type; symbolic sizes as for f32.
// CHECK-LABEL: func.func @mask(%s0: index, %x: memref<?x8xf32, #irt.dims<"s0">>, %ids: memref<?x8xi64, #irt.dims<"s0">>, %out0: memref<?x8xi1, #irt.dims<"s0">>, %out1: memref<?x8xf32, #irt.dims<"s0">>) {
// CHECK:         %1 = memref.load %ids[%i0, %i1] : memref<?x8xi64, #irt.dims<"s0">>
// CHECK-NEXT:    %2 = arith.constant 0 : i64
// CHECK-NEXT:    %3 = arith.cmpi ne, %1, %2 : i64
// CHECK-NEXT:    memref.store %3, %out0[%i0, %i1] : memref<?x8xi1, #irt.dims<"s0">>
// CHECK:         %k = memref.reinterpret_cast %out0 to offset: [0], sizes: [%0], strides: [1] : memref<?x8xi1, #irt.dims<"s0">> to memref<?xi1, #irt.dims<"8 * s0">>
// CHECK:         %4 = memref.load %k2[%i0_1, %i1_1] : memref<?x8xi1, #irt.dims<"s0">>
// CHECK:         %7 = arith.select %4, %5, %6 : f32
// CHECK:         %i = memref.alloc(%s0) {alignment = 64 : i64} : memref<?x8xi64, #irt.dims<"s0">>
// CHECK:         %9 = arith.fptosi %8 : f32 to i64
// CHECK:         %11 = arith.sitofp %10 : i64 to f32

// In C++ an i64 buffer is int64_t*, an i1 buffer bool* (one byte per element, as torch.bool);
// comparisons are bools, casts static_casts (float -> int64 truncates toward zero).
// CPP-LABEL: extern "C" void mask(const int64_t s0, float* __restrict__ x, int64_t* __restrict__ ids, bool* __restrict__ out0, float* __restrict__ out1)
// CPP:         const int64_t [[I:v[0-9]+]] = ids[i0*8 + i1];
// CPP-NEXT:    const bool [[M:v[0-9]+]] = [[I]] != 0;
// CPP-NEXT:    out0[i0*8 + i1] = [[M]];
// CPP:         bool* __restrict__ k = out0 + 0;
// CPP:         const bool [[K:v[0-9]+]] = k2[
// CPP:         const float [[W:v[0-9]+]] = [[K]] ? {{v[0-9]+}} : -3.4028234663852886e+38f;
// CPP-NEXT:    const int64_t [[T:v[0-9]+]] = static_cast<int64_t>([[W]]);
// CPP-NEXT:    const float {{v[0-9]+}} = static_cast<float>([[T]]);
// CPP:         return "{\"args\":[[\"index\",[]],[\"float32\",[\"s0\",8]],[\"int64\",[\"s0\",8]],[\"bool\",[\"s0\",8]],[\"float32\",[\"s0\",8]]]}"
func.func @mask(%x: tensor<?x8xf32, #irt.dims<"s0">>, %ids: tensor<?x8xi64, #irt.dims<"s0">>) -> (tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>) {
  %pad = irt.constant dense<0> : tensor<i64>
  %min = irt.constant dense<-3.40282347E+38> : tensor<f32>
  %m = irt.cmp ne %ids, %pad : (tensor<?x8xi64, #irt.dims<"s0">>, tensor<i64>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %k = irt.reshape %m : (tensor<?x8xi1, #irt.dims<"s0">>) -> tensor<?xi1, #irt.dims<"8 * s0">>
  %k2 = irt.reshape %k : (tensor<?xi1, #irt.dims<"8 * s0">>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %w = irt.where %k2, %x, %min : (tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>, tensor<f32>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %i = irt.cast %w : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xi64, #irt.dims<"s0">>
  %f = irt.cast %i : (tensor<?x8xi64, #irt.dims<"s0">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  func.return %m, %f : tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>
}
