/* profile.c - clattn_profile_reported: what the device says about itself.
 *
 * From the context's device facts (clattn__devinfo) plus the vendor queries
 * available through extensions:
 *  - cl_nv_device_attribute_query: warp size (CL_DEVICE_WARP_SIZE_NV) and
 *    the compute capability as arch "sm_XY"; compute units are SMs.
 *  - cl_amd_device_attribute_query: wavefront width and SIMDs per CU; arch
 *    is the "gfxNNN" device name when the driver reports one.
 *  - cl_intel_required_subgroup_size: the largest supported subgroup size.
 * CPU devices: wave_width is CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, the
 * float lanes of one SIMD register as the driver sees it (16 with AVX-512,
 * 8 with AVX2).  Anything unknown is 1 (wave_width) or 0.  A vendor query
 * that fails leaves its field unknown: it is optional information.
 *
 * The fingerprint is the 128-bit clattn__hash of
 * "platform|vendor|device|driver|compute_units|clock_mhz" in hex.
 *
 * clattn_profile_for: the stored probe, else a datasheet's ceilings, else
 * the reported profile; with a database, the GEMM rates its tuning rows
 * measured on the device (db/gemm_rates.c). */
#include "base/utf8.h"
#include "base/versioned.h"
#include "runtime/runtime.h"
#include "device/profile.h"
#include "db/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NV_COMPUTE_CAPABILITY_MAJOR 0x4000
#define NV_COMPUTE_CAPABILITY_MINOR 0x4001
#define NV_WARP_SIZE 0x4003
#define AMD_SIMD_PER_COMPUTE_UNIT 0x4040
#define AMD_WAVEFRONT_WIDTH 0x4043
#define INTEL_SUB_GROUP_SIZES 0x4108

/* Whole-word match in a space-separated extension list. */
static int has_ext(const char *list, const char *ext) {
  size_t n = strlen(ext);
  for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

/* The device's extension string, malloc'ed (the caller frees). */
static clattn_status get_extensions(clattn_ctx *ctx, char **out) {
  clattn_status rc = CLATTN_OK;
  size_t n = 0;
  char *s = NULL;
  *out = NULL;
  CLATTN_CL(ctx,
            clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, 0, NULL, &n));
  s = malloc(n + 1);
  if (s == NULL)
    return clattn__fail(ctx, CLATTN_ERR_NOMEM, "out of host memory");
  CLATTN_CL(ctx,
            clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, n, s, NULL));
  s[n] = '\0';
  *out = s;
  s = NULL;
done:
  free(s);
  return rc;
}

/* An optional cl_uint query: 0 when the driver refuses it. */
static cl_uint opt_uint(cl_device_id dev, cl_device_info what) {
  cl_uint v = 0;
  if (clGetDeviceInfo(dev, what, sizeof v, &v, NULL) != CL_SUCCESS)
    return 0;
  return v;
}

/* Largest of the Intel subgroup sizes (0 when unknown). */
static unsigned intel_max_subgroup(cl_device_id dev) {
  size_t sizes[32], n = 0, best = 0;
  if (clGetDeviceInfo(dev, INTEL_SUB_GROUP_SIZES, sizeof sizes, sizes, &n) !=
      CL_SUCCESS)
    return 0;
  n /= sizeof sizes[0];
  for (size_t i = 0; i < n && i < 32; i++)
    if (sizes[i] > best)
      best = sizes[i];
  return best > 4096 ? 0 : (unsigned)best;
}

/* Copy with truncation on a character boundary (a cut UTF-8 character
 * would make every JSON and report of the name invalid), dropping the
 * trailing blanks some drivers leave. */
static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  while (n > 0 && (src[n - 1] == ' ' || src[n - 1] == '\n'))
    n--;
  if (n > cap - 1)
    n = clattn__utf8_cut(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* PoCL names its CPU device "pthread-<LLVM CPU>-<model>" (or "cpu-..."):
 * the LLVM CPU name ("skylake-avx512", "znver3") is the architecture, up
 * to the hyphen before the model name (which starts with a capital). */
static void cpu_arch(const char *name, char *out, size_t cap) {
  const char *s = strncmp(name, "pthread-", 8) == 0 ? name + 8
                  : strncmp(name, "cpu-", 4) == 0   ? name + 4
                                                    : NULL;
  if (s == NULL)
    return;
  const char *end = NULL;
  for (const char *c = s; *c; c++)
    if (*c == '-' && c[1] && !islower((unsigned char)c[1]) &&
        !isdigit((unsigned char)c[1]))
      end = c;
  if (end && end > s)
    snprintf(out, cap, "%.*s", (int)(end - s), s);
}

void clattn__fingerprint(const clattn__devinfo *d, char *out, size_t cap) {
  char key[1024];
  char hex[CLATTN_HASH_HEX];
  clattn__hash h = clattn__hash_init();
  snprintf(key, sizeof key, "%s|%s|%s|%s|%u|%u", d->platform, d->vendor,
           d->name, d->driver, (unsigned)d->compute_units,
           (unsigned)d->clock_mhz);
  clattn__hash_str(&h, key);
  clattn__hash_hex(&h, hex);
  copy_str(out, cap, hex);
}

static clattn_status profile_reported_unlocked(clattn_ctx *ctx,
                                               clattn_profile *out) {
  clattn_status rc = clattn__ctx_check(ctx);
  char *ext = NULL;
  if (rc != CLATTN_OK)
    return rc;
  if (out == NULL)
    return clattn__fail(ctx, CLATTN_ERR_INVALID_ARG, "out is NULL");
  memset(out, 0, sizeof *out);
  const clattn__devinfo *d = &ctx->dev;
  CLATTN_TRY(get_extensions(ctx, &ext));
  out->source = CLATTN_PROFILE_REPORTED;
  clattn__fingerprint(d, out->fingerprint, sizeof out->fingerprint);
  copy_str(out->name, sizeof out->name, d->name);
  copy_str(out->vendor, sizeof out->vendor, d->vendor);
  copy_str(out->platform, sizeof out->platform, d->platform);
  copy_str(out->driver, sizeof out->driver, d->driver);
  out->is_cpu = (d->type & CL_DEVICE_TYPE_CPU) != 0;
  out->compute_units = d->compute_units;
  out->clock_mhz = d->clock_mhz;
  out->wave_width = 1;
  out->global_mem_bytes = d->global_mem;
  out->cache_bytes = d->global_cache;
  out->local_mem_bytes = d->local_mem;
  out->max_wg = d->max_wg;
  out->has_fp16 = d->has_fp16;
  out->has_subgroups = d->has_subgroups;

  if (has_ext(ext, "cl_nv_device_attribute_query")) {
    cl_uint warp = opt_uint(ctx->device, NV_WARP_SIZE);
    cl_uint major = opt_uint(ctx->device, NV_COMPUTE_CAPABILITY_MAJOR);
    cl_uint minor = opt_uint(ctx->device, NV_COMPUTE_CAPABILITY_MINOR);
    if (warp > 0)
      out->wave_width = warp;
    if (major > 0)
      snprintf(out->arch, sizeof out->arch, "sm_%u%u", (unsigned)major,
               (unsigned)minor);
  } else if (has_ext(ext, "cl_amd_device_attribute_query")) {
    cl_uint wave = opt_uint(ctx->device, AMD_WAVEFRONT_WIDTH);
    if (wave > 0)
      out->wave_width = wave;
    out->simds_per_cu = opt_uint(ctx->device, AMD_SIMD_PER_COMPUTE_UNIT);
    if (strncmp(d->name, "gfx", 3) == 0) { /* "gfx90a:sramecc+:xnack-" */
      size_t n = strcspn(d->name, ":");
      snprintf(out->arch, sizeof out->arch, "%.*s", (int)n, d->name);
    }
  } else if (has_ext(ext, "cl_intel_required_subgroup_size")) {
    unsigned sg = intel_max_subgroup(ctx->device);
    if (sg > 0)
      out->wave_width = sg;
  }
  if (out->is_cpu && out->wave_width == 1) {
    cl_uint vf = opt_uint(ctx->device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
    if (vf > 0)
      out->wave_width = vf;
  }
  if (out->is_cpu && !out->arch[0])
    cpu_arch(d->name, out->arch, sizeof out->arch);
done:
  free(ext);
  return rc;
}

/* Case-insensitive: does a datasheet name and the device name share the
 * model?  The datasheet name must contain every word of the device's
 * product name that has a digit ("A100", "MI300X", "4090", "A770"). */
static int same_model(const char *sheet, const char *dev) {
  int words = 0;
  const char *p = dev;
  while (*p) {
    while (*p == ' ' || *p == '-' || *p == '(' || *p == ')')
      p++;
    size_t n = strcspn(p, " -()");
    if (n == 0)
      break;
    int digit = 0;
    for (size_t i = 0; i < n; i++)
      digit |= p[i] >= '0' && p[i] <= '9';
    if (digit && n >= 3) {
      char w[64];
      snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
      int found = 0;
      for (const char *q = sheet; *q && !found; q++)
        found = strncasecmp(q, w, strlen(w)) == 0;
      if (!found)
        return 0;
      words++;
    }
    p += n;
  }
  return words > 0;
}

/* The GEMM rates of db's tuning rows for the profile's device; derived at
 * each read rather than stored, so a later tuning run counts at once. */
static clattn_status add_gemm_rates(clattn_ctx *ctx, clattn_db *db,
                                    clattn_profile *out) {
  clattn_status rc =
      clattn__db_gemm_rates(db, out->fingerprint, out->gemm_rates,
                            CLATTN_PROFILE_GEMM_RATES, &out->n_gemm_rates);
  if (rc == CLATTN_ERR_NOMEM)
    return clattn__fail(ctx, rc, "reading the GEMM rates: out of host memory");
  if (rc != CLATTN_OK)
    return clattn__fail(ctx, rc, "reading the GEMM rates: %s",
                        clattn_db_errmsg(db));
  return CLATTN_OK;
}

static clattn_status profile_from(clattn_ctx *ctx, clattn_db *db,
                                  clattn_profile *out) {
  clattn_status rc = clattn__profile_reported(ctx, out);
  if (rc != CLATTN_OK)
    return rc;
  clattn_profile p = {.size = sizeof p}; /* through the public API */
  char stale[sizeof out->note] = "";
  if (db != NULL) {
    rc = clattn_db_get_profile(db, out->fingerprint, &p);
    if (rc == CLATTN_OK && p.probe_method > 0 &&
        p.probe_method < CLATTN_PROBE_METHOD) {
      snprintf(stale, sizeof stale,
               "the stored probe of this device (%.20s) used probe method "
               "%d, which this library (method %d) does not use: run "
               "'clattn probe' again",
               p.note, p.probe_method, CLATTN_PROBE_METHOD);
      rc = CLATTN_ERR_NOT_FOUND;
    } else if (rc == CLATTN_OK) {
      /* limits the probe does not measure come from the device itself */
      p.cache_bytes = out->cache_bytes;
      *out = p;
      return CLATTN_OK;
    }
    if (rc != CLATTN_ERR_NOT_FOUND)
      return clattn__fail(ctx, rc, "reading the profile: %s",
                          clattn_db_errmsg(db));
  }
  for (int i = 0; !out->is_cpu && i < clattn_datasheet_count(); i++) {
    if (clattn__datasheet(i, &p) != CLATTN_OK || !same_model(p.name, out->name))
      continue;
    /* the datasheet's ceilings, the device's own identity and limits */
    clattn_profile r = *out;
    *out = p;
    memcpy(out->fingerprint, r.fingerprint, sizeof r.fingerprint);
    out->local_mem_bytes = r.local_mem_bytes;
    out->max_wg = r.max_wg;
    out->compute_units = r.compute_units;
    if (r.cache_bytes)
      out->cache_bytes = r.cache_bytes;
    break;
  }
  if (stale[0]) { /* after the datasheet's sources, if any */
    const size_t len = strlen(out->note);
    snprintf(out->note + len, sizeof out->note - len, "%s%s", len ? "; " : "",
             stale);
  }
  return CLATTN_OK;
}

static clattn_status profile_for_unlocked(clattn_ctx *ctx, clattn_db *db,
                                          clattn_profile *out) {
  clattn_status rc = profile_from(ctx, db, out);
  if (rc == CLATTN_OK && db != NULL)
    rc = add_gemm_rates(ctx, db, out);
  return rc;
}

clattn_status clattn__profile_reported(clattn_ctx *ctx, clattn_profile *out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = profile_reported_unlocked(ctx, out);
  clattn__ctx_leave(locked);
  return rc;
}

clattn_status clattn__profile_for(clattn_ctx *ctx, clattn_db *db,
                                  clattn_profile *out) {
  clattn_ctx *locked = clattn__ctx_enter(ctx);
  clattn_status rc = profile_for_unlocked(ctx, db, out);
  clattn__ctx_leave(locked);
  return rc;
}

/* The public forms: the caller's versioned out written from the library's
 * own; a NULL out is left to the internal ones' checks. */
static int out_unset(clattn_ctx *ctx, const clattn_profile *out,
                     clattn_status *rc) {
  if (out == NULL || clattn__struct_size(out) >= sizeof(size_t))
    return 0;
  *rc = clattn__ctx_check(ctx);
  if (*rc == CLATTN_OK)
    *rc = clattn__fail_outside(ctx, CLATTN_ERR_INVALID_ARG,
                               "clattn_profile.size is 0: set it to "
                               "sizeof(clattn_profile)");
  return 1;
}

clattn_status clattn_profile_reported(clattn_ctx *ctx, clattn_profile *out) {
  clattn_profile own;
  char why[128];
  clattn_status rc;
  if (out_unset(ctx, out, &rc))
    return rc;
  memset(&own, 0, sizeof own);
  rc = clattn__profile_reported(ctx, out ? &own : NULL);
  if (out)
    clattn__struct_out(out, &own, sizeof own, "clattn_profile", why,
                       sizeof why);
  return rc;
}

clattn_status clattn_profile_for(clattn_ctx *ctx, clattn_db *db,
                                 clattn_profile *out) {
  clattn_profile own;
  char why[128];
  clattn_status rc;
  if (out_unset(ctx, out, &rc))
    return rc;
  memset(&own, 0, sizeof own);
  rc = clattn__profile_for(ctx, db, out ? &own : NULL);
  if (out)
    clattn__struct_out(out, &own, sizeof own, "clattn_profile", why,
                       sizeof why);
  return rc;
}
