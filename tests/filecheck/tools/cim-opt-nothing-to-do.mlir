// A pass that finds none of its ops, on a module that holds ops an earlier pass would give it, says
// which pass to run first, one line on stderr; the module is printed unchanged.
// RUN: cim-opt %s -p tile,cinm-to-cim,schedule-asap 2>&1 >/dev/null | filecheck %s --check-prefix=CARD
// RUN: cim-opt %s -p cinm-tiling 2>&1 >/dev/null | filecheck %s --check-prefix=ALIAS
// RUN: cim-opt %s -p linalg-to-cinm,cim-to-memristor,memristor-to-func 2>&1 >/dev/null | filecheck %s --check-prefix=LATER
// RUN: cim-opt %s -p linalg-to-cinm,tile,cinm-to-cim,schedule-asap,cim-to-memristor,memristor-to-func 2>&1 >/dev/null | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: cim-opt %s -p tile | filecheck %s --check-prefix=UNCHANGED

func.func @main(%x: tensor<8x64xi32>, %w: tensor<64x16xi32>, %v: tensor<16xi32>) -> tensor<8xi32> {
  %e = tensor.empty() : tensor<8x16xi32>
  %h = linalg.matmul ins(%x, %w : tensor<8x64xi32>, tensor<64x16xi32>) outs(%e : tensor<8x16xi32>) -> tensor<8x16xi32>
  %o = tensor.empty() : tensor<8xi32>
  %y = linalg.matvec ins(%h, %v : tensor<8x16xi32>, tensor<16xi32>) outs(%o : tensor<8xi32>) -> tensor<8xi32>
  return %y : tensor<8xi32>
}

// CARD:      tile: nothing to tile; the module holds linalg.matmul, linalg.matvec ops: run linalg-to-cinm first
// CARD-NEXT: cinm-to-cim: nothing to lower; the module holds linalg.matmul, linalg.matvec ops: run linalg-to-cinm first
// CARD-NEXT: schedule-asap: nothing to schedule; the module holds linalg.matmul, linalg.matvec ops: run linalg-to-cinm, cinm-to-cim first
// ALIAS:     cinm-tiling: nothing to tile; the module holds linalg.matmul, linalg.matvec ops: run linalg-to-cinm first
// LATER:      cim-to-memristor: nothing to lower; the module holds cinm.compute ops: run cinm-to-cim first
// LATER-NEXT: memristor-to-func: nothing to lower; the module holds cinm.compute ops: run cinm-to-cim, cim-to-memristor first
// QUIET-NOT: nothing to
// UNCHANGED: %h = linalg.matmul ins(%x, %w
// UNCHANGED: %y = linalg.matvec ins(%h, %v
