/* talking_heads_plan.c - kernel shapes of a talking-heads prefill call
 * (talking_heads.h): the scheme, the variant and its tiles. */
#include "family/plan.h"
#include "family/talking_heads.h"

#include <stdio.h>

/* Floats of per-position state a work-item keeps (q rows and value
 * accumulators), which bound variant 1's positions per work-item. */
static long item_floats(const clattn_th_desc *d, int scheme) {
  const long acc = (long)d->heads_v * d->head_dim_v;
  return (long)d->heads_k * d->head_dim_k + (scheme == 1 ? d->heads : 1) * acc;
}

static size_t local_bytes(const clattn_th_desc *d, int kt) {
  return (size_t)kt *
         ((size_t)d->heads_k * d->head_dim_k +
          (size_t)d->heads_v * d->head_dim_v) *
         4;
}

size_t clattn__th_local_bytes(const clattn_th_desc *d,
                              const clattn__th_plan *pl) {
  if (pl->variant == 2)
    return local_bytes(d, pl->kt);
  if (pl->scheme == 3) /* at least one float: a __local argument has a size */
    return (size_t)(pl->wg ? pl->wg : 1) * (size_t)pl->rb * (size_t)d->heads *
           (size_t)(pl->keep ? pl->keep : 1) * 4;
  return 0;
}

/* Scheme 3's kept keys: the whole tiles of every work-item's logits that
 * the local memory holds, up to the tiles covering n_kv. */
static int keys_kept(const clattn__target *t, const clattn_th_desc *d,
                     int items, int rb, int kb) {
  const unsigned long long tile =
      (unsigned long long)items * rb * d->heads * kb * 4;
  const unsigned long long need = ((unsigned long long)d->n_kv + kb - 1) / kb;
  const unsigned long long fit = clattn__local_budget(t) / tile;
  return (int)(need < fit ? need : fit) * kb;
}

/* The scheme that issues less work per visible pair of 1 and 2; ties go
 * to the general two-pass one. */
static int lighter_scheme(const clattn_th_desc *d) {
  return clattn__th_pair_work(d, 1) < clattn__th_pair_work(d, 2) ? 1 : 2;
}

/* Variant 1's default positions per work-item: 16 with 32 vector
 * registers of 16 floats (each staged K and V line then feeds twice the
 * positions of attn_fwd_reg's tile, as every item streams all heads'
 * tiles), else 4; fewer where their q rows and accumulators grow past
 * ~128 KiB, a share of a core's L2: the reuse of each K and V line
 * streamed matters more than keeping them in L1. */
static int rows_default(const clattn__target *t, const clattn_th_desc *d,
                        int scheme) {
  int rb = t->vec_width >= 16 && t->vregs >= 32 ? 16 : 4;
  while (rb > 1 && (long)rb * item_floats(d, scheme) > 32768)
    rb /= 2;
  return rb;
}

/* Variant 1's automatic scheme: scheme 3 (pass 1's logits kept in local
 * memory for as many keys as it holds, the rest recomputed as in scheme 2)
 * unless scheme 1 issues less work per visible pair or no tile fits; else
 * the lighter of schemes 1 and 2. */
static void pick_reg(const clattn__target *t, const clattn_th_desc *d,
                     const clattn__th_tunables *p, clattn__th_plan *pl) {
  const int lighter = lighter_scheme(d);
  if (p->scheme == 3 || (!p->scheme && clattn__th_pair_work(d, 3) <=
                                           clattn__th_pair_work(d, lighter))) {
    pl->rb = p->rows ? p->rows : rows_default(t, d, 3);
    pl->keep = keys_kept(t, d, p->wg ? p->wg : 1, pl->rb, pl->kb);
    if (p->scheme == 3 || pl->keep > 0) {
      pl->scheme = 3;
      return;
    }
  }
  pl->scheme = p->scheme ? p->scheme : lighter;
  pl->rb = p->rows ? p->rows : rows_default(t, d, pl->scheme);
}

clattn_status clattn__th_plan_make(const clattn__target *t,
                                   const clattn_th_desc *d,
                                   const clattn__params *values,
                                   clattn__th_plan *pl, char *why, size_t cap) {
  clattn__th_tunables own;
  const clattn__th_tunables *p = &own;
  clattn__tunables_get(&own, sizeof own, values);
  *pl = (clattn__th_plan){0, 0, 0, 0, 0, 0, 0, 0};
  pl->variant = p->variant                         ? p->variant
                : t->cpu_vectors || p->scheme == 3 ? 1
                                                   : 2;
  /* a tile of one key that does not fit local memory: the register
   * kernel still runs it */
  if (!p->variant && pl->variant == 2 &&
      local_bytes(d, 1) > clattn__local_budget(t))
    pl->variant = 1;
  if (pl->variant == 2 && p->scheme == 3) {
    snprintf(why, cap,
             "params: scheme 3 (logits in local memory) runs on "
             "variant 1 only");
    return CLATTN_ERR_INVALID_ARG;
  }
  if (pl->variant == 1) {
    /* 32 keys a tile with 32 vector registers of 16 floats, else 16 */
    const int wide = t->vec_width >= 16 && t->vregs >= 32;
    pl->kb = p->keys ? p->keys : wide ? 32 : 16;
    pl->wg = p->wg;
    clattn_status rc =
        clattn__plan_staged(d->n_kv, p->rows ? p->rows : rows_default(t, d, 2),
                            pl->kb, &pl->ld, why, cap);
    if (rc == CLATTN_OK)
      pick_reg(t, d, p, pl);
    return rc;
  }
  pl->scheme = p->scheme ? p->scheme : lighter_scheme(d);
  pl->wg = p->wg ? p->wg : (int)(t->max_wg < 64 ? t->max_wg : 64);
  if (p->keys) {
    pl->kt = p->keys;
  } else {
    pl->kt = 16;
    while (pl->kt > 1 && local_bytes(d, pl->kt) > clattn__local_budget(t))
      pl->kt /= 2;
  }
  if (pl->kt > 256) {
    snprintf(why, cap, "params: variant 2 keys per tile must be <= 256");
    return CLATTN_ERR_INVALID_ARG;
  }
  return CLATTN_OK;
}

int clattn__th_fits(const clattn__target *t, const clattn_th_desc *d,
                    const clattn__th_plan *pl, char *why, size_t cap) {
  return clattn__plan_fits(t, pl->wg, clattn__th_local_bytes(d, pl), why, cap);
}

clattn__params clattn__th_resolved(const clattn__th_plan *pl) {
  const clattn__th_tunables r =
      pl->variant == 1
          ? (clattn__th_tunables){1, pl->rb, pl->kb, pl->wg == 1 ? 0 : pl->wg,
                                  pl->scheme}
          : (clattn__th_tunables){2, 0, pl->kt, pl->wg, pl->scheme};
  return clattn__tunables_put(&r, sizeof r);
}
