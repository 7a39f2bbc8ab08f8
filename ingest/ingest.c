#include "ingest/ingest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/rundb.h"
#include "lib/tree.h"

const tr_reader tr_readers[] = {
    {"nvprof", "nvprof/nvvp SQLite database (.nvvp, .prof, .sql)", tr_nvprof_probe, tr_nvprof_read},
    {"kineto", "PyTorch profiler / Kineto chrome trace (.json, .json.gz)", tr_kineto_probe, tr_kineto_read},
    {"nsys", "Nsight Systems SQLite export (.sqlite)", tr_nsys_probe, tr_nsys_read},
    {"raw", "trace-record raw file (.ctr; see docs/raw-format.md)", tr_raw_probe, tr_raw_read},
};
const size_t tr_nreaders = sizeof tr_readers / sizeof tr_readers[0];

void tr_ingest_warn(const tr_ingest_opts *o, const char *fmt, ...)
{
    if (!o || !o->warn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->warn(o->warn_ctx, buf);
}

const tr_reader *tr_reader_by_name(const char *name)
{
    for (size_t i = 0; i < tr_nreaders; i++)
        if (strcmp(tr_readers[i].name, name) == 0)
            return &tr_readers[i];
    return NULL;
}

tr_status tr_reader_detect(const char *path, const tr_reader **out, tr_error *err)
{
    unsigned char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f)
        return tr_fail(err, errno == ENOENT || errno == EACCES ? TR_ERR_INPUT : TR_ERR_RUNTIME,
                       "cannot open %s: %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr)
        return tr_fail(err, TR_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    for (size_t i = 0; i < tr_nreaders; i++) {
        if (tr_readers[i].probe(path, head, n)) {
            *out = &tr_readers[i];
            return TR_OK;
        }
    }
    if (n == 0)
        return tr_fail(err, TR_ERR_INPUT, "%s: empty file", path);
    if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0)
        return tr_fail(err, TR_ERR_INPUT,
                       "%s: SQLite database of an unknown kind (not an nvprof export: no "
                       "StringTable and CUPTI_ACTIVITY_KIND_* tables; not an nsys export: no "
                       "StringIds with NVTX_EVENTS or CUPTI_ACTIVITY_KIND_* tables)", path);
    return tr_fail(err, TR_ERR_INPUT, "%s: unrecognised input format (supported: nvprof databases, "
                   "Nsight Systems SQLite exports, PyTorch/Kineto JSON traces)",
                   path);
}

tr_status tr_ingest_files(const char *const *paths, size_t npaths, const char *out,
                          const tr_ingest_opts *o, size_t *nevents, tr_error *err)
{
    tr_trace t;
    tr_status st = tr_trace_init(&t, err);
    if (st != TR_OK)
        return st;
    for (size_t i = 0; i < npaths && st == TR_OK; i++) {
        const tr_reader *r = NULL;
        if (o && o->force_format) {
            r = tr_reader_by_name(o->force_format);
            if (!r)
                st = tr_fail(err, TR_ERR_USAGE, "unknown input format '%s'", o->force_format);
        } else {
            st = tr_reader_detect(paths[i], &r, err);
        }
        if (st == TR_OK)
            st = r->read(&t, paths[i], o, err);
    }
    if (st == TR_OK)
        st = tr_tree_build(&t, err);
    if (st == TR_OK) {
        const tr_meta_kv meta[] = {{"generator", "trace-ingest"}};
        st = tr_rundb_write(&t, out, meta, 1, err);
    }
    if (nevents)
        *nevents = t.events.n;
    tr_trace_free(&t);
    return st;
}
