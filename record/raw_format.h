/*
 * raw_format.h - the trace-record raw file format, version 1 (docs/raw-format.md).
 *
 * Shared by the injected agent (writer) and the ingest reader.  Everything on
 * disk is little-endian; records and chunk payloads are multiples of 8 bytes.
 * Writers fill the structs below on a little-endian host and write them as
 * they are; readers must decode with the tr_raw_ld* helpers (memcpy, never a
 * cast) so that any byte offset is safe.
 *
 * Header-only: no allocation, no I/O.
 */
#ifndef TR_RECORD_RAW_FORMAT_H
#define TR_RECORD_RAW_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TR_RAW_MAGIC "\x89TKR\r\n\x1a\n"      /* 8 bytes */
#define TR_RAW_MAJOR 1u
#define TR_RAW_MINOR 2u
#define TR_RAW_HEADER_LEN 128u
#define TR_RAW_ENDIAN_CHECK 0x01020304u
#define TR_RAW_CHUNK_SYNC 0x4b4e4843u          /* "CHNK" read as a little-endian u32 */
#define TR_RAW_CHUNK_HDR 24u
#define TR_RAW_MAX_PAYLOAD (64u << 20)         /* readers refuse larger chunks as corrupt */
#define TR_RAW_FILE_SUFFIX ".ctr"

/* header flags */
enum {
    TR_RAW_HF_CLOCK_MONOTONIC = 1,  /* timestamps are CLOCK_MONOTONIC ns (else CLOCK_REALTIME) */
    TR_RAW_HF_SUBSCRIBED = 2,       /* the CUPTI callback subscriber was obtained */
    TR_RAW_HF_BACKTRACE = 4,        /* STACKREF records may follow */
    TR_RAW_HF_CAPTURE_RANGE = 8,    /* records were filtered to a capture range */
    TR_RAW_HF_CLOCK_CUPTI = 16      /* (1.2) timestamps are CUPTI's own clock, read as t0_cupti
                                     * together with t0_realtime (the timestamp callback failed) */
};

/* File header, 128 bytes at offset 0. */
typedef struct {
    char magic[8];
    uint16_t major, minor;
    uint32_t header_len;
    uint32_t endian_check;
    uint32_t flags;
    uint64_t session_id;
    uint32_t pid, ppid;
    uint64_t t0_realtime;          /* CLOCK_REALTIME ns ...  */
    uint64_t t0_monotonic;         /* ... read together with this CLOCK_MONOTONIC ns */
    uint32_t cupti_runtime_version, cupti_compile_version;
    uint32_t recorder_version, reserved0;
    uint64_t t0_cupti;             /* (1.2) cuptiGetTimestamp read with t0_realtime, 0 if unknown */
    uint8_t reserved[124 - 80];
    uint32_t header_crc;           /* CRC-32 of bytes [0, 124) */
} tr_raw_header;

/* Chunk header, 24 bytes; payload_len bytes of payload follow (a multiple of 8). */
typedef struct {
    uint32_t sync;
    uint16_t type, flags;
    uint32_t payload_len;
    uint32_t crc;                  /* CRC-32 (IEEE) of the payload */
    uint64_t seq;                  /* 0, 1, 2, ... per file */
} tr_raw_chunk;

enum {
    TR_RAW_CH_META = 1,     /* "key=value\0" strings */
    TR_RAW_CH_STRINGS = 3,  /* {u32 id, u32 len, bytes, pad to 4} ... */
    TR_RAW_CH_RECORDS = 4,  /* {u16 kind, u16 rec_size, u32 count} + count * rec_size */
    TR_RAW_CH_STACKS = 5,   /* {u32 stack_id, u16 nframes, u16 pad, u64 pc[nframes]} ... */
    TR_RAW_CH_MAPS = 6,     /* u64 ts, u32 len, u32 pad, /proc/self/maps text */
    TR_RAW_CH_STATS = 7,    /* u32 n, u32 pad, u64 counter[n] (tr_raw_stat order) */
    TR_RAW_CH_MODULES = 8,  /* {u64 addr, u16 build_id_len, u16 pad, u32 pad, id, pad to 8} ... */
    TR_RAW_CH_END = 9,      /* u64 realtime, u64 monotonic, u64 chunks_before */
    TR_RAW_CH_STATUS = 10,  /* (1.2) tr_raw_status entries: what is recorded, what failed, why */
    TR_RAW_CH_LAST_ = TR_RAW_CH_STATUS   /* a new type goes above: tests check the docs list it */
};

/* STATUS entries: {u64 ts, u32 result, u16 state, u16 text_len, text, zero pad to 8}.
 * text is "what\0detail": what names a feature ("kind memcpy", "clock", "nvtx") or
 * a CUPTI call; detail says why (cuptiGetResultString's text for a failure). */
enum {
    TR_RAW_ST_ACTIVE = 1,   /* recorded */
    TR_RAW_ST_FAILED = 2,   /* a call failed: what it sets up is not recorded */
    TR_RAW_ST_OFF = 3,      /* not asked for */
    TR_RAW_ST_TAKEN = 4,    /* another CUPTI client took it over at ts: records stop there */
    TR_RAW_ST_DROPPED = 5   /* result = records CUPTI dropped (saturated) for the context and
                             * stream the detail names */
};
typedef struct {
    uint64_t ts;            /* the file's clock (as records) */
    uint32_t result;        /* CUptiResult, 0 when the state is not a failure */
    uint16_t state, text_len;
} tr_raw_status;

/* Record kinds (RECORDS chunks). */
enum {
    TR_RAW_REC_KERNEL = 1,
    TR_RAW_REC_API = 2,
    TR_RAW_REC_MEMCPY = 3,
    TR_RAW_REC_MEMSET = 4,
    TR_RAW_REC_SYNC = 5,
    TR_RAW_REC_MARKER = 6,
    TR_RAW_REC_DEVICE = 7,
    TR_RAW_REC_CONTEXT = 8,
    TR_RAW_REC_STREAM = 9,
    TR_RAW_REC_NAME = 10,
    TR_RAW_REC_STACKREF = 11,
    TR_RAW_REC_OVERHEAD = 12,   /* (1.2) */
    TR_RAW_REC_COUNT_
};

enum { TR_RAW_KF_INCOMPLETE = 1 };   /* kernel/copy/set: timestamps not collected (0) */

typedef struct {                       /* 88 bytes */
    uint64_t start, end, graph_node;
    uint32_t corr, name_sid, device, context, stream;
    int32_t grid[3], block[3];
    uint32_t smem_static, smem_dynamic, local_per_thread;
    uint16_t registers;
    uint8_t launch_type, flags;
    uint32_t graph_id;
} tr_raw_kernel;

enum { TR_RAW_API_RUNTIME = 1, TR_RAW_API_DRIVER = 2, TR_RAW_API_INTERNAL = 3 };
typedef struct {                       /* 40 bytes */
    uint64_t start, end;
    uint32_t corr, cbid, tid, ret;
    uint8_t domain, pad[7];
} tr_raw_api;

typedef struct {                       /* 56 bytes */
    uint64_t start, end, bytes;
    uint32_t corr, runtime_corr, device, context, stream;
    uint8_t copy_kind, src_kind, dst_kind, flags;
    uint32_t graph_id;
    uint32_t copy_count;               /* (1.2) copies in the record (batched copies), was 0 */
} tr_raw_memcpy;

typedef struct {                       /* 48 bytes */
    uint64_t start, end, bytes;
    uint32_t corr, device, context, stream, value;
    uint16_t memory_kind, flags;
} tr_raw_memset;

/* type: CUPTI's synchronization type in the low 16 bits; TR_RAW_SYNC_QUERY marks
 * a stream or event query (not a wait), kept only with --kinds query. */
enum { TR_RAW_SYNC_TYPE_MASK = 0xffff, TR_RAW_SYNC_QUERY = 1u << 16 };
typedef struct {                       /* 40 bytes */
    uint64_t start, end;
    uint32_t corr, type, context, stream, event_id;
    uint32_t ret;                      /* (1.2) CUresult of the call (was padding: 0) */
} tr_raw_sync;

enum { TR_RAW_MK_MARK = 1, TR_RAW_MK_START = 2, TR_RAW_MK_END = 4 };
typedef struct {                       /* 32 bytes */
    uint64_t ts, id;
    uint32_t flags, tid, name_sid, domain_sid;
} tr_raw_marker;

typedef struct {                       /* 32 bytes */
    uint64_t global_memory;
    uint32_t id, name_sid, cc_major, cc_minor, sm_count, pad;
} tr_raw_device;

typedef struct {                       /* 16 bytes */
    uint32_t context, device, null_stream, pad;
} tr_raw_context;

typedef struct {                       /* 24 bytes */
    uint32_t context, stream, priority, flag, corr, pad;
} tr_raw_stream;

enum { TR_RAW_OBJ_PROCESS = 1, TR_RAW_OBJ_THREAD = 2 };
typedef struct {                       /* 16 bytes */
    uint32_t object_kind, id, name_sid, pad;
} tr_raw_name;

typedef struct {                       /* 24 bytes */
    uint64_t ts;
    uint32_t corr, stack_id, tid, pad;
} tr_raw_stackref;

/* CUPTI's own overhead (--kinds overhead): object_kind 1 = process (object_id
 * its pid), 2 = thread (object_id its tid). */
typedef struct {                       /* 32 bytes */
    uint64_t start, end;
    uint32_t overhead_kind;            /* CUpti_ActivityOverheadKind */
    uint32_t object_kind, object_id, corr;
} tr_raw_overhead;

/* STATS counters, in this order; readers ignore counters they do not know. */
enum {
    TR_RAW_STAT_DROPPED = 0,       /* records dropped: CUPTI had no buffer, or the agent no memory */
    TR_RAW_STAT_INCOMPLETE,        /* kernels/copies/sets without timestamps */
    TR_RAW_STAT_BUFFERS,           /* activity buffers completed */
    TR_RAW_STAT_POOL_EMPTY,        /* buffer requests refused (pool cap reached) */
    TR_RAW_STAT_RECORDS,           /* normalised records written */
    TR_RAW_STAT_UNKNOWN,           /* CUPTI records of kinds not normalised */
    TR_RAW_STAT_FILTERED,          /* records outside the capture range */
    TR_RAW_STAT_INHERITED,         /* buffers dropped in a forked child (parent's data) */
    TR_RAW_STAT_CAPTURE_NO_ID,     /* (1.1) NVTX capture starts CUPTI gave no range id for */
    TR_RAW_STAT_QUERIES,           /* (1.2) stream/event queries folded (API and sync records) */
    TR_RAW_STAT_STRING_RESETS,     /* (1.2) times the string cache was emptied (ids re-emitted) */
    TR_RAW_STAT_INTERNAL_LAUNCH,   /* (1.2) internal-launch API records written */
    TR_RAW_STAT_INVALID,           /* (1.2) buffers cut short by a record of an invalid kind */
    TR_RAW_STAT_COUNT_
};

_Static_assert(sizeof(tr_raw_header) == 128, "header size");
_Static_assert(sizeof(tr_raw_chunk) == 24, "chunk header size");
_Static_assert(sizeof(tr_raw_status) == 16, "status entry size");
_Static_assert(sizeof(tr_raw_kernel) == 88, "kernel size");
_Static_assert(sizeof(tr_raw_api) == 40, "api size");
_Static_assert(sizeof(tr_raw_memcpy) == 56, "memcpy size");
_Static_assert(sizeof(tr_raw_memset) == 48, "memset size");
_Static_assert(sizeof(tr_raw_sync) == 40, "sync size");
_Static_assert(sizeof(tr_raw_marker) == 32, "marker size");
_Static_assert(sizeof(tr_raw_device) == 32, "device size");
_Static_assert(sizeof(tr_raw_context) == 16, "context size");
_Static_assert(sizeof(tr_raw_stream) == 24, "stream size");
_Static_assert(sizeof(tr_raw_name) == 16, "name size");
_Static_assert(sizeof(tr_raw_stackref) == 24, "stackref size");
_Static_assert(sizeof(tr_raw_overhead) == 32, "overhead size");

/* Size of each record kind in this version (0 = unknown kind). */
static inline size_t tr_raw_rec_size(unsigned kind)
{
    static const uint16_t sz[TR_RAW_REC_COUNT_] = {
        0, sizeof(tr_raw_kernel), sizeof(tr_raw_api), sizeof(tr_raw_memcpy),
        sizeof(tr_raw_memset), sizeof(tr_raw_sync), sizeof(tr_raw_marker), sizeof(tr_raw_device),
        sizeof(tr_raw_context), sizeof(tr_raw_stream), sizeof(tr_raw_name), sizeof(tr_raw_stackref),
        sizeof(tr_raw_overhead)};
    return kind < TR_RAW_REC_COUNT_ ? sz[kind] : 0;
}

static inline uint32_t tr_raw_crc32_update(uint32_t crc, const void *data, size_t len)
{
    static const uint32_t tab[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
    0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
    0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
    0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
    0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
    0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
    0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
    0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
    0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
    0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
    0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
    0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
    0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
    0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
    0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
    0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
    0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
    0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
    0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
    0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
    0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
    0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
    0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du

    };
    const unsigned char *p = data;
    crc = ~crc;
    while (len--)
        crc = tab[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

static inline uint32_t tr_raw_crc32(const void *data, size_t len)
{
    return tr_raw_crc32_update(0, data, len);
}

/* Little-endian loads from any address. */
static inline uint16_t tr_raw_ld16(const void *p)
{
    const unsigned char *b = p;
    return (uint16_t)(b[0] | b[1] << 8);
}
static inline uint32_t tr_raw_ld32(const void *p)
{
    const unsigned char *b = p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t tr_raw_ld64(const void *p)
{
    return (uint64_t)tr_raw_ld32(p) | (uint64_t)tr_raw_ld32((const unsigned char *)p + 4) << 32;
}

static inline size_t tr_raw_pad8(size_t n) { return (n + 7u) & ~(size_t)7u; }

/* Slicing-by-8 CRC-32: the value of tr_raw_crc32_update at about six times
 * its speed, for the writer of a recording, where the bytewise CRC of every
 * chunk was the largest cost.  The caller owns the 8 KiB of tables, filled
 * once by tr_raw_crc32_slices_init. */
typedef struct {
    uint32_t t[8][256];
} tr_raw_crc32_slices;

static inline void tr_raw_crc32_slices_init(tr_raw_crc32_slices *s)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c & 1u) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        s->t[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++)
            s->t[k][i] = (s->t[k - 1][i] >> 8) ^ s->t[0][s->t[k - 1][i] & 0xffu];
}

static inline uint32_t tr_raw_crc32_update_sliced(const tr_raw_crc32_slices *s, uint32_t crc,
                                                  const void *data, size_t len)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t a = tr_raw_ld32(p) ^ crc, b = tr_raw_ld32(p + 4);
        crc = s->t[7][a & 0xffu] ^ s->t[6][(a >> 8) & 0xffu] ^ s->t[5][(a >> 16) & 0xffu]
              ^ s->t[4][a >> 24] ^ s->t[3][b & 0xffu] ^ s->t[2][(b >> 8) & 0xffu]
              ^ s->t[1][(b >> 16) & 0xffu] ^ s->t[0][b >> 24];
    }
    while (len--)
        crc = s->t[0][(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

/* Fills a chunk header for a payload (already padded to 8 bytes). */
static inline void tr_raw_chunk_fill(tr_raw_chunk *c, unsigned type, const void *payload,
                                     uint32_t len, uint64_t seq)
{
    memset(c, 0, sizeof *c);
    c->sync = TR_RAW_CHUNK_SYNC;
    c->type = (uint16_t)type;
    c->payload_len = len;
    c->crc = tr_raw_crc32(payload, len);
    c->seq = seq;
}

/* Fills the fixed header fields and its CRC (caller sets the rest first or after, then
 * calls this last). */
static inline void tr_raw_header_seal(tr_raw_header *h)
{
    memcpy(h->magic, TR_RAW_MAGIC, 8);
    h->major = TR_RAW_MAJOR;
    h->minor = TR_RAW_MINOR;
    h->header_len = TR_RAW_HEADER_LEN;
    h->endian_check = TR_RAW_ENDIAN_CHECK;
    h->header_crc = tr_raw_crc32(h, offsetof(tr_raw_header, header_crc));
}

#endif
