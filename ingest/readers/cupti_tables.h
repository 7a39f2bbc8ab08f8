/*
 * cupti_tables.h - the one table-driven reader behind the nvprof and nsys
 * readers.
 *
 * Both formats are SQLite files of CUPTI activity records: nsys exports carry
 * nvprof's tables under new names and column names, names kernels and API
 * calls through its own string table, and packs thread ids.  A format is
 * therefore data: a ct_format names its string table and its quirks, and
 * lists its tables in reading order, each a ct_table row that says which
 * loop reads it, which event kind it fills and which column holds each field
 * (ct_field).  The loops here read the activity families both formats share
 * (strings, devices, API calls, kernels, memcpy, memset, synchronisation);
 * a format's own tables (nvprof's OpenACC or markers, nsys's NVTX_EVENTS)
 * are read by its own function, called from the same list.
 *
 * Times are integer nanoseconds in both formats (nvprof absolute, nsys since
 * the session start) and are kept as they are.
 *
 * Ownership: ct_read_file() owns the reader for the length of one file.
 */
#ifndef TR_INGEST_READERS_CUPTI_TABLES_H
#define TR_INGEST_READERS_CUPTI_TABLES_H

#include <stdint.h>

#include "ingest/ingest.h"
#include "ingest/sql_input.h"
#include "lib/cuda_enums.h"
#include "lib/i64map.h"
#include "lib/names.h"

/* What a column holds; a format's table names the column for each field it has. */
typedef enum {
    CT_START, CT_END,
    CT_DEVICE, CT_CONTEXT, CT_STREAM, CT_CORRELATION,
    CT_PID, CT_TID,
    CT_GTID,            /* nsys globalTid: pid and tid packed (pid << 24 | tid) */
    CT_CBID,            /* API callback id: names the call, with CT_RETURN its detail */
    CT_RETURN,
    CT_NAME,            /* a string id: API name (version suffix dropped) or device name */
    CT_DEMANGLED, CT_SHORT, CT_MANGLED,   /* kernel names, string ids */
    CT_GRID_X, CT_GRID_Y, CT_GRID_Z, CT_BLOCK_X, CT_BLOCK_Y, CT_BLOCK_Z,
    CT_REGISTERS, CT_STATIC_SMEM, CT_DYNAMIC_SMEM,
    CT_COPY_KIND, CT_SRC_KIND, CT_DST_KIND, CT_BYTES,
    CT_VALUE,           /* memset value */
    CT_SYNC_TYPE,
    CT_ID,              /* a row's own id: string id, device id */
    CT_TEXT,            /* inline text: string value, device name */
    CT_CC_MAJOR, CT_CC_MINOR, CT_MEMORY, CT_SM_COUNT,
    /* OpenACC (nvprof): event and construct kinds, OpenACC's own thread id, source
     * file (string id) and line, and the string that tells the events apart */
    CT_EVENT_KIND, CT_CONSTRUCT, CT_HOST_TID, CT_SRC_FILE, CT_LINE, CT_DETAIL,
    CT_NFIELDS
} ct_field;

typedef struct {
    ct_field field;
    const char *name;
    int required;       /* 0: a file without it reads the field as NULL */
} ct_col;

typedef struct ct_reader ct_reader;
typedef struct ct_table ct_table;
typedef tr_status (*ct_read_fn)(ct_reader *r, const ct_table *tab, tr_error *err);

struct ct_table {
    const char *name;
    ct_read_fn read;    /* NULL: read when the file is opened (named, so not reported unread) */
    tr_kind kind;       /* the kind of event it fills, where the loop makes one kind */
    const ct_col *cols; /* select order: of several missing required columns, the first is named */
    size_t ncols;
    const char *tail;   /* " ORDER BY _id_", appended to the select */
    const char *order;  /* or the column the rows are read in the order of (tr_sql_order_by()) */
};

#define CT_COLS(a) (a), sizeof(a) / sizeof((a)[0])

enum {
    CT_CHECK_TIMES = 1,     /* rows without a usable start and end are skipped and counted */
    CT_ZERO_ID_NULL = 2,    /* string id 0 (and below) is the format's null, not a string */
    CT_KERNEL_ID = 4,       /* a kernel without a known name is shown with its string id */
};

typedef struct {
    const char *what;           /* "nvprof database": in messages */
    const char *format;         /* the source's format in run.db */
    const char *strings;        /* the string table, required: without it the file is not this format */
    const char *not_this;       /* what the missing string table says the file is not */
    const tr_enum_names *memory_kinds;
    unsigned flags;
    const ct_table *tables;     /* read in this order */
    size_t ntables;
    void (*version)(ct_reader *r, char *buf, size_t size);
    tr_status (*finish)(ct_reader *r, tr_error *err);   /* after the tables; may be NULL */
} ct_format;

struct ct_reader {
    tr_trace *t;
    tr_sql_input in;
    const tr_ingest_opts *o;
    const ct_format *fmt;
    uint32_t source;
    int64_t max_ts;
    size_t first_event;         /* this file's first event in t->events */
    tr_nvtx_parser *nvtx;
    /* The file's string table, sorted by its ids (a binary search costs less than a
     * hash here: the ids are dense and mostly arrive in order), with ours beside them
     * and, once a kernel has used one, the name it is shown by (0: not yet). */
    struct ct_string { int64_t id; uint32_t raw, kernel; } *str;
    size_t nstr;
    int str_dense;              /* the ids are consecutive: an id is its index plus str[0].id */
    tr_i64map ctx_device;       /* contextId -> deviceId, where the format has a context table */
    uint32_t api_names[2][1024];   /* by callback id, runtime [0] and driver [1] */
    /* the last thread and stream looked up: consecutive rows mostly share them */
    struct { int64_t pid, tid; uint32_t thread; } last_thread;
    struct { int64_t device, context, stream; uint32_t id; } last_stream;
};

/* A selected table: the statement and where each field is in it (-1: absent);
 * where its rows are read ahead, the current row's cells. */
typedef struct {
    sqlite3_stmt *st;
    int col[CT_NFIELDS];
    const tr_sql_cell *cells;
} ct_row;

/* Rows of one table whose times cannot be used: skipped, counted, reported once. */
typedef struct {
    const char *table;
    size_t no_time;     /* start or end NULL, or not an integer */
    size_t bad_span;    /* end before start, or a time no trace can hold */
} ct_bad;

tr_status ct_read_file(tr_trace *t, const char *path, const tr_ingest_opts *o, const ct_format *fmt,
                       tr_error *err);

/* 1 when the file at path is SQLite and opens, with in open (the caller closes it). */
int ct_probe_open(tr_sql_input *in, const char *path, const unsigned char *head, size_t headlen,
                  const char *what);

/* Fills an event from its row: start, end and the loop's constant name are already set. */
typedef tr_status (*ct_fill_fn)(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                                tr_error *err);
/* The one loop over an activity table: each row with usable times (where the format
 * checks them) is one event of the table's kind, filled by fill; `name`, when not
 * NULL, names every event. */
tr_status ct_read_events(ct_reader *r, const ct_table *tab, const char *name, ct_fill_fn fill,
                         tr_error *err);
/* Column c of the current row (read ahead, or from the statement); an absent
 * column (c < 0) reads as NULL, as SQLite reads a column out of range.  Inline:
 * a row's fields are read a few times each, for every row of every table. */
static inline int ct_row_type(const ct_row *w, int c)
{
    if (c < 0)
        return SQLITE_NULL;
    return w->cells ? w->cells[c].type : sqlite3_column_type(w->st, c);
}

static inline int64_t ct_row_int(const ct_row *w, int c)
{
    if (c < 0)
        return 0;
    return w->cells ? w->cells[c].i : sqlite3_column_int64(w->st, c);
}

/* The field as an integer; def where the format has no such column or the row holds NULL. */
static inline int64_t ct_i64(const ct_row *w, ct_field f, int64_t def)
{
    int c = w->col[f];
    return ct_row_type(w, c) == SQLITE_NULL ? def : ct_row_int(w, c);
}

/* The shared loops, for a format's table list. */
tr_status ct_read_strings(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_devices(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_api(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_kernels(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_memcpy(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_memset(ct_reader *r, const ct_table *tab, tr_error *err);
tr_status ct_read_sync(ct_reader *r, const ct_table *tab, tr_error *err);

/* For a format's own loops. */
tr_status ct_oom(const ct_reader *r, tr_error *err);
int ct_time_ok(int64_t v);
/* 1 and the times when columns cs and ce hold a usable interval; else counts why and 0. */
int ct_interval(ct_bad *b, sqlite3_stmt *st, int cs, int ce, int64_t *start, int64_t *end);
/* ct_interval() on values already read: their SQLite types and integers. */
int ct_interval_of(ct_bad *b, int stype, int64_t s, int etype, int64_t e, int64_t *start, int64_t *end);
void ct_report_bad(const ct_reader *r, const ct_bad *b);
void ct_note_ts(ct_reader *r, int64_t ts);
uint32_t ct_thread(ct_reader *r, int64_t pid, int64_t tid);
uint32_t ct_stream(ct_reader *r, int64_t device, int64_t context, int64_t stream);
/* Our string id for the file's string id in column col; 0 when NULL, null or unknown. */
uint32_t ct_string(const ct_reader *r, sqlite3_stmt *st, int col);
/* The same for field f of a table's current row, and for a cell read ahead. */
uint32_t ct_row_string(const ct_reader *r, const ct_row *w, ct_field f);
uint32_t ct_cell_string(const ct_reader *r, const tr_sql_cell *c);
/* Names e from an NVTX message: an annotated op (name, seq, shapes) when op_ok,
 * else the text.  0, or -1 out of memory. */
int ct_nvtx_name(ct_reader *r, tr_event *e, uint32_t raw, int op_ok);

#endif
