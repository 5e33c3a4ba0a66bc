/* Both public headers, preprocessed with the stubs beside this file into
 * the declarations the bindings load with cffi (python/meson.build). */
#include "clattn.h"
#include "clattn_tools.h"
