func.func @f(%x: f32) -> f32 {
  // expected-error @+1 {{irt.yield must end the body of irt.elementwise or of an op's epilogue}}
  irt.yield %x : f32
}
