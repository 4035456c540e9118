// Cinnamon's lit test test/Conversion/CimToMemristor/cim-to-memristor.mlir (github.com/tud-ccc/Cinnamon, commit 1d657a5f2fdd8a040bf8b924faf031ce220b422c;
// MIT licence, Copyright (c) 2024 Chair for Compiler Construction TU Dresden, notice in
// inputs/llama2_110M.mlir). Only the RUN lines are translated (cinm-opt → cim-opt, FileCheck →
// filecheck; `cim-opt --mlir-names` prints values named as mlir-opt names them).
// Expected to fail, deliberately: gemv computes M·v, so the matrix is written transposed
// (tensor.empty + linalg.transpose before its write, which also shifts the numbering from %5 on).
// XFAIL: *
// RUN: cim-opt %s -p convert-cim-to-memristor | cim-opt --mlir-names | filecheck %s


// CHECK-LABEL: simple
func.func @simple(%t0: tensor<6x3xi32>, %t1: tensor<3x6xi32>, %t2 : tensor<6xi32> ) -> tensor<6xi32> {
// CHECK: %c0_i32 = arith.constant 0 : i32
    %device = cim.acquire_device -> !cim.deviceId
    %crossbar = cim.acquire_crossbar %device : !cim.deviceId -> !cim.crossbarId

// CHECK: %0 = bufferization.alloc_tensor() : tensor<6x6xi32>
// CHECK: %1 = bufferization.to_buffer %arg0 : tensor<6x3xi32> to memref<6x3xi32>
// CHECK: %2 = bufferization.to_buffer %arg1 : tensor<3x6xi32> to memref<3x6xi32>
// CHECK: %3 = bufferization.to_buffer %0 : tensor<6x6xi32> to memref<6x6xi32>
// CHECK: memristor.write_to_crossbar %c0_i32, %2 : i32, memref<3x6xi32>
// CHECK: memristor.gemm %c0_i32, %1, %3 : i32, memref<6x3xi32>, memref<6x6xi32>
    %f0 = cim.op.gemm %crossbar, %t0, %t1 : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>

// CHECK: memristor.barrier %c0_i32 : i32
    %r0 = cim.barrier %f0 : !cim.future<6x6xi32> -> tensor<6x6xi32>

// CHECK: %4 = bufferization.alloc_tensor() : tensor<6xi32>
// CHECK: %5 = bufferization.to_buffer %0 : tensor<6x6xi32> to memref<6x6xi32>
// CHECK: %6 = bufferization.to_buffer %arg2 : tensor<6xi32> to memref<6xi32>
// CHECK: %7 = bufferization.to_buffer %4 : tensor<6xi32> to memref<6xi32>
// CHECK: memristor.write_to_crossbar %c0_i32, %5 : i32, memref<6x6xi32>
// CHECK: memristor.gevm %c0_i32, %6, %7 : i32, memref<6xi32>, memref<6xi32>
    %r1 = cim.op.gemv %crossbar, %r0, %t2 : !cim.crossbarId, tensor<6x6xi32>, tensor<6xi32> -> !cim.future<6xi32>

// CHECK: memristor.barrier %c0_i32 : i32
    %result = cim.barrier %r1 : !cim.future<6xi32> -> tensor<6xi32>

    cim.release_crossbar %crossbar : !cim.crossbarId
    cim.release_device %device : !cim.deviceId

    return %result : tensor<6xi32>
}
