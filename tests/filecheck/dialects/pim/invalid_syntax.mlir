// RUN: cim-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Syntax errors of the instruction ops' `field = value` lists.

pim.core() coreId 0 : () {
  pim.sldi rd = 0, rs1 = 2
  pim.halt
}
// CHECK: 'pim.sldi' has no field 'rs1' (fields: rd, imm)

// -----

pim.core() coreId 0 : () {
  pim.sldi rd = 0, rd = 1
  pim.halt
}
// CHECK: 'pim.sldi' field 'rd' is given twice

// -----

pim.core() coreId 0 : () {
  pim.sldi rd = 0, imm = 3000000000
  pim.halt
}
// CHECK: 'pim.sldi' imm must fit in a signed 32-bit integer
