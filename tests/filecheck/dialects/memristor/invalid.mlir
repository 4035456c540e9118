// RUN: cim-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @write_vector(%t: i32, %b: memref<3xi32>) {
  memristor.write_to_crossbar %t, %b : i32, memref<3xi32>
  return
}
// CHECK: 'memristor.write_to_crossbar' expects a matrix (rank 2 memref)

// -----

func.func @gemm_rank(%t: i32, %a: memref<3xi32>, %c: memref<6x6xi32>) {
  memristor.gemm %t, %a, %c : i32, memref<3xi32>, memref<6x6xi32>
  return
}
// CHECK: 'memristor.gemm' expects a and c to be matrices (rank 2)

// -----

func.func @gevm_rank(%t: i32, %a: memref<1x3xi32>, %c: memref<6xi32>) {
  memristor.gevm %t, %a, %c : i32, memref<1x3xi32>, memref<6xi32>
  return
}
// CHECK: 'memristor.gevm' expects a and c to be vectors (rank 1)

// -----

func.func @gemm_element_type(%t: i32, %a: memref<6x3xi32>, %c: memref<6x6xi8>) {
  memristor.gemm %t, %a, %c : i32, memref<6x3xi32>, memref<6x6xi8>
  return
}
// CHECK: 'memristor.gemm' result element type i8 cannot hold products of i32

// -----

func.func @gemm_rows(%t: i32, %a: memref<5x3xi32>, %c: memref<6x6xi32>) {
  memristor.gemm %t, %a, %c : i32, memref<5x3xi32>, memref<6x6xi32>
  return
}
// CHECK: 'memristor.gemm' a and c must have the same number of rows, got 5 and 6

// -----

func.func @tile_id_type(%t: f32, %a: memref<6x3xi32>, %c: memref<6x6xi32>) {
  "memristor.barrier"(%t) : (f32) -> ()
  return
}
// CHECK: operand 'tile_id' at position 0 does not verify
