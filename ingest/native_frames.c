/*
 * native_frames.c - native frame names from recorded maps and the mapped
 * files' symbol tables (native_frames.h).
 *
 * The maps text is parsed once into an array sorted by address, so a frame
 * costs a binary search; names are cached per address, and each file's
 * symbol names are demangled and interned once.  The files named by the maps
 * come from the input, so nothing but a regular file on a disk-backed
 * filesystem is ever opened or mapped: device nodes, FIFOs and the kernel's
 * pseudo-files (/proc, /sys and the like) can block, have side effects on
 * open, or map device memory.  libdwfl, which reads the DWARF lines, opens
 * only a file already checked so, and debug files whose every candidate
 * path passes the same check (lib/debuginfo.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ingest/native_frames.h"
#include "lib/debuginfo.h"
#include "lib/elf_symbols.h"
#include "lib/i64map.h"
#include "lib/intern.h"
#include "lib/names.h"

#define DEFAULT_DEBUG_ROOT "/usr/lib/debug"
/* inlined calls kept per address: a deeper chain keeps its innermost and
 * outermost ones (a count that fits the cache's 8 bits) */
#define TR_NATIVE_MAX_INLINED 31

typedef struct {
    uint64_t lo, hi, off, inode;
    const char *path, *base;    /* into the copy of the maps text */
    size_t path_len, base_len;
    size_t order;               /* line number: keeps the sort stable */
} map_entry;

enum { MOD_UNTRIED, MOD_READY, MOD_FAILED };

typedef struct {
    int state;
    uint64_t inode;                    /* from the maps */
    const unsigned char *want_id;      /* recorded build-id (into the modules copy), or NULL */
    size_t want_id_len;
    void *image, *dimage;              /* the file and its separate debug file */
    size_t image_len, dimage_len;
    tr_elf elf, debug;
    uint32_t *names, *dnames;          /* per symbol: its frame string id, 0 = not yet */
    tr_debuginfo *lines;               /* file:line and inlined calls (DWARF) */
    size_t unresolved;                 /* distinct addresses left unnamed because of why */
    char why[256];
} module;

struct tr_native_frames {
    char *text;
    map_entry *maps;
    size_t nmaps;
    unsigned char *modules;
    tr_intern paths;                   /* module id = id of its path */
    module *mods;                      /* [0] unused */
    size_t nmods, cap_mods;
    tr_i64map names;                   /* pc -> its frames in chain: offset << 8 | count */
    uint32_t *chain;                   /* frame string ids, outermost first per pc */
    size_t nchain, cap_chain;
    char *debug_root;
};

static tr_status oom(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while naming native frames");
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

static const char *skip_spaces(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

/* A number in base 16 or 10 at *p; 0 when there is none or it overflows. */
static int parse_num(const char **p, const char *end, int base, uint64_t *v)
{
    const char *q = *p;
    uint64_t x = 0;
    for (; q < end; q++) {
        unsigned d;
        if (*q >= '0' && *q <= '9')
            d = (unsigned)(*q - '0');
        else if (base == 16 && *q >= 'a' && *q <= 'f')
            d = (unsigned)(*q - 'a' + 10);
        else if (base == 16 && *q >= 'A' && *q <= 'F')
            d = (unsigned)(*q - 'A' + 10);
        else
            break;
        if (x > (UINT64_MAX - d) / (unsigned)base)
            return 0;
        x = x * (unsigned)base + d;
    }
    if (q == *p)
        return 0;
    *p = q;
    *v = x;
    return 1;
}

/* "lo-hi perms offset dev inode   path" */
static int parse_line(const char *p, const char *end, map_entry *m)
{
    uint64_t devnum;
    if (!parse_num(&p, end, 16, &m->lo) || p == end || *p++ != '-'
        || !parse_num(&p, end, 16, &m->hi) || m->hi <= m->lo)
        return 0;
    p = skip_spaces(p, end);
    while (p < end && !is_space(*p))    /* perms */
        p++;
    p = skip_spaces(p, end);
    if (!parse_num(&p, end, 16, &m->off))
        return 0;
    p = skip_spaces(p, end);
    if (!parse_num(&p, end, 16, &devnum) || p == end || *p++ != ':'
        || !parse_num(&p, end, 16, &devnum))
        return 0;
    p = skip_spaces(p, end);
    if (!parse_num(&p, end, 10, &m->inode))
        return 0;
    p = skip_spaces(p, end);
    m->path = p;
    m->path_len = (size_t)(end - p);
    m->base = p;
    for (const char *q = p; q < end; q++)
        if (*q == '/')
            m->base = q + 1;
    m->base_len = (size_t)(end - m->base);
    return 1;
}

static int entry_cmp(const void *a, const void *b)
{
    const map_entry *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static const map_entry *entry_of(const tr_native_frames *nf, uint64_t pc)
{
    size_t lo = 0, hi = nf->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nf->maps[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && pc < nf->maps[lo - 1].hi ? &nf->maps[lo - 1] : NULL;
}

/* The module of a mapped file (created on first use); 0 for anonymous and
 * pseudo mappings ([heap], [vdso], ...), which have no file to read. */
static tr_status module_of(tr_native_frames *nf, const map_entry *m, uint32_t *id, tr_error *err)
{
    *id = 0;
    if (m->path_len == 0 || m->path[0] != '/')
        return TR_OK;
    uint32_t k = tr_intern_add(&nf->paths, m->path, m->path_len);
    if (!k)
        return oom(err);
    if (k >= nf->nmods) {
        if (k >= nf->cap_mods) {
            size_t nc = nf->cap_mods ? nf->cap_mods * 2 : 64;
            while (nc <= k)
                nc *= 2;
            module *a = realloc(nf->mods, nc * sizeof *a);
            if (!a)
                return oom(err);
            nf->mods = a;
            nf->cap_mods = nc;
        }
        memset(nf->mods + nf->nmods, 0, (k + 1 - nf->nmods) * sizeof *nf->mods);
        nf->nmods = k + 1;
        nf->mods[k].inode = m->inode;
    }
    *id = k;
    return TR_OK;
}

/* The recorded build-ids: an entry names the file whose mapping holds its
 * address.  Malformed entries are skipped; one that overruns the payload
 * ends the walk, since what follows it cannot be found. */
static tr_status read_modules(tr_native_frames *nf, size_t len, tr_error *err)
{
    const unsigned char *p = nf->modules;
    size_t off = 0;
    while (len - off >= 16) {
        uint64_t addr = 0;
        for (int i = 7; i >= 0; i--)
            addr = addr << 8 | p[off + (size_t)i];
        size_t idlen = (size_t)(p[off + 8] | p[off + 9] << 8);
        int zero = 1;
        for (size_t i = 10; i < 16; i++)
            zero &= p[off + i] == 0;
        size_t step = 16 + ((idlen + 7u) & ~(size_t)7u);
        if (step > len - off)
            break;
        const map_entry *m = entry_of(nf, addr);
        uint32_t k;
        if (zero && idlen && m) {
            tr_status s = module_of(nf, m, &k, err);
            if (s != TR_OK)
                return s;
            if (k) {
                nf->mods[k].want_id = p + off + 16;
                nf->mods[k].want_id_len = idlen;
            }
        }
        off += step;
    }
    return TR_OK;
}

tr_status tr_native_frames_new(tr_native_frames **out, const char *maps,
                               const unsigned char *modules, size_t modules_len, tr_error *err)
{
    tr_native_frames *nf = calloc(1, sizeof *nf);
    if (!nf)
        return oom(err);
    tr_intern_init(&nf->paths);
    tr_i64map_init(&nf->names);
    *out = nf;
    const char *root = getenv("TRACE_DEBUG_ROOT");
    if (!root || !*root)
        root = DEFAULT_DEBUG_ROOT;
    /* libdwfl reads a relative directory as one beside the object: the root
     * is made absolute, so both lookups read the same place */
    char *cwd = root[0] == '/' ? NULL : getcwd(NULL, 0);
    if (root[0] != '/' && !cwd)
        return tr_fail(err, TR_ERR_RUNTIME, "TRACE_DEBUG_ROOT '%s' is relative and the working "
                       "directory cannot be read (%s): give an absolute path", root, strerror(errno));
    if (cwd && (nf->debug_root = malloc(strlen(cwd) + strlen(root) + 2)))
        sprintf(nf->debug_root, "%s/%s", cwd, root);
    else if (!cwd)
        nf->debug_root = strdup(root);
    free(cwd);
    if (!nf->debug_root || !(nf->text = strdup(maps ? maps : "")))
        return oom(err);
    size_t lines = 1;
    for (const char *q = nf->text; *q; q++)
        lines += *q == '\n';
    if (!(nf->maps = malloc(lines * sizeof *nf->maps)))
        return oom(err);
    for (const char *line = nf->text; *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        map_entry *m = &nf->maps[nf->nmaps];
        if (parse_line(line, end, m)) {
            m->order = nf->nmaps;
            nf->nmaps++;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    qsort(nf->maps, nf->nmaps, sizeof *nf->maps, entry_cmp);
    if (modules && modules_len) {
        if (!(nf->modules = malloc(modules_len)))
            return oom(err);
        memcpy(nf->modules, modules, modules_len);
        return read_modules(nf, modules_len, err);
    }
    return TR_OK;
}

static void unmap(void **image, size_t *len)
{
    if (*image)
        munmap(*image, *len);
    *image = NULL;
    *len = 0;
}

void tr_native_frames_free(tr_native_frames *nf)
{
    if (!nf)
        return;
    for (size_t k = 1; k < nf->nmods; k++) {
        module *m = &nf->mods[k];
        tr_elf_free(&m->elf);
        tr_elf_free(&m->debug);
        unmap(&m->image, &m->image_len);
        unmap(&m->dimage, &m->dimage_len);
        free(m->names);
        free(m->dnames);
        tr_debuginfo_free(m->lines);
    }
    free(nf->chain);
    free(nf->mods);
    tr_intern_free(&nf->paths);
    tr_i64map_free(&nf->names);
    free(nf->maps);
    free(nf->text);
    free(nf->modules);
    free(nf->debug_root);
    free(nf);
}

/* Maps a regular file read-only; NULL with why filled otherwise. */
static void *map_file(const char *path, size_t *len, struct stat *sb, char *why, size_t whylen)
{
    /* stat before open: opening a device or FIFO can block or act */
    if (stat(path, sb) != 0) {
        snprintf(why, whylen, "cannot read the file (%s)", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(sb->st_mode)) {
        snprintf(why, whylen, "not a regular file");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, whylen, "cannot read the file (%s)", strerror(errno));
        return NULL;
    }
    struct stat fsb;
    struct statfs fs;
    void *m = MAP_FAILED;
    if (fstat(fd, &fsb) != 0 || !S_ISREG(fsb.st_mode) || fsb.st_ino != sb->st_ino
        || fsb.st_dev != sb->st_dev || fstatfs(fd, &fs) != 0 || tr_pseudo_fs((uint32_t)fs.f_type))
        snprintf(why, whylen, "not a regular file on disk");
    else if (fsb.st_size < 64 || (uint64_t)fsb.st_size > SIZE_MAX)
        snprintf(why, whylen, "not a readable ELF object: too short");
    else if ((m = mmap(NULL, (size_t)fsb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        snprintf(why, whylen, "cannot map the file (%s)", strerror(errno));
    close(fd);
    if (m == MAP_FAILED)
        return NULL;
    *sb = fsb;
    *len = (size_t)fsb.st_size;
    return m;
}

static int same_id(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    return a && b && alen == blen && memcmp(a, b, alen) == 0;
}

/* A file without .symtab: its full symbols may be in the debug file that
 * debuginfo packages install under the build-id.  Any failure leaves the
 * file's own .dynsym to do. */
static tr_status open_debug_file(tr_native_frames *nf, module *m, tr_error *err)
{
    const tr_elf *e = &m->elf;
    if (e->has_symtab || !e->build_id || e->build_id_len < 2 || e->build_id_len > 128)
        return TR_OK;
    size_t rl = strlen(nf->debug_root);
    char *path = malloc(rl + 32 + 2 * e->build_id_len);
    if (!path)
        return oom(err);
    int n = sprintf(path, "%s/.build-id/%02x/", nf->debug_root, e->build_id[0]);
    for (size_t i = 1; i < e->build_id_len; i++)
        n += sprintf(path + n, "%02x", e->build_id[i]);
    strcpy(path + n, ".debug");
    struct stat sb;
    char why[256];
    m->dimage = map_file(path, &m->dimage_len, &sb, why, sizeof why);
    free(path);
    if (!m->dimage)
        return TR_OK;
    tr_error derr;
    tr_status s = tr_elf_load(&m->debug, m->dimage, m->dimage_len, &derr);
    if (s == TR_ERR_RUNTIME) {
        *err = derr;
        return s;
    }
    if (s != TR_OK || !same_id(m->debug.build_id, m->debug.build_id_len, e->build_id,
                               e->build_id_len)) {
        tr_elf_free(&m->debug);
        unmap(&m->dimage, &m->dimage_len);
    }
    return TR_OK;
}

static tr_status module_open(tr_native_frames *nf, uint32_t k, tr_error *err)
{
    module *m = &nf->mods[k];
    const char *path = tr_intern_str(&nf->paths, k);
    struct stat sb;
    m->state = MOD_FAILED;
    if (!(m->image = map_file(path, &m->image_len, &sb, m->why, sizeof m->why)))
        return TR_OK;
    tr_error lerr;
    tr_status s = tr_elf_load(&m->elf, m->image, m->image_len, &lerr);
    if (s != TR_OK) {
        snprintf(m->why, sizeof m->why, "%.200s", lerr.msg);
        unmap(&m->image, &m->image_len);
        if (s == TR_ERR_RUNTIME)
            *err = lerr;
        return s == TR_ERR_RUNTIME ? s : TR_OK;
    }
    const char *changed = NULL;
    if (m->want_id && !same_id(m->elf.build_id, m->elf.build_id_len, m->want_id, m->want_id_len))
        changed = m->elf.build_id ? "build-id differs" : "it has no build-id";
    else if (!m->want_id && (uint64_t)sb.st_ino != m->inode)
        changed = "inode differs, and no build-id was recorded";
    if (changed) {
        snprintf(m->why, sizeof m->why, "file changed since recording (%s)", changed);
    } else {
        if ((s = open_debug_file(nf, m, err)) != TR_OK
            || (s = tr_debuginfo_open(&m->lines, path, m->elf.build_id, m->elf.build_id_len,
                                      nf->debug_root, err)) != TR_OK)
            return s;
        /* a file stripped of its symbols may still have them in a debug
         * file that only libdwfl finds (its .gnu_debuglink) */
        if (m->elf.nsyms || m->debug.nsyms || tr_debuginfo_has_functions(m->lines)) {
            if (!(m->names = calloc(m->elf.nsyms + 1, sizeof *m->names))
                || !(m->dnames = calloc(m->debug.nsyms + 1, sizeof *m->dnames)))
                return oom(err);
            m->state = MOD_READY;
            return TR_OK;
        }
        tr_debuginfo_free(m->lines);
        m->lines = NULL;
        snprintf(m->why, sizeof m->why, "no function symbols (stripped, and no debug file "
                 "under %s/.build-id or named by its .gnu_debuglink)", nf->debug_root);
    }
    tr_elf_free(&m->elf);
    tr_elf_free(&m->debug);
    unmap(&m->image, &m->image_len);
    unmap(&m->dimage, &m->dimage_len);
    return TR_OK;
}

/* The frame string id of a symbol name: demangled, and without a symbol
 * version ("__libc_start_main@@GLIBC_2.34" in a .symtab), so that the frame
 * reads and merges as the function it is; 0 for want of memory. */
static uint32_t function_frame(tr_trace *t, const char *sym)
{
    const char *at = strchr(sym, '@');
    char *plain = at && at != sym ? strndup(sym, (size_t)(at - sym)) : NULL;
    if (at && at != sym && !plain)
        return 0;
    const char *name = plain ? plain : sym;
    char *d = tr_demangle(name);
    uint32_t id = tr_str(t, d ? d : name);
    free(d);
    free(plain);
    return id;
}

/* The frame string id of a symbol of e, made once. */
static uint32_t symbol_frame(tr_trace *t, const tr_elf *e, uint32_t *names, const tr_elf_sym *sym)
{
    uint32_t *slot = &names[sym - e->syms];
    if (!*slot)
        *slot = function_frame(t, sym->name);
    return *slot;
}

static tr_status chain_push(tr_native_frames *nf, uint32_t frame, tr_error *err)
{
    if (nf->nchain == nf->cap_chain) {
        size_t nc = nf->cap_chain ? nf->cap_chain * 2 : 256;
        uint32_t *a = realloc(nf->chain, nc * sizeof *a);
        if (!a)
            return oom(err);
        nf->chain = a;
        nf->cap_chain = nc;
    }
    nf->chain[nf->nchain++] = frame;
    return TR_OK;
}

/* "name (file.c:42)", interned; just the name when the line is unknown.
 * name may lie in t's strings: it is copied before anything is interned. */
static uint32_t located_frame(tr_trace *t, const char *name, const tr_srcloc *loc)
{
    size_t n = strlen(name) + (loc->file ? strlen(loc->file) : 0) + 16;
    char *buf = malloc(n);
    if (!buf)
        return 0;
    if (loc->file)
        snprintf(buf, n, "%s (%s:%u)", name, loc->file, loc->line);
    else
        snprintf(buf, n, "%s", name);
    uint32_t id = tr_str(t, buf);
    free(buf);
    return id;
}

/* An inlined function's frame: its DWARF name, demangled. */
static uint32_t inlined_frame(tr_trace *t, const tr_srcloc *loc)
{
    char *d = tr_demangle(loc->func);
    uint32_t id = located_frame(t, d ? d : loc->func, loc);
    free(d);
    return id;
}

/* Pushes pc's frames, outermost first: the function holding pc, named from
 * the module's symbols, and the functions inlined into it at pc, each with
 * its file:line where the module has DWARF lines.  Pushes none when no
 * symbol covers pc's file offset. */
static tr_status resolve(tr_native_frames *nf, tr_trace *t, const map_entry *me, uint64_t pc,
                         tr_error *err)
{
    uint32_t k;
    tr_status s = module_of(nf, me, &k, err);
    if (s != TR_OK || !k)
        return s;
    module *m = &nf->mods[k];
    if (m->state == MOD_UNTRIED && (s = module_open(nf, k, err)) != TR_OK)
        return s;
    if (m->state != MOD_READY) {
        m->unresolved++;
        return TR_OK;
    }
    uint64_t vaddr;
    if (!tr_elf_offset_to_vaddr(&m->elf, pc - me->lo + me->off, &vaddr))
        return TR_OK;
    uint32_t f = 0;
    const tr_elf_sym *sym = tr_elf_lookup(&m->debug, vaddr);
    if (sym)
        f = symbol_frame(t, &m->debug, m->dnames, sym);
    else if ((sym = tr_elf_lookup(&m->elf, vaddr)))
        f = symbol_frame(t, &m->elf, m->names, sym);
    /* a debug file only libdwfl finds (by its .gnu_debuglink) names what a
     * stripped file's .dynsym does not cover; libdwfl's own rules for the
     * addresses no symbol covers differ from ours, so it is asked nothing
     * where a .symtab is read here */
    const char *dname = sym || m->elf.has_symtab || m->debug.nsyms
                        ? NULL : tr_debuginfo_function(m->lines, vaddr);
    if (!sym && !dname)
        return TR_OK;
    if (dname)
        f = function_frame(t, dname);
    if (!f)
        return oom(err);
    tr_srcloc loc[TR_NATIVE_MAX_INLINED + 1];
    size_t n = tr_debuginfo_lookup(m->lines, vaddr, loc, sizeof loc / sizeof *loc);
    if (n == 0)
        return chain_push(nf, f, err);
    /* the out-of-line function keeps its symbol's name, so that frames
     * with and without DWARF name a function alike */
    if (loc[n - 1].file && !(f = located_frame(t, tr_intern_str(&t->strings, f), &loc[n - 1])))
        return oom(err);
    if ((s = chain_push(nf, f, err)) != TR_OK)
        return s;
    for (size_t i = n - 1; i-- > 0;) {
        if (!(f = inlined_frame(t, &loc[i])))
            return oom(err);
        if ((s = chain_push(nf, f, err)) != TR_OK)
            return s;
    }
    return TR_OK;
}

tr_status tr_native_frames_name(tr_native_frames *nf, tr_trace *t, uint64_t pc,
                                const uint32_t **frames, size_t *n, tr_error *err)
{
    int64_t v;
    if (!tr_i64map_get(&nf->names, (int64_t)pc, &v)) {
        size_t at = nf->nchain;
        const map_entry *me = entry_of(nf, pc);
        if (me) {
            tr_status s = resolve(nf, t, me, pc, err);
            if (s != TR_OK)
                return s;
        }
        if (nf->nchain == at) {
            char buf[512];
            if (me)
                snprintf(buf, sizeof buf, "%.*s+0x%llx", (int)me->base_len, me->base,
                         (unsigned long long)(pc - me->lo + me->off));
            else
                snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)pc);
            uint32_t f = tr_str(t, buf);
            tr_status s = f ? chain_push(nf, f, err) : oom(err);
            if (s != TR_OK)
                return s;
        }
        v = (int64_t)at << 8 | (int64_t)(nf->nchain - at);
        if (tr_i64map_put(&nf->names, (int64_t)pc, v) < 0)
            return oom(err);
    }
    *frames = nf->chain + (v >> 8);
    *n = (size_t)(v & 0xff);
    return TR_OK;
}

const char *tr_native_frames_module(const tr_native_frames *nf, uint64_t pc, size_t *len)
{
    const map_entry *me = entry_of(nf, pc);
    if (!me)
        return NULL;
    *len = me->base_len;
    return me->base;
}

void tr_native_frames_warn(const tr_native_frames *nf, const tr_ingest_opts *o, const char *what)
{
    for (size_t k = 1; k < nf->nmods; k++)
        if (nf->mods[k].state == MOD_FAILED && nf->mods[k].unresolved)
            tr_ingest_warn(o, "%s: %zu frame(s) in %s left unsymbolised: %s", what,
                           nf->mods[k].unresolved, tr_intern_str(&nf->paths, (uint32_t)k),
                           nf->mods[k].why);
}
