func.func @f(%x: f32) -> f32 {
  irt.yield %x : f32
}
