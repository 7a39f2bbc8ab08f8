/*
 * native_frames.h - names for native stack frames recorded as program
 * counters, given the /proc/self/maps text of the process they came from.
 *
 * A frame is named by the function that holds it, from the symbol table of
 * the mapped file (lib/elf_symbols.h), or of its separate debug file
 * $TRACE_DEBUG_ROOT/.build-id/xx/yyyy.debug (default root /usr/lib/debug)
 * when the file itself has no .symtab.  Where the file has DWARF line
 * information, its own or in a debug file (lib/debuginfo.h), the name gains
 * " (file.c:42)", and each function inlined at the address becomes a frame
 * of its own, named the same way.  A file is used only once it is shown
 * to be the object that was mapped: its GNU build-id equals the recorded one
 * (raw-format MODULES entries), or, with none recorded, its inode equals the
 * one in the maps line.  Any other frame keeps "module+0xoffset" (the file
 * offset in the mapped file), or "0x<pc>" outside every mapping.
 *
 * Each file is opened and mapped at most once, on the first frame that needs
 * it, and kept until tr_native_frames_free().  The maps and modules inputs
 * may be hostile: malformed lines and entries are ignored.
 *
 * Ownership: tr_native_frames_new() copies what it keeps of its inputs; the
 * caller frees the object with tr_native_frames_free(), which unmaps every
 * file.  Frame names are interned in the caller's trace.
 */
#ifndef TR_INGEST_NATIVE_FRAMES_H
#define TR_INGEST_NATIVE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"

typedef struct tr_native_frames tr_native_frames;

/* maps: NUL-terminated /proc/self/maps text.  modules: a MODULES chunk
 * payload ({u64 addr, u16 build_id_len, u16 0, u32 0, id, pad to 8}...), or
 * NULL. */
tr_status tr_native_frames_new(tr_native_frames **out, const char *maps,
                               const unsigned char *modules, size_t modules_len,
                               tr_error *err);
void tr_native_frames_free(tr_native_frames *nf);

/* The base name of the file mapped at pc (*len bytes, not NUL-terminated),
 * or NULL when no mapping holds pc. */
const char *tr_native_frames_module(const tr_native_frames *nf, uint64_t pc, size_t *len);

/* pc's frames, outermost first (*n >= 1): the function holding pc, then
 * each function inlined into it at pc; *frames (string ids in t) stays
 * valid until the next call. */
tr_status tr_native_frames_name(tr_native_frames *nf, tr_trace *t, uint64_t pc,
                                const uint32_t **frames, size_t *n, tr_error *err);

/* One warning per file whose frames kept module+offset because the file
 * could not be used, each prefixed with `what` (the input's path). */
void tr_native_frames_warn(const tr_native_frames *nf, const tr_ingest_opts *o, const char *what);

#endif
