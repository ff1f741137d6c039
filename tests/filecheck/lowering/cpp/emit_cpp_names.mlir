// RUN: irc-opt %s -p irc-to-loops -t cpp | filecheck %s
// RUN: irc-opt %s -p irc-to-loops -t cpp -o %t.cpp && g++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror %t.cpp

// IR names that are C++ keywords (a KV cache's `%new` entries, `%default`, `%this`) are fine SSA
// names; the emitter gives their C++ variables other names (it printed `float* new` before).
// CHECK: extern "C" void f(float* __restrict__ [[NEW:new_[0-9]+]], float* __restrict__ [[DEFAULT:default_[0-9]+]], float* __restrict__ out0)
// CHECK:   float* __restrict__ [[THIS:this_[0-9]+]] = static_cast<float*>(std::aligned_alloc(64, 64));
// CHECK:   const float {{.*}} = [[NEW]][i0];
// CHECK:   const float {{.*}} = [[DEFAULT]][i0];
// CHECK:   [[THIS]][i0] = {{.*}};
// CHECK:   std::free([[THIS]]);
func.func @f(%new: tensor<4xf32>, %default: tensor<4xf32>) -> tensor<4xf32> {
  %this = irt.add %new, %default : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = irt.relu %this : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
