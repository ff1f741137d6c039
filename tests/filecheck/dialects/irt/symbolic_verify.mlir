// RUN: irc-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Symbolic sizes in the op families language models use: each verifier checks what is known
// (equal expressions are equal sizes) and names the sizes, as for static shapes.

// Contractions: M = s0 * s1 rows, or every size a symbol.
// CHECK-LABEL: func.func @contractions
// CHECK:         irt.linear %x, %w, %b : (tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, tensor<40x48xf32>, tensor<40xf32>) -> tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
// CHECK:         irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
func.func @contractions(%x: tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, %w: tensor<40x48xf32>, %b: tensor<40xf32>,
                        %a: tensor<?x?xf32, #irt.dims<"s0", "s1">>, %c: tensor<?x?xf32, #irt.dims<"s1", "s2">>)
                        -> (tensor<?x?x40xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s0", "s2">>) {
  %y = irt.linear %x, %w, %b : (tensor<?x?x48xf32, #irt.dims<"s0", "s1">>, tensor<40x48xf32>, tensor<40xf32>) -> tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
  %z = irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
  func.return %y, %z : tensor<?x?x40xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s0", "s2">>
}

// -----

func.func @contracting(%a: tensor<?x?xf32, #irt.dims<"s0", "s1">>, %c: tensor<?x?xf32, #irt.dims<"s2", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">> {
  // expected-error @+1 {{irt.matmul: contracting dimensions differ: lhs s0xs1 has s1, rhs s2xs2 has s2 (matmul expects rhs as [K, N])}}
  %z = irt.matmul %a, %c : (tensor<?x?xf32, #irt.dims<"s0", "s1">>, tensor<?x?xf32, #irt.dims<"s2", "s2">>) -> tensor<?x?xf32, #irt.dims<"s0", "s2">>
  func.return %z : tensor<?x?xf32, #irt.dims<"s0", "s2">>
}

// -----

func.func @epilogue(%x: tensor<?x48xf32, #irt.dims<"s0">>, %w: tensor<40x48xf32>, %r: tensor<?x40xf32, #irt.dims<"s1">>) -> tensor<?x40xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.contract: epilogue input 0 of shape s1x40 does not broadcast to the result shape s0x40}}
  %y = irt.contract linear %x, %w epilogue(%r : tensor<?x40xf32, #irt.dims<"s1">>) : (tensor<?x48xf32, #irt.dims<"s0">>, tensor<40x48xf32>) -> tensor<?x40xf32, #irt.dims<"s0">> {
  ^bb0(%acc: f32, %e: f32):
    %s = arith.addf %acc, %e : f32
    irt.yield %s : f32
  }
  func.return %y : tensor<?x40xf32, #irt.dims<"s0">>
}

// -----

// Reductions, normalizations, batched matmul and attention with run-time batch and lengths.
// CHECK-LABEL: func.func @reductions
// CHECK:         irt.reduce mean %x [1, 2] keepdim : (tensor<?x?x12xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1x1xf32, #irt.dims<"s0">>
// CHECK:         irt.softmax %y dim 1 : tensor<?x?xf32, #irt.dims<"s0", "s1">>
// CHECK:         irt.layer_norm %x : tensor<?x?x12xf32, #irt.dims<"s0", "s1">> dims 1
// CHECK:         irt.batch_matmul linear %q, %k : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x?xf32, #irt.dims<"s0", "s1", "s2">>
// CHECK:         irt.attention %q, %k, %k mask %m scale 2.500000e-01 causal
func.func @reductions(%x: tensor<?x?x12xf32, #irt.dims<"s0", "s1">>, %y: tensor<?x?xf32, #irt.dims<"s0", "s1">>,
                      %q: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, %k: tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>,
                      %m: tensor<?x?xf32, #irt.dims<"s1", "s2">>) {
  %mean = irt.reduce mean %x [1, 2] keepdim : (tensor<?x?x12xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1x1xf32, #irt.dims<"s0">>
  %sm = irt.softmax %y dim 1 : tensor<?x?xf32, #irt.dims<"s0", "s1">>
  %ln = irt.layer_norm %x : tensor<?x?x12xf32, #irt.dims<"s0", "s1">> dims 1 eps 1.0e-05 -> tensor<?x?x12xf32, #irt.dims<"s0", "s1">>
  %s = irt.batch_matmul linear %q, %k : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x?xf32, #irt.dims<"s0", "s1", "s2">>
  %o = irt.attention %q, %k, %k mask %m scale 0.25 causal : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, tensor<?x?xf32, #irt.dims<"s1", "s2">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
  func.return
}

// -----

func.func @reduce_result(%x: tensor<?x?x12xf32, #irt.dims<"s0", "s1">>) -> tensor<?x12xf32, #irt.dims<"s1">> {
  // expected-error @+1 {{irt.reduce: reducing s0xs1x12 over [1] gives s0x12, not s1x12}}
  %0 = irt.reduce sum %x [1] : (tensor<?x?x12xf32, #irt.dims<"s0", "s1">>) -> tensor<?x12xf32, #irt.dims<"s1">>
  func.return %0 : tensor<?x12xf32, #irt.dims<"s1">>
}

// -----

func.func @batch_matmul_k(%q: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, %v: tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">> {
  // expected-error @+1 {{irt.batch_matmul: contracting dimensions differ: lhs s0x4xs1x16 has 16, rhs s0x4xs2x16 has s2 (matmul expects rhs as [..., K, N])}}
  %0 = irt.batch_matmul matmul %q, %v : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
  func.return %0 : tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
}

// -----

func.func @attention_lengths(%q: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, %k: tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, %v: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">> {
  // expected-error @+1 {{irt.attention: k s0x4xs2x16 and v s0x4xs1x16 have different lengths (s2 vs s1)}}
  %0 = irt.attention %q, %k, %v scale 0.25 : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
  func.return %0 : tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
}

// -----

func.func @attention_mask(%q: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, %k: tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, %m: tensor<?x?xf32, #irt.dims<"s2", "s1">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">> {
  // expected-error @+1 {{irt.attention: mask of shape s2xs1 does not broadcast to the scores shape s0x4xs1xs2}}
  %0 = irt.attention %q, %k, %k mask %m scale 0.25 : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>, tensor<?x?xf32, #irt.dims<"s2", "s1">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
  func.return %0 : tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
}

// -----

// Shape ops: the KV-cache concat along the sequence (s1 + s2), slices of run-time dims (s1 - 1
// rows; x[:, :1] stays inside for s1 >= 1, a call-time requirement), an embedding of run-time
// index shape, an expand along a run-time dim.
// CHECK-LABEL: func.func @shapes
// CHECK:         irt.concat %cache, %new dim 2 : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s1 + s2">>
// CHECK:         irt.slice %x offsets [0, 1, 2] strides [1, 1, 1] : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<?x?x4xf32, #irt.dims<"s0", "s1 - 1">>
// CHECK:         irt.slice %x offsets [0, 0, 0] strides [1, 1, 1] : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1x8xf32, #irt.dims<"s0">>
// CHECK:         irt.embedding %idx, %w : (tensor<?x?xi64, #irt.dims<"s0", "s2">>, tensor<10x8xf32>) -> tensor<?x?x8xf32, #irt.dims<"s0", "s2">>
func.func @shapes(%cache: tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, %new: tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>,
                  %x: tensor<?x?x8xf32, #irt.dims<"s0", "s1">>, %idx: tensor<?x?xi64, #irt.dims<"s0", "s2">>, %w: tensor<10x8xf32>) {
  %t = irt.concat %cache, %new dim 2 : (tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>, tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>) -> tensor<?x4x?x16xf32, #irt.dims<"s0", "s2 + s1 * 1">>
  %s = irt.slice %x offsets [0, 1, 2] strides [1, 1, 1] : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<?x?x4xf32, #irt.dims<"s0", "s1 - 1">>
  %f = irt.slice %x offsets [0, 0, 0] strides [1, 1, 1] : (tensor<?x?x8xf32, #irt.dims<"s0", "s1">>) -> tensor<?x1x8xf32, #irt.dims<"s0">>
  %e = irt.embedding %idx, %w : (tensor<?x?xi64, #irt.dims<"s0", "s2">>, tensor<10x8xf32>) -> tensor<?x?x8xf32, #irt.dims<"s0", "s2">>
  func.return
}

// -----

func.func @concat_sum(%a: tensor<?x8xf32, #irt.dims<"s0">>, %b: tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x8xf32, #irt.dims<"s0 + s1 + 1">> {
  // expected-error @+1 {{irt.concat: inputs s0x8, s1x8 add up to s0 + s1 in dimension 0, the result s0 + s1 + 1x8 has s0 + s1 + 1}}
  %0 = irt.concat %a, %b dim 0 : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s1">>) -> tensor<?x8xf32, #irt.dims<"s0 + s1 + 1">>
  func.return %0 : tensor<?x8xf32, #irt.dims<"s0 + s1 + 1">>
}

// -----

func.func @slice_past_end(%x: tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.slice: dimension 0 takes s0 element(s) from offset 1 with stride 1, outside the input's size s0 (input s0x8, result s0x8)}}
  %0 = irt.slice %x offsets [1, 0] strides [1, 1] : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  func.return %0 : tensor<?x8xf32, #irt.dims<"s0">>
}

// -----

// Convolutions and pooling keep static shapes (vision models; their geometry and the GEMM
// blocking of a convolution are decided at compile time): a symbolic size is refused by name.
func.func @conv_batch(%x: tensor<?x3x8x8xf32, #irt.dims<"s0">>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.conv2d: symbolic sizes are not supported by this op yet: operand 0 has type tensor<?x3x8x8xf32, #irt.dims<"s0">>}}
  %0 = irt.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<?x3x8x8xf32, #irt.dims<"s0">>, tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32, #irt.dims<"s0">>
  func.return %0 : tensor<?x4x8x8xf32, #irt.dims<"s0">>
}

// -----

func.func @pool_batch(%x: tensor<?x16x4x4xf32, #irt.dims<"s0">>) -> tensor<?x16x3x3xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.max_pool2d: symbolic sizes are not supported by this op yet: operand 0 has type tensor<?x16x4x4xf32, #irt.dims<"s0">>}}
  %0 = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] ceil_mode : (tensor<?x16x4x4xf32, #irt.dims<"s0">>) -> tensor<?x16x3x3xf32, #irt.dims<"s0">>
  func.return %0 : tensor<?x16x3x3xf32, #irt.dims<"s0">>
}

// -----

func.func @avg_pool_batch(%x: tensor<?x16x4x4xf32, #irt.dims<"s0">>) -> tensor<?x16x1x1xf32, #irt.dims<"s0">> {
  // expected-error @+1 {{irt.adaptive_avg_pool2d: symbolic sizes are not supported by this op yet: operand 0 has type tensor<?x16x4x4xf32, #irt.dims<"s0">>}}
  %0 = irt.adaptive_avg_pool2d %x : (tensor<?x16x4x4xf32, #irt.dims<"s0">>) -> tensor<?x16x1x1xf32, #irt.dims<"s0">>
  func.return %0 : tensor<?x16x1x1xf32, #irt.dims<"s0">>
}

// -----

// Batch norm (eval) is elementwise: a run-time batch is fine, as for every elementwise op.
// CHECK-LABEL: func.func @batch_norm_batch
// CHECK:         irt.batch_norm %x, %m, %m, %m, %m eps 1.000000e-05 : (tensor<?x16x4x4xf32, #irt.dims<"s0">>,
func.func @batch_norm_batch(%x: tensor<?x16x4x4xf32, #irt.dims<"s0">>, %m: tensor<16x1x1xf32>) -> tensor<?x16x4x4xf32, #irt.dims<"s0">> {
  %0 = irt.batch_norm %x, %m, %m, %m, %m eps 1.000000e-05 : (tensor<?x16x4x4xf32, #irt.dims<"s0">>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<?x16x4x4xf32, #irt.dims<"s0">>
  func.return %0 : tensor<?x16x4x4xf32, #irt.dims<"s0">>
}

// -----

// A slice's offset may be a symbol: -1 in `offsets` takes the next expression of `dims`.
// CHECK-LABEL: func.func @row
// CHECK:         irt.slice %t offsets [0, -1] dims <"s0 + 2"> strides [1, 1] : (tensor<4x128xf32>) -> tensor<4x1xf32>
func.func @row(%t: tensor<4x128xf32>) -> tensor<4x1xf32> {
  %r = irt.slice %t offsets [0, -1] dims <"s0 + 2"> strides [1, 1] : (tensor<4x128xf32>) -> tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}

// -----

func.func @row_without_its_offset(%t: tensor<4x128xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{irt.slice: 1 offset(s) are -1 (symbolic) but `dims` gives 0 expression(s)}}
  %r = irt.slice %t offsets [0, -1] strides [1, 1] : (tensor<4x128xf32>) -> tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}
