/* gemm.c - the layers' projections: one CLBlast GEMM, or GEMV rows for
 * short inputs (layer.h clattn__layer_gemm). */
#include "base/clblast_status.h"
#include "family/plan.h"
#include "layer/layer.h"
#include "runtime/runtime.h"

#include <clblast_c.h>

clattn_status clattn__layer_gemm(clattn_ctx *ctx, const char *what, size_t m,
                                 size_t n, size_t k, cl_mem a, cl_mem b,
                                 cl_mem c, cl_event *event)
{
  cl_command_queue q = ctx->queue;
  CLBlastStatusCode s;
  /* Up to CLATTN_LAYER_GEMV_ROWS rows, one GEMV per row: CLBlast's GEMM
   * pads a single row to a whole tile (on PoCL a 1x512x512 GEMM costs
   * about ten times the GEMV), which dominated decode steps. */
  if (m <= CLATTN_LAYER_GEMV_ROWS) {
    /* CLBlast's GEMV computes alpha*A^T x + beta*y even for beta == 0, so
     * a NaN already in y would survive: zero the rows first. */
    const float zero = 0.0f;
    cl_int err = clEnqueueFillBuffer(q, c, &zero, sizeof zero, 0,
                                     m * n * sizeof(float), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return clattn__cl_fail(ctx, err, "clEnqueueFillBuffer(GEMV output)",
                             __FILE__, __LINE__);
    for (size_t r = 0; r < m; r++) {
      /* c[r, :] = b^T a[r, :], b being [k, n] row-major. */
      s = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeYes, k, n, 1.0f,
                       b, 0, n, a, r * k, 1, 0.0f, c, r * n, 1, &q,
                       r + 1 == m ? event : NULL);
      if (s != CLBlastSuccess)
        return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                            "CLBlastSgemv (%s, row %zu, %zux%zu) failed: %s "
                            "(%d)",
                            what, r, k, n, clattn__clblast_status_str(s),
                            (int)s);
    }
    return CLATTN_OK;
  }
  s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                   CLBlastTransposeNo, m, n, k, 1.0f, a, 0, k, b, 0, n, 0.0f,
                   c, 0, n, &q, event);
  if (s != CLBlastSuccess)
    return clattn__fail(ctx, CLATTN_ERR_CLBLAST,
                        "CLBlastSgemm (%s, %zux%zux%zu) failed: %s (%d)", what,
                        m, n, k, clattn__clblast_status_str(s), (int)s);
  return CLATTN_OK;
}
