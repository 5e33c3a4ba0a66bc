/* model_call.c - the model's dispatch (family.h): the same validation as
 * a call, the plan the library would choose on the profile's target, the
 * family's own costs, summed by the model's arithmetic. */
#include "base/versioned.h"
#include "family/family.h"
#include "model/model.h"

#include <string.h>

clattn_status clattn__model(const clattn__family *F, const void *desc,
                            const clattn__params *p, const int *ints,
                            const clattn_profile *prof,
                            clattn_prediction *out) {
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  double dram_reads[CLATTN_MODEL_MAX_KERNELS] = {0};
  if (out == NULL)
    return CLATTN_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  if (prof == NULL || desc == NULL)
    return clattn__model_fail(out, CLATTN_ERR_INVALID_ARG,
                              "desc or profile is NULL");
  clattn_status rc = F->check(desc, out->errmsg, sizeof out->errmsg);
  if (rc)
    return rc;
  const clattn__target t = clattn__target_of_profile(prof);
  if ((rc = F->plan(&t, desc, p, plan, out->errmsg, sizeof out->errmsg)))
    return rc;
  const clattn__params resolved = F->resolved(plan);
  clattn__params_format(F, &resolved, out->params, sizeof out->params);
  if ((rc = F->cost(desc, plan, ints, prof, out, dram_reads)))
    return rc;
  clattn__model_finish(out, dram_reads, prof);
  return CLATTN_OK;
}

int clattn__predict(const clattn__family *F, const void *desc,
                    const clattn__params *p, const clattn_profile *prof,
                    double *t_pred, double *t_roof) {
  clattn_prediction pr;
  if (clattn__model(F, desc, p, NULL, prof, &pr) != CLATTN_OK)
    return 0;
  *t_pred = pr.total.t_pred;
  if (t_roof)
    *t_roof = pr.total.t_memory > pr.total.t_compute ? pr.total.t_memory
                                                     : pr.total.t_compute;
  return 1;
}

clattn_status clattn__model_in(const clattn_profile **prof,
                               clattn_profile *own_prof,
                               const clattn_prediction *out,
                               clattn_prediction *own) {
  memset(own, 0, sizeof *own);
  if (out == NULL || clattn__struct_size(out) < sizeof(size_t))
    return CLATTN_ERR_INVALID_ARG;
  return clattn__struct_in_ptr((const void **)prof, own_prof, sizeof *own_prof,
                               "clattn_profile", own->errmsg,
                               sizeof own->errmsg);
}

clattn_status clattn__model_out(clattn_status rc, const clattn_prediction *own,
                                clattn_prediction *out) {
  char why[128];
  if (out != NULL)
    clattn__struct_out(out, own, sizeof *own, "clattn_prediction", why,
                       sizeof why);
  return rc;
}
