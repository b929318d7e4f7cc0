/* codegen_caps.c -- what the C generator can emit, as the table the
 * scheduler asks (passes/schedule.h). */
#include "codegen.h"

const nd_emit_caps nd_cg_emit_caps = {
    .supported = nd_cg_supported,
    .reduce_supported = nd_cg_reduce_supported,
    .scan_supported = nd_cg_scan_supported,
    .cost = nd_cg_cost,
    .dtype_ok = nd_cg_dtype_ok,
};
