/* target.c - device facts for planning (target.h). */
#include "base/target.h"

#include <string.h>

clattn__target clattn__target_of_profile(const clattn_profile *p) {
  clattn__target t;
  t.is_cpu = p->is_cpu;
  /* a CPU's profile keeps its preferred float vector width as wave_width */
  t.cpu_vectors = p->is_cpu && p->wave_width > 1;
  t.vec_width = t.cpu_vectors ? (int)p->wave_width : 1;
  t.vregs = t.cpu_vectors ? clattn__cpu_vregs(t.vec_width, p->vendor) : 0;
  t.compute_units = p->compute_units ? p->compute_units : 1;
  t.max_wg = p->max_wg ? p->max_wg : 256;
  t.local_mem = p->local_mem_bytes;
  t.gemm_own_from = 0; /* a profile knows no context's CLBlast */
  t.subgroups = p->has_subgroups;
  t.sg_sizes = 0; /* a profile keeps no list of sizes */
  return t;
}

int clattn__cpu_vregs(int vec_width, const char *vendor) {
  static const char *const x86[] = {"GenuineIntel", "AuthenticAMD", "Intel",
                                    "AMD", "Advanced Micro Devices"};
  if (vec_width >= 16)
    return 32;
  for (size_t i = 0; vendor && i < sizeof x86 / sizeof x86[0]; i++)
    if (strstr(vendor, x86[i]))
      return 16;
  return 32;
}
