// Cinnamon's lit test test/Dialect/Memristor/memristor-ops.mlir (github.com/tud-ccc/Cinnamon, commit 9c198dc4a9175aaebe379b0dbcb117e5087b0d71;
// MIT licence, Copyright (c) 2024 Chair for Compiler Construction TU Dresden, notice in
// inputs/llama2_110M.mlir). Only the RUN lines are translated (cinm-opt → cim-opt, FileCheck →
// filecheck).
// RUN: cim-opt %s | cim-opt | filecheck %s
// RUN: cim-opt %s --print-op-generic | cim-opt | filecheck %s


// CHECK-LABEL: simple
func.func @simple(%t0: memref<6x6xi32>, %t1 : memref<6x6xi32>, %t2 : memref<6xi32>) {
    %tile = arith.constant 0 : i64

    %rm0 = memref.alloc() : memref<6x6xi32>
    %rm1 = memref.alloc() : memref<6xi32>

    memristor.write_to_crossbar %tile, %t1 : i64, memref<6x6xi32>
    memristor.gemm %tile, %t0, %rm0 : i64, memref<6x6xi32>, memref<6x6xi32>

    memristor.write_to_crossbar %tile, %rm0 : i64, memref<6x6xi32>
    memristor.gevm %tile, %t2, %rm1 : i64, memref<6xi32>, memref<6xi32>

    memristor.barrier %tile : i64

    return
}
