/*
 * cuda_enums.h - names of the CUPTI enumerations that traces store as numbers
 * (copy direction, memory kind, synchronisation type), shared by every reader.
 * Ownership: the tables are static; tr_enum_str interns into the trace.
 */
#ifndef TR_LIB_CUDA_ENUMS_H
#define TR_LIB_CUDA_ENUMS_H

#include "lib/model.h"

typedef struct {
    const char *const *names;
    size_t n;
} tr_enum_names;

/* CUpti_ActivityMemcpyKind (nsys's ENUM_CUDA_MEMCPY_OPER adds the UVM values 11-13). */
extern const tr_enum_names tr_copy_kinds;
/* CUpti_ActivityMemoryKind: 0 = Unknown, 1 = Pageable, ... */
extern const tr_enum_names tr_memory_kinds;
/* CUpti_ActivitySynchronizationType, as event names ("[sync] stream synchronize"). */
extern const tr_enum_names tr_sync_names;

/* The name of value v (its decimal form when the table has none), interned; 0 on OOM. */
uint32_t tr_enum_str(tr_trace *t, const tr_enum_names *e, int64_t v);

/* "[CUDA memcpy HtoD]" for a copy kind string id. */
uint32_t tr_memcpy_name(tr_trace *t, uint32_t copy_kind);

#endif
