/* super_values.h - internal: the super-values family, Super attention's
 * values V' = W_a X (Hosseini & Hosseini, spec 7), mixed over positions
 * from the left with one W_a shared by every head, for the rows a prefill
 * or a decode step adds. */
#ifndef CLATTN_FAMILY_SUPER_VALUES_H
#define CLATTN_FAMILY_SUPER_VALUES_H

#include "clattn_tools.h"

/* Rows pos0 .. pos0+n-1 of every sequence:
 *   V'[b, t, c] = sum_s W_a[t, s] x[b, s, c]
 * s over 0 .. t (causal: W_a's lower triangle only, the upper one never
 * read) or over 0 .. pos0+n-1 (not causal).  x and v hold `capacity`
 * rows per sequence of heads x head_dim channels, each in its layout
 * (BSHD: the layer's activations; BHSD: its cache); rows of v outside
 * pos0 .. pos0+n-1 are not written.  Float32.
 * Buffers, in order: w_a [max_len, max_len] (IN), x (IN), v (INOUT). */
typedef struct clattn__super_values_desc {
  int batch;
  int n;        /* rows written per sequence */
  int pos0;     /* rows before them (cached positions) */
  int capacity; /* rows of x and v per sequence, >= pos0 + n */
  int heads, head_dim;
  int max_len; /* W_a is [max_len, max_len]; pos0 + n <= max_len */
  int causal;
  clattn_layout x_layout, v_layout;
} clattn__super_values_desc;

#endif /* CLATTN_FAMILY_SUPER_VALUES_H */
