// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP
// RUN: cim-run %s --entry va --random-inputs | filecheck %s --check-prefix=NOTE

// Cinnamon's benchmarks name their UPMEM platform; the attribute is kept as written and ignored.
#upmem = #upmem.platform<type = v1A, dpus = 2048, tasklets = 24>
#grid = #upmem.platform<type = v1A, dimensions = 32x64x24>

func.func @va(%x: tensor<8xi32> {cinm.static}, %y: tensor<8xi32>) -> tensor<8xi32> attributes {cinm.available_platforms = [#upmem, #grid]} {
  %r = cinm.compute -> tensor<8xi32> attributes {cinm.available_platforms = [#upmem]} {
    %s = cinm.op.elementwise add %x, %y : tensor<8xi32>
    cinm.yield %s : tensor<8xi32>
  }
  func.return %r : tensor<8xi32>
}

// CHECK: func.func @va(%x: tensor<8xi32> {cinm.static}, %y: tensor<8xi32>) -> tensor<8xi32> attributes {cinm.available_platforms = [#upmem.platform<type = v1A, dpus = 2048, tasklets = 24>, #upmem.platform<type = v1A, dimensions = 32x64x24>]} {
// CHECK: cinm.compute attributes {cinm.available_platforms = [#upmem.platform<type = v1A, dpus = 2048, tasklets = 24>]} -> tensor<8xi32> {

// NOTE: note: the program names UPMEM platforms (#upmem.platform): kept as opaque attributes, not used; it runs on the crossbar device 'isaac'
// NOTE-NEXT: result r: array(
