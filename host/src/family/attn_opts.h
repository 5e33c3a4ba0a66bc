/* attn_opts.h - internal: the attention options (clattn.h, "Attention
 * options"), which several families take alike: their checks, the kernels'
 * -D flags and arguments, the shape class and shape text, and the
 * reference's form.  A family reads them from its description with
 * CLATTN__OPTS_OF and says which it takes. */
#ifndef CLATTN_FAMILY_ATTN_OPTS_H
#define CLATTN_FAMILY_ATTN_OPTS_H

#include "reference/ref.h"
#include "runtime/runtime.h"

typedef struct clattn__opts {
  int window;         /* W >= 1; 0: none */
  float softcap;      /* C > 0; 0: none */
  const float *alibi; /* [heads] host memory, or NULL */
  const float *sinks; /* [heads] host memory, or NULL */
} clattn__opts;

/* The options of a description with clattn.h's field names. */
#define CLATTN__OPTS_OF(d)                                                     \
  ((clattn__opts){(d)->window, (d)->softcap, (d)->alibi_slopes, (d)->sinks})

/* Set the option fields of a description with clattn.h's names from o. */
#define CLATTN__OPTS_PUT(d, o)                                                 \
  ((d)->window = (o).window, (d)->softcap = (o).softcap,                       \
   (d)->alibi_slopes = (o).alibi, (d)->sinks = (o).sinks)

/* Each option as a bit, for what a family takes. */
enum {
  CLATTN__OPT_WINDOW = 1,
  CLATTN__OPT_SOFTCAP = 2,
  CLATTN__OPT_ALIBI = 4,
  CLATTN__OPT_SINKS = 8,
  CLATTN__OPT_ALL = 15
};
/* The options o sets. */
unsigned clattn__opts_used(const clattn__opts *o);

/* Check o for a call of `heads` query heads by api ("clattn_decode"),
 * which takes the options in `taken`: one it does not take is
 * CLATTN_ERR_UNSUPPORTED naming it; a negative window, a soft-cap below 0
 * or not finite, a slope not finite, a sink NaN or +inf is
 * CLATTN_ERR_INVALID_ARG naming it (and the head). */
clattn_status clattn__opts_check(const clattn__opts *o, int heads,
                                 unsigned taken, const char *api, char *why,
                                 size_t cap);

/* The kernels' -D flags of the options o sets (WINDOW, SOFTCAP, ALIBI,
 * SINKS = 1; none added for an option not set, so plain programs keep
 * their defines). */
void clattn__opts_defs(const clattn__opts *o, clattn__defs *df);

/* The kernels' four option arguments from *next on, in cl/common.cl's
 * order: int window, float softcap (times log2 e), the slopes and the
 * sinks (float32 [heads] device copies, NULL when not set).  The arrays'
 * values are checked again here, as a memoised call's description is not
 * (the caller may have changed them since). */
clattn_status clattn__opts_args(clattn_ctx *ctx, cl_kernel k, cl_uint *next,
                                const clattn__opts *o, int heads);

/* The shape class's words for o, appended to buf: " w<window rounded to a
 * power of 2> sc alibi sinks" (only those set); nothing when none. */
void clattn__opts_class(const clattn__opts *o, char *buf, size_t cap);

/* Whether a shape class's word named name ("w", "sc", "alibi", "sinks") is
 * one of the options': a class with it is near the same class without
 * (choice.c). */
int clattn__opts_class_word(const char *name);

/* Shape text's keys of the options, and the reader: window=W,
 * softcap=C (an integer), alibi=0|1 and sinks=0|1 (1: the library's own
 * arrays of at most CLATTN__OPTS_SHAPE_HEADS heads, BLOOM's slopes and
 * sinks of -1.5 to 1.5). */
#define CLATTN__OPTS_SHAPE_KEYS "window softcap alibi sinks"
enum { CLATTN__OPTS_SHAPE_HEADS = 64 };
clattn_status clattn__opts_shape(const char *text, int heads, clattn__opts *o,
                                 char *why, size_t cap);

/* The reference's form of o. */
ref_opts clattn__opts_ref(clattn__opts o);

#endif /* CLATTN_FAMILY_ATTN_OPTS_H */
