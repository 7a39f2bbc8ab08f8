/* Collective parameters read from Kineto args and resolved onto the NCCL
 * kernels at ingest (ingest/readers/kineto.c comm_args, lib/collectives.c). */
#include <string.h>

#include "ingest/kineto.h"
#include "lib/collectives.h"
#include "lib/model.h"
#include "lib/tree.h"
#include "tests/unit/unit.h"

/* Two calls on one rank: an all-reduce whose parameters sit on record_param_comms
 * two levels above the launch (PyTorch 2.0), and an all-gather whose kernel carries
 * them itself (2.1+); a third NCCL kernel has none (PyTorch 1.x), and a GEMM is no
 * collective. */
static const char trace[] =
    "{\"distributedInfo\": {\"rank\": 3, \"world_size\": 4}, \"traceEvents\": [\n"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":30,"
    " \"args\":{\"Collective name\":\"all_reduce\",\"Process Group Name\":\"0\",\"Process Group Description\":"
    "\"default_pg\",\"Process Group Ranks\":\"[0, 1, 2, 3]\",\"In msg nelems\":1024,\"Out msg nelems\":1024,"
    "\"dtype\":\"BFloat16\",\"Group size\":4,\"Seq\":7}},\n"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:all_reduce\",\"pid\":1,\"tid\":1,\"ts\":12,\"dur\":20},\n"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":14,\"dur\":5,"
    " \"args\":{\"correlation\":1}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)\",\"pid\":0,"
    " \"tid\":20,\"ts\":20,\"dur\":50,\"args\":{\"device\":0,\"stream\":20,\"correlation\":1}},\n"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":50,\"dur\":5,"
    " \"args\":{\"correlation\":2}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllGather_RING_LL(ncclDevComm*)\",\"pid\":0,"
    " \"tid\":20,\"ts\":80,\"dur\":10,\"args\":{\"device\":0,\"stream\":20,\"correlation\":2,"
    " \"Collective name\":\"_allgather_base\",\"Process Group Name\":\"1\",\"In msg nelems\":8,"
    " \"Out msg nelems\":32,\"dtype\":\"Float\",\"Group size\":4,\"Seq\":\"2\"}},\n"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":60,\"dur\":5,"
    " \"args\":{\"correlation\":3}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)\",\"pid\":0,"
    " \"tid\":20,\"ts\":95,\"dur\":10,\"args\":{\"device\":0,\"stream\":20,\"correlation\":3}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"volta_sgemm\",\"pid\":0,\"tid\":7,\"ts\":30,\"dur\":60,"
    " \"args\":{\"device\":0,\"stream\":7}}\n"
    "]}";

static const tr_comm_info *comm_of_kernel(const tr_trace *t, const char *prefix)
{
    for (size_t i = 0; i < t->comms.n; i++) {
        const tr_event *e = &t->events.v[t->comms.v[i].event];
        if (e->kind == TR_KIND_KERNEL && !strncmp(tr_str_of(t, e->name), prefix, strlen(prefix)))
            return &t->comms.v[i];
    }
    return NULL;
}

static void test_resolved_onto_kernels(void)
{
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_kineto_read_mem(&t, "mem.json", trace, strlen(trace), NULL, &err), TR_OK);
    CU_ASSERT_EQUAL(t.comms.n, 2);   /* as read: record_param_comms and the all-gather kernel */
    CU_ASSERT_EQUAL_FATAL(tr_tree_build(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_coll_ingest(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.comms.n, 3);   /* one per NCCL kernel, none for the GEMM */
    const tr_comm_info *ar = comm_of_kernel(&t, "ncclDevKernel_AllReduce");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ar);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ar->op), "allreduce");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ar->pg), "0");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ar->pg_desc), "default_pg");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ar->pg_ranks), "[0, 1, 2, 3]");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ar->dtype), "BFloat16");
    CU_ASSERT_EQUAL(ar->seq, 7);
    CU_ASSERT_EQUAL(ar->in_nelems, 1024);
    CU_ASSERT_EQUAL(ar->group_size, 4);
    const tr_comm_info *ag = comm_of_kernel(&t, "ncclDevKernel_AllGather");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ag);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ag->op), "allgather");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, ag->pg), "1");
    CU_ASSERT_EQUAL(ag->seq, 2);   /* a numeric string */
    CU_ASSERT_EQUAL(ag->out_nelems, 32);
    CU_ASSERT_EQUAL(ag->pg_desc, 0);
    const tr_comm_info *bc = comm_of_kernel(&t, "ncclKernel_Broadcast");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bc);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, bc->op), "broadcast");
    CU_ASSERT_EQUAL(bc->pg, 0);
    CU_ASSERT_EQUAL(bc->seq, -1);
    CU_ASSERT_EQUAL(bc->in_nelems, -1);
    CU_ASSERT_EQUAL(t.clock_offsets.n, 0);   /* one source: nothing to align */
    tr_trace_free(&t);
}

/* No NCCL name anywhere: the parameters of CPU collectives (gloo) are dropped. */
static void test_no_kernels(void)
{
    static const char cpu[] =
        "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":1,\"tid\":1,"
        "\"ts\":1,\"dur\":2,\"args\":{\"Collective name\":\"allreduce\",\"Process Group Name\":\"0\"}}]}";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_kineto_read_mem(&t, "cpu.json", cpu, strlen(cpu), NULL, &err), TR_OK);
    CU_ASSERT_EQUAL(t.comms.n, 1);
    CU_ASSERT_EQUAL_FATAL(tr_tree_build(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_coll_ingest(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(t.comms.n, 0);
    tr_trace_free(&t);
}

TR_SUITE(kineto_comms,
         {"parameters resolved onto the NCCL kernels", test_resolved_onto_kernels},
         {"CPU collectives have no kernel", test_no_kernels});
