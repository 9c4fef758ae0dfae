/* compiler/inspect/inspect_shard_json.h: the "sharding" and "memory_per_rank" objects of `ddpc inspect --json`
 * (schema at the top of inspect_shard_json.c). */
#ifndef DDP_INSPECT_SHARD_JSON_H
#define DDP_INSPECT_SHARD_JSON_H
#include "inspect_shard.h"
#include <jansson.h>

/* New references; *bad is set when an allocation failed somewhere (the object may then be incomplete). */
json_t *ddp_insp_sharding_json(const ddp_plan *p, const ddp_shard_info *si, int *bad);
json_t *ddp_insp_memory_json(const ddp_plan *p, const ddp_shard_info *si, int *bad);
#endif
