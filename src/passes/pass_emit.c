/* pass_emit.c -- the code generator's answers the scheduler asks for
 * (schedule.h, nd_emit_caps). Until a runtime registers its generator,
 * nothing is emittable: every node would run eagerly, never wrongly. */
#include "schedule.h"

static int none_node(nd_graph *g, nd_id id) { return 0; }
static int no_dtype(int dtype) { return 0; }

static const nd_emit_caps nothing = {none_node, none_node, none_node, none_node, no_dtype};
const nd_emit_caps *nd_emit = &nothing;

void nd_schedule_set_emitter(const nd_emit_caps *caps)
{
    nd_emit = caps ? caps : &nothing;
}
