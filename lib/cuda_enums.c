#include "lib/cuda_enums.h"

#include <stdio.h>

static const char *const copy_kind_names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                              "AtoD", "DtoA", "DtoD", "HtoH", "PtoP", "UVM HtoD",
                                              "UVM DtoH", "UVM DtoD"};
static const char *const memory_kind_names[] = {"Unknown", "Pageable", "Pinned", "Device", "Array",
                                                "Managed", "DeviceStatic", "ManagedStatic"};
static const char *const sync_type_names[] = {"[sync] unknown", "[sync] event synchronize",
                                              "[sync] stream wait event", "[sync] stream synchronize",
                                              "[sync] context synchronize"};

#define TABLE(a) {a, sizeof a / sizeof a[0]}
const tr_enum_names tr_copy_kinds = TABLE(copy_kind_names);
const tr_enum_names tr_memory_kinds = TABLE(memory_kind_names);
const tr_enum_names tr_sync_names = TABLE(sync_type_names);

uint32_t tr_enum_str(tr_trace *t, const tr_enum_names *e, int64_t v)
{
    if (v >= 0 && (uint64_t)v < e->n)
        return tr_str(t, e->names[v]);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return tr_str(t, buf);
}

uint32_t tr_memcpy_name(tr_trace *t, uint32_t copy_kind)
{
    char name[96];
    snprintf(name, sizeof name, "[CUDA memcpy %s]", tr_str_of(t, copy_kind));
    return tr_str(t, name);
}
