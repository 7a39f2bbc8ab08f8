/*
 * btree_append.h - bulk-loads a rowid table and an index of an SQLite
 * database file by writing their b-tree pages into the file past its last
 * page, laid out as SQLite's file format defines them
 * (https://www.sqlite.org/fileformat2.html, "B-tree Pages").
 *
 * SQLite inserts a row at a time: its VDBE builds each record and the b-tree
 * layer places it (about 0.5 us a row for the events table), and an index
 * made afterwards re-reads every row and sorts the keys.  Rows that come in
 * rowid order, and index entries that come in the index's order, need
 * neither: each page is filled once, left to right, and the interior pages
 * are built over the finished level below, as a bulk load of a b-tree does.
 *
 * Use: SQLite creates the table and the index (each an empty leaf as its
 * root page), the transaction is committed and the connection closed; then
 * tr_btree_open() on the file, tr_btree_table() and tr_btree_index() for each
 * root, and tr_btree_close(), which records the new page count in the file's
 * header.  Nothing else may have the file open meanwhile.  Afterwards the file
 * is an ordinary database (PRAGMA integrity_check passes; tests check it) and
 * SQLite may open it and write more.  A file whose header shows anything this
 * writer does not produce (auto-vacuum, WAL, a page count that is not the
 * file's size, a root that is not an empty leaf) is refused, unchanged.
 *
 * Cells are integers, NULL and text.  A table row longer than its page
 * holds goes on in overflow pages; an index entry longer than a quarter page
 * (at most 4087 bytes) is refused.
 *
 * The new pages are written past the page cache (O_DIRECT) where the file
 * system allows it and that is the faster way, as timed while they go,
 * through the cache otherwise: the same bytes either way.
 *
 * Ownership: the writer owns its descriptors, buffers and the thread of its
 * direct writes; tr_btree_close() and tr_btree_abort() free them.  After a
 * failure the file is to be thrown away (only pages past its old end, and
 * the empty roots, were written).
 */
#ifndef TR_LIB_BTREE_APPEND_H
#define TR_LIB_BTREE_APPEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/bulk_insert.h"
#include "lib/error.h"

typedef struct tr_btree_file tr_btree_file;

tr_status tr_btree_open(tr_btree_file **out, const char *path, tr_error *err);

/* Fills the table whose root page is `root` with the rows among 0..nrows-1
 * that fill keeps (returning 1): cell 0 of each is its rowid (an INTEGER
 * PRIMARY KEY column, which the record holds as NULL), strictly ascending;
 * cells 1..ncols-1 the other columns. */
tr_status tr_btree_table(tr_btree_file *f, uint32_t root, int ncols, size_t nrows,
                         tr_row_fill fill, const void *ctx, tr_error *err);

/* Fills the index whose root page is `root` with entries 0..n-1, each of ncols
 * cells (the indexed columns, then the rowid), in the index's order: NULL
 * first, then integers ascending, then text by bytes; no two equal.  An entry
 * out of order fails the load. */
tr_status tr_btree_index(tr_btree_file *f, uint32_t root, int ncols, size_t n,
                         tr_row_fill fill, const void *ctx, tr_error *err);

/* An index built apart, so that another thread can build it while the file
 * takes other pages: tr_btree_open_apart() checks the database at path as
 * tr_btree_open() does, without writing to it, and gives a writer whose pages
 * go to an unnamed file in the spill directory (lib/spill.h), numbered from
 * 1, with its root kept aside; it takes tr_btree_index() only (a table's
 * overflow pointers are not renumbered).  tr_btree_append_apart() then
 * appends those pages to f as if they had been built there, renumbering
 * the child pointers of interior pages and leaving the lock-byte page out,
 * writes the root, and frees apart, whatever the result: the database's
 * bytes are those tr_btree_index() on f would give.  Nothing but reads of
 * the header and the root may touch the database at path while apart is
 * open, and f must be on that database. */
tr_status tr_btree_open_apart(tr_btree_file **out, const char *path, tr_error *err);
tr_status tr_btree_append_apart(tr_btree_file *f, tr_btree_file *apart, tr_error *err);

/* Writes the pages still buffered and the header's page count; frees f. */
tr_status tr_btree_close(tr_btree_file *f, tr_error *err);
void tr_btree_abort(tr_btree_file *f);

/* For tests: where the lock-byte page is, as SQLite's test control
 * SQLITE_TESTCTRL_PENDING_BYTE moves it (the default is 2^30); to be set
 * only while no writer is open. */
void tr_btree_set_pending_byte(uint32_t offset);

/* For tests: how the pages reach the file, so that a test can make either
 * way slow, or the direct calls fail or come short on any file system: the
 * flag the direct descriptor is opened with, the calls that write and read
 * through it (direct_pwrite NULL: no direct I/O at all), the call that
 * writes through the page cache, and the clock the two ways are timed by,
 * in ns (NULL: CLOCK_MONOTONIC's).  NULL restores the default, {O_DIRECT,
 * pwrite, pread, pwrite, NULL}.  To be set only while no writer is open. */
typedef struct {
    int open_flag;
    ssize_t (*direct_pwrite)(int fd, const void *buf, size_t n, off_t off);
    ssize_t (*direct_pread)(int fd, void *buf, size_t n, off_t off);
    ssize_t (*cached_pwrite)(int fd, const void *buf, size_t n, off_t off);
    double (*now_ns)(void);
} tr_btree_io;
void tr_btree_set_io(const tr_btree_io *how);

#endif
