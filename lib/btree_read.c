#include "lib/btree_read.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sqlite_format.h"

/* SQLite's own limits: a cursor goes at most 20 levels deep (BTCURSOR_MAX_DEPTH),
 * a record header is at most 98307 bytes, a value at most SQLITE_MAX_LENGTH
 * (lib/sqlite_format.h). */
#define MAX_DEPTH 20
#define MAX_HEADER 98307
/* Bytes kept past the end of every buffer a record is decoded from, so an
 * integer of fewer bytes can be read with one 8-byte load. */
#define SLACK 8

/* ---- the plan: what SQLite would do with the statement ---- */

/* The opcodes of a plain scan.  A statement whose program has any other is
 * not read here. */
enum { OP_OTHER, OP_SKIP, OP_OPEN, OP_ROWID, OP_COLUMN, OP_NULL, OP_RESULT };

static const struct { const char *name; int kind; } opcodes[] = {
    {"Init", OP_SKIP}, {"Noop", OP_SKIP}, {"Rewind", OP_SKIP}, {"Next", OP_SKIP},
    {"Halt", OP_SKIP}, {"Transaction", OP_SKIP}, {"Goto", OP_SKIP}, {"ColumnsUsed", OP_SKIP},
    {"Explain", OP_SKIP}, {"TableLock", OP_SKIP},
    {"OpenRead", OP_OPEN}, {"Rowid", OP_ROWID}, {"Column", OP_COLUMN}, {"Null", OP_NULL},
    {"ResultRow", OP_RESULT},
};

static int opcode_kind(const char *name)
{
    for (size_t i = 0; name && i < sizeof opcodes / sizeof opcodes[0]; i++)
        if (strcmp(name, opcodes[i].name) == 0)
            return opcodes[i].kind;
    return OP_OTHER;
}

/* Where each register's value comes from while the program is read. */
#define REG_UNSET (-3)
#define MAX_REGS 256

typedef struct {
    int cursor, root, result_first, result_n, nresults;
    int16_t reg[MAX_REGS];
} plan_state;

static int set_reg(plan_state *ps, int reg, int16_t what)
{
    if (reg < 0 || reg >= MAX_REGS)
        return 0;
    ps->reg[reg] = what;
    return 1;
}

/* One instruction of the program; 0 where it is not part of a plain scan. */
static int plan_step(plan_state *ps, sqlite3_stmt *ex)
{
    int kind = opcode_kind((const char *)sqlite3_column_text(ex, 1));
    int p1 = sqlite3_column_int(ex, 2), p2 = sqlite3_column_int(ex, 3), p3 = sqlite3_column_int(ex, 4);
    int p5 = sqlite3_column_int(ex, 6);
    const unsigned char *p4 = sqlite3_column_text(ex, 5);
    int no_p4 = sqlite3_column_type(ex, 5) == SQLITE_NULL;   /* a default of '' shows as '' */
    switch (kind) {
    case OP_SKIP:
        return 1;
    case OP_OPEN:   /* one table of the main database (an index has a key description in p4) */
        if (ps->cursor >= 0 || p3 != 0 || p2 < 1 || !p4 || !*p4 || strspn((const char *)p4, "0123456789") != strlen((const char *)p4))
            return 0;
        ps->cursor = p1;
        ps->root = p2;
        return 1;
    case OP_ROWID:
        return ps->cursor >= 0 && p1 == ps->cursor && set_reg(ps, p2, TR_BTREE_ROWID);
    case OP_COLUMN:   /* no default value (p4), no flags (p5) */
        return ps->cursor >= 0 && p1 == ps->cursor && p2 >= 0 && p2 < 32767 && no_p4 && p5 == 0
               && set_reg(ps, p3, (int16_t)p2);
    case OP_NULL:     /* registers p2..p3 (p3 > p2), or p2 alone */
        if (p1 != 0)
            return 0;
        for (int r = p2; r <= (p3 > p2 ? p3 : p2); r++)
            if (!set_reg(ps, r, TR_BTREE_NULL))
                return 0;
        return 1;
    case OP_RESULT:
        if (ps->nresults++ > 0)
            return 0;
        ps->result_first = p1;
        ps->result_n = p2;
        return 1;
    default:
        return 0;
    }
}

int tr_btree_plan_scan(sqlite3_stmt *st, int ncols, tr_btree_plan *plan)
{
    const char *sql = sqlite3_sql(st);
    if (!sql || ncols < 0 || ncols > TR_BTREE_READ_MAXCOLS || sqlite3_column_count(st) != ncols
        || sqlite3_bind_parameter_count(st) != 0)
        return 0;
    char *text = sqlite3_mprintf("EXPLAIN %s", sql);
    sqlite3_stmt *ex = NULL;
    int ok = text && sqlite3_prepare_v2(sqlite3_db_handle(st), text, -1, &ex, NULL) == SQLITE_OK
             && ex && sqlite3_column_count(ex) >= 7;
    sqlite3_free(text);
    plan_state ps = {.cursor = -1, .root = 0};
    for (int r = 0; r < MAX_REGS; r++)
        ps.reg[r] = REG_UNSET;
    int rc = SQLITE_DONE;
    while (ok && (rc = sqlite3_step(ex)) == SQLITE_ROW)
        ok = plan_step(&ps, ex);
    sqlite3_finalize(ex);
    ok = ok && rc == SQLITE_DONE && ps.cursor >= 0 && ps.nresults == 1 && ps.result_n == ncols
         && ps.result_first >= 0 && ps.result_first + ncols <= MAX_REGS;
    for (int c = 0; ok && c < ncols; c++)
        ok = ps.reg[ps.result_first + c] != REG_UNSET;
    if (!ok)
        return 0;
    memset(plan, 0, sizeof *plan);
    plan->root = (uint32_t)ps.root;
    plan->ncols = ncols;
    for (int c = 0; c < ncols; c++)
        plan->field[c] = ps.reg[ps.result_first + c];
    return 1;
}

/* ---- the reader ---- */

typedef struct {
    unsigned char *page;   /* page_size bytes */
    unsigned hdr;          /* offset of the b-tree page header: 100 on page 1 */
    unsigned ncells, next; /* cells; the next to visit (interior: ncells is the right child) */
    int leaf;
} level;

struct tr_btree_reader {
    int fd, gave_up, done;
    unsigned page_size, usable;
    uint32_t npages;
    uint64_t visited;          /* pages read; more than the file has means a cycle */
    int depth;
    level stack[MAX_DEPTH];
    unsigned char *overflow;   /* a payload gathered from its overflow pages */
    size_t overflow_cap;
    unsigned char *scratch;    /* one overflow page */
    int64_t last_rowid;
    int any_row;
    tr_btree_plan plan;
    int max_field;             /* the highest record field the plan reads, -1 none */
};


/* SQLite's varint: 1-9 bytes, big-endian 7 bits a byte, all 8 of the ninth.
 * 0 when it does not end before end. */
static unsigned get_varint(const unsigned char *p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < 8; i++) {
        if (p + i >= end)
            return 0;
        x = x << 7 | (p[i] & 0x7F);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    if (p + 8 >= end)
        return 0;
    *v = x << 8 | p[8];
    return 9;
}

static int give_up(tr_btree_reader *r)
{
    r->gave_up = 1;
    return -1;
}

/* Reads page pgno into buf; 0 for a page number out of range, a page read more
 * often than the file has pages, or a short read. */
static int read_page(tr_btree_reader *r, uint32_t pgno, unsigned char *buf)
{
    if (pgno < 1 || pgno > r->npages || ++r->visited > r->npages)
        return 0;
    off_t at = (off_t)(pgno - 1) * r->page_size;
    size_t got = 0;
    while (got < r->page_size) {
        ssize_t n = pread(r->fd, buf + got, r->page_size - got, at + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

/* Reads page pgno as the next level down; 0 where it is not a table b-tree page
 * whose cell pointers lie within it. */
static int push_page(tr_btree_reader *r, uint32_t pgno)
{
    if (r->depth >= MAX_DEPTH)
        return 0;
    level *l = &r->stack[r->depth];
    if (!read_page(r, pgno, l->page))
        return 0;
    l->hdr = pgno == 1 ? 100 : 0;
    unsigned type = l->page[l->hdr];
    if (type != LEAF_TABLE && type != INTERIOR_TABLE)
        return 0;
    l->leaf = type == LEAF_TABLE;
    l->ncells = get2(l->page + l->hdr + 3);
    l->next = 0;
    /* as SQLite checks a page it opens: no more cells than fit, the cell
     * content after the cell pointers, and no empty page below the root */
    unsigned header_len = l->leaf ? 8 : 12, content = get2(l->page + l->hdr + 5);
    size_t first_cell = l->hdr + header_len + 2 * (size_t)l->ncells;
    if (content == 0)
        content = 65536;
    if (l->ncells > (r->page_size - 8) / 6 || first_cell > r->usable || content < first_cell
        || content > r->usable || (l->ncells == 0 && r->depth > 0))
        return 0;
    r->depth++;
    return 1;
}

/* Offset of cell i of level l, within the usable part of the page after the
 * cell pointers; 0 where it is not. */
static unsigned cell_offset(const tr_btree_reader *r, const level *l, unsigned i)
{
    unsigned first = l->hdr + (l->leaf ? 8 : 12) + 2 * l->ncells;
    unsigned off = get2(l->page + l->hdr + (l->leaf ? 8 : 12) + 2 * i);
    return off >= first && off < r->usable ? off : 0;
}

/* Gathers a payload of `size` bytes, `local` of them at p, the rest on the
 * overflow pages from `first`; 0 on a broken chain or no memory. */
static int gather_overflow(tr_btree_reader *r, const unsigned char *p, uint64_t local, uint64_t size,
                           uint32_t first)
{
    /* no larger than the pages the file has left could hold, before it is allocated */
    uint64_t pages = (size - local + r->usable - 5) / (r->usable - 4);
    if (r->visited + pages > r->npages)
        return 0;
    if (size > r->overflow_cap) {
        unsigned char *b = realloc(r->overflow, (size_t)size + SLACK);
        if (!b)
            return 0;
        r->overflow = b;
        r->overflow_cap = (size_t)size;
    }
    memset(r->overflow + size, 0, SLACK);
    memcpy(r->overflow, p, (size_t)local);
    uint64_t have = local;
    uint32_t next = first;
    while (have < size) {
        if (!read_page(r, next, r->scratch))
            return 0;
        uint64_t chunk = size - have < r->usable - 4 ? size - have : r->usable - 4;
        memcpy(r->overflow + have, r->scratch + 4, (size_t)chunk);
        have += chunk;
        next = get4(r->scratch);
    }
    return 1;
}

/* A field's value from its serial type and bytes (which lie within the record). */
static int decode_value(uint64_t type, const unsigned char *p, tr_btree_value *v)
{
    static const unsigned char int_len[] = {0, 1, 2, 3, 4, 6, 8};
    v->p = NULL;
    v->len = 0;
    v->i = 0;
    v->r = 0;
    if (type == 0) {
        v->type = SQLITE_NULL;
    } else if (type <= 6) {
        /* big-endian two's complement in 1-8 bytes: read as 8 (a record's
         * buffer has SLACK bytes past its end), the bytes after shifted out */
        uint64_t x;
        memcpy(&x, p, 8);
        v->type = SQLITE_INTEGER;
        v->i = (int64_t)__builtin_bswap64(x) >> (64 - 8 * int_len[type]);
    } else if (type == 7) {
        uint64_t x = 0;
        for (unsigned k = 0; k < 8; k++)
            x = x << 8 | p[k];
        double d;
        memcpy(&d, &x, sizeof d);
        v->type = isnan(d) ? SQLITE_NULL : SQLITE_FLOAT;
        v->r = isnan(d) ? 0 : d;
    } else if (type == 8 || type == 9) {
        v->type = SQLITE_INTEGER;
        v->i = (int64_t)type - 8;
    } else if (type >= 12) {
        v->type = type & 1 ? SQLITE_TEXT : SQLITE_BLOB;
        v->len = (int)((type - 12) / 2);
        v->p = p;
    } else {
        return 0;   /* 10 and 11 are reserved */
    }
    return 1;
}

static uint64_t field_len(uint64_t type)
{
    static const unsigned char len[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0};
    return type < 12 ? len[type] : (type - 12) / 2;
}

/* The bytes of a field of each one-byte serial type (below 0x80, most of
 * them): SQLite's table to 11, then (type - 12) / 2; BAD_TYPE for the
 * reserved 10 and 11. */
#define BAD_TYPE 0xFF
static const unsigned char small_type_len[0x80] = {
#define LEN2(t) (((t) - 12) / 2), (((t) + 1 - 12) / 2)
#define LEN8(t) LEN2(t), LEN2((t) + 2), LEN2((t) + 4), LEN2((t) + 6)
    0, 1, 2, 3, 4, 6, 8, 8, 0, 0, BAD_TYPE, BAD_TYPE, LEN2(12), LEN2(14),
    LEN2(16), LEN2(18), LEN2(20), LEN2(22), LEN8(24), LEN8(32), LEN8(40), LEN8(48), LEN8(56),
    LEN8(64), LEN8(72), LEN8(80), LEN8(88), LEN8(96), LEN8(104), LEN8(112), LEN8(120),
#undef LEN8
#undef LEN2
};

/* The next serial type of a header at h (before hend) and the bytes its field
 * takes: the bytes of the type's varint, 0 where it does not end before hend
 * or the type is reserved. */
static unsigned header_type(const unsigned char *h, const unsigned char *hend, uint64_t *type,
                            uint64_t *len)
{
    if (*h < 0x80) {
        *type = *h;
        *len = small_type_len[*h];
        return *len != BAD_TYPE;
    }
    unsigned k = get_varint(h, hend, type);
    if (!k)
        return 0;
    *len = field_len(*type);
    return *type != 10 && *type != 11 ? k : 0;
}

/* The plan's values from a record.  The whole header is read and its fields
 * must fill the record exactly, as SQLite requires when it reads a header to
 * its end; fields past the header's end read as NULL (a column added later). */
static int decode_record(tr_btree_reader *r, int64_t rowid, const unsigned char *rec, uint64_t size,
                         tr_btree_value *vals)
{
    uint64_t hsize;
    unsigned n = get_varint(rec, rec + size, &hsize);
    if (!n || hsize < n || hsize > size || hsize > MAX_HEADER)
        return 0;
    const unsigned char *h = rec + n, *hend = rec + hsize;
    uint64_t body = hsize, len;
    int nfields = 0;
    uint64_t types[TR_BTREE_READ_MAXCOLS];
    uint64_t starts[TR_BTREE_READ_MAXCOLS];
    /* the fields up to the last the plan reads: where each starts */
    while (nfields <= r->max_field && h < hend) {
        unsigned k = header_type(h, hend, &types[nfields], &len);
        if (!k)
            return 0;
        h += k;
        starts[nfields++] = body;
        body += len;
        if (body > size)
            return 0;
    }
    /* the rest only for their lengths, which with these must fill the record */
    while (h < hend) {
        uint64_t t;
        unsigned k = header_type(h, hend, &t, &len);
        if (!k)
            return 0;
        h += k;
        body += len;
        if (body > size)
            return 0;
    }
    if (body != size)
        return 0;
    for (int c = 0; c < r->plan.ncols; c++) {
        int f = r->plan.field[c];
        tr_btree_value *v = &vals[c];
        if (f == TR_BTREE_ROWID) {
            *v = (tr_btree_value){.type = SQLITE_INTEGER, .i = rowid};
        } else if (f == TR_BTREE_NULL || f >= nfields) {
            *v = (tr_btree_value){.type = SQLITE_NULL};
        } else if (!decode_value(types[f], rec + starts[f], v)) {
            return 0;
        }
    }
    return 1;
}

/* The leaf cell at off: its rowid and values; 0 where it is not well formed. */
static int read_cell(tr_btree_reader *r, const level *l, unsigned off, int64_t *rowid,
                     tr_btree_value *vals)
{
    const unsigned char *p = l->page + off, *end = l->page + r->usable;
    uint64_t size, key;
    unsigned n = get_varint(p, end, &size);
    if (!n || size > SQLITE_FORMAT_MAX_LENGTH)
        return 0;
    p += n;
    if (!(n = get_varint(p, end, &key)))
        return 0;
    p += n;
    *rowid = (int64_t)key;
    uint64_t local = table_local(r->usable, size);
    if ((uint64_t)(end - p) < local + (local < size ? 4 : 0))
        return 0;
    if (local == size)
        return decode_record(r, *rowid, p, size, vals);
    return gather_overflow(r, p, local, size, get4(p + local))
           && decode_record(r, *rowid, r->overflow, size, vals);
}

int tr_btree_reader_next(tr_btree_reader *r, int64_t *rowid, tr_btree_value *vals)
{
    if (r->gave_up)
        return -1;
    while (!r->done) {
        if (r->depth == 0) {
            if (r->visited > 0) {
                r->done = 1;
                break;
            }
            if (!push_page(r, r->plan.root))
                return give_up(r);
            continue;
        }
        level *l = &r->stack[r->depth - 1];
        if (l->leaf && l->next < l->ncells) {
            unsigned off = cell_offset(r, l, l->next++);
            if (!off || !read_cell(r, l, off, rowid, vals) || (r->any_row && *rowid <= r->last_rowid))
                return give_up(r);
            r->last_rowid = *rowid;
            r->any_row = 1;
            return 1;
        }
        if (!l->leaf && l->next <= l->ncells) {
            uint32_t child;
            if (l->next < l->ncells) {
                unsigned off = cell_offset(r, l, l->next);
                if (!off || off + 4 > r->usable)
                    return give_up(r);
                child = get4(l->page + off);
            } else {
                child = get4(l->page + l->hdr + 8);
            }
            l->next++;
            if (!push_page(r, child))
                return give_up(r);
            continue;
        }
        r->depth--;
        if (r->depth == 0)
            r->done = 1;
    }
    return 0;
}

/* The database header's page size, usable size and page count; 0 where this
 * reader does not take the file (not UTF-8, an odd page size). */
static int read_header(tr_btree_reader *r)
{
    unsigned char h[100];
    struct stat sb;
    if (pread(r->fd, h, sizeof h, 0) != (ssize_t)sizeof h || fstat(r->fd, &sb) != 0
        || memcmp(h, "SQLite format 3", 16) != 0 || get4(h + 56) != 1)
        return 0;
    unsigned ps = get2(h + 16);
    if (ps == 1)
        ps = 65536;
    if (ps < 512 || ps > 65536 || (ps & (ps - 1)))
        return 0;
    r->page_size = ps;
    r->usable = ps - h[20];
    if (r->usable < 480)
        return 0;
    uint64_t file_pages = (uint64_t)sb.st_size / ps;
    uint32_t header_pages = get4(h + 28);
    /* SQLite trusts the header's count only where the change counter matches the
     * version-valid-for number; it never reads past the file's end */
    uint64_t n = header_pages && get4(h + 24) == get4(h + 92) ? header_pages : file_pages;
    if (n > file_pages || n == 0 || n > 0xFFFFFFFEu)
        return 0;
    r->npages = (uint32_t)n;
    return 1;
}

tr_btree_reader *tr_btree_reader_open(const char *path, const tr_btree_plan *plan)
{
    if (!path || !plan || plan->ncols < 0 || plan->ncols > TR_BTREE_READ_MAXCOLS || plan->root < 1)
        return NULL;
    tr_btree_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    r->plan = *plan;
    r->max_field = -1;
    for (int c = 0; c < plan->ncols; c++)
        if (plan->field[c] > r->max_field)
            r->max_field = plan->field[c];
    int ok = r->fd >= 0 && read_header(r) && r->max_field < TR_BTREE_READ_MAXCOLS
             && (r->scratch = malloc(r->page_size)) != NULL;
    for (int d = 0; ok && d < MAX_DEPTH; d++)
        ok = (r->stack[d].page = calloc(1, r->page_size + SLACK)) != NULL;
    if (!ok) {
        tr_btree_reader_close(r);
        return NULL;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    return r;
}

void tr_btree_reader_close(tr_btree_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    for (int d = 0; d < MAX_DEPTH; d++)
        free(r->stack[d].page);
    free(r->scratch);
    free(r->overflow);
    free(r);
}
