// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP

func.func @ops(%1: memref<6x3xi32>, %3: memref<3x6xi32>, %4: memref<6x6xi32>, %v: memref<3xi32>, %w: memref<6xi32>, %a8: memref<6x3xi8>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i64
  memristor.write_to_crossbar %c0, %3 : i32, memref<3x6xi32>
  memristor.gemm %c0, %1, %4 : i32, memref<6x3xi32>, memref<6x6xi32>
  memristor.gemm %c0, %a8, %4 : i32, memref<6x3xi8>, memref<6x6xi32>
  memristor.gevm %c1, %v, %w : i64, memref<3xi32>, memref<6xi32>
  memristor.barrier %c0 : i32
  return
}

// CHECK:      memristor.write_to_crossbar %c0, %{{.*}} : i32, memref<3x6xi32>
// CHECK-NEXT: memristor.gemm %c0, %{{.*}}, %{{.*}} : i32, memref<6x3xi32>, memref<6x6xi32>
// CHECK-NEXT: memristor.gemm %c0, %a8, %{{.*}} : i32, memref<6x3xi8>, memref<6x6xi32>
// CHECK-NEXT: memristor.gevm %c1, %v, %w : i64, memref<3xi32>, memref<6xi32>
// CHECK-NEXT: memristor.barrier %c0 : i32
