// Cinnamon's lit test test/Dialect/Cim/cim-ops.mlir (github.com/tud-ccc/Cinnamon, commit 6d1cafcb1c0b728a8315ca9f1a0a16030c8f4cb6;
// MIT licence, Copyright (c) 2024 Chair for Compiler Construction TU Dresden, notice in
// inputs/llama2_110M.mlir). Only the RUN lines are translated (cinm-opt → cim-opt, FileCheck →
// filecheck).
// RUN: cim-opt %s | cim-opt | filecheck %s
// RUN: cim-opt %s --print-op-generic | cim-opt | filecheck %s


// CHECK-LABEL: simple
func.func @simple(%t0: memref<6x3xi32>, %t1: memref<3x6xi32>, %t2 : memref<6xi32> ) {
    %device = cim.acquire_device -> !cim.deviceId
    %crossbar = cim.acquire_crossbar %device : !cim.deviceId -> !cim.crossbarId

    %r0 = cim.op.gemm %crossbar, %t0, %t1 : !cim.crossbarId, memref<6x3xi32>, memref<3x6xi32> -> !cim.future<6x6xi32>
    %r00 = cim.barrier %r0 : !cim.future<6x6xi32> -> memref<6x6xi32>
    %r1 = cim.op.gemv %crossbar, %r00, %t2 : !cim.crossbarId, memref<6x6xi32>, memref<6xi32> -> !cim.future<6xi32>

    %result = cim.barrier %r1 : !cim.future<6xi32> -> memref<6xi32>

    cim.release_crossbar %crossbar : !cim.crossbarId
    cim.release_device %device : !cim.deviceId

    return
}
