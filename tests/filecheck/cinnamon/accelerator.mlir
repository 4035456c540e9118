// Cinnamon's benchmarks say which array of UPMEM DPUs a compute runs on (`#upmem.array<…>`, in
// `cinm.compute on accelerator #…`, as in its benchmarks/cinm1 programs): both parse, print back in
// a form that parses again, are ignored by the crossbar flow, and a run notes them.
// RUN: cim-opt %s | cim-opt | filecheck %s
// RUN: cim-opt %s --print-op-generic | cim-opt | filecheck %s
// RUN: cim-opt %s -p 'memristor{device=ideal}' | filecheck %s --check-prefix=LOWERED
// RUN: cim-run %s --random-inputs | filecheck %s --check-prefix=RUNNOTE

#dimm = #upmem.platform<type = v1A, dpus = 4096, tasklets = 1>
#ranks = #upmem.array<512x1, #dimm>

func.func @main(%a: tensor<8x96xi32>, %b: tensor<96x40xi32>) -> tensor<8x40xi32> {
  %r = cinm.compute on accelerator #ranks -> tensor<8x40xi32> {
    %p = cinm.op.gemm %a, %b : tensor<8x96xi32>, tensor<96x40xi32> -> tensor<8x40xi32>
    cinm.yield %p : tensor<8x40xi32>
  }
  func.return %r : tensor<8x40xi32>
}

// CHECK:      %r = cinm.compute on accelerator #upmem.array<512x1, #upmem.platform<type = v1A, dpus = 4096, tasklets = 1>> -> tensor<8x40xi32> {
// CHECK-NEXT:   %p = cinm.op.gemm %a, %b : (tensor<8x96xi32>, tensor<96x40xi32>) -> tensor<8x40xi32>

// LOWERED-NOT: cinm.
// LOWERED:     func.call @memristor_gemm_i32(
// LOWERED-NOT: cinm.

// RUNNOTE: note: the program names UPMEM platforms
