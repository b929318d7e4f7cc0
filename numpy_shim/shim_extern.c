/* shim_extern.c -- matmul/dot/einsum/linalg/fft/sort as EXTERN nodes (owned
 * by the "extern" helper; created empty by shim so the tree links). */
#include "shim_internal.h"

int nd_shim_register_extern(nd_shim_table *tab)
{
    (void)tab;
    return 0;
}
