/*
 * debuginfo.h - source file:line and inlined calls at an address of an ELF
 * object, from its DWARF line and scope information, read through elfutils'
 * libdwfl.
 *
 * The DWARF is the object's own (built with -g), or a separate debug file
 * found by libdwfl's standard search: by GNU build-id under
 * ROOT/.build-id/xx/yyyy.debug, then by the .gnu_debuglink name (or
 * NAME.debug) in the object's directory, its .debug/ subdirectory and under
 * ROOT (libdwfl checks the link's CRC).  ROOT is the caller's debug root,
 * /usr/lib/debug by default.  A candidate path that exists and is not a
 * regular file on a disk filesystem (a FIFO, a device, a kernel pseudo-file)
 * stops the search, since opening it can block or act.
 *
 * Anything missing or unreadable (no DWARF, a truncated or corrupt file) only
 * means fewer locations: a lookup then gives none, and the caller keeps its
 * symbol names.
 *
 * Ownership: tr_debuginfo_open() returns an object the caller frees with
 * tr_debuginfo_free(); strings in the locations it gives stay valid until then.
 */
#ifndef TR_LIB_DEBUGINFO_H
#define TR_LIB_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

typedef struct tr_debuginfo tr_debuginfo;

/* One source location at an address.  A lookup gives the innermost first:
 * the line executing, in the innermost function inlined there (func set,
 * the name as DWARF gives it: a mangled linkage name when there is one),
 * then each call site of an inlined function in the function it is inlined
 * into, ending with the location in the out-of-line function (func NULL:
 * the caller names it from its symbol).  file is a base name. */
typedef struct {
    const char *func;
    const char *file;
    unsigned line;
} tr_srcloc;

/* path: a regular file the caller has checked; build_id (build_id_len
 * bytes, or NULL): the GNU build-id the caller read from it, which the file
 * libdwfl opens must still have; debug_root: an absolute directory.  Fails
 * only for want of memory (*out is then still for tr_debuginfo_free); the
 * file itself is read on the first lookup. */
/* Keeps the search local: libdwfl asks the debuginfod servers of
 * $DEBUGINFOD_URLS for a debug file it cannot find, which sends the trace's
 * build ids out and can wait on the network for minutes.  Unsets that variable
 * unless TRACEKIT_DEBUGINFOD=1; each tool's main calls it before any thread
 * starts (it changes the environment). */
void tr_debuginfo_stay_offline(void);

tr_status tr_debuginfo_open(tr_debuginfo **out, const char *path, const unsigned char *build_id,
                            size_t build_id_len, const char *debug_root, tr_error *err);
void tr_debuginfo_free(tr_debuginfo *d);

/* The locations at vaddr (an address in the object's own ELF address space,
 * as its program headers give it), innermost first, at most max; 0 when the
 * object has no line for it. */
size_t tr_debuginfo_lookup(tr_debuginfo *d, uint64_t vaddr, tr_srcloc *loc, size_t max);

/* 1 when libdwfl finds function symbols for the object: in its .symtab or
 * .dynsym, or in a separate debug file's .symtab. */
int tr_debuginfo_has_functions(tr_debuginfo *d);

/* The name of the function symbol (STT_FUNC, STT_GNU_IFUNC) covering vaddr
 * in libdwfl's table, as written there (mangled, maybe versioned), when that
 * table is a separate debug file's; NULL otherwise or when none covers it. */
const char *tr_debuginfo_function(tr_debuginfo *d, uint64_t vaddr);

/* 1 when a statfs f_type is a filesystem whose files are kernel interfaces
 * (proc, sysfs, debugfs, ...), not objects on a disk. */
int tr_pseudo_fs(uint32_t type);

#endif
