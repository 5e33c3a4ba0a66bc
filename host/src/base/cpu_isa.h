/* cpu_isa.h - internal: the vector ISA class of a CPU architecture name,
 * for sharing tuning data between CPUs that differ in name only. */
#ifndef CLATTN_CPU_ISA_H
#define CLATTN_CPU_ISA_H

/* The class of an LLVM CPU name as PoCL reports it for arch
 * ("skylake-avx512", "znver3"): "avx512", "avx2" or "other"; NULL for a
 * name that is no CPU this table knows (a GPU's arch, "").
 * Threads: pure, safe. */
const char *clattn__cpu_isa_class(const char *arch);

#endif /* CLATTN_CPU_ISA_H */
