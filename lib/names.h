/*
 * names.h - turning recorded names into display names.
 *
 *  - C++/CUDA symbols: demangled when they are mangled (_Z...), raw kept by caller.
 *  - CUDA API callback ids: the API function's name (cudaLaunchKernel, cuLaunchKernel).
 *  - emit_nvtx annotations ("aten::addmm, seq = 12, op_id = 345, sizes = [[..]], ..."):
 *    split into the op name, seq, op_id, input shapes and input op ids, in every
 *    format PyTorch has produced (see docs/semantics.md).
 *
 * Ownership: tr_demangle returns a malloc'd string the caller frees (or NULL when
 * the name is not mangled); the parse result points into the caller's message.
 */
#ifndef TR_LIB_NAMES_H
#define TR_LIB_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

char *tr_demangle(const char *name);

/* A readable short form of a C++ kernel or op name, malloc'd (NULL on out of
 * memory): no return type, parameter list or "(anonymous namespace)"; template
 * arguments reduced to their own last scope ("at::native::Foo<float>(int)::{lambda}"
 * -> "Foo<...>"), and those nested deeper than `detail` + 1 levels to an ellipsis
 * (U+2026).  Detail 0 gives "elementwise_kernel<128, 4, ...>"; each level more
 * shows one level deeper, until the result stops changing.  Names that are not
 * C++ (no "::" and no "void " return type) come back unchanged. */
char *tr_short_name(const char *name, int detail);

/* NULL when the id is unknown. */
const char *tr_runtime_cbid_name(int cbid);
const char *tr_driver_cbid_name(int cbid);

/* The event name of a CUPTI overhead kind (CUpti_ActivityOverheadKind), as
 * "[overhead: CUPTI buffer flush]", or "[overhead: kind N]" when unknown. */
void tr_overhead_name(char *buf, size_t n, int64_t kind);

typedef struct {
    const char *name; size_t name_len;      /* the op name, never empty if the message is not */
    int64_t seq, op_id;                      /* -1 when absent */
    const char *sizes; size_t sizes_len;     /* "[[..], ..]" Python-style, or NULL */
    const char *input_op_ids; size_t input_op_ids_len;  /* "[(a,b), ..]" or NULL */
    int annotated;                           /* 1 if any suffix was found */
} tr_nvtx_annotation;

typedef struct tr_nvtx_parser tr_nvtx_parser;

tr_status tr_nvtx_parser_new(tr_nvtx_parser **p, tr_error *err);
void tr_nvtx_parser_free(tr_nvtx_parser *p);
/* Never fails: a message that is not an annotation comes back as its own name. */
void tr_nvtx_parse(tr_nvtx_parser *p, const char *msg, size_t len, tr_nvtx_annotation *out);

#endif
