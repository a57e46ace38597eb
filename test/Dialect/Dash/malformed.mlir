// A file that is not valid MLIR must give a clear diagnostic and a non-zero
// exit, and print no module.
// RUN: not dash-opt %S/Inputs/truncated.mlir 2>&1 | FileCheck %s --check-prefix=TRUNC
// TRUNC: truncated.mlir:{{[0-9]+}}:{{[0-9]+}}: error: expected
// TRUNC-NOT: module
// RUN: not dash-opt %S/Inputs/no-such-file.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file
// RUN: not dash-opt %s --dash-schedule=policy=zigzag 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: unknown policy 'zigzag'
func.func @empty() {
  return
}
