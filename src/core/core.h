/* core.h -- the contract of src/core/: what every layer of numdyn shares,
 * and nothing that knows of graphs, traces or NumPy's API semantics.
 *
 *   npy.h       the NumPy C-API as every layer sees it; ND_MAXDIMS
 *   dtypes.h    the IR's dtypes, one X-macro (dtypes.def): names,
 *               membership, folding of NumPy's integer aliases
 *   strides.h   strides and memory-order arithmetic (C/F/K orders, the
 *               no-copy reshape rule, permuted dense strides)
 *   sb.h        the growable string builder (generated source, keys)
 *   counters.h  process-wide statistics (numdyn.utils.counters)
 *   containers.h  Python containers from C arrays (shape tuples)
 *   number_slots.h  the PyNumberMethods table of numdyn's array-like types
 *
 * core/ includes nothing of numdyn outside itself (tests/test_layering.py).
 * A file may include this header or just the piece it needs.
 */
#ifndef ND_CORE_H
#define ND_CORE_H
#include "npy.h"
#include "dtypes.h"
#include "strides.h"
#include "sb.h"
#include "counters.h"
#include "containers.h"
#endif
