/*
 * spill.h - large arrays that move to a file on disk when memory is short,
 * so that an ingest's resident memory stays within a limit however many
 * events a trace has.
 *
 * An array smaller than TR_SPILL_MIN_BYTES (default 4 MiB) is ordinary heap
 * memory.  Larger ones stay on the heap while their sum is within a budget
 * (and the primary array, tr_spill_realloc_primary(), within one of its own;
 * the hash tables, tr_spill_calloc_table(), may borrow a quarter of the
 * limit more while the primary array is in a file)
 * set from the memory limit (tr_spill_set_limit(), else $TRACEKIT_MAX_MEMORY,
 * else TR_SPILL_DEFAULT_LIMIT or half the machine's memory, whichever is
 * less); past it, an array that grows or is made
 * becomes a shared mapping of an unnamed file in the spill directory
 * ($TRACEKIT_SPILL_DIR, else tr_spill_set_dir()'s, else $TMPDIR, else
 * /var/tmp).  Its contents then live in the kernel's page cache, which writes
 * them out when memory is short, and the pages mapped into the process are
 * dropped (madvise MADV_DONTNEED; the data stays in the file) whenever the
 * process's resident memory nears the limit.
 * docs/ingest.md says what this costs and which passes read such arrays in
 * which order.
 *
 * Ownership: a pointer from tr_spill_realloc() or tr_spill_calloc() is freed
 * with tr_spill_free() (never free()), and resized only with
 * tr_spill_realloc(), which needs the old size.  Memory beyond the old size
 * is undefined, as with realloc().  Every function is thread-safe; an
 * array's address changes only when it is resized.
 */
#ifndef TR_LIB_SPILL_H
#define TR_LIB_SPILL_H

#include <stddef.h>

/* Resizes p (old_size bytes, NULL for none) to new_size bytes, keeping the
 * first min(old_size, new_size); NULL on failure, with p left as it was. */
void *tr_spill_realloc(void *p, size_t old_size, size_t new_size);
/* As tr_spill_realloc(), for an array mostly filled and read in order (the
 * model's vectors: the events, the detail rows): in a file, its pages are
 * read ahead and mapped several at a time, where the others' are mapped one
 * at a time, for lookups at random places.  Either frees with
 * tr_spill_free() and resizes with either. */
void *tr_spill_realloc_sequential(void *p, size_t old_size, size_t new_size);
/* As tr_spill_realloc_sequential(), for the one array that is most of the
 * process's memory (the events): with a limit of 240 MiB or more it stays
 * on the heap within a budget of its own, three eighths of the limit, beside
 * the other arrays' quarter, so a trace whose events fit in it never maps
 * them from a file (at 10^6 events, 64 MiB of capacity); past it, the array
 * moves into a file as the others do.  Under a smaller limit it is one of the others.  Which it
 * is, is decided when it is made: set the limit before. */
void *tr_spill_realloc_primary(void *p, size_t old_size, size_t new_size);
/* Marks an array sequential or not from now on (a phase that reads it at
 * random places: its pages one at a time then). */
void tr_spill_set_sequential(void *p, int sequential);
/* A zeroed array of n * size bytes; NULL on failure or overflow. */
void *tr_spill_calloc(size_t n, size_t size);
/* As tr_spill_calloc(), for a hash table's slots, probed at random: while
 * the primary array is in a file, the tables may also use half its heap budget
 * (in a file, each probe of a trimmed table is a page fault; an array read
 * in order takes one fault per few pages). */
void *tr_spill_calloc_table(size_t n, size_t size);
void tr_spill_free(void *p);
/* 1 when p, from one of the functions above, is held in a file: its pages
 * are then faulted in from the page cache, read-only on a first read. */
int tr_spill_in_file(const void *p);

/* The directory for spill files (copied); NULL restores the default.  A
 * directory on tmpfs saves nothing: its pages are memory too. */
void tr_spill_set_dir(const char *dir);
/* The memory limit in bytes: a quarter for large arrays on the heap, three
 * eighths for the primary one; the spilled arrays' mapped pages are dropped when
 * the process passes seven eighths of it (or they alone pass an eighth). */
void tr_spill_set_limit(size_t bytes);
#define TR_SPILL_DEFAULT_LIMIT ((size_t)256 << 20)
/* Reads a size: whole digits, then an optional K, M, G or T (powers of
 * 1024), "i" and "B", as in 256M or 2GiB; -1 when s is not one or is zero. */
int tr_spill_parse_size(const char *s, size_t *out);

/* An unnamed file in the spill directory, opened read-write, for a caller's
 * own side data (the caller closes it); -1 with errno set when none can be made. */
int tr_spill_open_file(void);

/* Arrays now in files, for tests. */
size_t tr_spill_files(void);

/* Loops over spilled arrays call tr_spill_tick() once an element: every
 * 1024 calls it reads the process's resident memory (half a microsecond,
 * without a lock) and trims the spilled arrays when it is over the limit.
 * The helper thread does the same every millisecond, but a busy machine can
 * keep it waiting long enough for a fast pass to map hundreds of MB; the
 * tick bounds that on the thread doing the touching.  Near the limit, once
 * the process has been trimmed, every 256 calls.  A thread reads the
 * resident memory at most once per 100 us: a call sooner keeps the last
 * answer (a loop over small elements would otherwise read it every few
 * microseconds). */
#define TR_SPILL_TICKS 1024
extern _Thread_local unsigned tr_spill_ticks_;
void tr_spill_poll(void);
/* For tests: how many of this thread's polls read the resident memory. */
size_t tr_spill_polls_read(void);
static inline void tr_spill_tick(void)
{
    if (++tr_spill_ticks_ >= TR_SPILL_TICKS)
        tr_spill_poll();
}

/* A stable sort of n elements of size bytes, for large arrays: glibc's qsort
 * (a merge sort) mallocs a buffer the size of the array and runs without
 * ticks, so sorting a spilled array could take the process far past its
 * limit.  This one merges through a spill buffer, with ticks.  Stable like
 * glibc's, so the order is the same as qsort's on every comparison
 * function; falls back to qsort when the buffer cannot be had. */
void tr_spill_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* memcpy for large arrays: the copy is trimmed as it goes, as a loop with
 * ticks would be. */
void tr_spill_copy(void *dst, const void *src, size_t n);

#endif
