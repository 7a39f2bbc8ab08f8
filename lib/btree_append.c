/* Bulk loads of SQLite b-trees: see btree_append.h.  Section numbers below
 * are those of https://www.sqlite.org/fileformat2.html. */
#include "lib/btree_append.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/spill.h"
#include "lib/sqlite_format.h"

#define WRITE_PAGES 64          /* pages gathered into one write */
#define MAX_COLUMNS 64
#define MAX_PAGES 1073741823u   /* SQLite's default SQLITE_MAX_PAGE_COUNT */
#define MAX_INDEX_CELL 4096     /* an index entry and its size: max_local() of a 16 KiB page */
#define DIRECT_ALIGN 4096       /* the write buffer's alignment, for O_DIRECT */
#define PROBE_EVERY 32          /* flushes: one in this many goes the other way, timed again */

/* 1.3.2: the page holding byte 2^30 of the file is never a b-tree page */
static uint32_t pending_byte = 0x40000000u;

void tr_btree_set_pending_byte(uint32_t offset)
{
    pending_byte = offset;
}

#define STANDARD_IO {O_DIRECT, pwrite, pread, pwrite, NULL}
static tr_btree_io io = STANDARD_IO;

void tr_btree_set_io(const tr_btree_io *how)
{
    static const tr_btree_io standard = STANDARD_IO;
    io = how ? *how : standard;
}


struct tr_btree_file {
    int fd;
    int db_fd;                    /* apart: the database, read for its header and roots; else -1 */
    char *path;
    unsigned char header[100];
    uint32_t page_size, usable;   /* usable: less the reserved bytes at each page's end */
    uint32_t old_pages, npages;   /* pages before the load; pages now, written or buffered */
    uint32_t lock_page;           /* the page holding PENDING_BYTE */
    int roots_written;
    int int01;                    /* schema format 4: the integers 0 and 1 take no bytes (2.1) */
    unsigned char *wbuf;          /* the last nbuf pages, not yet written */
    size_t nbuf;
    unsigned char *pages;         /* three page buffers for the builders */
    unsigned char *record;        /* one record */
    size_t record_size;
    unsigned char *body;          /* its body, while it is encoded */
    size_t body_size;
    unsigned char *root_page;     /* apart: the root's page, written by tr_btree_append_apart() */
    uint32_t root;
    /* the way the buffers go to the file (open_direct(), flush_way()) */
    int dfd;                      /* the pages' descriptor with O_DIRECT (apart: fd itself); -1 = none */
    double cost[2];               /* ns a byte a flush kept the writer waiting: through the page
                                   * cache [0], past it [1]; 0 = untimed */
    uint32_t flushes;
    uint64_t bytes_past;          /* written past the page cache; bytes_cached through it */
    uint64_t bytes_cached;
    struct direct_writer *writer; /* the thread of the direct writes, once one is made */
    unsigned char *wbuf_other;    /* the buffer it writes while wbuf fills */
};

/* ---- integers as the file format stores them ---- */

static void put2(unsigned char *p, uint32_t v) { p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v; }
static void put4(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* 1.6, "varint": big-endian groups of 7 bits, the ninth byte whole */
static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v > 0x7f && n < 9) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
    if (v <= 0x7f) {
        p[0] = (unsigned char)v;
        return 1;
    }
    if (v >> 56) {
        p[8] = (unsigned char)v;
        v >>= 8;
        for (int i = 7; i >= 0; i--, v >>= 7)
            p[i] = (unsigned char)((v & 0x7f) | 0x80);
        return 9;
    }
    unsigned char tmp[9];
    size_t n = 0;
    for (; v; v >>= 7)
        tmp[n++] = (unsigned char)((v & 0x7f) | 0x80);
    tmp[0] &= 0x7f;
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

/* ---- records (2.1) ---- */

/* The serial type of an integer by the bits its magnitude needs (its sign
 * takes one more), and each type's body length. */
static const unsigned char type_by_bits[65] = {
    1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
static const unsigned char body_len[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};

static unsigned int_type(int64_t v, int int01)
{
    uint64_t u = (uint64_t)(v ^ (v >> 63));   /* ~v for a negative v */
    unsigned t = type_by_bits[64 - __builtin_clzll(u | 1)];
    /* gcc makes this two branches on the data; a select by masks measured
     * the same (docs/ingest.md, "The encoder's checks") */
    return int01 && (uint64_t)v <= 1 ? 8 + (unsigned)v : t;
}
/* The shift that leaves an integer's body_len[t] low bytes at the top; 0
 * for the types without a body, whose store is then not counted. */
static const unsigned char body_shift[10] = {0, 56, 48, 40, 32, 16, 0, 0, 0, 0};

/* The header's length with its own varint, for types bytes of serial types. */
static size_t header_len(size_t types)
{
    size_t head = types + 1;
    while (varint_len(head) + types != head)
        head = varint_len(head) + types;
    return head;
}

#define RECORD_TOO_LONG ((size_t)-1)
#define RECORD_NO_MEMORY ((size_t)-2)

/* Grows *buf (*size bytes, less than need) to hold need bytes, at least
 * doubling; -1 when it cannot.  Out of line: the encoder's loop calls it
 * only for a record longer than any before. */
static __attribute__((noinline)) int reserve_bytes(unsigned char **buf, size_t *size, size_t need)
{
    size_t grown = *size * 2 > need ? *size * 2 : need;
    unsigned char *r = realloc(*buf, grown);
    if (!r)
        return -1;
    *buf = r;
    *size = grown;
    return 0;
}

/* Encodes cells[0..n) (cell 0 as NULL when rowid_alias) into f->record,
 * grown as needed; returns its length, or one of the two above when it is
 * longer than max or a buffer cannot grow.  One pass over the cells: the
 * serial types go to a buffer on the stack and the body to f->body as each
 * cell is seen, then both behind the header's length.  The integers go in
 * as 8-byte stores, shifted by a table and counted for their body_len[]
 * bytes, without a branch on the data; the body has room for a store of
 * every cell left (reserved before the loop and at each text), so the
 * integers do not check it one by one. */
static size_t encode_record(tr_btree_file *f, const tr_cell *cells, int n, int rowid_alias, size_t max)
{
    unsigned char types[MAX_COLUMNS * 9];
    size_t nt = 0, nb = 0;
    int int01 = f->int01;
    size_t room = (size_t)n * 8 + 8;
    if (room > f->body_size && reserve_bytes(&f->body, &f->body_size, room) < 0)
        return RECORD_NO_MEMORY;
    int i = 0;
    if (rowid_alias && n > 0) {
        types[nt++] = 0;
        i = 1;
    }
    for (; i < n; i++) {
        const tr_cell *c = &cells[i];
        if (c->type == TR_CELL_INT) {
            unsigned t = int_type(c->i, int01);
            types[nt++] = (unsigned char)t;
            uint64_t be = __builtin_bswap64((uint64_t)c->i << body_shift[t]);
            memcpy(f->body + nb, &be, 8);
            nb += body_len[t];
        } else if (c->type == TR_CELL_TEXT && c->s) {
            size_t len = c->len < 0 ? strlen(c->s) : (size_t)c->len;
            if (nb + len > max)
                return RECORD_TOO_LONG;
            room = nb + len + (size_t)(n - i) * 8 + 8;
            if (room > f->body_size && reserve_bytes(&f->body, &f->body_size, room) < 0)
                return RECORD_NO_MEMORY;
            nt += put_varint(types + nt, 2 * (uint64_t)len + 13);
            memcpy(f->body + nb, c->s, len);
            nb += len;
        } else {
            types[nt++] = 0;
        }
    }
    size_t head = header_len(nt);
    if (head + nb > max)
        return RECORD_TOO_LONG;
    if (head + nb > f->record_size && reserve_bytes(&f->record, &f->record_size, head + nb) < 0)
        return RECORD_NO_MEMORY;
    unsigned char *p = f->record;
    p += put_varint(p, head);
    memcpy(p, types, nt);
    memcpy(p + nt, f->body, nb);
    return head + nb;
}

/* 1.6: the largest payload a cell holds on its page without overflow pages */
static size_t max_local(const tr_btree_file *f, int table)
{
    return table ? (size_t)table_max_local(f->usable) : (size_t)(f->usable - 12) * 64 / 255 - 23;
}

#define MAX_RECORD SQLITE_FORMAT_MAX_LENGTH

/* ---- pages (1.6) ---- */

typedef struct {
    unsigned char *p;
    unsigned hdr;      /* header bytes: 8 on a leaf, 12 on an interior page */
    unsigned ncells;
    unsigned top;      /* start of the cell content area; cells are placed below it */
    unsigned last, last_size;   /* the last cell's room on the page, and its size */
} page;

static void page_start(page *pg, const tr_btree_file *f, unsigned char type)
{
    memset(pg->p, 0, f->page_size);
    pg->p[0] = type;
    pg->hdr = type == LEAF_TABLE || type == LEAF_INDEX ? 8 : 12;
    pg->ncells = 0;
    pg->top = f->usable;
    pg->last = pg->last_size = 0;
}

/* SQLite counts every cell as at least 4 bytes (room for a freeblock) */
static size_t cell_room(size_t size) { return size < 4 ? 4 : size; }

static int page_fits(const page *pg, size_t size)
{
    return pg->hdr + 2 * (size_t)(pg->ncells + 1) + cell_room(size) <= pg->top;
}

static unsigned char *page_add(page *pg, size_t size)
{
    pg->last = (unsigned)cell_room(size);
    pg->last_size = (unsigned)size;
    pg->top -= pg->last;
    put2(pg->p + pg->hdr + 2 * pg->ncells, pg->top);
    pg->ncells++;
    return pg->p + pg->top;
}

/* Takes the last cell out again, into out (its bytes, size in *size). */
static void page_pop(page *pg, unsigned char *out, size_t *size)
{
    memcpy(out, pg->p + pg->top, pg->last_size);
    *size = pg->last_size;
    pg->ncells--;
    memset(pg->p + pg->top, 0, pg->last);
    put2(pg->p + pg->hdr + 2 * pg->ncells, 0);
    pg->top += pg->last;
}

static void page_finish(page *pg, uint32_t right_child)
{
    put2(pg->p + 3, pg->ncells);
    put2(pg->p + 5, pg->top & 0xffff);   /* 65536 is stored as 0 */
    if (pg->hdr == 12)
        put4(pg->p + 8, right_child);
}

/* ---- the file ---- */

static tr_status io_fail(tr_btree_file *f, tr_error *err, const char *what)
{
    return tr_fail(err, TR_ERR_RUNTIME, "%s: cannot %s: %s", f->path, what, strerror(errno));
}

static tr_status write_at(tr_btree_file *f, const unsigned char *p, size_t n, uint64_t off, tr_error *err)
{
    while (n > 0) {
        ssize_t w = io.cached_pwrite(f->fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return io_fail(f, err, "write");
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return TR_OK;
}

/* The bulk pages may bypass the page cache (O_DIRECT): a buffered write
 * copies each page into a page-cache page the kernel must first allocate,
 * which on a virtual machine was a fifth of a 10^7-event ingest's CPU time
 * (docs/ingest.md, "run.db past the page cache"), for a file nothing reads
 * before the ingest ends; but a direct write waits for the device, which a
 * slow disk or a network file system makes the dearer way.  So both ways are
 * timed as the pages go, and each buffer takes the cheaper (flush_way()).
 * Direct I/O is only ever a faster path: where the file system refuses it
 * (tmpfs, an alignment it does not take) or a direct call fails for any
 * reason, the writer goes on through the page cache for good, whose writes
 * then report any real error. */
static void open_direct(tr_btree_file *f, int apart)
{
    f->dfd = -1;
    if (!io.direct_pwrite)
        return;
    if (apart) {   /* its own unnamed file, only ever read and written in whole buffers */
        int flags = fcntl(f->fd, F_GETFL);
        if (flags >= 0 && fcntl(f->fd, F_SETFL, flags | io.open_flag) == 0)
            f->dfd = f->fd;
    } else {
        f->dfd = open(f->path, O_WRONLY | io.open_flag | O_CLOEXEC);
    }
}

static void drop_direct(tr_btree_file *f)
{
    if (f->dfd < 0)
        return;
    if (f->dfd == f->fd) {
        int flags = fcntl(f->fd, F_GETFL);
        if (flags >= 0)
            (void)fcntl(f->fd, F_SETFL, flags & ~io.open_flag);
    } else {
        close(f->dfd);
    }
    f->dfd = -1;
}

/* Direct writes run on a thread of their own, one buffer at a time, while
 * the writer fills the other: a direct write waits for the device, which a
 * buffered one leaves to the kernel's writeback, and that wait is the
 * writer's only while the device is slower than the pages are made. */
struct direct_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int busy, quit;             /* a write given and not yet finished; the thread to end */
    int fd;
    const unsigned char *p;     /* the write: n bytes at off, of which done went */
    size_t n, done;
    uint64_t off;
};

static void *direct_writer_main(void *arg)
{
    struct direct_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy)
            break;
        pthread_mutex_unlock(&w->mu);
        size_t done = 0;
        while (done < w->n) {
            ssize_t r = io.direct_pwrite(w->fd, w->p + done, w->n - done, (off_t)(w->off + done));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || (size_t)r > w->n - done)
                break;
            done += (size_t)r;
        }
        pthread_mutex_lock(&w->mu);
        w->done = done;
        w->busy = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Hands the n bytes at p to the thread (made on first use); 0 where no
 * thread could be made, and the writer then goes on through the page cache
 * rather than try again at every buffer. */
static int start_direct(tr_btree_file *f, const unsigned char *p, size_t n, uint64_t off)
{
    struct direct_writer *w = f->writer;
    if (!w) {
        if (!(w = calloc(1, sizeof *w))) {
            drop_direct(f);
            return 0;
        }
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, direct_writer_main, w) != 0) {
            pthread_cond_destroy(&w->cv);
            pthread_mutex_destroy(&w->mu);
            free(w);
            drop_direct(f);
            return 0;
        }
        f->writer = w;
    }
    pthread_mutex_lock(&w->mu);
    w->fd = f->dfd;
    w->p = p;
    w->n = n;
    w->off = off;
    w->busy = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 1;
}

/* Waits for the thread's write; the bytes it wrote of it, its size in *n
 * and offset in *off (0 and nothing when none was given). */
static size_t wait_direct(tr_btree_file *f, size_t *n, uint64_t *off)
{
    struct direct_writer *w = f->writer;
    *n = 0;
    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    size_t done = w->done;
    *n = w->n;
    *off = w->off;
    w->n = w->done = 0;
    pthread_mutex_unlock(&w->mu);
    return done;
}

static void end_direct_writer(tr_btree_file *f)
{
    struct direct_writer *w = f->writer;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);   /* it finishes a write given first */
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    f->writer = NULL;
}

static double now_ns(void)
{
    if (io.now_ns)
        return io.now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Past the page cache (1) or through it (0): each way is timed first, then
 * the cheaper is taken, and the other once in PROBE_EVERY flushes, so that
 * a change shows (other I/O on the disk, the kernel throttling a writer of
 * too many dirty pages).  A way's cost is the time it kept the writer
 * waiting: a cached write's call, a direct write's wait for the one before
 * it (its own goes on beside the next buffer). */
static int direct_preferred(const tr_btree_file *f)
{
    return f->cost[1] <= f->cost[0];
}

static int flush_way(const tr_btree_file *f)
{
    if (f->dfd < 0)
        return 0;
    if (f->cost[1] == 0 || f->cost[0] == 0)
        return f->cost[1] == 0;
    int preferred = direct_preferred(f);
    return f->flushes % PROBE_EVERY == PROBE_EVERY - 1 ? !preferred : preferred;
}

/* The way taken is averaged over its last few flushes; a probe of the other
 * replaces its figure, which is PROBE_EVERY flushes old. */
static void note_cost(tr_btree_file *f, int way, double ns, size_t n)
{
    double c = ns > 0 ? ns / (double)n : 1e-6;
    int probe = f->cost[0] != 0 && f->cost[1] != 0 && way != direct_preferred(f);
    f->cost[way] = f->cost[way] == 0 || probe ? c : 0.75 * f->cost[way] + 0.25 * c;
}

/* Waits for the direct write in flight; what it did not write goes through
 * the page cache, and so does every write after it. */
static tr_status finish_direct(tr_btree_file *f, tr_error *err)
{
    size_t n = 0;
    uint64_t off = 0;
    double t0 = now_ns();
    size_t done = wait_direct(f, &n, &off);
    if (!n)
        return TR_OK;
    int first = f->bytes_past == 0;   /* its wait held the thread's start too: not a write's cost */
    f->bytes_past += done;
    if (done == n) {
        if (!first)
            note_cost(f, 1, now_ns() - t0, n);
        return TR_OK;
    }
    drop_direct(f);
    f->bytes_cached += n - done;
    return write_at(f, f->wbuf_other + done, n - done, off + done, err);
}

static tr_status flush(tr_btree_file *f, tr_error *err)
{
    if (!f->nbuf)
        return TR_OK;
    uint64_t first = f->npages - f->nbuf;   /* 0-based page index of the first buffered */
    size_t n = f->nbuf * f->page_size;
    uint64_t off = first * f->page_size;
    f->nbuf = 0;
    f->flushes++;
    tr_status st = finish_direct(f, err);
    if (st != TR_OK)
        return st;
    if (flush_way(f) && start_direct(f, f->wbuf, n, off)) {
        unsigned char *filled = f->wbuf;
        f->wbuf = f->wbuf_other;
        f->wbuf_other = filled;
        return TR_OK;
    }
    double t0 = now_ns();
    st = write_at(f, f->wbuf, n, off, err);
    if (st == TR_OK)
        note_cost(f, 0, now_ns() - t0, n);
    f->bytes_cached += n;
    return st;
}

/* Every page written: what reads the file or closes it comes after. */
static tr_status flush_all(tr_btree_file *f, tr_error *err)
{
    tr_status st = flush(f, err);
    return st == TR_OK ? finish_direct(f, err) : st;
}

/* Buffers p (NULL: zeros) as the file's next page. */
static tr_status buffer_page(tr_btree_file *f, const unsigned char *p, tr_error *err)
{
    if (f->npages >= MAX_PAGES)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: too many pages", f->path);
    unsigned char *slot = f->wbuf + f->nbuf * f->page_size;
    if (p)
        memcpy(slot, p, f->page_size);
    else
        memset(slot, 0, f->page_size);
    f->npages++;
    f->nbuf++;
    return f->nbuf == WRITE_PAGES ? flush(f, err) : TR_OK;
}

/* Appends page p as the file's next page; its number in *pgno. */
static tr_status append_page(tr_btree_file *f, const unsigned char *p, uint32_t *pgno, tr_error *err)
{
    tr_status st = TR_OK;
    if (f->npages + 1 == f->lock_page)
        st = buffer_page(f, NULL, err);   /* the lock-byte page stays unused */
    if (st == TR_OK && (st = buffer_page(f, p, err)) == TR_OK)
        *pgno = f->npages;
    return st;
}

/* The number append_page() gives the page after page p. */
static uint32_t page_after(const tr_btree_file *f, uint32_t p)
{
    return p + 1 == f->lock_page ? p + 2 : p + 1;
}

/* 1.6, "Cell Payload Overflow Pages": the n bytes at data as a chain of
 * pages, each the next one's number (0 on the last) and usable - 4 bytes;
 * the first one's number in *first. */
static tr_status write_overflow(tr_btree_file *f, const unsigned char *data, size_t n, uint32_t *first,
                                tr_error *err)
{
    unsigned char *p = f->pages;   /* free while the leaves are built */
    size_t chunk = f->usable - 4;
    *first = page_after(f, f->npages);
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        uint32_t pgno = 0;
        memset(p, 0, f->page_size);
        put4(p, off + len < n ? page_after(f, page_after(f, f->npages)) : 0);
        memcpy(p + 4, data + off, len);
        tr_status st = append_page(f, p, &pgno, err);
        if (st != TR_OK)
            return st;
    }
    return TR_OK;
}

static tr_status write_root(tr_btree_file *f, uint32_t root, const unsigned char *p, tr_error *err)
{
    f->roots_written = 1;
    if (f->root_page) {   /* apart */
        memcpy(f->root_page, p, f->page_size);
        f->root = root;
        return TR_OK;
    }
    return write_at(f, p, f->page_size, (uint64_t)(root - 1) * f->page_size, err);
}

static ssize_t read_with(ssize_t (*read_fn)(int, void *, size_t, off_t), int fd, unsigned char *p, size_t n,
                         uint64_t off)
{
    ssize_t r;
    do
        r = read_fn(fd, p, n, (off_t)off);
    while (r < 0 && errno == EINTR);
    return r;
}

static ssize_t read_at(int fd, unsigned char *p, size_t n, uint64_t off)
{
    return read_with(pread, fd, p, n, off);
}

/* The root must be one of the file's pages before the load, an empty leaf of
 * the expected kind (what CREATE TABLE / CREATE INDEX leave). */
static tr_status check_root(tr_btree_file *f, uint32_t root, unsigned char type, tr_error *err)
{
    unsigned char *p = f->pages;
    if (root < 2 || root > f->old_pages || root == pending_byte / f->page_size + 1)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: root page %u is not a b-tree page", f->path, root);
    ssize_t r = read_at(f->db_fd >= 0 ? f->db_fd : f->fd, p, f->page_size, (uint64_t)(root - 1) * f->page_size);
    if (r != (ssize_t)f->page_size) {
        if (r >= 0)
            errno = EIO;
        return io_fail(f, err, "read");
    }
    if (p[0] != type || get2(p + 3) != 0)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: root page %u is not an empty %s", f->path, root,
                       type == LEAF_TABLE ? "table" : "index");
    return TR_OK;
}

/* The writer for the database at path: appending to it, or apart (its pages
 * into a file of their own, the database only read). */
static tr_status open_writer(tr_btree_file **out, const char *path, int apart, tr_error *err)
{
    *out = NULL;
    tr_btree_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    f->fd = f->db_fd = f->dfd = -1;
    int fd = open(path, (apart ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    *(apart ? &f->db_fd : &f->fd) = fd;
    if (fd < 0) {
        tr_status st = io_fail(f, err, "open");
        tr_btree_abort(f);
        return st;
    }
    struct stat sb;
    ssize_t r = read_at(fd, f->header, sizeof f->header, 0);
    const unsigned char *h = f->header;
    uint32_t ps = get2(h + 16) == 1 ? 65536 : get2(h + 16);
    if (fstat(fd, &sb) != 0 || r != (ssize_t)sizeof f->header) {
        if (r >= 0)
            errno = EIO;
        tr_status st = io_fail(f, err, "read");
        tr_btree_abort(f);
        return st;
    }
    /* 1.3: what this writer produces: rollback-journal versions, no
     * auto-vacuum, a page count that is valid and is the file's size */
    int ok = memcmp(h, "SQLite format 3", 16) == 0 && ps >= 512 && ps <= 65536 && (ps & (ps - 1)) == 0
             && h[18] == 1 && h[19] == 1 && ps - h[20] >= 480 && get4(h + 52) == 0
             && get4(h + 92) == get4(h + 24) && get4(h + 44) >= 1 && get4(h + 44) <= 4
             && get4(h + 56) == 1
             && (uint64_t)sb.st_size == (uint64_t)get4(h + 28) * ps;
    if (!ok) {
        tr_btree_abort(f);
        return tr_fail(err, TR_ERR_RUNTIME, "%s: not a database this writer can append to", path);
    }
    f->page_size = ps;
    f->usable = ps - h[20];
    f->old_pages = f->npages = get4(h + 28);
    f->lock_page = pending_byte / ps + 1;
    if (apart) {
        /* numbered from 1 in a file of their own: no lock-byte page there */
        f->npages = 0;
        f->lock_page = 0;
        f->fd = tr_spill_open_file();
        if (f->fd < 0) {
            tr_status st = tr_fail(err, TR_ERR_RUNTIME, "cannot make a file beside %s: %s", path, strerror(errno));
            tr_btree_abort(f);
            return st;
        }
        f->root_page = malloc(ps);
    }
    f->int01 = get4(h + 44) >= 4;
    open_direct(f, apart);
    f->wbuf = aligned_alloc(DIRECT_ALIGN, (size_t)WRITE_PAGES * ps);   /* ps >= 512: a multiple */
    f->wbuf_other = aligned_alloc(DIRECT_ALIGN, (size_t)WRITE_PAGES * ps);
    f->pages = malloc(3 * (size_t)ps);
    f->record_size = f->body_size = (size_t)ps + 8;
    f->record = malloc(f->record_size);
    f->body = malloc(f->body_size);
    if (!f->wbuf || !f->wbuf_other || !f->pages || !f->record || !f->body || (apart && !f->root_page)) {
        tr_btree_abort(f);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    *out = f;
    return TR_OK;
}

tr_status tr_btree_open(tr_btree_file **out, const char *path, tr_error *err)
{
    return open_writer(out, path, 0, err);
}

tr_status tr_btree_open_apart(tr_btree_file **out, const char *path, tr_error *err)
{
    return open_writer(out, path, 1, err);
}

void tr_btree_abort(tr_btree_file *f)
{
    if (!f)
        return;
    end_direct_writer(f);   /* before its buffer goes */
    if (f->dfd != f->fd)
        drop_direct(f);
    if (f->fd >= 0)
        close(f->fd);
    if (f->db_fd >= 0)
        close(f->db_fd);
    free(f->root_page);
    free(f->wbuf);
    free(f->wbuf_other);
    free(f->pages);
    free(f->record);
    free(f->body);
    free(f->path);
    free(f);
}

tr_status tr_btree_close(tr_btree_file *f, tr_error *err)
{
    if (f->root_page) {
        tr_btree_abort(f);
        return tr_fail(err, TR_ERR_RUNTIME, "an index built apart is appended, not closed");
    }
    tr_status st = flush_all(f, err);
    if (st == TR_OK && (f->npages != f->old_pages || f->roots_written)) {
        /* 1.3.8, 1.3.9: the page count, valid for the next change counter */
        unsigned char *h = f->header;
        uint32_t counter = get4(h + 24) + 1;
        put4(h + 24, counter);
        put4(h + 28, f->npages);
        put4(h + 92, counter);
        st = write_at(f, h, sizeof f->header, 0, err);
    }
    if (st == TR_OK && close(f->fd) != 0)
        st = io_fail(f, err, "close");
    f->fd = -1;
    tr_btree_abort(f);
    return st;
}

/* ---- one level of a b-tree: children and the dividers between them ----
 *
 * Child i's divider is the cell key that separates it from child i + 1: for a
 * table the largest rowid under child i (a varint), for an index an entry
 * (a varint size and a record) that lies in no child.  An interior cell is
 * a child's page number followed by its divider, so both kinds of tree build
 * their interior levels the same way. */

typedef struct {
    uint32_t *child;
    size_t *end;          /* divider i is div[end[i-1] .. end[i]) (end[-1] = 0) */
    unsigned char *div;
    size_t n, cap, len, divcap;
} level;

static void level_free(level *l)
{
    free(l->child);
    free(l->end);
    free(l->div);
    memset(l, 0, sizeof *l);
}

static size_t div_start(const level *l, size_t i) { return i ? l->end[i - 1] : 0; }

static int level_push(level *l, uint32_t child, const unsigned char *d, size_t dlen)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *c = realloc(l->child, cap * sizeof *c);
        if (c)
            l->child = c;
        size_t *e = realloc(l->end, cap * sizeof *e);
        if (e)
            l->end = e;
        if (!c || !e)
            return -1;
        l->cap = cap;
    }
    if (dlen && l->len + dlen > l->divcap) {
        size_t cap = l->divcap ? 2 * l->divcap : 4096;
        while (cap < l->len + dlen)
            cap *= 2;
        unsigned char *d2 = realloc(l->div, cap);
        if (!d2)
            return -1;
        l->div = d2;
        l->divcap = cap;
    }
    if (dlen)
        memcpy(l->div + l->len, d, dlen);
    l->len += dlen;
    l->child[l->n] = child;
    l->end[l->n++] = l->len;
    return 0;
}

/* The last child of the page that starts at child a: as many cells as fit,
 * but never leaving one child alone for the last page (a page holds at least
 * one cell, and the next is an interior cell's child too). */
static size_t plan_page(const tr_btree_file *f, const level *l, size_t a)
{
    size_t used = 12, j = a;
    while (j + 1 < l->n) {
        size_t cell = cell_room(4 + l->end[j] - div_start(l, j));
        if (used + 2 + cell > f->usable)
            break;
        used += 2 + cell;
        j++;
    }
    if (j + 2 == l->n && j - a >= 2)
        j--;
    return j;
}

/* Builds the interior levels over lv (at least two children) up to a single
 * page, which goes to the root. */
static tr_status build_interior(tr_btree_file *f, level *lv, uint32_t root, unsigned char type,
                                tr_error *err)
{
    page pg = {.p = f->pages};
    while (1) {
        level up = {0};
        for (size_t a = 0; a < lv->n;) {
            size_t b = plan_page(f, lv, a);
            if (b == a || (b + 2 == lv->n)) {
                level_free(&up);
                return tr_fail(err, TR_ERR_RUNTIME, "%s: keys too long for an interior page", f->path);
            }
            page_start(&pg, f, type);
            for (size_t j = a; j < b; j++) {
                size_t d0 = div_start(lv, j), dlen = lv->end[j] - d0;
                unsigned char *c = page_add(&pg, 4 + dlen);
                put4(c, lv->child[j]);
                memcpy(c + 4, lv->div + d0, dlen);
            }
            page_finish(&pg, lv->child[b]);
            if (a == 0 && b + 1 == lv->n) {
                level_free(&up);
                return write_root(f, root, pg.p, err);
            }
            uint32_t pgno = 0;
            tr_status st = append_page(f, pg.p, &pgno, err);
            size_t d0 = div_start(lv, b);
            if (st == TR_OK && level_push(&up, pgno, lv->div + d0, b + 1 < lv->n ? lv->end[b] - d0 : 0))
                st = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            if (st != TR_OK) {
                level_free(&up);
                return st;
            }
            a = b + 1;
        }
        level_free(lv);
        *lv = up;
    }
}

/* The leaves are appended one behind: the last finished leaf waits in
 * `pending`, so that a tree of one leaf writes it to the root instead. */
typedef struct {
    page cur, pending;
    int have_pending;
    unsigned char pending_div[MAX_INDEX_CELL];
    size_t pending_len;
    level lv;
} leaves;

static void leaves_init(leaves *lf, tr_btree_file *f, unsigned char type)
{
    memset(lf, 0, sizeof *lf);
    lf->cur.p = f->pages + f->page_size;
    lf->pending.p = f->pages + 2 * (size_t)f->page_size;
    page_start(&lf->cur, f, type);
}

/* The current leaf is full: it becomes pending, with divider d after it. */
static tr_status leaves_next(tr_btree_file *f, leaves *lf, const unsigned char *d, size_t dlen,
                             tr_error *err)
{
    if (lf->have_pending) {
        uint32_t pgno = 0;
        tr_status st = append_page(f, lf->pending.p, &pgno, err);
        if (st != TR_OK)
            return st;
        if (level_push(&lf->lv, pgno, lf->pending_div, lf->pending_len))
            return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    page_finish(&lf->cur, 0);
    page tmp = lf->pending;
    lf->pending = lf->cur;
    lf->cur = tmp;
    lf->have_pending = 1;
    if (dlen)
        memcpy(lf->pending_div, d, dlen);
    lf->pending_len = dlen;
    page_start(&lf->cur, f, lf->pending.p[0]);
    return TR_OK;
}

/* The last leaf (cur, not empty) is done: writes the tree. */
static tr_status leaves_finish(tr_btree_file *f, leaves *lf, uint32_t root, unsigned char interior,
                               tr_error *err)
{
    tr_status st;
    if (!lf->have_pending) {
        page_finish(&lf->cur, 0);
        st = write_root(f, root, lf->cur.p, err);
    } else if ((st = leaves_next(f, lf, NULL, 0, err)) == TR_OK) {
        uint32_t pgno = 0;
        if ((st = append_page(f, lf->pending.p, &pgno, err)) == TR_OK
            && level_push(&lf->lv, pgno, NULL, 0))
            st = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
        if (st == TR_OK)
            st = build_interior(f, &lf->lv, root, interior, err);
    }
    level_free(&lf->lv);
    return st;
}

/* The row in f->record (len bytes) as a cell on the current leaf, its
 * payload past what stays there in overflow pages. */
static tr_status add_row(tr_btree_file *f, leaves *lf, int64_t rowid, int64_t prev, size_t len,
                         tr_error *err)
{
    size_t local = (size_t)table_local(f->usable, len);
    size_t size = varint_len(len) + varint_len((uint64_t)rowid) + local + (local < len ? 4 : 0);
    tr_status st = TR_OK;
    if (!page_fits(&lf->cur, size)) {
        unsigned char d[9];
        if ((st = leaves_next(f, lf, d, put_varint(d, (uint64_t)prev), err)) != TR_OK)
            return st;
    }
    uint32_t overflow = 0;
    if (local < len && (st = write_overflow(f, f->record + local, len - local, &overflow, err)) != TR_OK)
        return st;
    unsigned char *c = page_add(&lf->cur, size);
    c += put_varint(c, len);
    c += put_varint(c, (uint64_t)rowid);
    memcpy(c, f->record, local);
    if (local < len)
        put4(c + local, overflow);
    return TR_OK;
}

/* Every cell NULL for the next fill: the type is all a NULL cell has (a
 * memset of the cells was 5% of an ingest's CPU time, its `rep stos` slow
 * to start on a few hundred bytes). */
static void clear_cells(tr_cell *cells, int ncols)
{
    for (int c = 0; c < ncols; c++)
        cells[c].type = TR_CELL_NULL;
}

tr_status tr_btree_table(tr_btree_file *f, uint32_t root, int ncols, size_t nrows,
                         tr_row_fill fill, const void *ctx, tr_error *err)
{
    if (ncols < 1 || ncols > MAX_COLUMNS)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: %d columns", f->path, ncols);
    if (f->root_page)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: a table is not built apart", f->path);
    tr_status st = check_root(f, root, LEAF_TABLE, err);
    if (st != TR_OK)
        return st;
    leaves lf;
    leaves_init(&lf, f, LEAF_TABLE);
    tr_cell cells[MAX_COLUMNS] = {0};   /* once: clear_cells() resets the types only */
    int64_t prev = 0;
    size_t kept = 0;
    for (size_t i = 0; i < nrows && st == TR_OK; i++, tr_spill_tick()) {
        clear_cells(cells, ncols);
        if (!fill(ctx, i, cells))
            continue;
        int64_t rowid = cells[0].i;
        if (cells[0].type != TR_CELL_INT || (kept && rowid <= prev)) {
            st = tr_fail(err, TR_ERR_RUNTIME, "%s: row %zu: rowids not ascending", f->path, i);
            break;
        }
        size_t len = encode_record(f, cells, ncols, 1, MAX_RECORD);
        if (len == RECORD_TOO_LONG || len == RECORD_NO_MEMORY)
            st = tr_fail(err, TR_ERR_RUNTIME, len == RECORD_NO_MEMORY ? "out of memory"
                         : "%s: row %zu is longer than SQLite's limit", f->path, i);
        else
            st = add_row(f, &lf, rowid, prev, len, err);
        prev = rowid;
        kept++;
    }
    if (st != TR_OK || !kept) {
        level_free(&lf.lv);
        return st;
    }
    return leaves_finish(f, &lf, root, INTERIOR_TABLE, err);
}

/* Index order (2.2): NULL, then numbers, then text by memcmp (BINARY). */
static int cell_cmp(const tr_cell *a, const tr_cell *b)
{
    int ra = a->type == TR_CELL_TEXT && !a->s ? 0 : (int)a->type;
    int rb = b->type == TR_CELL_TEXT && !b->s ? 0 : (int)b->type;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra == TR_CELL_INT)
        return a->i < b->i ? -1 : a->i > b->i;
    if (ra == TR_CELL_TEXT) {
        size_t la = a->len < 0 ? strlen(a->s) : (size_t)a->len;
        size_t lb = b->len < 0 ? strlen(b->s) : (size_t)b->len;
        int c = memcmp(a->s, b->s, la < lb ? la : lb);
        return c ? c : (la > lb) - (la < lb);
    }
    return 0;
}

tr_status tr_btree_index(tr_btree_file *f, uint32_t root, int ncols, size_t n,
                         tr_row_fill fill, const void *ctx, tr_error *err)
{
    if (ncols < 1 || ncols > MAX_COLUMNS)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: %d columns", f->path, ncols);
    tr_status st = check_root(f, root, LEAF_INDEX, err);
    if (st != TR_OK || n == 0)
        return st;
    leaves lf;
    leaves_init(&lf, f, LEAF_INDEX);
    tr_cell cells[MAX_COLUMNS] = {0}, prev[MAX_COLUMNS];
    size_t max = max_local(f, 0);
    if (max > MAX_INDEX_CELL - 9)
        max = MAX_INDEX_CELL - 9;   /* entries this long are refused on larger pages too */
    unsigned char cell[MAX_INDEX_CELL];
    for (size_t k = 0; k < n && st == TR_OK; k++) {
        clear_cells(cells, ncols);
        fill(ctx, k, cells);
        int order = 0;
        for (int c = 0; k && c < ncols && !order; c++)
            order = cell_cmp(&prev[c], &cells[c]);
        memcpy(prev, cells, sizeof cells[0] * (size_t)ncols);
        size_t len = k && order >= 0 ? RECORD_TOO_LONG : encode_record(f, cells, ncols, 0, max);
        if (len == RECORD_TOO_LONG || len == RECORD_NO_MEMORY) {
            st = tr_fail(err, TR_ERR_RUNTIME, "%s: index entry %zu %s", f->path, k,
                         k && order >= 0 ? "out of order" : "does not fit in a page");
            break;
        }
        size_t size = put_varint(cell, len);
        memcpy(cell + size, f->record, len);
        size += len;
        if (page_fits(&lf.cur, size)) {
            memcpy(page_add(&lf.cur, size), cell, size);
        } else if (k + 1 < n) {
            st = leaves_next(f, &lf, cell, size, err);   /* this entry divides two leaves */
        } else {
            /* the last entry cannot divide (no leaf would follow it): the
             * full leaf's last entry divides, and this one starts a leaf */
            unsigned char d[sizeof cell];
            size_t dlen;
            if (lf.cur.ncells < 2) {
                st = tr_fail(err, TR_ERR_RUNTIME, "%s: index entries too long", f->path);
                break;
            }
            page_pop(&lf.cur, d, &dlen);
            if ((st = leaves_next(f, &lf, d, dlen, err)) == TR_OK)
                memcpy(page_add(&lf.cur, size), cell, size);
        }
        tr_spill_tick();
    }
    if (st != TR_OK) {
        level_free(&lf.lv);
        return st;
    }
    return leaves_finish(f, &lf, root, INTERIOR_INDEX, err);
}

/* ---- an index built apart, appended ---- */

/* The number append_page() gives the r-th page (from 1) appended to f after
 * its page `last`. */
static uint32_t appended_number(const tr_btree_file *f, uint32_t last, uint32_t r)
{
    uint32_t p = last + r;
    return f->lock_page > last && p >= f->lock_page ? p + 1 : p;
}

/* An interior page's children (1.6: each cell starts with its left child's
 * number, the header holds the right-most), from apart's numbers to those
 * they get appended to f after its page `last`. */
static void renumber_children(const tr_btree_file *f, uint32_t last, unsigned char *p)
{
    put4(p + 8, appended_number(f, last, get4(p + 8)));
    for (uint32_t i = 0, n = get2(p + 3); i < n; i++) {
        unsigned char *cell = p + get2(p + 12 + 2 * i);
        put4(cell, appended_number(f, last, get4(cell)));
    }
}

tr_status tr_btree_append_apart(tr_btree_file *f, tr_btree_file *apart, tr_error *err)
{
    tr_status st = apart->page_size == f->page_size && apart->usable == f->usable
                   ? flush_all(apart, err)
                   : tr_fail(err, TR_ERR_RUNTIME, "%s: an index built apart for another page size", f->path);
    uint32_t n = apart->npages, last = f->npages;
    unsigned char *buf = apart->wbuf;   /* written out: free */
    if (apart->bytes_cached > apart->bytes_past)
        drop_direct(apart);   /* read most pages from the page cache, where they are */
    for (uint32_t at = 0; at < n && st == TR_OK;) {
        uint32_t chunk = n - at < WRITE_PAGES ? n - at : WRITE_PAGES;
        size_t len = (size_t)chunk * apart->page_size;
        uint64_t off = (uint64_t)at * apart->page_size;
        ssize_t r = apart->dfd >= 0 ? read_with(io.direct_pread, apart->dfd, buf, len, off) : -1;
        if (r != (ssize_t)len) {   /* refused past the page cache, or never asked: through it */
            drop_direct(apart);
            r = read_at(apart->fd, buf, len, off);
        }
        if (r != (ssize_t)len) {
            if (r >= 0)
                errno = EIO;
            st = io_fail(apart, err, "read back");
            break;
        }
        for (uint32_t k = 0; k < chunk && st == TR_OK; k++) {
            unsigned char *p = buf + (size_t)k * apart->page_size;
            uint32_t pgno = 0;
            if (p[0] == INTERIOR_INDEX)
                renumber_children(f, last, p);
            st = append_page(f, p, &pgno, err);
        }
        at += chunk;
    }
    if (st == TR_OK && apart->roots_written) {
        if (apart->root_page[0] == INTERIOR_INDEX)
            renumber_children(f, last, apart->root_page);
        st = write_root(f, apart->root, apart->root_page, err);
    }
    tr_btree_abort(apart);
    return st;
}
