// RUN: irc-opt %s -p 'irc-pipeline{inputs=1}' -t cpp | filecheck %s
// RUN: irc-opt %s -p 'irc-pipeline{inputs=1}' -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// SSA names become C++ names where they are free, but never a C++ keyword: FX names the node of
// `mask.long()` `long`, of `x.float()` `float`, of `m.bool()` `bool`.
// CHECK:       extern "C" void f(bool* __restrict__ mask, int64_t* __restrict__ out0, float* __restrict__ out1, float* __restrict__ arena)
// CHECK:       int64_t* __restrict__ long_{{[0-9]+}} = reinterpret_cast<int64_t*>(arena + 0);
// CHECK-NOT:   __restrict__ long =
// CHECK-NOT:   __restrict__ float =
func.func @f(%mask: tensor<2x3xi1>) -> (tensor<2x3xi64>, tensor<2x3xf32>) {
  %long = irt.cast %mask : (tensor<2x3xi1>) -> tensor<2x3xi64>
  %cumsum = irt.cumsum %long dim 1 : tensor<2x3xi64>
  %float = irt.cast %long : (tensor<2x3xi64>) -> tensor<2x3xf32>
  %bool = irt.cast %float : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %int = irt.cast %bool : (tensor<2x3xi1>) -> tensor<2x3xf32>
  func.return %cumsum, %int : tensor<2x3xi64>, tensor<2x3xf32>
}
