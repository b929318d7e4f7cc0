/* number_slots.h -- the PyNumberMethods table of numdyn's array-like types
 * (the CPU Tensor, the CUDA Tensor, the tracer's LazyArray proxy): every
 * slot an ndarray fills, each type supplying one function per slot under
 * its own prefix (t_add, c_add, p_add...). One list, so that a slot one of
 * them gains is a slot all of them must define (the build says which is
 * missing) and none answers an operator another takes.
 *
 *   static PyNumberMethods tensor_as_number = ND_NUMBER_METHODS(t_);
 */
#ifndef ND_NUMBER_SLOTS_H
#define ND_NUMBER_SLOTS_H
#define ND_NUMBER_METHODS(p) { \
    .nb_add = p##add, .nb_subtract = p##sub, .nb_multiply = p##mul, \
    .nb_remainder = p##mod, .nb_divmod = p##divmod, .nb_power = p##pow, \
    .nb_negative = p##neg, .nb_positive = p##pos, .nb_absolute = p##abs, \
    .nb_bool = p##bool, .nb_invert = p##invert, .nb_lshift = p##lshift, \
    .nb_rshift = p##rshift, .nb_and = p##and, .nb_xor = p##xor, .nb_or = p##or, \
    .nb_int = p##int, .nb_float = p##float, \
    .nb_inplace_add = p##iadd, .nb_inplace_subtract = p##isub, \
    .nb_inplace_multiply = p##imul, .nb_inplace_remainder = p##imod, \
    .nb_inplace_power = p##ipow, .nb_inplace_lshift = p##ilshift, \
    .nb_inplace_rshift = p##irshift, .nb_inplace_and = p##iand, \
    .nb_inplace_xor = p##ixor, .nb_inplace_or = p##ior, \
    .nb_floor_divide = p##floordiv, .nb_true_divide = p##truediv, \
    .nb_inplace_floor_divide = p##ifloordiv, .nb_inplace_true_divide = p##itruediv, \
    .nb_index = p##index, .nb_matrix_multiply = p##matmul, \
    .nb_inplace_matrix_multiply = p##imatmul, \
}
#endif
