/* t4_export.c - tuning rows in Kernel Tuner's T4 results format (schema
 * 1.0.0, kernel_tuner/schema/T4/1.0.0/results-schema.json), so that its
 * tools can read clattn's runs:
 *
 *   {"schema_version": "1.0.0",
 *    "metadata": {"timeunit": "milliseconds", "generator": "clattn", ...},
 *    "results": [{"timestamp": ..., "configuration": {"keys": 32, ...},
 *                 "objectives": ["time"], "times": {"runtimes": [ms]},
 *                 "invalidity": "correct", "correctness": 1,
 *                 "measurements": [{"name": "time", "value": ms,
 *                                   "unit": "ms"}, ...]}, ...]}
 *
 * A row's status maps to the schema's invalidity: ok "correct", wrong
 * "correctness", failed "runtime" ("compile" when its message says the
 * build failed), timeout and slow (stopped after one run far slower than
 * the best) "timeout".  Which device, kernel and shape class a result
 * belongs to goes in its measurements as text, since T4 has no field for
 * them and the configuration holds only tuned parameters. */
#include "db/db.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *invalidity(const clattn_tune_entry *e) {
  if (!strcmp(e->status, "ok"))
    return "correct";
  if (!strcmp(e->status, "wrong"))
    return "correctness";
  if (!strcmp(e->status, "timeout") || !strcmp(e->status, "slow"))
    return "timeout";
  if (strstr(e->message, "build") || strstr(e->message, "compil"))
    return "compile";
  return "runtime";
}

/* A finite number as JSON (T4 has no infinities: null is no number, so
 * callers leave out what is not finite). */
static int put_num(FILE *f, double v) {
  return fprintf(f, "%.17g", v) < 0 ? -1 : 0;
}

/* "name=value ..." as {"name": value, ...}: every value the library
 * writes there is a count. */
static int put_configuration(FILE *f, const char *params) {
  const char *p = params;
  int first = 1;
  if (fputs("{", f) == EOF)
    return -1;
  while (*p) {
    while (*p == ' ')
      p++;
    const char *eq = strchr(p, '=');
    if (*p == '\0' || eq == NULL)
      break;
    char *end = NULL;
    long v = strtol(eq + 1, &end, 10);
    if (fputs(first ? "" : ", ", f) == EOF ||
        clattn__json_fput_str(f, p, (size_t)(eq - p)) != 0 ||
        fputs(": ", f) == EOF)
      return -1;
    if (end != eq + 1 && (*end == ' ' || *end == '\0')) {
      if (fprintf(f, "%ld", v) < 0)
        return -1;
    } else {
      /* not a count: kept as text rather than dropped */
      size_t n = strcspn(eq + 1, " ");
      end = (char *)eq + 1 + n;
      if (clattn__json_fput_str(f, eq + 1, n) != 0)
        return -1;
    }
    first = 0;
    p = end;
  }
  return fputs("}", f) == EOF ? -1 : 0;
}

static int put_text_measurement(FILE *f, const char *name, const char *v) {
  return fprintf(f, ", {\"name\": \"%s\", \"value\": ", name) < 0 ||
                 clattn__json_fput_str(f, v, strlen(v)) != 0 ||
                 fputs(", \"unit\": \"\"}", f) == EOF
             ? -1
             : 0;
}

static int put_result(FILE *f, const clattn_tune_entry *e) {
  const double ms = e->median_s * 1e3;
  const int ok = !strcmp(e->status, "ok");
  if (fputs("    {\"timestamp\": ", f) == EOF ||
      clattn__json_fput_str(f, e->updated, sizeof e->updated) != 0 ||
      fputs(", \"configuration\": ", f) == EOF ||
      put_configuration(f, e->params) != 0 ||
      fputs(", \"objectives\": [\"time\"], \"times\": {\"runtimes\": [", f) ==
          EOF)
    return -1;
  if (e->median_s > 0 && isfinite(ms) && put_num(f, ms) != 0)
    return -1;
  if (fprintf(f,
              "]}, \"invalidity\": \"%s\", \"correctness\": %d, "
              "\"measurements\": [{\"name\": \"time\", \"value\": ",
              invalidity(e), ok ? 1 : 0) < 0 ||
      put_num(f, isfinite(ms) ? ms : 0.0) != 0 ||
      fputs(", \"unit\": \"ms\"}", f) == EOF)
    return -1;
  if (isfinite(e->spread) &&
      (fputs(", {\"name\": \"spread\", \"value\": ", f) == EOF ||
       put_num(f, e->spread) != 0 || fputs(", \"unit\": \"\"}", f) == EOF))
    return -1;
  if (e->predicted_s > 0 && isfinite(e->predicted_s) &&
      (fputs(", {\"name\": \"predicted_time\", \"value\": ", f) == EOF ||
       put_num(f, e->predicted_s * 1e3) != 0 ||
       fputs(", \"unit\": \"ms\"}", f) == EOF))
    return -1;
  if (isfinite(e->max_err) &&
      (fputs(", {\"name\": \"max_error\", \"value\": ", f) == EOF ||
       put_num(f, e->max_err) != 0 || fputs(", \"unit\": \"\"}", f) == EOF))
    return -1;
  if (put_text_measurement(f, "kernel", e->kernel) != 0 ||
      put_text_measurement(f, "shape_class", e->shape_class) != 0 ||
      put_text_measurement(f, "device", e->device) != 0 ||
      put_text_measurement(f, "fingerprint", e->fingerprint) != 0 ||
      put_text_measurement(f, "status", e->status) != 0 ||
      (e->message[0] && put_text_measurement(f, "message", e->message) != 0))
    return -1;
  return fputs("]}", f) == EOF ? -1 : 0;
}

int clattn__t4_write(FILE *f, const clattn_tune_entry *rows, int n) {
  char date[32];
  clattn__db_iso_now(date, sizeof date);
  if (fprintf(f,
              "{\n  \"schema_version\": \"1.0.0\",\n  \"metadata\": "
              "{\"timeunit\": \"milliseconds\", \"generator\": \"clattn\", "
              "\"library_version\": \"%s\", \"exported\": \"%s\"},\n"
              "  \"results\": [",
              clattn_version(), date) < 0)
    return -1;
  for (int i = 0; i < n; i++)
    if (fputs(i ? ",\n" : "\n", f) == EOF || put_result(f, &rows[i]) != 0)
      return -1;
  return fputs(n ? "\n  ]\n}\n" : "]\n}\n", f) == EOF ? -1 : 0;
}
