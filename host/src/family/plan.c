/* plan.c - kernel shapes of each call (see plan.h). */
#include "family/plan.h"
#include "family/tunables.h"

#include <stdio.h>
#include <string.h>

int clattn__vec_width(int n) {
  for (int w = 16; w > 1; w /= 2)
    if (n % w == 0)
      return w;
  return 1;
}

/* attn_fwd_reg's QK^T loop keeps live, in vectors of vw floats, the rb x kb
 * score accumulators, one kb-key row of K^T and the broadcast q element.
 * Returns the share of the accumulator vectors beyond vregs registers
 * (0: everything fits). */
static double qk_spill(int rb, int kb, int vw, int vregs) {
  const int acc = rb * ((kb + vw - 1) / vw);
  const int over = acc + acc / rb + 1 - vregs;
  return over <= 0 ? 0.0 : over >= acc ? 1.0 : (double)over / acc;
}

/* Local memory a kernel may use: the device's, less a margin for what the
 * compiler adds. */
clattn_status clattn__plan_staged(int n_kv, int rb, int kb, int *ld, char *why,
                                  size_t cap) {
  if (kb % 16 != 0 || kb > 256 || rb > 32) {
    snprintf(why, cap,
             "params: variant 1 needs keys a multiple of 16 up to 256 "
             "(got %d) and rows <= 32 (got %d)",
             kb, rb);
    return CLATTN_ERR_INVALID_ARG;
  }
  /* covers every tile, and an odd number of 64-byte lines so the rows of a
   * K^T tile spread over the cache sets */
  long row = ((long)n_kv + kb - 1) / kb * kb;
  if ((row / 16) % 2 == 0)
    row += 16;
  if (row > 0x7fffffffL) {
    snprintf(why, cap, "n_kv (%d) too large", n_kv);
    return CLATTN_ERR_SHAPE;
  }
  *ld = (int)row;
  return CLATTN_OK;
}

unsigned long long clattn__local_budget(const clattn__target *t) {
  return t->local_mem > 1024 ? t->local_mem - 1024 : 0;
}

clattn_status clattn__plan_prefill(const clattn__target *t,
                                   const clattn_attn_desc *d,
                                   const clattn__params *values,
                                   clattn__prefill_plan *pl, char *why,
                                   size_t cap) {
  clattn__prefill_tunables own;
  const clattn__prefill_tunables *p = &own;
  clattn__tunables_get(&own, sizeof own, values);
  const int dk = d->head_dim_k, dv = d->head_dim_v;
  *pl = (clattn__prefill_plan){0, 0, 0, 0, 0, 0, 0, 0, 0};
  pl->variant = p->variant ? p->variant : t->cpu_vectors ? 1 : 2;
  if (pl->variant == 3) {
    /* a work-group is one subgroup (sg lanes, or the device's own size,
     * asked of the device with a first guess of wg items) over rows query
     * rows (8 by default: a key a lane scores them all) */
    pl->rb = p->rows ? p->rows : 8;
    pl->sg = p->sg;
    pl->wg_auto = !p->sg && !p->wg;
    return clattn__plan_subgroup(t, p->sg, p->wg, pl->rb, dv, &pl->wg, why,
                                 cap);
  }
  if (pl->variant == 1) {
    /* Default tile: the most rows (a power of two) whose QK^T
     * accumulators fit the vector registers (a spilled accumulator costs a
     * store per FMA) over 16..64 keys (a multiple of 16).  AVX-512 (16
     * floats, 32 registers): 8 rows x 2 vectors of keys, whatever the head
     * dims, so that each key vector loaded serves 8 rows (bench/RESULTS.md,
     * prefill).  Else 4 vectors of keys and up to 4 rows (2 for wide
     * heads, whose q rows are large): AVX2 (8 floats, 16 registers)
     * 2 x 32, AArch64 (4 floats, 32 registers) 4 x 16. */
    const int vw = t->vec_width > 1 ? t->vec_width : 4;
    const int vr = t->vregs > 0 ? t->vregs : 16;
    const int wide = vw >= 16 && vr >= 32;
    int kb = wide ? 2 * vw : 4 * vw;
    kb = kb < 16 ? 16 : kb > 64 ? 64 : kb / 16 * 16;
    if (dk > 128 && kb > 32)
      kb = 32;
    int rb = wide ? 8 : dk + dv <= 192 ? 4 : 2;
    while (rb > 1 && qk_spill(rb, kb, vw, vr) > 0.0)
      rb /= 2;
    pl->rb = p->rows ? p->rows : rb;
    pl->kb = p->keys ? p->keys : kb;
    if (t->cpu_vectors)
      pl->spill = qk_spill(pl->rb, pl->kb, vw, vr);
    pl->wg = p->wg;
    return clattn__plan_staged(d->n_kv, pl->rb, pl->kb, &pl->ld, why, cap);
  }
  /* variant 2: one row per work-item, K/V tiles in local memory */
  pl->wg = p->wg ? p->wg : (int)(t->max_wg < 64 ? t->max_wg : 64);
  pl->rb = pl->wg;
  if (p->keys) {
    pl->kt = p->keys;
  } else {
    pl->kt = 32;
    while (pl->kt > 1 &&
           (unsigned long long)pl->kt * (dk + dv) * 4 > clattn__local_budget(t))
      pl->kt /= 2;
  }
  if (pl->kt > 256) {
    snprintf(why, cap, "params: variant 2 keys per tile must be <= 256");
    return CLATTN_ERR_INVALID_ARG;
  }
  return CLATTN_OK;
}

size_t clattn__prefill_local_bytes(const clattn_attn_desc *d,
                                   const clattn__prefill_plan *pl) {
  return pl->variant == 2 ? (size_t)pl->kt * (d->head_dim_k + d->head_dim_v) * 4
         : pl->variant == 3 ? (size_t)pl->rb * (size_t)d->head_dim_k * 4 /* q */
                            : 0;
}

/* Variant 2's local memory: q, the K and V tiles, the
 * tile's probabilities, three floats of softmax state per head, and with
 * ALiBi a slope per head. */
static size_t decode_local(const clattn_decode_desc *d, int kt) {
  const size_t g = (size_t)(d->heads_q / d->heads_kv);
  const size_t dk = (size_t)d->head_dim_k, dv = (size_t)d->head_dim_v;
  const size_t state = (d->alibi_slopes != NULL ? 4u : 3u) * g;
  return (g * dk + (size_t)kt * (dk + dv + g) + state) * 4;
}

size_t clattn__decode_local_bytes(const clattn_decode_desc *d,
                                  const clattn__decode_plan *pl) {
  return pl->variant == 2   ? decode_local(d, pl->kb)
         : pl->variant == 3 ? (size_t)(d->heads_q / d->heads_kv) *
                                  (size_t)d->head_dim_k * 4 /* q */
                            : 0;
}

clattn_status clattn__subgroup_fits(int rows, int dv, int lanes, char *why,
                                    size_t cap) {
  const long acc = (long)rows * ((dv + lanes - 1) / lanes);
  if (acc <= 512)
    return CLATTN_OK;
  snprintf(why, cap,
           "params: variant 3 in subgroups of %d lanes keeps %ld "
           "accumulators a lane (%d rows x %d value dims / %d lanes; the "
           "limit is 512)",
           lanes, acc, rows, dv, lanes);
  return CLATTN_ERR_UNSUPPORTED;
}

clattn_status clattn__plan_subgroup(const clattn__target *t, int sg, int wg,
                                    int rows, int dv, int *lanes, char *why,
                                    size_t cap) {
  if (!t->subgroups) {
    snprintf(why, cap,
             "params: variant 3 needs subgroups (cl_khr_subgroups or "
             "cl_intel_subgroups), which the device does not report");
    return CLATTN_ERR_UNSUPPORTED;
  }
  /* the device's own size is at most the guess: a guess that fits the
   * accumulators may still be corrected to a size that does not, which
   * the launch checks again (clattn__subgroup_kernel) */
  *lanes = sg ? sg : wg ? wg : t->max_wg < 64 ? (int)t->max_wg : 64;
  if (sg == 0)
    return clattn__subgroup_fits(rows, dv, *lanes, why, cap);
  if (t->sg_sizes == 0) {
    snprintf(why, cap,
             "params: sg=%d needs cl_intel_required_subgroup_size, which the "
             "device does not report (sg=0: its own size)",
             sg);
    return CLATTN_ERR_UNSUPPORTED;
  }
  if ((sg & (sg - 1)) != 0 || sg > 1024 ||
      !(t->sg_sizes & (1u << __builtin_ctz((unsigned)sg)))) {
    snprintf(why, cap, "params: sg=%d is not a subgroup size the device offers",
             sg);
    return CLATTN_ERR_INVALID_ARG;
  }
  if (wg != 0 && wg != sg) {
    snprintf(why, cap,
             "params: variant 3 runs one subgroup a work-group: wg (%d) must "
             "be sg (%d) or left out",
             wg, sg);
    return CLATTN_ERR_INVALID_ARG;
  }
  return clattn__subgroup_fits(rows, dv, sg, why, cap);
}

clattn_status clattn__plan_decode(const clattn__target *t,
                                  const clattn_decode_desc *d,
                                  const clattn__params *values,
                                  clattn__decode_plan *pl, char *why,
                                  size_t cap) {
  clattn__decode_tunables own;
  const clattn__decode_tunables *p = &own;
  clattn__tunables_get(&own, sizeof own, values);
  const int g = d->heads_q / d->heads_kv;
  const int dk = d->head_dim_k;
  *pl = (clattn__decode_plan){0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  pl->variant = p->variant ? p->variant : t->cpu_vectors ? 1 : 2;
  /* a group too wide for local memory even with 1-key tiles: the
   * register-blocked kernel still runs it */
  if (!p->variant && pl->variant == 2 &&
      decode_local(d, 1) > clattn__local_budget(t))
    pl->variant = 1;
  if (pl->variant == 1) {
    pl->wg = p->wg;
    /* Prefetch (below) unless the caller turns it off: wanted by default
     * on CPUs with 32 vector registers. */
    const int pf_wanted =
        p->prefetch == 2 || (p->prefetch == 0 && t->vregs >= 32);
    /* P V passes after the first head's: with 16-bit storage, whose
     * every V load is also a conversion, as many heads per pass (up to 4)
     * as keep their accumulators and one converted V row in the vector
     * registers, so one load serves them all.  In f32, where a V load from
     * L1 costs next to nothing, 2 heads a pass on CPUs that want prefetch,
     * so that two passes remain to carry the prefetches; GQA-4, which runs
     * without prefetch, keeps 2 as well, as a pass a head would only add
     * passes over the block's V rows.  1 where the registers are unknown or
     * few (AVX2).  Figures: bench/RESULTS.md, decode defaults. */
    const int es = (int)clattn_dtype_size(d->dtype);
    const int most = es == 2 ? 4 : pf_wanted ? 2 : 1;
    const int heads = es == 2 ? g - 1 : g - 2;
    int pvh = 1;
    if (t->vregs > 0) {
      const int vwv = clattn__vec_width(d->head_dim_v);
      const int per =
          d->head_dim_v / vwv * ((vwv + t->vec_width - 1) / t->vec_width);
      while (pvh < most && 2 * pvh <= heads &&
             (2 * pvh + 1) * per + 1 <= t->vregs)
        pvh *= 2;
    }
    /* P V by slices of the value dims, all the group's heads a pass
     * (cl/decode.cl's SLICES), for groups of 8 scored in lanes with head
     * dims up to 64 on CPUs with 32 vector registers: the 8 accumulators
     * of a slice fit beside the scoring.  Wider rows keep the passes by
     * heads, which carry the next block's prefetch, and 16 heads would
     * spill (bench/RESULTS.md, decode defaults). */
    if (g == 8 && dk % 8 == 0 && dk <= 64 && d->head_dim_v <= 64 &&
        t->vregs >= 32)
      pvh = g;
    /* params rows: at most the heads after the first, or the whole group
     * for slices (an override such as "decode: rows=4" also serves calls
     * with smaller groups: 4 heads a pass for G > 4, slices for G <= 4) */
    pl->pvh = p->rows ? p->rows : pvh;
    if (pl->pvh > g)
      pl->pvh = g;
    /* Prefetch of the next block during the P V passes after the first
     * (cl/decode.cl's pf_step; none without such a pass): by default only
     * for groups of more than 4 heads with two passes or more, on CPUs
     * with 32 vector registers: smaller groups, GQA-4 included, have too
     * little P V work after the first pass to hide it in (bench/RESULTS.md,
     * decode defaults).  The tuner tries both (params prefetch). */
    const int passes = (g - 1 + pl->pvh - 1) / pl->pvh;
    pl->pf = g > 1 && pl->pvh < g && pf_wanted &&
             (p->prefetch == 2 || (g > 4 && passes >= 2));
    /* Keys per block: for groups, blocks of ~4 KiB of K (and of V), 16
     * to 64 keys, so that a block stays in L1 while every head of the
     * group reads it; 32 for MHA, which has no other head to share a
     * block; by slices (pvh == g), 16 keys whatever the dtype
     * (bench/RESULTS.md, decode defaults). */
    const int kb4k = 4096 / (dk * es) / 16 * 16;
    pl->kb = p->keys        ? p->keys
             : g == 1       ? 32
             : pl->pvh == g ? 16
             : kb4k < 16    ? 16
             : kb4k > 64    ? 64
                            : kb4k;
    if (pl->kb % 16 != 0 || pl->kb > 256) {
      snprintf(why, cap,
               "params: variant 1 keys per block must be a multiple of 16 "
               "up to 256 (got %d)",
               pl->kb);
      return CLATTN_ERR_INVALID_ARG;
    }
  } else if (pl->variant == 3) {
    /* a work-group is one subgroup: sg lanes, or the device's own size,
     * which the launch asks the device for with a first guess of wg items
     * (64 by default) and runs with (cl/decode.cl, decode_split_sg); a
     * lane's accumulators: G heads x its share of the value dims */
    clattn_status rc = clattn__plan_subgroup(t, p->sg, p->wg, g, d->head_dim_v,
                                             &pl->wg, why, cap);
    if (rc)
      return rc;
    pl->sg = p->sg;
    pl->wg_auto = !p->sg && !p->wg;
    pl->kb = pl->wg;
  } else if (pl->variant == 2) {
    pl->wg = p->wg ? p->wg : (int)(t->max_wg < 64 ? t->max_wg : 64);
    pl->kb = p->keys ? p->keys : 32;
    while (!p->keys && pl->kb > 1 &&
           decode_local(d, pl->kb) > clattn__local_budget(t))
      pl->kb /= 2;
    if (pl->kb > 256) {
      snprintf(why, cap, "params: variant 2 keys per tile must be <= 256");
      return CLATTN_ERR_INVALID_ARG;
    }
  }
  /* Splits: enough independent work-groups for every compute unit (on a
   * CPU two a core: each split costs its first, unprefetched block, its
   * partials and the combine's share, and a step's calls run back to back;
   * GPUs want a few waves), but each split long enough (at least 256 keys)
   * that its partials, g * (dv + 1) floats written and read back by the
   * combine, stay within ~1/16 of the K/V bytes it reads: wide groups
   * (MQA) need longer splits (bench/RESULTS.md, decode defaults). */
  /* With a window a step reads at most W keys of each sequence, which the
   * kernels divide among the splits at run time (cl/decode.cl,
   * split_keys): the splits are planned for those keys. */
  const int span =
      d->window > 0 && d->window < d->capacity ? d->window : d->capacity;
  int s = p->splits;
  if (s == 0) {
    long target = (t->is_cpu ? 2L : 4L) * (long)t->compute_units;
    long units = (long)d->batch * d->heads_kv;
    s = (int)((target + units - 1) / units);
    const long es = (long)clattn_dtype_size(d->dtype);
    long min_chunk = 32L * g * (d->head_dim_v + 1) * 4 /
                     ((long)(dk + d->head_dim_v) * (es ? es : 4));
    if (min_chunk < 256)
      min_chunk = 256;
    /* with prefetch, at least 16 blocks a split: a split's first block
     * is never prefetched */
    if (pl->variant == 1 && pl->pf && min_chunk < 16L * pl->kb)
      min_chunk = 16L * pl->kb;
    int most = (int)((span + min_chunk - 1) / min_chunk);
    if (s > most)
      s = most;
    if (s < 1)
      s = 1;
  }
  if (s > span)
    s = span;
  int chunk = (span + s - 1) / s;
  chunk = (chunk + pl->kb - 1) / pl->kb * pl->kb;
  pl->chunk = chunk;
  /* heads in lanes (cl/decode.cl's LANES): groups of 8, 16, ..., and of 4
   * with head dims up to 64; wider heads of 4 keep rows, whose horizontal
   * sums are then a small share of a score's work (bench/RESULTS.md,
   * decode defaults) */
  pl->lanes =
      pl->variant == 1 && dk % 8 == 0 && (g % 8 == 0 || (g == 4 && dk <= 64));
  pl->splits = (span + chunk - 1) / chunk;
  return CLATTN_OK;
}

int clattn__plan_fits(const clattn__target *t, int wg, size_t local, char *why,
                      size_t cap) {
  if (wg > 0 && (size_t)wg > t->max_wg) {
    snprintf(why, cap, "work-group %d exceeds the device's %zu", wg, t->max_wg);
    return 0;
  }
  if (local > clattn__local_budget(t)) {
    snprintf(why, cap, "needs %zu B of local memory, the device has %llu",
             local, t->local_mem);
    return 0;
  }
  return 1;
}

int clattn__prefill_fits(const clattn__target *t, const clattn_attn_desc *d,
                         const clattn__prefill_plan *pl, char *why,
                         size_t cap) {
  return clattn__plan_fits(t, pl->wg, clattn__prefill_local_bytes(d, pl), why,
                           cap);
}

int clattn__decode_fits(const clattn__target *t, const clattn_decode_desc *d,
                        const clattn__decode_plan *pl, char *why, size_t cap) {
  return clattn__plan_fits(t, pl->wg, clattn__decode_local_bytes(d, pl), why,
                           cap);
}

clattn__params clattn__prefill_resolved(const clattn__prefill_plan *pl) {
  const clattn__prefill_tunables r =
      pl->variant == 1 ? (clattn__prefill_tunables){1, pl->rb, pl->kb,
                                                    pl->wg == 1 ? 0 : pl->wg, 0}
      : pl->variant == 3
          ? (clattn__prefill_tunables){3, pl->rb, 0, pl->wg_auto ? 0 : pl->wg,
                                       pl->sg}
          : (clattn__prefill_tunables){2, 0, pl->kt, pl->wg, 0};
  return clattn__tunables_put(&r, sizeof r);
}

clattn__params clattn__decode_resolved(const clattn__decode_plan *pl) {
  const clattn__decode_tunables r = {
      pl->variant,
      pl->variant == 1 ? pl->pvh : 0,
      pl->variant == 3 ? 0 : pl->kb,
      (pl->variant == 1 && pl->wg == 1) || pl->wg_auto ? 0 : pl->wg,
      pl->splits,
      pl->variant == 1 ? (pl->pf ? 2 : 1) : 0,
      pl->variant == 3 ? pl->sg : 0};
  return clattn__tunables_put(&r, sizeof r);
}
