// RUN: cim-opt %s -p 'tile{band=2}' | filecheck %s --check-prefix=TILE
// RUN: cim-opt %s -p 'tile{band=2},cinm-to-cim{devices=model crossbars=4}' | filecheck %s --check-prefix=CIM
// RUN: cim-opt %s -p 'tile{band=2},cinm-to-cim{devices=model crossbars=4},schedule-clsa{device=cinnamon}' | filecheck %s
// RUN: cim-opt %s -p 'tile{band=2},cinm-to-cim{devices=model crossbars=4},schedule-clsa{device=cinnamon cross-layer=false}' | filecheck %s --check-prefix=LAYERS
// RUN: cim-opt %s -p 'tile{band=4}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOTE
// RUN: cim-opt %s -p 'tile{band=2},cinm-to-cim{devices=model crossbars=4},schedule-clsa{device=cinnamon duplicates=5}' 2>&1 >/dev/null | filecheck %s --check-prefix=COPIES
// RUN: not cim-opt %s -p 'schedule-clsa{duplicates=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// Two linear layers on 4 tokens in bands of 2 tokens: the second layer's first band reads only the
// first layer's first band, so it runs while the first layer computes its second band.
func.func @tokens(%x: tensor<4x8xi32>, %w1: tensor<8x4xi32>, %w2: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %h0 = cinm.compute -> tensor<4x4xi32> {
    %0 = cinm.op.gemm %x, %w1 : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
    cinm.yield %0 : tensor<4x4xi32>
  }
  %h1 = cinm.compute -> tensor<4x4xi32> {
    %1 = cinm.op.gemm %h0, %w2 : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
    cinm.yield %1 : tensor<4x4xi32>
  }
  return %h1 : tensor<4x4xi32>
}

// TILE-LABEL: func.func @tokens
// TILE:       %[[X0:.*]] = tensor.extract_slice %x[0, 0] [2, 8] [1, 1]
// TILE-NEXT:  %[[X1:.*]] = tensor.extract_slice %x[2, 0] [2, 8] [1, 1]
// TILE-NEXT:  %[[P0:.*]] = cinm.op.gemm %[[X0]], %w1 {cinm.notile} : (tensor<2x8xi32>, tensor<8x4xi32>) -> tensor<2x4xi32>
// TILE-NEXT:  %[[P1:.*]] = cinm.op.gemm %[[X1]], %w1 {cinm.notile}
// TILE-NEXT:  %[[E:.*]] = tensor.empty() : tensor<4x4xi32>
// TILE-NEXT:  %[[I0:.*]] = tensor.insert_slice %[[P0]] into %[[E]][0, 0] [2, 4] [1, 1]
// TILE-NEXT:  %[[I1:.*]] = tensor.insert_slice %[[P1]] into %[[I0]][2, 0] [2, 4] [1, 1]
// TILE-NEXT:  cinm.yield %[[I1]]
// TILE:       tensor.extract_slice %h0[0, 0] [2, 4] [1, 1]
// TILE-NEXT:  tensor.extract_slice %h0[2, 0] [2, 4] [1, 1]

// One device for both layers; each product names its layer.
// CIM-LABEL: func.func @tokens
// CIM-NEXT:    %model_dev = cim.acquire_device {availableCrossbarCount = 4 : i32}
// CIM-NEXT:    %[[XB:.*]] = cim.acquire_crossbar %model_dev
// CIM-COUNT-2: cim.op.gemm %[[XB]], %{{.*}}, %w1 {cimxdsl.layer = "h0"}
// CIM-COUNT-2: cim.op.gemm %[[XB]], %{{.*}}, %w2 {cimxdsl.layer = "h1"}
// CIM-NOT:     cim.acquire_device
// CIM:         cim.release_crossbar %[[XB]]
// CIM-NEXT:    cim.release_device %model_dev

// Each layer's tile keeps one crossbar; the second layer's first band takes the first layer's
// first band as it is (no assembly) and is dispatched before the first layer's second band ends.
// Each layer's crossbar is busy from its first start to its last end: utilisation 1 per layer.
// CHECK-LABEL: func.func @tokens
// CHECK-NEXT:    %model_dev = cim.acquire_device {cimxdsl.schedule = {latency_ns = {{.*}}, lower_bound_ns = {{.*}}, utilisation = {{.*}}, copies = 0 : i64, layers = {h0 = 1.000000e+00 : f64, h1 = 1.000000e+00 : f64}}, availableCrossbarCount = 4 : i32, isFullyScheduled = true}
// CHECK:         %[[A:.*]] = cim.op.gemm %[[XA:.*]], %{{.*}}, %w1 {cimxdsl.layer = "h0"}
// CHECK-NEXT:    %[[TA:.*]] = cim.barrier %[[A]]
// CHECK-NEXT:    tensor.extract_slice %x[2, 0] [2, 8] [1, 1]
// CHECK-NEXT:    %[[B:.*]] = cim.op.gemm %[[XA]], %{{.*}}, %w1 {cimxdsl.layer = "h0"}
// CHECK-NEXT:    %[[C:.*]] = cim.op.gemm %[[XC:.*]], %[[TA]], %w2 {cimxdsl.layer = "h1"}
// CHECK-NEXT:    %[[TB:.*]] = cim.barrier %[[B]]
// CHECK-NEXT:    %[[TC:.*]] = cim.barrier %[[C]]
// CHECK-NEXT:    %[[D:.*]] = cim.op.gemm %[[XC]], %[[TB]], %w2 {cimxdsl.layer = "h1"}

// Layer by layer on the same crossbars, the second layer starts after the first has ended.
// LAYERS-LABEL: func.func @tokens
// LAYERS:         %[[A:.*]] = cim.op.gemm %{{.*}}, %{{.*}}, %w1
// LAYERS-NEXT:    %[[TA:.*]] = cim.barrier %[[A]]
// LAYERS-NEXT:    tensor.extract_slice %x[2, 0] [2, 8] [1, 1]
// LAYERS-NEXT:    %[[B:.*]] = cim.op.gemm %{{.*}}, %{{.*}}, %w1
// LAYERS-NEXT:    %[[TB:.*]] = cim.barrier %[[B]]
// LAYERS-NEXT:    %[[C:.*]] = cim.op.gemm %{{.*}}, %[[TA]], %w2
// LAYERS-NEXT:    cim.barrier %[[C]]
// LAYERS-NEXT:    cim.op.gemm %{{.*}}, %[[TB]], %w2

// NOTE: tile: note: band=4 does not split h0, h1 (a band of output rows or fewer): run whole

// Two tiles on four crossbars: two copies fit (one per op at most).
// COPIES: schedule-clsa: note: 'cim.acquire_device' (%model_dev): duplicates=5 but 2 copies fit: 4 crossbars to use (at most one per op) for 2 weight tiles

// BAD: schedule-clsa: option 'duplicates' must be at least 0, got -1
