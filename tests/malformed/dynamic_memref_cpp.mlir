// RUN-ARGS: -t cpp
func.func @f(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<?x4xf32>
  memref.store %v, %y[%c0, %c0] : memref<?x4xf32>
  func.return
}
