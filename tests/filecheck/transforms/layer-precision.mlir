// Per-layer precision through the memristor flow on cinnamon's 128x128 crossbars of 2-bit cells
// (4-bit weights by default: 2 cells each, 64 outputs per crossbar). A layer with 2-bit weights
// takes one cell per weight (128 outputs: 100 in one tile), one with 8-bit weights four (32
// outputs: 100 in four tiles), one without bits the device's (64 outputs: two tiles). The bits
// stay on every piece down to the runtime calls, whose names carry them.
// RUN: cim-opt %s -p 'linalg-to-cinm,tile{device=cinnamon}' | filecheck %s --check-prefix=TILE
// RUN: cim-opt %s -p 'linalg-to-cinm,tile{device=cinnamon},cinm-to-cim,schedule-asap' | filecheck %s --check-prefix=CIM
// RUN: cim-opt %s -p 'linalg-to-cinm,tile{device=cinnamon},cinm-to-cim,schedule-asap,cim-to-memristor' | filecheck %s --check-prefix=MEM
// RUN: cim-opt %s -p 'memristor{device=cinnamon}' | filecheck %s --check-prefix=FUNC

func.func @main(%x: tensor<2x16xi32>, %a: tensor<16x100xi32>, %b: tensor<16x100xi32>, %c: tensor<16x100xi32>) -> (tensor<2x100xi32>, tensor<2x100xi32>, tensor<2x100xi32>) {
  %e = tensor.empty() : tensor<2x100xi32>
  %narrow = linalg.matmul {weight_bits = 2 : i64, input_bits = 4 : i64} ins(%x, %a : tensor<2x16xi32>, tensor<16x100xi32>) outs(%e : tensor<2x100xi32>) -> tensor<2x100xi32>
  %wide = linalg.matmul {weight_bits = 8 : i64, input_bits = 8 : i64} ins(%x, %b : tensor<2x16xi32>, tensor<16x100xi32>) outs(%e : tensor<2x100xi32>) -> tensor<2x100xi32>
  %plain = linalg.matmul ins(%x, %c : tensor<2x16xi32>, tensor<16x100xi32>) outs(%e : tensor<2x100xi32>) -> tensor<2x100xi32>
  return %narrow, %wide, %plain : tensor<2x100xi32>, tensor<2x100xi32>, tensor<2x100xi32>
}

// TILE:         cinm.op.gemm %{{.*}}, %{{.*}} {weight_bits = 2 : i64, input_bits = 4 : i64} : (tensor<2x16xi32>, tensor<16x100xi32>)
// TILE-COUNT-4: cinm.op.gemm %{{.*}}, %{{.*}} {{{.*}}weight_bits = 8 : i64, input_bits = 8 : i64{{.*}}} : (tensor<2x16xi32>, tensor<16x{{32|4}}xi32>)
// TILE-COUNT-2: cinm.op.gemm %{{.*}}, %{{.*}} {cinm.notile} : (tensor<2x16xi32>, tensor<16x{{64|36}}xi32>)

// CIM:         cim.op.gemm {{.*}} {weight_bits = 2 : i64, input_bits = 4 : i64}
// CIM-COUNT-4: cim.op.gemm {{.*}} {weight_bits = 8 : i64, input_bits = 8 : i64}

// MEM:         memristor.write_to_crossbar {{.*}} {weight_bits = 2 : i64, input_bits = 4 : i64}
// MEM-NEXT:    memristor.gemm {{.*}} {weight_bits = 2 : i64, input_bits = 4 : i64}

// FUNC-DAG:    func.func nested @memristor_write_to_crossbar_w2a4_i32(i32, memref<?x?xi32>) -> ()
// FUNC-DAG:    func.func nested @memristor_write_to_crossbar_w8a8_i32(i32, memref<?x?xi32>) -> ()
// FUNC-DAG:    func.func nested @memristor_write_to_crossbar_i32(i32, memref<?x?xi32>) -> ()
// FUNC-LABEL:  func.func @main
// FUNC:        func.call @memristor_write_to_crossbar_w2a4_i32({{.*}}) {weight_bits = 2 : i64, input_bits = 4 : i64}
// FUNC-COUNT-4: func.call @memristor_write_to_crossbar_w8a8_i32
// FUNC-COUNT-2: func.call @memristor_write_to_crossbar_i32(
