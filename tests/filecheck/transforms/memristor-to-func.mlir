// RUN: cim-opt %s -p memristor-to-func | filecheck %s
// RUN: cim-opt %s -p convert-memristor-to-func | filecheck %s

func.func @calls(%b: memref<3x6xi8>, %a: memref<6x3xi8>, %c: memref<6x6xi32>, %v: memref<3xi32>, %w: memref<6xi32>, %b32: memref<3x6xi32>) {
  %t = arith.constant 0 : i32
  memristor.write_to_crossbar %t, %b : i32, memref<3x6xi8>
  memristor.gemm %t, %a, %c : i32, memref<6x3xi8>, memref<6x6xi32>
  memristor.barrier %t : i32
  memristor.write_to_crossbar %t, %b32 : i32, memref<3x6xi32>
  memristor.gevm %t, %v, %w : i32, memref<3xi32>, memref<6xi32>
  memristor.gevm %t, %v, %w : i32, memref<3xi32>, memref<6xi32>
  return
}

// Each runtime function is declared once, nested, first in the module, in order of first use.
// CHECK:      func.func nested @memristor_write_to_crossbar_i8(i32, memref<?x?xi8>) -> ()
// CHECK-NEXT: func.func nested @memristor_gemm_i8_i32(i32, memref<?x?xi8>, memref<?x?xi32>) -> ()
// CHECK-NEXT: func.func nested @memristor_barrier(i32) -> ()
// CHECK-NEXT: func.func nested @memristor_write_to_crossbar_i32(i32, memref<?x?xi32>) -> ()
// CHECK-NEXT: func.func nested @memristor_gevm_i32(i32, memref<?xi32>, memref<?xi32>) -> ()
// CHECK-NEXT: func.func @calls
// CHECK:      %[[B:.*]] = memref.cast %b : memref<3x6xi8> to memref<?x?xi8>
// CHECK-NEXT: func.call @memristor_write_to_crossbar_i8(%t, %[[B]]) : (i32, memref<?x?xi8>) -> ()
// CHECK-NEXT: %[[A:.*]] = memref.cast %a : memref<6x3xi8> to memref<?x?xi8>
// CHECK-NEXT: %[[C:.*]] = memref.cast %c : memref<6x6xi32> to memref<?x?xi32>
// CHECK-NEXT: func.call @memristor_gemm_i8_i32(%t, %[[A]], %[[C]]) : (i32, memref<?x?xi8>, memref<?x?xi32>) -> ()
// CHECK-NEXT: func.call @memristor_barrier(%t) : (i32) -> ()
// CHECK:      func.call @memristor_write_to_crossbar_i32
// CHECK:      func.call @memristor_gevm_i32(%t, %{{.*}}, %{{.*}}) : (i32, memref<?xi32>, memref<?xi32>) -> ()
// CHECK:      func.call @memristor_gevm_i32
// CHECK-NOT:  memristor.
// CHECK:      func.return
