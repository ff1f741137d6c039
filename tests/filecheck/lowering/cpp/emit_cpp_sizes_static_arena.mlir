// RUN: irc-opt %s -p 'irc-pipeline{inputs=1}' -t cpp | filecheck %s

// A function with size arguments whose only planned buffer has a static size (the 0-d value of
// irt.size) still takes its thread's arena itself: the symbolic forward passes no arena (it
// passed a null pointer here, and the call crashed).
// CHECK:       extern "C" void f(const int64_t s0, float* __restrict__ x, float* __restrict__ out0, float* __restrict__ arena)
// CHECK:       extern "C" void f__argv(void* const* a) { {{.*}} f(s0, static_cast<float*>(a[1]), static_cast<float*>(a[2]), irc_thread_arena(64)); }
func.func @f(%x: tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<?x16xf32, #irt.dims<"s0">> {
  %n = irt.size %x "s0" : (tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<f32>
  %y = irt.mul %x, %n : (tensor<?x16xf32, #irt.dims<"s0">>, tensor<f32>) -> tensor<?x16xf32, #irt.dims<"s0">>
  func.return %y : tensor<?x16xf32, #irt.dims<"s0">>
}
