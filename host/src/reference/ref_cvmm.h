/* ref_cvmm.h - independent plain-C reference of SwitchHead's expert-routed
 * GEMM (spec 6, Decision 6; host/src/family/cvmm.h) and of a plain GEMM:
 * straightforward loops, double accumulation, no OpenCL, no library
 * code. */
#ifndef CLATTN_REF_CVMM_H
#define CLATTN_REF_CVMM_H

/* Routing of row r: for each head h, the logits l[e] = sel_x[r, :] .
 * w_sel[:, h*E + e] (w_sel [sel_inner, H*E] row-major) and the topk
 * experts of the largest logits, a tie going to the lower index; their
 * raw sigmoid gates 1 / (1 + exp(-l)).  expert and gate: [rows, H, topk],
 * slots in descending order of the logit. */
void ref_cvmm_route(int rows, int heads, int experts, int topk, int sel_inner,
                    const float *sel_x, const float *w_sel, int *expert,
                    double *gate);

/* mode 1 (SPLIT): out [rows, H*N], out[r, h*N + c] = sum over the chosen
 * e of gate * (a[r, :] w[h, e])[c], a [rows, K];
 * mode 2 (SUM): out [rows, N], out[r, c] = sum over h and the chosen e of
 * gate * (a[r, h*K .. h*K+K-1] w[h, e])[c], a [rows, H*K].
 * w [H, E, K, N] row-major.  gate 0 routes (ref_cvmm_route); gate 1 has
 * one expert, gate 1, and reads neither sel_x nor w_sel. */
void ref_cvmm(int rows, int K, int N, int heads, int experts, int topk,
              int sel_inner, int mode, int gate, const float *a,
              const float *sel_x, const float *w_sel, const float *w,
              float *out);

/* out [m, n] = a [m, k] w [k, n], row-major. */
void ref_gemm(int m, int n, int k, const float *a, const float *w, float *out);

#endif
