/* The scale model's stated bounds (tools/README.md, "hetccl-model"). */
#ifndef HETCCL_TOOLS_MODEL_BOUNDS_H
#define HETCCL_TOOLS_MODEL_BOUNDS_H

#include "model.h"

/* Checks r against every bound; prints each miss, counting it in *violated,
 * or in *known when it is listed as not met by today's plans. */
void model_check(const struct model *m, const struct model_result *r, const char *layout, int *violated, int *known);

#endif
