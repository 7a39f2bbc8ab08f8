/*
 * agent.h - internals of the injected recorder agent (libtracekit-agent.so).
 *
 * encode.c turns CUPTI activity records into the normalised records of
 * record/raw_format.h and writes chunks; agent.c does the injection, CUPTI
 * set-up, buffers, the writer thread and process life cycle; nvtx.c is the
 * NVTX injection used when CUPTI cannot record NVTX.  Only the entry points
 * InitializeInjection, InitializeInjectionNvtx2 and
 * InitializeInjectionNvtxExtension are exported.
 */
#ifndef TR_RECORD_AGENT_H
#define TR_RECORD_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "record/raw_format.h"

#define REC_HIDDEN __attribute__((visibility("hidden")))

typedef struct {
    unsigned char *data;   /* 8-byte RECORDS header reserved at the front */
    size_t n, cap;
    uint32_t count;
} rec_stage;

typedef struct {
    uint64_t hash;
    uint32_t sid, len;
    char *s;
} rec_strent;

/* A SYNC record held until the end of its buffer: whether it belongs to a
 * query is known from the query's API record, which may come after it. */
typedef struct {
    tr_raw_sync r;
    int age;                       /* buffers it has waited through */
} rec_pending_sync;

typedef struct {
    int fd;                        /* -1: nothing is written */
    uint64_t seq;
    int write_failed;
    rec_stage stage[TR_RAW_REC_COUNT_];
    /* strings: a cache of bounded size; emptied when full, after which a
     * string is written again under a new id (ids are never reused) */
    rec_strent *strs;
    size_t nstrs, cap_strs, str_bytes;
    size_t str_budget;             /* bytes of string text kept at most */
    uint32_t next_sid;
    unsigned char *pending;        /* STRINGS payload not yet written */
    size_t npending, cap_pending;
    uint64_t *kept_ranges;         /* open range ids kept by the capture filter (0 = empty) */
    size_t cap_kept, n_kept;
    uint64_t *named;               /* (tid << 32 | name sid) already written */
    size_t n_named, cap_named;
    uint32_t *nvtx_named;          /* tids the program named through NVTX */
    size_t n_nvtx_named, cap_nvtx_named;
    /* capture filter: keep(ts) says whether a timestamp is inside the range;
     * it takes CLOCK_MONOTONIC: records on CUPTI's own clock are moved by
     * clock_offset (their clock minus CLOCK_MONOTONIC) first */
    int (*keep)(uint64_t ts);
    int64_t clock_offset;
    /* stream/event queries: their correlation ids (this buffer's and the
     * previous one's), and syncs waiting to be told apart from them */
    uint32_t *query_ids[2];
    size_t n_query[2], cap_query;
    rec_pending_sync *psync;
    size_t n_psync, cap_psync;
    int keep_queries;              /* --kinds query: write them, flagged */
    uint64_t stats[TR_RAW_STAT_COUNT_];
    tr_raw_crc32_slices crc;
    uint8_t act_row[CUPTI_ACTIVITY_KIND_COUNT];   /* CUPTI kind -> its act_kinds row + 1 (0: none) */
} rec_encoder;

REC_HIDDEN void rec_enc_init(rec_encoder *e, int fd);
REC_HIDDEN void rec_enc_free(rec_encoder *e);
/* Interns a string; returns its id (0 for NULL or out of memory). */
REC_HIDDEN uint32_t rec_enc_string(rec_encoder *e, const char *s);
REC_HIDDEN void rec_enc_add(rec_encoder *e, unsigned kind, const void *rec);
/* Normalises one CUPTI activity record. */
REC_HIDDEN void rec_enc_activity(rec_encoder *e, const CUpti_Activity *a);
/* Walks a completed CUPTI buffer with cuptiActivityGetNextRecord. */
REC_HIDDEN void rec_enc_buffer(rec_encoder *e, uint8_t *buf, size_t valid);
/* Records a thread name once per (tid, name); by_nvtx: the program's own
 * name for it (nvtxNameOsThread), which the names the kernel gives threads
 * (comm) do not replace. */
REC_HIDDEN void rec_enc_thread_name(rec_encoder *e, uint32_t tid, const char *name, int by_nvtx);
/* Writes pending strings, then every staged record kind. */
REC_HIDDEN void rec_enc_flush(rec_encoder *e);
/* At the end of the file: the syncs still held are written. */
REC_HIDDEN void rec_enc_finish(rec_encoder *e);
/* 1 for the runtime and driver cbids of stream and event queries. */
REC_HIDDEN int rec_is_query(int driver, uint32_t cbid);
/* Writes one chunk (payload padded to 8 bytes here). */
REC_HIDDEN void rec_write_chunk(rec_encoder *e, unsigned type, const void *payload, size_t len);

/* nvtx.c: fills an NVTX instance's function slots with the recorder's own
 * handlers (when CUPTI cannot record NVTX); 1 on success. */
REC_HIDDEN int rec_nvtx_install(const void *(*get)(uint32_t));
/* agent.c: queues a marker of the calling thread (TR_RAW_MK_* flags) for the
 * writer; name is malloc'd and taken over, domain lives as long as the process. */
REC_HIDDEN void rec_nvtx_emit(uint32_t flags, uint64_t id, char *name, const char *domain);
/* agent.c: queues a thread's name (nvtxNameOsThread); name is malloc'd and taken over. */
REC_HIDDEN void rec_nvtx_thread_name(uint32_t tid, char *name);
/* agent.c: an NVTX call as CUPTI's NVTX callback would report it, for the
 * --nvtx-capture filter. */
REC_HIDDEN void rec_nvtx_capture(uint32_t cbid, const void *params, const void *ret);

#endif
