#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "lib/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Every array of at least min_bytes: in a file (fd >= 0, len whole pages)
 * or on the heap (fd -1, len as asked), so the heap's share is known. */
typedef struct {
    void *addr;
    size_t len;
    int fd;
    int sequential;   /* its file pages read ahead and mapped around a fault */
    int primary;      /* on the heap, counted in primary_bytes, not heap_bytes */
    int lends;        /* in a file, the primary array: half its heap budget is lent */
} spill_block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The helper sleeps on its own lock, so that a thread holding the registry's
 * (a munmap, a trim) never delays its next check. */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static spill_block *blocks;
static size_t nblocks, capblocks;
static char *spill_dir;

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static size_t min_bytes = (size_t)4 << 20;
static size_t page_size = 4096;
/* Set from the memory limit (tr_spill_set_limit()): large arrays stay on the
 * heap while their sum is under heap_budget, and the files' mapped pages
 * are trimmed when the whole resident memory passes rss_limit, unless they
 * are under file_floor (the rest of the memory cannot be trimmed, and the
 * spilled arrays need some pages to work in). */
static size_t heap_budget;
static _Atomic size_t rss_limit, file_floor, near_limit;   /* read by the checks without the lock */
static size_t heap_bytes;   /* large arrays on the heap */
/* The primary array (tr_spill_realloc_primary()) has a budget of its own. */
static size_t primary_budget, primary_bytes;
static int limit_set;

static pthread_t trimmer;
static _Atomic int trimmer_running;   /* read by the checks without the lock */
/* The helper of this generation runs; a stop or a new start changes it, so
 * a helper being stopped cannot be kept running by the next one's start.
 * Under sleep_lock. */
static unsigned trimmer_gen;

static size_t env_size(const char *name, size_t fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    return errno || *end ? fallback : (size_t)v;
}

/* A quarter of the limit for large arrays on the heap, and three eighths
 * for the primary one (the events) where the limit leaves room for it: at
 * half, a 64-byte event array of 2^21 events (128 MiB) fitted, and beside
 * the others' quarter and the rest of the process a 10^7-event raw ingest
 * peaked at 247-253 MiB while it read; at three eighths the array leaves the
 * heap at 2^20 events (64 MiB), as the 80-byte one did at half.  The spilled
 * arrays' mapped pages then take what the rest of the process leaves under
 * seven eighths of it (the last eighth absorbs the growth between two
 * checks), and never less than an eighth.  A trace whose arrays all fit is
 * then never trimmed: at 10^6 events the heap holds the events' 64 MiB and
 * up to 64 MiB of the others, the files the rest.  The heap's five eighths
 * (three quarters while the tables borrow), the mapped pages' eighth and
 * the 30-50 MB the rest of the process takes (SQLite, the page writers'
 * buffers, the program, the small arrays) fit in the limit from
 * PRIMARY_MIN_LIMIT on; below it the primary array shares the others'
 * quarter, as every array did before it had a budget of its own.
 * Before, the mapped pages had a fixed three eighths: the event array of a
 * 10^6-event trace was trimmed and touched again on every pass (raw: 2.0 s
 * against 1.6 s unlimited), though the whole process fitted. */
#define PRIMARY_MIN_LIMIT ((size_t)240 << 20)

static void apply_limit(size_t limit)
{
    heap_budget = limit / 4;
    primary_budget = limit >= PRIMARY_MIN_LIMIT ? limit / 8 * 3 : 0;
    rss_limit = limit - limit / 8;
    near_limit = limit / 8;
    file_floor = limit / 8;
    if (file_floor < ((size_t)16 << 20))
        file_floor = (size_t)16 << 20;
}

int tr_spill_parse_size(const char *s, size_t *out)
{
    static const struct { char c; int shift; } units[] = {
        {'k', 10}, {'K', 10}, {'m', 20}, {'M', 20}, {'g', 30}, {'G', 30}, {'t', 40}, {'T', 40},
    };
    if (!s || !(*s >= '0' && *s <= '9'))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    int shift = 0;
    for (size_t i = 0; *end && i < sizeof units / sizeof units[0]; i++)
        if (*end == units[i].c) {
            shift = units[i].shift;
            end++;
            break;
        }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B')
        end++;
    if (*end || v == 0 || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static void read_config(void)
{
#ifdef __GLIBC__
    /* glibc raises its mmap threshold (up to 32 MiB) each time a mapped block
     * is freed, after which freed arrays of that size stay in the process:
     * a fixed threshold gives every large array back when it is freed */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    min_bytes = env_size("TR_SPILL_MIN_BYTES", min_bytes);
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = (size_t)ps;
    if (!limit_set) {
        /* default: 256 MiB, or half the machine's memory if that is less.
         * The same bound whatever the trace's size; a 10^6-event trace fits
         * under it untouched, and at 10^7 the cost is a few percent of the
         * time (docs/ingest.md) */
        long pages = sysconf(_SC_PHYS_PAGES);
        size_t phys = pages > 0 ? (size_t)pages * page_size : (size_t)8 << 30;
        size_t fallback = TR_SPILL_DEFAULT_LIMIT < phys / 2 ? TR_SPILL_DEFAULT_LIMIT : phys / 2;
        size_t limit = fallback;
        const char *env = getenv("TRACEKIT_MAX_MEMORY");
        if (env && *env && tr_spill_parse_size(env, &limit) < 0)
            limit = fallback;
        apply_limit(limit);
    }
}

void tr_spill_set_limit(size_t bytes)
{
    pthread_once(&config_once, read_config);
    pthread_mutex_lock(&lock);
    limit_set = 1;
    apply_limit(bytes);
    pthread_mutex_unlock(&lock);
}

/* --- the trimmer ---------------------------------------------------------- */

/* /proc/self/statm, opened once and kept: each check is one pread of it
 * (about half a microsecond), taken without the lock, so the loops can check
 * often and the helper is not held up by a thread that holds the lock while
 * it reserves or copies a block. */
static pthread_once_t statm_once = PTHREAD_ONCE_INIT;
static int statm_fd = -1;

static void open_statm(void)
{
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

/* Reads the next decimal number of statm's text at *p, skipping a space. */
static size_t statm_field(const char **p)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    size_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (size_t)(*s - '0');
    *p = s;
    return v;
}

/* Whether the spilled arrays' mapped pages should be dropped: the process's
 * resident memory (statm's second field) is over its share of the limit,
 * and its file-backed part (the third: those pages, the input's mapping, the
 * program's text) is over its floor. */
static int read_statm(size_t *resident, size_t *files)
{
    pthread_once(&statm_once, open_statm);
    char buf[128];
    ssize_t n = statm_fd >= 0 ? pread(statm_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = buf;
    (void)statm_field(&p);
    *resident = statm_field(&p) * page_size;
    *files = statm_field(&p) * page_size;
    return 1;
}

static int over_limit(void)
{
    size_t resident, files;
    return read_statm(&resident, &files) && resident > rss_limit && files > file_floor;
}

_Thread_local unsigned tr_spill_ticks_;

static _Atomic int trimmed;   /* a trim has happened: the process is past its limit */

/* Called with the lock held. */
static void trim_all(void)
{
    trimmed = 1;
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].fd >= 0)
            (void)madvise(blocks[i].addr, blocks[i].len, MADV_DONTNEED);
}

static int any_file_blocks(void)
{
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].fd >= 0)
            return 1;
    return 0;
}

/* Trims if still over the limit, checked again with the lock held (a trim by
 * another thread may have come in since the caller's check). */
static void trim_if_still_over(void)
{
    pthread_mutex_lock(&lock);
    if (trimmer_running && over_limit())
        trim_all();
    pthread_mutex_unlock(&lock);
}

/* Trims if over the limit: checked without the lock, then again with it. */
static void trim_if_over_unlocked(void)
{
    if (trimmer_running && over_limit())
        trim_if_still_over();
}

/* Polls every millisecond: a pass touching new pages as fast as the memory
 * allows maps a few MB in that time. */
static void *trim_loop(void *arg)
{
    unsigned gen = (unsigned)(uintptr_t)arg;
    pthread_mutex_lock(&sleep_lock);
    while (gen == trimmer_gen) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&wake, &sleep_lock, &until);
        if (gen != trimmer_gen)
            break;
        pthread_mutex_unlock(&sleep_lock);
        trim_if_over_unlocked();
        pthread_mutex_lock(&sleep_lock);
    }
    pthread_mutex_unlock(&sleep_lock);
    return NULL;
}

/* The least time between two reads of statm by one thread's ticks.  A read
 * costs about half a microsecond (more on a machine with many CPUs: the
 * kernel sums its per-CPU counters), and the ticks of a loop over small
 * elements come every few microseconds; in 100 us a thread maps at most a
 * few MB by faults, inside the eighth of the limit kept in hand. */
#define POLL_GAP_NS 100000u

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This thread's last read of statm, and whether it found the process near
 * the limit after a trim. */
static _Thread_local uint64_t last_poll_ns;
static _Thread_local int last_poll_near;
static _Thread_local size_t polls_read;   /* for tr_spill_polls_read() */

size_t tr_spill_polls_read(void)
{
    return polls_read;
}

/* Once the process has been trimmed, a loop within an eighth of the limit
 * under the trims' threshold checks again after a quarter of the ticks: an
 * array read in order maps several pages a fault, and the interval between
 * checks bounds how far past the threshold the pages mapped meanwhile take
 * the process.  (Before any trim the checks stay as they were: a process
 * that fits, at 10^6 events, would pay 7% for them.)  A tick that comes
 * within POLL_GAP_NS of this thread's last read keeps that read's answer. */
void tr_spill_poll(void)
{
    size_t resident, files;
    tr_spill_ticks_ = 0;
    if (!trimmer_running)
        return;
    uint64_t now = monotonic_ns();
    if (now - last_poll_ns < POLL_GAP_NS) {
        if (last_poll_near)
            tr_spill_ticks_ = TR_SPILL_TICKS - TR_SPILL_TICKS / 4;
        return;
    }
    last_poll_ns = now;
    last_poll_near = 0;
    polls_read++;
    if (!read_statm(&resident, &files))
        return;
    if (resident > rss_limit && files > file_floor)
        trim_if_still_over();
    else if (trimmed && resident + near_limit > rss_limit) {
        last_poll_near = 1;
        tr_spill_ticks_ = TR_SPILL_TICKS - TR_SPILL_TICKS / 4;
    }
}

/* memcpy in 4 MiB pieces with a check after each: one memcpy of a large
 * array would map all of it between two checks.  With release (a heap array
 * freed next), each piece's source pages are handed back once copied
 * (MADV_DONTNEED on the whole pages inside the array; the allocator's own
 * words lie before it or in its last partial page), so a move off the heap
 * holds one copy of the array, not two: holding both took a 10^7-event
 * ingest's peak from 223 to 249 MiB when the event array left the heap. */
static void copy_in_pieces(void *dst, const void *src, size_t n, int release)
{
    const size_t chunk = (size_t)4 << 20;
    uintptr_t from = (uintptr_t)src, released = (from + page_size - 1) / page_size * page_size;
    for (size_t at = 0; at < n; at += chunk) {
        size_t len = n - at < chunk ? n - at : chunk;
        memcpy((char *)dst + at, (const char *)src + at, len);
        uintptr_t upto = (from + at + len) / page_size * page_size;
        if (release && upto > released) {
            (void)madvise((void *)released, upto - released, MADV_DONTNEED);
            released = upto;
        }
        tr_spill_poll();
    }
}

void tr_spill_copy(void *dst, const void *src, size_t n)
{
    copy_in_pieces(dst, src, n, 0);
}

/* Called with the lock held, after a block was added. */
static void start_trimmer(void)
{
    if (trimmer_running)
        return;
    pthread_mutex_lock(&sleep_lock);
    unsigned gen = ++trimmer_gen;
    pthread_mutex_unlock(&sleep_lock);
    if (pthread_create(&trimmer, NULL, trim_loop, (void *)(uintptr_t)gen) == 0)
        trimmer_running = 1;
}

/* --- blocks --------------------------------------------------------------- */

static size_t round_pages(size_t n)
{
    if (n == 0)
        n = 1;
    return n > SIZE_MAX - page_size ? 0 : (n + page_size - 1) / page_size * page_size;
}

static const char *dir_for_spill(void)
{
    const char *d = getenv("TRACEKIT_SPILL_DIR");
    if (d && *d)
        return d;
    if (spill_dir)
        return spill_dir;
    d = getenv("TMPDIR");
    return d && *d ? d : "/var/tmp";
}

int tr_spill_open_file(void)
{
    const char *dir = dir_for_spill();
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    /* file systems without O_TMPFILE: a named file, unlinked at once */
    size_t len = strlen(dir) + sizeof "/tracekit-spill-XXXXXX";
    char *path = malloc(len);
    if (!path)
        return -1;
    snprintf(path, len, "%s/tracekit-spill-XXXXXX", dir);
    fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    free(path);
    return fd;
}

/* Blocks are reserved on disk up front: a page of a sparse file that finds
 * the disk full when first written raises SIGBUS, where a failed fallocate
 * is an ordinary error (the caller then keeps the array on the heap). */
static int reserve(int fd, size_t from, size_t to)
{
    int rc;
    do
        rc = posix_fallocate(fd, (off_t)from, (off_t)(to - from));
    while (rc == EINTR);
    return rc == 0 ? 0 : -1;
}

static spill_block *find_block(const void *p)
{
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].addr == p)
            return &blocks[i];
    return NULL;
}

static int registry_room(void)
{
    if (nblocks == capblocks) {
        size_t ncap = capblocks ? capblocks * 2 : 16;
        spill_block *nb = realloc(blocks, ncap * sizeof *nb);
        if (!nb)
            return -1;
        blocks = nb;
        capblocks = ncap;
    }
    return 0;
}

/* A read fault on a file mapping maps up to 16 pages around it that are in
 * the page cache, and a fault on a page not yet cached reads the pages after
 * it ahead: a saving for a sequential pass, but a random lookup (a hash
 * table's slots, a walk through the events in another order) then maps 16
 * pages for the one it needs, which fills the limit many times as fast, so
 * each trim drops the pages every other pass is working in.  One page a fault
 * keeps the resident pages those touched (measured at 10^7 raw events held
 * to 86 MB: peak RSS 141 -> 95 MB, a third of the trims).  So an array is
 * mapped a page at a time unless it is marked sequential: the model's
 * vectors, filled and read in order (docs/ingest.md, "Bounded memory"). */
static void advise(const spill_block *b)
{
    (void)madvise(b->addr, b->len, b->sequential ? MADV_NORMAL : MADV_RANDOM);
}

/* A new file block of len bytes (whole pages), zero-filled, not yet
 * registered; addr NULL when none can be made.  Made without the lock: a
 * thread the kernel pauses in file work must not keep the trims waiting. */
static spill_block make_block(size_t len, int sequential)
{
    spill_block b = {NULL, len, tr_spill_open_file(), sequential};
    if (b.fd < 0)
        return b;
    void *addr = reserve(b.fd, 0, len) == 0
                     ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd, 0)
                     : MAP_FAILED;
    if (addr == MAP_FAILED) {
        close(b.fd);
        b.fd = -1;
        return b;
    }
    b.addr = addr;
    advise(&b);
    return b;
}

/* Registers a block from make_block(); 0, or -1 (the block unmapped and
 * closed) when the registry cannot grow.  Called with the lock held. */
static int add_block(spill_block b)
{
    if (registry_room() < 0) {
        munmap(b.addr, b.len);
        close(b.fd);
        return -1;
    }
    blocks[nblocks++] = b;
    start_trimmer();
    return 0;
}

/* Resizes the file block at p to len bytes.  Only the array's owner resizes
 * it, so its file and length do not change under this thread; the lock is
 * taken for the remap only, which the trims must not see half done. */
static void *resize_block(void *p, size_t len)
{
    pthread_mutex_lock(&lock);
    spill_block b = *find_block(p);
    pthread_mutex_unlock(&lock);
    if (len > b.len && reserve(b.fd, b.len, len) < 0)
        return NULL;
    pthread_mutex_lock(&lock);
    spill_block *r = find_block(p);
    void *addr = mremap(r->addr, r->len, len, MREMAP_MAYMOVE);
    if (addr != MAP_FAILED) {
        r->addr = addr;
        r->len = len;
        advise(r);
    }
    pthread_mutex_unlock(&lock);
    if (addr == MAP_FAILED)
        return NULL;
    if (len < b.len)
        (void)ftruncate(b.fd, (off_t)len);
    return addr;
}

static void drop_block(spill_block *b)
{
    *b = blocks[--nblocks];
}

/* The heap bytes a block on the heap counts in. */
static size_t *heap_count(int primary)
{
    return primary ? &primary_bytes : &heap_bytes;
}

/* Resizes a large array on the heap, keeping the registry and heap_bytes
 * right; p is NULL or a heap pointer (registered or not), old_size its size.
 * Called with the lock held. */
static void *heap_resize(void *p, spill_block *b, size_t new_size, int primary)
{
    if (!b && registry_room() < 0)
        return NULL;
    void *out = realloc(p, new_size);
    if (!out)
        return NULL;
    if (b) {
        *heap_count(b->primary) -= b->len;
        b->addr = out;
        b->len = new_size;
    } else {
        blocks[nblocks++] = (spill_block){out, new_size, -1, 0, primary};
    }
    *heap_count(b ? b->primary : primary) += new_size;
    return out;
}

/* Moves a heap array (registered or not) into a new file block, or returns
 * NULL with p untouched.  The copy runs without the lock, checking as it
 * goes; the new block is registered first, so the trims may drop its pages
 * (they stay in the file). */
static void *to_file(void *p, size_t old_size, size_t new_size, size_t len, int sequential,
                     int primary)
{
    spill_block nb = make_block(len, sequential);
    if (!nb.addr)
        return NULL;
    nb.lends = primary;
    pthread_mutex_lock(&lock);
    int added = add_block(nb);
    pthread_mutex_unlock(&lock);
    if (added < 0)
        return NULL;
    if (p) {
        copy_in_pieces(nb.addr, p, old_size < new_size ? old_size : new_size, 1);
        pthread_mutex_lock(&lock);
        spill_block *b = find_block(p);
        if (b) {
            *heap_count(b->primary) -= b->len;
            drop_block(b);
        }
        pthread_mutex_unlock(&lock);
        free(p);
    }
    return nb.addr;
}

static int primary_in_file(void)
{
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].lends)
            return 1;
    return 0;
}

/* What the heap may hold of arrays of the class asked for.  While the primary
 * array is in a file, a quarter of the limit is lent to the hash tables
 * (tr_spill_calloc_table()), whose every lookup lands on a page of its own:
 * in a file, a fault a lookup once the pages are trimmed.  A quarter (half
 * the primary budget when that was half the limit): the tables cannot be
 * trimmed, and the mapped pages of the spilled arrays need room beside them
 * under the limit (all of the budget took the peak of a 10^7-event raw
 * ingest from 229 to 255 MiB, and was slower).  A new primary array then has
 * what the tables leave of its budget.  Called with the lock held. */
static size_t budget_for(int primary, int table)
{
    size_t lent = heap_bytes > heap_budget ? heap_bytes - heap_budget : 0;
    if (primary)
        return primary_budget > lent ? primary_budget - lent : 0;
    size_t lend = primary_budget ? heap_budget : 0;   /* a quarter of the limit */
    return heap_budget + (table && lend > primary_bytes && primary_in_file() ? lend - primary_bytes : 0);
}

static void *realloc_as(void *p, size_t old_size, size_t new_size, int sequential, int primary,
                        int table)
{
    pthread_once(&config_once, read_config);
    if (!new_size)
        new_size = 1;
    size_t len = round_pages(new_size);
    pthread_mutex_lock(&lock);
    spill_block *b = p ? find_block(p) : NULL;
    int in_file = b && b->fd >= 0;
    /* on the heap: small and unregistered, or within the budget */
    if (b)
        primary = b->primary;
    else if (!primary_budget)
        primary = 0;   /* a small limit: the primary array is one of the others */
    size_t used = *heap_count(primary) - (b ? b->len : 0), budget = budget_for(primary, table);
    int on_heap = !in_file && ((new_size < min_bytes && !b) || used + new_size <= budget || !len);
    void *out = NULL;
    if (on_heap)
        out = new_size < min_bytes && !b ? realloc(p, new_size) : heap_resize(p, b, new_size, primary);
    pthread_mutex_unlock(&lock);
    if (in_file)
        return len ? resize_block(p, len) : NULL;
    if (on_heap || (out = to_file(p, old_size, new_size, len, sequential, primary)))
        return out;
    /* no file could hold it: on the heap after all */
    pthread_mutex_lock(&lock);
    out = heap_resize(p, p ? find_block(p) : NULL, new_size, primary);
    pthread_mutex_unlock(&lock);
    return out;
}

void *tr_spill_realloc(void *p, size_t old_size, size_t new_size)
{
    return realloc_as(p, old_size, new_size, 0, 0, 0);
}

void *tr_spill_realloc_sequential(void *p, size_t old_size, size_t new_size)
{
    return realloc_as(p, old_size, new_size, 1, 0, 0);
}

void *tr_spill_realloc_primary(void *p, size_t old_size, size_t new_size)
{
    return realloc_as(p, old_size, new_size, 1, 1, 0);
}

void tr_spill_set_sequential(void *p, int sequential)
{
    pthread_mutex_lock(&lock);
    spill_block *b = p ? find_block(p) : NULL;
    if (b) {
        b->sequential = sequential;
        if (b->fd >= 0)
            advise(b);
    }
    pthread_mutex_unlock(&lock);
}

static void *calloc_as(size_t n, size_t size, int table)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    pthread_once(&config_once, read_config);
    if (n * size < min_bytes)
        return calloc(n ? n : 1, size ? size : 1);
    void *out = realloc_as(NULL, 0, n * size, 0, 0, table);
    /* an array on the heap is not zeroed by realloc */
    if (out) {
        pthread_mutex_lock(&lock);
        const spill_block *b = find_block(out);
        int on_heap = !b || b->fd < 0;
        pthread_mutex_unlock(&lock);
        if (on_heap)
            memset(out, 0, n * size);
    }
    return out;
}

void *tr_spill_calloc(size_t n, size_t size)
{
    return calloc_as(n, size, 0);
}

void *tr_spill_calloc_table(size_t n, size_t size)
{
    return calloc_as(n, size, 1);
}

int tr_spill_in_file(const void *p)
{
    pthread_mutex_lock(&lock);
    const spill_block *b = p ? find_block(p) : NULL;
    int in_file = b && b->fd >= 0;
    pthread_mutex_unlock(&lock);
    return in_file;
}

void tr_spill_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    spill_block *b = find_block(p);
    if (!b || b->fd < 0) {
        if (b) {
            *heap_count(b->primary) -= b->len;
            drop_block(b);
        }
        pthread_mutex_unlock(&lock);
        free(p);
        return;
    }
    /* out of the registry first: the trims cannot see it once the lock is
     * let go, and the unmap (which may take milliseconds) runs without it */
    spill_block gone = *b;
    drop_block(b);
    int stop = trimmer_running && !any_file_blocks();
    pthread_t stopped = trimmer;
    if (stop) {
        trimmer_running = 0;
        pthread_mutex_lock(&sleep_lock);
        trimmer_gen++;
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
    if (nblocks == 0) {
        free(blocks);
        blocks = NULL;
        capblocks = 0;
    }
    pthread_mutex_unlock(&lock);
    munmap(gone.addr, gone.len);
    close(gone.fd);
    if (stop)
        pthread_join(stopped, NULL);
}

/* Sorts [lo, hi) of a in place by insertion, stably; one is scratch room
 * for an element. */
static void insertion_sort(char *a, size_t lo, size_t hi, size_t size, char *one,
                           int (*cmp)(const void *, const void *))
{
    for (size_t i = lo + 1; i < hi; i++) {
        tr_spill_tick();
        size_t j = i;
        if (cmp(a + (j - 1) * size, a + i * size) <= 0)
            continue;
        memcpy(one, a + i * size, size);
        while (j > lo && cmp(a + (j - 1) * size, one) > 0) {
            memcpy(a + j * size, a + (j - 1) * size, size);
            j--;
        }
        memcpy(a + j * size, one, size);
    }
}

/* Merges the sorted runs [lo, mid) and [mid, hi) of src into dst, the left
 * run first among equals. */
static void merge_runs(const char *src, char *dst, size_t lo, size_t mid, size_t hi, size_t size,
                       int (*cmp)(const void *, const void *))
{
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        tr_spill_tick();
        const char *take = cmp(src + i * size, src + j * size) <= 0 ? src + i++ * size : src + j++ * size;
        memcpy(dst + k++ * size, take, size);
    }
    if (i < mid)
        tr_spill_copy(dst + k * size, src + i * size, (mid - i) * size);
    else if (j < hi)
        tr_spill_copy(dst + k * size, src + j * size, (hi - j) * size);
}

void tr_spill_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n < 2 || !size)
        return;
    char local[256];
    char *one = size <= sizeof local ? local : malloc(size);
    char *buf = n <= SIZE_MAX / size ? tr_spill_realloc(NULL, 0, n * size) : NULL;
    if (!buf || !one) {
        tr_spill_free(buf);
        if (one != local)
            free(one);
        qsort(base, n, size, cmp);
        return;
    }
    const size_t run = 32;
    char *src = base, *dst = buf;
    for (size_t lo = 0; lo < n; lo += run)
        insertion_sort(src, lo, n - lo < run ? n : lo + run, size, one, cmp);
    for (size_t width = run; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo < width ? n : lo + width;
            size_t hi = n - lo < 2 * width ? n : lo + 2 * width;
            merge_runs(src, dst, lo, mid, hi, size, cmp);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base)
        tr_spill_copy(base, src, n * size);
    tr_spill_free(buf);
    if (one != local)
        free(one);
}

void tr_spill_set_dir(const char *dir)
{
    char *copy = dir ? strdup(dir) : NULL;
    pthread_mutex_lock(&lock);
    free(spill_dir);
    spill_dir = copy;
    pthread_mutex_unlock(&lock);
}

size_t tr_spill_files(void)
{
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (size_t i = 0; i < nblocks; i++)
        n += blocks[i].fd >= 0;
    pthread_mutex_unlock(&lock);
    return n;
}
