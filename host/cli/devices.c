/* devices.c - `clattn devices`: every OpenCL platform and device with the
 * limits the attention kernels depend on.  Indices are printed as "P:D",
 * the selector syntax of clattn_ctx_opts.device, plus the global index
 * "#D" (the "D" form of the selector).  `clattn devices --list` prints the
 * same devices a line each for scripts (the survey).  `clattn families`
 * and `clattn layers` print the library's registries. */
#include "cli.h"
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drop the trailing spaces some drivers leave in info strings. */
static char *trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* A string-valued query, size then data.  Returns a malloc'ed string (the
 * caller frees) or NULL after recording the failure in *failed. */
static char *dev_str(cl_device_id d, cl_device_info what, int *failed) {
  size_t n = 0;
  cl_int err = clGetDeviceInfo(d, what, 0, NULL, &n);
  char *s = err == CL_SUCCESS ? malloc(n + 1) : NULL;
  if (s && clGetDeviceInfo(d, what, n, s, NULL) == CL_SUCCESS) {
    s[n] = '\0';
    return trim(s);
  }
  free(s);
  *failed = 1;
  return NULL;
}

static char *plat_str(cl_platform_id p, cl_platform_info what, int *failed) {
  size_t n = 0;
  cl_int err = clGetPlatformInfo(p, what, 0, NULL, &n);
  char *s = err == CL_SUCCESS ? malloc(n + 1) : NULL;
  if (s && clGetPlatformInfo(p, what, n, s, NULL) == CL_SUCCESS) {
    s[n] = '\0';
    return trim(s);
  }
  free(s);
  *failed = 1;
  return NULL;
}

/* Fixed-size query of exactly `size` bytes. */
static int dev_val(cl_device_id d, cl_device_info what, void *v, size_t size,
                   int *failed) {
  if (clGetDeviceInfo(d, what, size, v, NULL) == CL_SUCCESS)
    return 1;
  *failed = 1;
  return 0;
}

/* Whole-word match in a space-separated extension list. */
static int has_ext(const char *list, const char *ext) {
  size_t n = strlen(ext);
  for (const char *p = list; p && (p = strstr(p, ext)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

static const char *or_q(const char *s) { return s ? s : "?"; }

static void mib(char *buf, size_t len, cl_ulong bytes) {
  if (bytes >= (cl_ulong)1 << 30)
    snprintf(buf, len, "%.1f GiB", (double)bytes / (1 << 30));
  else if (bytes >= (cl_ulong)1 << 20)
    snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
  else
    snprintf(buf, len, "%.1f KiB", (double)bytes / (1 << 10));
}

static const char *type_str(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU)
    return "GPU";
  if (t & CL_DEVICE_TYPE_CPU)
    return "CPU";
  if (t & CL_DEVICE_TYPE_ACCELERATOR)
    return "accelerator";
  return "other";
}

/* Print one device; returns nonzero if any query failed. */
static int print_device(cl_device_id d, cl_uint pi, cl_uint di, int global,
                        int verbose) {
  int failed = 0;
  char *name = dev_str(d, CL_DEVICE_NAME, &failed);
  char *vendor = dev_str(d, CL_DEVICE_VENDOR, &failed);
  char *version = dev_str(d, CL_DEVICE_VERSION, &failed);
  char *cver = dev_str(d, CL_DEVICE_OPENCL_C_VERSION, &failed);
  char *driver = dev_str(d, CL_DRIVER_VERSION, &failed);
  char *ext = dev_str(d, CL_DEVICE_EXTENSIONS, &failed);
  cl_device_type type = 0;
  cl_uint cu = 0, clock = 0, dims = 0, vf = 0, vh = 0;
  size_t wg = 0, wi[8] = {0};
  cl_ulong lmem = 0, gmem = 0, alloc = 0;
  cl_device_local_mem_type ltype = 0;
  char b1[32], b2[32], b3[32];

  printf("  [%u:%u] (#%d) %s\n", pi, di, global, or_q(name));
  printf("    vendor:          %s\n", or_q(vendor));
  if (dev_val(d, CL_DEVICE_TYPE, &type, sizeof type, &failed))
    printf("    type:            %s\n", type_str(type));
  printf("    version:         %s; OpenCL C: %s\n", or_q(version), or_q(cver));
  printf("    driver:          %s\n", or_q(driver));
  if (dev_val(d, CL_DEVICE_MAX_COMPUTE_UNITS, &cu, sizeof cu, &failed) &&
      dev_val(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, &clock, sizeof clock, &failed))
    printf("    compute units:   %u at %u MHz\n", cu, clock);
  if (dev_val(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, &wg, sizeof wg, &failed))
    printf("    max work-group:  %zu\n", wg);
  if (dev_val(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, &dims, sizeof dims,
              &failed) &&
      dims >= 1 && dims <= 8 &&
      dev_val(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, wi, dims * sizeof wi[0],
              &failed)) {
    printf("    max work-items: ");
    for (cl_uint i = 0; i < dims; i++)
      printf(" %zu", wi[i]);
    printf("\n");
  }
  if (dev_val(d, CL_DEVICE_LOCAL_MEM_SIZE, &lmem, sizeof lmem, &failed) &&
      dev_val(d, CL_DEVICE_LOCAL_MEM_TYPE, &ltype, sizeof ltype, &failed)) {
    mib(b1, sizeof b1, lmem);
    printf("    local memory:    %s (type %s)\n", b1,
           ltype == CL_LOCAL    ? "local: dedicated"
           : ltype == CL_GLOBAL ? "global: emulated in RAM"
                                : "none");
  }
  if (dev_val(d, CL_DEVICE_GLOBAL_MEM_SIZE, &gmem, sizeof gmem, &failed) &&
      dev_val(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &alloc, sizeof alloc, &failed)) {
    mib(b2, sizeof b2, gmem);
    mib(b3, sizeof b3, alloc);
    printf("    global memory:   %s, max alloc %s\n", b2, b3);
  }
  if (dev_val(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, &vf, sizeof vf,
              &failed) &&
      dev_val(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, &vh, sizeof vh,
              &failed))
    printf("    preferred vector width: float %u, half %u\n", vf, vh);
  if (ext) {
    printf("    fp16:            %s\n",
           has_ext(ext, "cl_khr_fp16") ? "yes (cl_khr_fp16)" : "no");
    printf("    fp64:            %s\n",
           has_ext(ext, "cl_khr_fp64") ? "yes (cl_khr_fp64)" : "no");
    int khr = has_ext(ext, "cl_khr_subgroups");
    int intel = has_ext(ext, "cl_intel_subgroups");
    printf("    subgroups:       %s%s%s\n", khr || intel ? "yes" : "no",
           khr ? " (cl_khr_subgroups)" : "",
           intel ? " (cl_intel_subgroups)" : "");
    if (verbose)
      printf("    extensions:      %s\n", ext);
  }
  if (failed)
    printf("    (some queries failed; fields not shown or '?')\n");
  free(name);
  free(vendor);
  free(version);
  free(cver);
  free(driver);
  free(ext);
  return failed;
}

/* Every platform into *plats (the caller frees) and their count into *np;
 * CLI_OK, or CLI_FAIL after printing why (`none` is printed on stdout when
 * there are no platforms at all, on stderr with `to_stderr`). */
static int get_platforms(cl_platform_id **plats, cl_uint *np, int to_stderr) {
  *plats = NULL;
  *np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, np);
  if (err == -1001 || (err == CL_SUCCESS && *np == 0)) { /* no ICDs */
    if (to_stderr)
      cli_err("no OpenCL platforms found");
    else
      printf("no OpenCL platforms found\n");
    return CLI_FAIL;
  }
  if (err != CL_SUCCESS) {
    cli_err("clGetPlatformIDs: %s", clattn_cl_errstr(err));
    return CLI_FAIL;
  }
  *plats = cli_alloc(*np, sizeof **plats);
  if (!*plats)
    return CLI_FAIL;
  err = clGetPlatformIDs(*np, *plats, NULL);
  if (err != CL_SUCCESS) {
    cli_err("clGetPlatformIDs: %s", clattn_cl_errstr(err));
    free(*plats);
    *plats = NULL;
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* A field of a --list line: tabs and line breaks become spaces so that
 * the line keeps its four fields. */
static void put_field(const char *s) {
  for (; *s; s++)
    putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

int cli_devices_list(void) {
  cl_uint np = 0;
  cl_platform_id *plats = NULL;
  int rc = get_platforms(&plats, &np, 1);
  for (cl_uint p = 0; rc == CLI_OK && p < np; p++) {
    int failed = 0;
    char *pname = plat_str(plats[p], CL_PLATFORM_NAME, &failed);
    cl_uint nd = 0;
    cl_device_id *devs = NULL;
    cl_int err =
        failed ? CL_SUCCESS
               : clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND)
      nd = 0; /* a platform without devices (Clover here): nothing to list */
    else if (err != CL_SUCCESS)
      failed = 1;
    else if (nd > 0) {
      devs = cli_alloc(nd, sizeof *devs);
      err = devs ? clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL)
                 : CL_OUT_OF_HOST_MEMORY;
      failed = err != CL_SUCCESS;
    }
    for (cl_uint d = 0; !failed && d < nd; d++) {
      cl_device_type type = 0;
      char *name = dev_str(devs[d], CL_DEVICE_NAME, &failed);
      if (!failed &&
          dev_val(devs[d], CL_DEVICE_TYPE, &type, sizeof type, &failed)) {
        printf("%u:%u\t%s\t", p, d,
               type & CL_DEVICE_TYPE_GPU           ? "GPU"
               : type & CL_DEVICE_TYPE_CPU         ? "CPU"
               : type & CL_DEVICE_TYPE_ACCELERATOR ? "ACCEL"
                                                   : "OTHER");
        put_field(pname);
        putchar('\t');
        put_field(name);
        putchar('\n');
      }
      free(name);
    }
    /* a script acts on this list: a device it cannot see is an error,
     * never a shorter list */
    if (failed) {
      cli_err(
          "platform %u (%s): listing its devices failed: %s", p, or_q(pname),
          err != CL_SUCCESS ? clattn_cl_errstr(err) : "an info query failed");
      rc = CLI_FAIL;
    }
    free(devs);
    free(pname);
  }
  free(plats);
  if (rc == CLI_OK && fflush(stdout) != 0) {
    cli_err("writing the list: %s", strerror(errno));
    rc = CLI_FAIL;
  }
  return rc;
}

int cli_devices(int verbose) {
  cl_uint np = 0;
  cl_platform_id *plats = NULL;
  int global = 0;

  if (get_platforms(&plats, &np, 0) != CLI_OK)
    return CLI_FAIL;
  cl_int err;
  for (cl_uint p = 0; p < np; p++) {
    int failed = 0;
    char *pname = plat_str(plats[p], CL_PLATFORM_NAME, &failed);
    char *pvendor = plat_str(plats[p], CL_PLATFORM_VENDOR, &failed);
    char *pver = plat_str(plats[p], CL_PLATFORM_VERSION, &failed);
    printf("platform %u: %s (%s), %s\n", p, or_q(pname), or_q(pvendor),
           or_q(pver));
    free(pname);
    free(pvendor);
    free(pver);

    cl_uint nd = 0;
    err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && nd == 0)) {
      printf("  (no devices)\n");
      continue;
    }
    cl_device_id *devs = NULL;
    if (err == CL_SUCCESS) {
      devs = cli_alloc(nd, sizeof *devs);
      err = devs ? clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL)
                 : CL_OUT_OF_HOST_MEMORY;
    }
    if (err != CL_SUCCESS) {
      printf("  (clGetDeviceIDs failed: %s)\n", clattn_cl_errstr(err));
      free(devs);
      continue;
    }
    for (cl_uint d = 0; d < nd; d++)
      print_device(devs[d], p, d, global++, verbose);
    free(devs);
  }
  free(plats);
  return CLI_OK;
}

/* Shape text ("batch=1 causal=1 ...") as the commands' flags ("--batch 1
 * --causal ..."). */
static void print_flags(const char *shape) {
  char key[64], value[64];
  int used = 0;
  while (sscanf(shape, " %63[^= ]=%63s%n", key, value, &used) == 2) {
    shape += used;
    if (!cli_shape_key_is_flag(key))
      printf(" --%s %s", key, value);
    else if (strcmp(value, "0") != 0)
      printf(" --%s", key);
  }
}

int cli_families(void) {
  for (int i = 0; i < clattn_family_count(); i++) {
    const char *std = clattn_family_standard_shape(i, 0);
    printf("%-10s %s\n", clattn_family_name(i), clattn_family_summary(i));
    printf("%-10s   shape keys: %s\n", "", clattn_family_shape_keys(i));
    clattn_tunable t = {.size = sizeof t};
    for (int j = 0; clattn_family_tunable(i, j, &t) == CLATTN_OK; j++)
      printf("%-10s   tunable %s=%d..%d: %s (0: %s)\n", "", t.name, t.min,
             t.max, t.meaning, t.automatic);
    if (std) {
      printf("%-10s   e.g. clattn explain %s", "", clattn_family_name(i));
      print_flags(std);
      printf("\n");
    }
  }
  return CLI_OK;
}

int cli_layers(void) {
  for (int i = 0; i < clattn_layer_kind_count(); i++)
    printf("%-14s %s\n", clattn_layer_kind_name(i),
           clattn_layer_kind_summary(i));
  return CLI_OK;
}
