/* cpu_isa.c - LLVM CPU names by vector ISA class (cpu_isa.h). */
#include "base/cpu_isa.h"

#include <string.h>

static int listed(const char *arch, const char *const *names) {
  for (; *names; names++)
    if (strcmp(arch, *names) == 0)
      return 1;
  return 0;
}

const char *clattn__cpu_isa_class(const char *arch) {
  static const char *const avx512[] = {"skylake-avx512",
                                       "skx",
                                       "cascadelake",
                                       "cooperlake",
                                       "cannonlake",
                                       "icelake-client",
                                       "icelake-server",
                                       "tigerlake",
                                       "rocketlake",
                                       "sapphirerapids",
                                       "emeraldrapids",
                                       "graniterapids",
                                       "graniterapids-d",
                                       "diamondrapids",
                                       "knl",
                                       "knm",
                                       "znver4",
                                       "znver5",
                                       "x86-64-v4",
                                       NULL};
  static const char *const avx2[] = {
      "haswell",     "core-avx2",        "broadwell",
      "skylake",     "kabylake",         "alderlake",
      "raptorlake",  "meteorlake",       "arrowlake",
      "arrowlake-s", "lunarlake",        "gracemont",
      "pantherlake", "clearwaterforest", "sierraforest",
      "grandridge",  "znver1",           "znver2",
      "znver3",      "bdver4",           "x86-64-v3",
      NULL};
  static const char *const other[] = {
      "x86-64",      "x86-64-v2",  "generic",
      "nehalem",     "corei7",     "westmere",
      "sandybridge", "corei7-avx", "ivybridge",
      "core-avx-i",  "core2",      "penryn",
      "atom",        "bonnell",    "silvermont",
      "slm",         "goldmont",   "goldmont-plus",
      "tremont",     "btver1",     "btver2",
      "bdver1",      "bdver2",     "bdver3",
      "amdfam10",    "k8",         "a64fx",
      NULL};
  static const char *const other_prefix[] = {"cortex-", "neoverse-", "apple-",
                                             NULL};
  if (arch == NULL || !arch[0])
    return NULL;
  if (listed(arch, avx512))
    return "avx512";
  if (listed(arch, avx2))
    return "avx2";
  if (listed(arch, other))
    return "other";
  for (const char *const *p = other_prefix; *p; p++)
    if (strncmp(arch, *p, strlen(*p)) == 0)
      return "other";
  return NULL;
}
