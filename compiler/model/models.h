/* compiler/model/models.h: the models (transformer.c, mlp.c): each emits init + forward + loss into the
 * builder; ddp_model_build (builder.c) picks one. */
#ifndef DDP_MODELS_H
#define DDP_MODELS_H
#include "builder.h"

int build_transformer(ddp_builder *b, char *err, size_t errcap);
int build_mlp(ddp_builder *b, char *err, size_t errcap);
#endif
