/*
 * model.h - the in-memory event model that every input reader fills and the
 * run database is written from.
 *
 * A reader creates a tr_trace, registers a source, then adds processes,
 * threads, devices, streams and events; strings are interned in trace->strings.
 * tr_tree_build() (tree.h) then links the events into the call tree and
 * computes the derived metrics, and tr_rundb_write() (rundb.h) stores it.
 *
 * Times are integer nanoseconds on the source's clock.  Indices into the
 * arrays are 1-based (0 = none) for threads, streams, devices and strings;
 * event parents are 0-based event indices with -1 for none.
 *
 * Ownership: the trace owns every array and string; pointers returned by the
 * add functions stay valid only until the next add of the same kind.
 */
#ifndef TR_LIB_MODEL_H
#define TR_LIB_MODEL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/i64map.h"
#include "lib/intern.h"

/* Event kinds.  The numbers are stored in run.db (kinds table): append only. */
typedef enum {
    TR_KIND_RANGE = 1,    /* NVTX range or user annotation (CPU) */
    TR_KIND_OP = 2,       /* framework operator, e.g. a PyTorch aten:: op (CPU) */
    TR_KIND_MARK = 3,     /* instantaneous marker (CPU, zero length) */
    TR_KIND_RUNTIME = 4,  /* CUDA runtime API call (CPU) */
    TR_KIND_DRIVER = 5,   /* CUDA driver API call (CPU) */
    TR_KIND_SYNC = 6,     /* host-side synchronisation wait (CPU) */
    TR_KIND_KERNEL = 7,   /* GPU kernel */
    TR_KIND_MEMCPY = 8,   /* GPU copy */
    TR_KIND_MEMSET = 9,   /* GPU memset */
    TR_KIND_MEMORY = 10,  /* allocation (+bytes) or free (-bytes), zero length (CPU) */
    TR_KIND_PYTHON = 11,  /* Python function frame (CPU) */
    TR_KIND_OPENACC_DATA = 12,    /* OpenACC data event: upload, download, create, alloc, ... (CPU) */
    TR_KIND_OPENACC_LAUNCH = 13,  /* OpenACC kernel launch (CPU) */
    TR_KIND_OPENACC_OTHER = 14,   /* other OpenACC event: compute construct, wait, update, ... (CPU) */
    TR_KIND_CUDA_EVENT = 15,      /* cudaEventRecord'ed event, zero length on its stream (GPU) */
    TR_KIND_OVERHEAD = 16,        /* the profiler's own overhead: an interval on a thread or process (CPU) */
    TR_KIND_COUNT_
} tr_kind;

typedef struct {
    tr_kind kind;
    const char *name;   /* as stored in run.db and accepted by --kind */
    int on_gpu;         /* executes on a device stream, not on a CPU thread */
    int is_api;         /* a CUDA API call: GPU work hangs off it by correlation */
    int is_range;       /* a CPU interval that receives GPU time of the API calls it encloses */
} tr_kind_info;

extern const tr_kind_info tr_kinds[];   /* indexed by tr_kind; [0] unused */
const tr_kind_info *tr_kind_lookup(const char *name);

/* Event flags (bitmask), stored in run.db. */
enum {
    TR_FLAG_ASYNC = 1,          /* began and ended on different threads: not nested */
    TR_FLAG_UNTERMINATED = 2,   /* range start without an end: closed at the trace's last timestamp */
    TR_FLAG_DEMANGLED = 4,      /* name is the demangled form of the raw name */
    TR_FLAG_GPU_MEMORY = 8,     /* a memory event on a device, not on the host */
    TR_FLAG_BACKWARD = 16,      /* an autograd backward function (PyTorch's BACKWARD_FUNCTION scope) */
    TR_FLAG_MERGED = 32,        /* a redispatch of its parent op, merged into it (tree.h): no metrics */
    TR_FLAG_UNNESTED = 64,      /* partially overlaps a longer event of its thread or stream
                                 * (tree.h): a viewer cannot draw it nested, so the chrome
                                 * export writes it async */
    TR_FLAG_RAW_NAMED = 128     /* in memory only, not stored: the event has a raw name
                                 * (tr_event_raw_name()) */
};
/* The flags run.db stores: all but the in-memory one. */
#define TR_FLAGS_STORED (0xFF & ~TR_FLAG_RAW_NAMED)

/* The fields most events lack (an op's sequence numbers and shape, a copy's
 * bytes), kept beside the events in tr_trace.extras, so that the event array,
 * most of the ingest's memory, holds only what nearly every event has: read
 * with tr_extra(), written with tr_extra_set(). */
typedef struct {
    int64_t seq, op_id;          /* emit_nvtx / autograd sequence and op id; -1 = none */
    int64_t bytes;               /* copies, sets, memory events; 0 otherwise */
    int64_t flops;               /* -1 = unknown */
    uint32_t shape;              /* string id of the Python-style shape list, 0 = none */
} tr_event_extra;

/* How tr_trace.extras keeps them: 32 bytes a row, the sequence number and op
 * id in 32 bits (PyTorch counts them from 0 in each process); a value that
 * does not fit is TR_EXTRA_WIDE there and in tr_trace.wide. */
#define TR_EXTRA_WIDE INT32_MIN
typedef struct {
    int64_t bytes, flops;
    int32_t seq, op_id;
    uint32_t shape;
    uint32_t raw_name;           /* the event's raw name when set here (tr_set_raw_name()) */
} tr_extra_row;

typedef struct {
    int64_t start, end;          /* ns, half-open [start, end) */
    /* The self and total times tr_tree_build() derives, in 32 bits (4.29 s):
     * read them with tr_cpu_self(), tr_gpu_self() and tr_gpu_total(), set
     * them with the tr_set_ functions, which keep a value that does not fit
     * (a longer time, or a negative one) in tr_trace.wide.
     * 64 bytes in all: the event array is most of the ingest's memory, and
     * past the memory limit each of its bytes is a byte of new page cache
     * (docs/ingest.md, "A smaller event record"). */
    uint32_t cpu_self32, gpu_self32, gpu_total32;
    int32_t parent;              /* event index, -1 = none (tr_tree_build() takes < 2^31 events) */
    uint32_t name;               /* string id; the raw name is beside it: tr_event_raw_name() */
    uint32_t stack;              /* stack node id, 0 = none */
    uint32_t thread;             /* thread index, 0 = none (GPU activities) */
    uint32_t stream;             /* stream index, 0 = none (CPU events) */
    uint32_t detail;             /* index into the kind's detail array, 0 = none */
    uint32_t extra;              /* index into tr_trace.extras, 0 = none: tr_no_extra's values */
    /* The API <-> GPU activity link (-1 = none) and the tree depth, in 32 and
     * 16 bits since CUPTI's correlation ids are 32-bit and trees are shallow:
     * read them with tr_correlation() and tr_depth(), set them with
     * tr_set_correlation() and tr_set_depth(), which keep a value that does
     * not fit in tr_trace.wide. */
    uint32_t correlation32;
    uint16_t depth16;
    uint8_t kind;
    uint8_t flags;
} tr_event;

typedef struct { uint32_t source; int64_t pid; uint32_t name; } tr_process;
typedef struct { uint32_t process; int64_t tid; uint32_t name; } tr_thread;
typedef struct {
    uint32_t source; int64_t device; uint32_t name;
    int32_t cc_major, cc_minor; int64_t memory_bytes; int32_t sm_count;
} tr_device;
typedef struct { uint32_t device; int64_t context; int64_t stream; } tr_stream;
typedef struct {
    uint32_t path, format, format_version;
    uint32_t host;        /* string id, 0 = unknown */
    int64_t rank;         /* distributed rank, -1 = unknown */
    int64_t events;
    int64_t time_base_ns; /* added to the file's own times (Kineto's baseTimeNanoseconds), 0 = none */
    int64_t world_size;   /* distributed world size the source gives, 0 = unknown */
} tr_source;
typedef struct { uint32_t parent; uint32_t frame; } tr_stack_node;

/* Memory metrics of one event, derived by tr_tree_build(); kept beside the
 * events, and only when the trace has memory events, since most have none. */
typedef struct { int64_t cpu_total, cpu_self, gpu_total, gpu_self; } tr_event_mem;

/* -1 = not in the source (stored as NULL). */
typedef struct {
    int32_t grid[3], block[3];
    int32_t registers, static_smem, dynamic_smem;
} tr_kernel_detail;
typedef struct { uint32_t copy_kind, src_kind, dst_kind; } tr_copy_detail;
typedef struct { int32_t cbid; int64_t return_value; } tr_api_detail;
/* A backward function's forward thread (PyTorch's fwd_thread): the tid, in the
 * event's own process, of the thread that ran the forward op with the same seq. */
typedef struct { size_t event; int64_t fwd_tid; } tr_backward_link;

/* A collective's parameters as the trace gives them (Kineto's record_param_comms
 * op or the NCCL kernel's own args), on the event that carried them; string ids
 * 0 and numbers -1 = not given.  lib/collectives.h resolves them onto kernels. */
typedef struct {
    size_t event;
    uint32_t op, pg, pg_desc, pg_ranks, dtype;
    int64_t seq, in_nelems, out_nelems, group_size;
} tr_comm_info;
/* A source's clock offset to the reference rank, found at ingest (lib/collectives.h). */
typedef struct {
    uint32_t source;
    int64_t offset_ns, anchor_ns, residual_ns, calls;
    const char *method;   /* static */
} tr_clock_offset;
/* Why a GPU activity has no launching call (tr_trace.gpu_unlaunched, counted by
 * tr_tree_build(); docs/semantics.md). */
enum { TR_UNLAUNCHED_NO_CORRELATION, TR_UNLAUNCHED_BEFORE_CAPTURE, TR_UNLAUNCHED_NOT_FOUND };

#define TR_VEC(type) struct { type *v; size_t n, cap; }

typedef struct {
    tr_intern strings;
    TR_VEC(tr_event) events;
    TR_VEC(tr_extra_row) extras;     /* 1-based: v[0] unused */
    TR_VEC(tr_source) sources;       /* 1-based: v[0] unused */
    TR_VEC(tr_process) processes;
    TR_VEC(tr_thread) threads;
    TR_VEC(tr_device) devices;
    TR_VEC(tr_stream) streams;
    TR_VEC(tr_stack_node) stack_nodes;
    TR_VEC(tr_kernel_detail) kernels;
    TR_VEC(tr_copy_detail) copies;
    TR_VEC(tr_api_detail) apis;
    TR_VEC(int64_t) memset_values;
    TR_VEC(tr_backward_link) backward;   /* filled by readers; event indices */
    TR_VEC(tr_comm_info) comms;          /* filled by readers; collectives.c rewrites them onto kernels */
    TR_VEC(tr_clock_offset) clock_offsets;   /* collectives.c, at ingest */
    size_t merged_redispatch;        /* ops flagged TR_FLAG_MERGED by tr_tree_build() */
    size_t gpu_unlaunched[3];        /* GPU activities without a launching call, by reason (below) */
    int tree_built;
    tr_event_mem *mem;               /* per event, or NULL: all zero (tree.h) */
    tr_i64map wide;                  /* event index * TR_WIDE_FIELDS + field -> a
                                      * value too wide for its field (TR_WIDE_*): rare */
    tr_i64map raw_names;             /* name id -> the raw name of the events of that
                                      * name (tr_set_raw_name()) */
    /* lookup tables, rebuilt on demand */
    struct tr_idmap *thread_map, *stream_map, *device_map, *process_map, *stack_map;
    struct tr_detail_cache *detail_cache;   /* recent detail rows, shared by equal adds */
} tr_trace;

tr_status tr_trace_init(tr_trace *t, tr_error *err);
void tr_trace_free(tr_trace *t);

/* Grows a vector to hold at least `need` elements; -1 on out-of-memory. */
int tr_vec_reserve_(void **v, size_t *cap, size_t need, size_t elsize);
#define tr_vec_reserve(vec, need) \
    tr_vec_reserve_((void **)&(vec).v, &(vec).cap, (need), sizeof *(vec).v)

/* Each returns a 1-based index (0 on out-of-memory); lookups by natural key
 * return the existing entry. */
uint32_t tr_add_source(tr_trace *t, const char *path, const char *format, const char *format_version);
uint32_t tr_process_get(tr_trace *t, uint32_t source, int64_t pid);
uint32_t tr_thread_get(tr_trace *t, uint32_t process, int64_t tid);
uint32_t tr_device_get(tr_trace *t, uint32_t source, int64_t device);
uint32_t tr_stream_get(tr_trace *t, uint32_t device, int64_t context, int64_t stream);
/* Interns a frame list (outermost first) as a stack; returns the leaf node id (0 on OOM). */
uint32_t tr_stack_get(tr_trace *t, const uint32_t *frames, size_t nframes);
/* The stack of node parent (0: the root) with frame added innermost, in O(1):
 * a reader that builds stacks one frame deeper at a time calls this rather
 * than tr_stack_get() on the whole list, which would be quadratic in depth. */
uint32_t tr_stack_child(tr_trace *t, uint32_t parent, uint32_t frame);

/* The shape id of an input-shape list as its source writes it ("[[2, 3], []]"):
 * the interned text, or 0 for the empty list "[]", which says no more than a
 * list not recorded (PyTorch groups both as "[]"; one id keeps them one group).
 * -1 on out-of-memory. */
int tr_shape_get(tr_trace *t, const char *s, size_t n, uint32_t *shape);

/* Appends a zeroed event (correlation = -1, parent = -1, no extra); NULL on OOM. */
tr_event *tr_add_event(tr_trace *t, tr_kind kind);
/* Events appended by this process, for a progress indicator on another
 * thread (lib/progress.h): relaxed, a hint that may miss concurrent adds. */
extern atomic_size_t tr_events_added;

/* The fields whose values that do not fit are kept in tr_trace.wide. */
enum {
    TR_WIDE_CORRELATION, TR_WIDE_DEPTH, TR_WIDE_SEQ, TR_WIDE_OP_ID,
    TR_WIDE_CPU_SELF, TR_WIDE_GPU_SELF, TR_WIDE_GPU_TOTAL, TR_WIDE_RAW_NAME,
    TR_WIDE_FIELDS
};
/* A value kept in tr_trace.wide (field: one of the above). */
int64_t tr_wide_value_(const tr_trace *t, const tr_event *e, int field);

/* An event's correlation and depth: values the event's narrow fields hold,
 * else the trace's wide map.  The setters return 0, or -1 out of memory
 * (only for a value that needs the map). */
#define TR_CORRELATION_NONE UINT32_MAX         /* -1 */
#define TR_CORRELATION_WIDE (UINT32_MAX - 1)   /* other negatives, and >= 2^32 - 2 */
#define TR_DEPTH_WIDE UINT16_MAX
static inline int64_t tr_correlation(const tr_trace *t, const tr_event *e)
{
    if (e->correlation32 < TR_CORRELATION_WIDE)
        return e->correlation32;
    return e->correlation32 == TR_CORRELATION_NONE ? -1 : tr_wide_value_(t, e, TR_WIDE_CORRELATION);
}
static inline int64_t tr_depth(const tr_trace *t, const tr_event *e)
{
    return e->depth16 < TR_DEPTH_WIDE ? e->depth16 : tr_wide_value_(t, e, TR_WIDE_DEPTH);
}
int tr_set_correlation(tr_trace *t, tr_event *e, int64_t correlation);
int tr_set_depth(tr_trace *t, tr_event *e, int64_t depth);
/* child's depth: one more than parent's */
static inline int tr_set_child_depth(tr_trace *t, tr_event *child, const tr_event *parent)
{
    if (parent->depth16 < TR_DEPTH_WIDE - 1) {
        child->depth16 = (uint16_t)(parent->depth16 + 1);
        return 0;
    }
    return tr_set_depth(t, child, tr_depth(t, parent) + 1);
}

/* An event's derived times: the 32-bit field, else the wide map.  The setters
 * return 0, or -1 out of memory (only for a value that needs the map). */
#define TR_TIME_WIDE UINT32_MAX
static inline int64_t tr_narrow_time_(const tr_trace *t, const tr_event *e, uint32_t v, int field)
{
    return v != TR_TIME_WIDE ? v : tr_wide_value_(t, e, field);
}
static inline int64_t tr_cpu_self(const tr_trace *t, const tr_event *e)
{
    return tr_narrow_time_(t, e, e->cpu_self32, TR_WIDE_CPU_SELF);
}
static inline int64_t tr_gpu_self(const tr_trace *t, const tr_event *e)
{
    return tr_narrow_time_(t, e, e->gpu_self32, TR_WIDE_GPU_SELF);
}
static inline int64_t tr_gpu_total(const tr_trace *t, const tr_event *e)
{
    return tr_narrow_time_(t, e, e->gpu_total32, TR_WIDE_GPU_TOTAL);
}
int tr_set_wide_time_(tr_trace *t, tr_event *e, uint32_t *to, int64_t v, int field);
static inline int tr_set_narrow_time_(tr_trace *t, tr_event *e, uint32_t *to, int64_t v, int field)
{
    if (v >= 0 && v < TR_TIME_WIDE) {
        *to = (uint32_t)v;
        return 0;
    }
    return tr_set_wide_time_(t, e, to, v, field);
}
static inline int tr_set_cpu_self(tr_trace *t, tr_event *e, int64_t v)
{
    return tr_set_narrow_time_(t, e, &e->cpu_self32, v, TR_WIDE_CPU_SELF);
}
static inline int tr_set_gpu_self(tr_trace *t, tr_event *e, int64_t v)
{
    return tr_set_narrow_time_(t, e, &e->gpu_self32, v, TR_WIDE_GPU_SELF);
}
static inline int tr_set_gpu_total(tr_trace *t, tr_event *e, int64_t v)
{
    return tr_set_narrow_time_(t, e, &e->gpu_total32, v, TR_WIDE_GPU_TOTAL);
}

/* An event's raw name, the string the source gave before it was made its
 * name (a mangled kernel name, a versioned API name, a PyTorch op's NVTX
 * message): 0 = none, the name itself.  Most events with one share it with
 * every event of their name (a kernel's mangled name), so it is kept once a
 * name, in tr_trace.raw_names; an event whose raw name differs from the one
 * kept for its name holds it in its extra row or in the wide map.
 * tr_set_raw_name() wants the event's final name, and its extra row if it
 * will have one (tr_extra_set() first); 0, or -1 out of memory. */
uint32_t tr_raw_name_of_(const tr_trace *t, const tr_event *e);
static inline uint32_t tr_event_raw_name(const tr_trace *t, const tr_event *e)
{
    return e->flags & TR_FLAG_RAW_NAMED ? tr_raw_name_of_(t, e) : 0;
}
int tr_set_raw_name(tr_trace *t, tr_event *e, uint32_t raw);

/* An event's extra fields: its own row's, or tr_no_extra's defaults (seq,
 * op_id and flops -1, bytes and shape 0) when it has none. */
extern const tr_event_extra tr_no_extra;
static inline tr_event_extra tr_extra(const tr_trace *t, const tr_event *e)
{
    if (!e->extra)
        return tr_no_extra;
    const tr_extra_row *r = &t->extras.v[e->extra];
    tr_event_extra x = {r->seq, r->op_id, r->bytes, r->flops, r->shape};
    if (r->seq == TR_EXTRA_WIDE)
        x.seq = tr_wide_value_(t, e, TR_WIDE_SEQ);
    if (r->op_id == TR_EXTRA_WIDE)
        x.op_id = tr_wide_value_(t, e, TR_WIDE_OP_ID);
    return x;
}
/* Sets e's extra fields to *x, adding a row only when x differs from the
 * defaults or e has one; 0, or -1 out of memory. */
int tr_extra_set(tr_trace *t, tr_event *e, const tr_event_extra *x);
/* The same for the bytes alone. */
int tr_set_bytes(tr_trace *t, tr_event *e, int64_t bytes);

/* Detail rows: each returns the 1-based detail index to store in event->detail, 0 on OOM.
 * A row equal to a recent one is that row: events may share a detail index, so
 * a row is never changed once added. */
uint32_t tr_add_kernel_detail(tr_trace *t, const tr_kernel_detail *d);
uint32_t tr_add_copy_detail(tr_trace *t, const tr_copy_detail *d);
uint32_t tr_add_api_detail(tr_trace *t, const tr_api_detail *d);
uint32_t tr_add_memset_value(tr_trace *t, int64_t value);

static inline uint32_t tr_str(tr_trace *t, const char *s) { return tr_intern_cstr(&t->strings, s); }
static inline const char *tr_str_of(const tr_trace *t, uint32_t id) { return tr_intern_str(&t->strings, id); }

#endif
