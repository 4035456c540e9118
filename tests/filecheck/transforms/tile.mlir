// RUN: cim-opt %s --split-input-file -p 'tile{rows=128 cols=128}' | filecheck %s
// RUN: cim-opt %s --split-input-file -p 'tile{rows=128 cols=128 device=cinnamon}' | filecheck %s --check-prefix=CELLS
// RUN: not cim-opt %s --split-input-file -p 'tile{rows=0}' 2>&1 | filecheck %s --check-prefix=BAD

// A 300x200 weight matrix on 128x128 crossbars: K in 3 pieces (128, 128, 44), N in 2 (128, 72).
func.func @gemm(%a: tensor<4x300xi32>, %b: tensor<300x200xi32>, %c: tensor<4x200xi32>) -> tensor<4x200xi32> {
  %r = cinm.compute -> tensor<4x200xi32> {
    %0 = cinm.op.gemm %a, %b plus %c : (tensor<4x300xi32>, tensor<300x200xi32>) -> tensor<4x200xi32>
    cinm.yield %0 : tensor<4x200xi32>
  }
  return %r : tensor<4x200xi32>
}

// CHECK-LABEL: func.func @gemm
// CHECK:      %[[A0:.*]] = tensor.extract_slice %a[0, 0] [4, 128] [1, 1]
// CHECK-NEXT: %[[B00:.*]] = tensor.extract_slice %b[0, 0] [128, 128] [1, 1]
// CHECK-NEXT: %[[A1:.*]] = tensor.extract_slice %a[0, 128] [4, 128] [1, 1]
// CHECK-NEXT: %[[B10:.*]] = tensor.extract_slice %b[128, 0] [128, 128] [1, 1]
// CHECK-NEXT: %[[A2:.*]] = tensor.extract_slice %a[0, 256] [4, 44] [1, 1]
// CHECK-NEXT: %[[B20:.*]] = tensor.extract_slice %b[256, 0] [44, 128] [1, 1]
// CHECK-NEXT: %[[C0:.*]] = tensor.extract_slice %c[0, 0] [4, 128] [1, 1]
// CHECK-NEXT: %[[B01:.*]] = tensor.extract_slice %b[0, 128] [128, 72] [1, 1]
// CHECK-NEXT: %[[B11:.*]] = tensor.extract_slice %b[128, 128] [128, 72] [1, 1]
// CHECK-NEXT: %[[B21:.*]] = tensor.extract_slice %b[256, 128] [44, 72] [1, 1]
// CHECK-NEXT: %[[C1:.*]] = tensor.extract_slice %c[0, 128] [4, 72] [1, 1]
// CHECK-NEXT: %[[P00:.*]] = cinm.op.gemm %[[A0]], %[[B00]] {cinm.notile} : (tensor<4x128xi32>, tensor<128x128xi32>) -> tensor<4x128xi32>
// CHECK-NEXT: %[[P10:.*]] = cinm.op.gemm %[[A1]], %[[B10]] {cinm.notile}
// CHECK-NEXT: %[[P20:.*]] = cinm.op.gemm %[[A2]], %[[B20]] {cinm.notile} : (tensor<4x44xi32>, tensor<44x128xi32>) -> tensor<4x128xi32>
// CHECK-NEXT: %[[P01:.*]] = cinm.op.gemm %[[A0]], %[[B01]] {cinm.notile} : (tensor<4x128xi32>, tensor<128x72xi32>) -> tensor<4x72xi32>
// CHECK-NEXT: %[[P11:.*]] = cinm.op.gemm %[[A1]], %[[B11]] {cinm.notile}
// CHECK-NEXT: %[[P21:.*]] = cinm.op.gemm %[[A2]], %[[B21]] {cinm.notile}
// CHECK-NEXT: %[[S0:.*]] = cinm.op.add %[[P00]], %[[P10]] : tensor<4x128xi32>
// CHECK-NEXT: %[[S1:.*]] = cinm.op.add %[[S0]], %[[P20]] : tensor<4x128xi32>
// CHECK-NEXT: %[[S2:.*]] = cinm.op.add %[[S1]], %[[C0]] : tensor<4x128xi32>
// CHECK-NEXT: %[[T0:.*]] = cinm.op.add %[[P01]], %[[P11]] : tensor<4x72xi32>
// CHECK-NEXT: %[[T1:.*]] = cinm.op.add %[[T0]], %[[P21]] : tensor<4x72xi32>
// CHECK-NEXT: %[[T2:.*]] = cinm.op.add %[[T1]], %[[C1]] : tensor<4x72xi32>
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x200xi32>
// CHECK-NEXT: %[[I0:.*]] = tensor.insert_slice %[[S2]] into %[[E]][0, 0] [4, 128] [1, 1]
// CHECK-NEXT: %[[I1:.*]] = tensor.insert_slice %[[T2]] into %[[I0]][0, 128] [4, 72] [1, 1]
// CHECK-NEXT: cinm.yield %[[I1]] : tensor<4x200xi32>

// With the cinnamon device each 8-bit weight takes several 2-bit cells, so fewer columns fit.
// CELLS-LABEL: func.func @gemm
// CELLS-NOT:   tensor.extract_slice %b[0, 0] [128, 128]
// CELLS:       tensor.extract_slice %b[0, 0] [128, {{[0-9]+}}]

// BAD: tile: option 'rows' must be positive, got 0

// -----

// A non-square gemv: the 200x300 matrix is stored transposed (300 rows of K, 200 outputs).
func.func @gemv(%m: tensor<200x300xi32>, %v: tensor<300xi32>) -> tensor<200xi32> {
  %r = cinm.compute -> tensor<200xi32> {
    %0 = cinm.op.gemv %m, %v : (tensor<200x300xi32>, tensor<300xi32>) -> tensor<200xi32>
    cinm.yield %0 : tensor<200xi32>
  }
  return %r : tensor<200xi32>
}

// CHECK-LABEL: func.func @gemv
// CHECK-COUNT-6: cinm.op.gemv {{.*}} {cinm.notile}
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0] [128] [1] : tensor<128xi32> into tensor<200xi32>
// CHECK-NEXT:    tensor.insert_slice %{{.*}} into %{{.*}}[128] [72] [1] : tensor<72xi32> into tensor<200xi32>

// -----

// Products that fit are left alone.
func.func @fits(%a: tensor<4x128xi32>, %b: tensor<128x128xi32>) -> tensor<4x128xi32> {
  %r = cinm.compute -> tensor<4x128xi32> {
    %0 = cinm.op.gemm %a, %b : (tensor<4x128xi32>, tensor<128x128xi32>) -> tensor<4x128xi32>
    cinm.yield %0 : tensor<4x128xi32>
  }
  return %r : tensor<4x128xi32>
}

// CHECK-LABEL: func.func @fits
// CHECK-NEXT:    %r = cinm.compute -> tensor<4x128xi32> {
// CHECK-NEXT:      %0 = cinm.op.gemm %a, %b : (tensor<4x128xi32>, tensor<128x128xi32>) -> tensor<4x128xi32>
// CHECK-NEXT:      cinm.yield %0
