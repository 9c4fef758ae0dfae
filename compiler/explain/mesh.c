/* compiler/explain/mesh.c: placeholder while written */
#include "xmodel.h"
int ddp_explain_mesh_main(int argc, char **argv) { (void)argc, (void)argv; return 1; }
