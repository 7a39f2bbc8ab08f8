/*
 * debuginfo.c - source locations through libdwfl (debuginfo.h).
 *
 * One Dwfl session per object, the object reported offline on its own, so
 * that objects never overlap in its address space and the address of a
 * virtual address is simply vaddr + the module's bias.  The session is made
 * on the first lookup: an object no frame needs costs nothing.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "lib/debuginfo.h"

enum { DI_UNTRIED, DI_READY, DI_FAILED };

struct tr_debuginfo {
    int state, dwarf_state;
    char *path, *root, *search;       /* search: libdwfl's debuginfo path */
    unsigned char *build_id;          /* the object's, as the caller read it; NULL: any */
    size_t build_id_len;
    Dwfl_Callbacks cb;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    GElf_Addr bias;                   /* module address = vaddr + bias */
};

int tr_pseudo_fs(uint32_t type)
{
    static const uint32_t magic[] = {
        0x9fa0,        /* proc */
        0x62656572,    /* sysfs */
        0x64626720,    /* debugfs */
        0x74726163,    /* tracefs */
        0x73636673,    /* securityfs */
        0x62656570,    /* configfs */
        0x27e0eb,      /* cgroup */
        0x63677270,    /* cgroup2 */
        0xcafe4a11,    /* bpf */
        0xde5e81e4,    /* efivarfs */
        0x6165676c,    /* pstore */
        0x1cd1,        /* devpts */
    };
    for (size_t i = 0; i < sizeof magic / sizeof *magic; i++)
        if (type == magic[i])
            return 1;
    return 0;
}

/* 1 when path names something that is not a regular file on a disk: libdwfl
 * opens its candidates with a plain blocking open(). */
static int unsafe_path(const char *path)
{
    struct stat sb;
    struct statfs fs;
    if (stat(path, &sb) != 0)
        return 0;             /* nothing there, or nothing libdwfl could open either */
    return !S_ISREG(sb.st_mode) || statfs(path, &fs) != 0 || tr_pseudo_fs((uint32_t)fs.f_type);
}

static int unsafe_join(const char *a, const char *b, const char *c, const char *e)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(e) + 1;
    char *p = malloc(n);
    if (!p)
        return 1;
    snprintf(p, n, "%s%s%s%s", a, b, c, e);
    int u = unsafe_path(p);
    free(p);
    return u;
}

/* The places libdwfl's standard search opens for the path ":.debug:ROOT"
 * (libdwfl/find-debuginfo.c): by build-id, then the link name in the
 * object's directory, its .debug/, ROOT/ followed by the directory and each
 * of its tails, and ROOT itself. */
static int unsafe_candidates(const tr_debuginfo *d, Dwfl_Module *mod, const char *file_name,
                             const char *debuglink)
{
    const unsigned char *bits;
    GElf_Addr at;
    int n = dwfl_module_build_id(mod, &bits, &at);
    if (n >= 2 && n <= 64) {
        char hex[16 + 2 * 64];   /* "/.build-id/xx/" and the rest in hex */
        int k = snprintf(hex, sizeof hex, "/.build-id/%02x/", bits[0]);
        for (int i = 1; i < n; i++)
            k += snprintf(hex + k, sizeof hex - (size_t)k, "%02x", bits[i]);
        if (unsafe_join(d->root, hex, ".debug", ""))
            return 1;
    }
    if (!file_name)
        return 0;
    const char *slash = strrchr(file_name, '/');
    char *dir = slash ? strndup(file_name, (size_t)(slash - file_name)) : strdup(".");
    char *own = NULL;
    if (!debuglink && slash && (own = malloc(strlen(slash) + 7)))
        sprintf(own, "%s.debug", slash + 1);
    const char *link = debuglink ? debuglink : own;
    int u = !dir || !link;
    if (!u && link[0] == '/') {
        u = unsafe_path(link);
    } else if (!u) {
        const char *base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
        u = unsafe_join(dir, "/", link, "") || unsafe_join(dir, "/.debug/", link, "")
            || unsafe_join(d->root, "/", base, "");
        for (const char *s = dir; !u && s && *s == '/'; s = strchr(s + 1, '/'))
            u = unsafe_join(d->root, s, "/", link);
    }
    free(dir);
    free(own);
    return u;
}

void tr_debuginfo_stay_offline(void)
{
    const char *keep = getenv("TRACEKIT_DEBUGINFOD");
    if (!keep || strcmp(keep, "1") != 0)
        unsetenv("DEBUGINFOD_URLS");
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **debuginfo_file_name)
{
    const tr_debuginfo *d = *userdata;
    if (!d || unsafe_candidates(d, mod, file_name, debuglink)) {
        errno = 0;
        return -1;
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc,
                                        debuginfo_file_name);
}

/* The object is reported by path, never looked up: nothing to find. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
    *elfp = NULL;
    return -1;
}

tr_status tr_debuginfo_open(tr_debuginfo **out, const char *path, const unsigned char *build_id,
                            size_t build_id_len, const char *debug_root, tr_error *err)
{
    tr_debuginfo *d = calloc(1, sizeof *d);
    *out = d;
    if (!d || !(d->path = strdup(path)) || !(d->root = strdup(debug_root))
        || !(d->search = malloc(strlen(debug_root) + 9))
        || (build_id_len && !(d->build_id = malloc(build_id_len))))
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory while reading debug information");
    sprintf(d->search, ":.debug:%s", debug_root);
    if (build_id_len)
        memcpy(d->build_id, build_id, build_id_len);
    d->build_id_len = build_id_len;
    d->cb.find_elf = find_elf;
    d->cb.find_debuginfo = find_debuginfo;
    d->cb.section_address = dwfl_offline_section_address;
    d->cb.debuginfo_path = &d->search;
    return TR_OK;
}

void tr_debuginfo_free(tr_debuginfo *d)
{
    if (!d)
        return;
    if (d->dwfl)
        dwfl_end(d->dwfl);
    free(d->path);
    free(d->root);
    free(d->search);
    free(d->build_id);
    free(d);
}

/* The session, made once; 0 when libdwfl cannot read the object. */
static int ready(tr_debuginfo *d)
{
    if (d->state != DI_UNTRIED)
        return d->state == DI_READY;
    d->state = DI_FAILED;
    if (!(d->dwfl = dwfl_begin(&d->cb)))
        return 0;
    dwfl_report_begin(d->dwfl);
    Dwfl_Module *m = dwfl_report_offline(d->dwfl, d->path, d->path, -1);
    if (dwfl_report_end(d->dwfl, NULL, NULL) != 0 || !m)
        return 0;
    void **userdata;
    dwfl_module_info(m, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
    *userdata = d;
    /* the file opened by path must still be the object the caller read */
    const unsigned char *bits;
    GElf_Addr at;
    int n = dwfl_module_build_id(m, &bits, &at);
    if (d->build_id && (n != (int)d->build_id_len || memcmp(bits, d->build_id, d->build_id_len)))
        return 0;
    if (!dwfl_module_getelf(m, &d->bias))
        return 0;
    d->mod = m;
    d->state = DI_READY;
    return 1;
}

/* The module when it has DWARF (its own or a debug file's), else NULL. */
static Dwfl_Module *with_dwarf(tr_debuginfo *d)
{
    if (!ready(d))
        return NULL;
    if (!d->dwarf_state) {
        Dwarf_Addr dwbias;
        d->dwarf_state = dwfl_module_getdwarf(d->mod, &dwbias) ? DI_READY : DI_FAILED;
    }
    return d->dwarf_state == DI_READY ? d->mod : NULL;
}

int tr_debuginfo_has_functions(tr_debuginfo *d)
{
    int n = ready(d) ? dwfl_module_getsymtab(d->mod) : 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx, NULL, NULL);
        if (!name || !*name)
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type == STT_FUNC || type == STT_GNU_IFUNC) && shndx != SHN_UNDEF && sym.st_value)
            return 1;
    }
    return 0;
}

const char *tr_debuginfo_function(tr_debuginfo *d, uint64_t vaddr)
{
    const char *debugfile = NULL;
    if (!ready(d) || dwfl_module_getsymtab(d->mod) <= 0)
        return NULL;
    dwfl_module_info(d->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
    if (!debugfile)
        return NULL;
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(d->mod, vaddr + d->bias, &off, &sym, NULL, NULL,
                                            NULL);
    if (!name || !*name)
        return NULL;
    int type = GELF_ST_TYPE(sym.st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC) && (!sym.st_size || off < sym.st_size)
           ? name : NULL;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* An inlined function's name: the linkage name when it has one (C++), which
 * the caller demangles into the qualified name, else its plain name. */
static const char *inlined_name(Dwarf_Die *die)
{
    static const unsigned names[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    Dwarf_Attribute a;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *s = dwarf_formstring(dwarf_attr_integrate(die, names[i], &a));
        if (s && *s)
            return s;
    }
    return "??";
}

/* The scopes holding an address, found by walking the CU's DIE tree with
 * libdw's own iterators: dwarf_getscopes() would walk every DIE of the CU
 * for each address, and leaks on some malformed DWARF (elfutils 0.188).
 * Function definitions lie at the top of a CU or in namespaces, so nothing
 * else is entered.  The walk is bounded in depth and in DIEs visited, so
 * that no DWARF, however made, can make it long. */
#define SCOPE_DEPTH 64
#define SCOPE_BUDGET 200000
#define SCOPE_LEVELS 256   /* code scopes and namespaces together */
typedef struct {
    Dwarf_Addr pc;
    Dwarf_Die die[SCOPE_DEPTH];      /* outermost first */
    size_t n, budget;
} scope_walk;

static int code_scope(int tag)
{
    static const int tags[] = {DW_TAG_subprogram, DW_TAG_inlined_subroutine, DW_TAG_lexical_block,
                               DW_TAG_entry_point, DW_TAG_try_block, DW_TAG_catch_block};
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
        if (tag == tags[i])
            return 1;
    return 0;
}

static int walk_scopes(scope_walk *w, Dwarf_Die *parent, unsigned level)
{
    Dwarf_Die child;
    /* level counts namespaces too: hostile DWARF can nest them without end, and
     * each level is a C stack frame */
    if (w->n == SCOPE_DEPTH || level >= SCOPE_LEVELS || dwarf_child(parent, &child) != 0)
        return 0;
    do {
        if (w->budget == 0)
            return 0;
        w->budget--;
        int tag = dwarf_tag(&child);
        if (code_scope(tag) && dwarf_haspc(&child, w->pc) > 0) {
            w->die[w->n++] = child;
            walk_scopes(w, &child, level + 1);
            return 1;
        }
        if ((tag == DW_TAG_namespace || tag == DW_TAG_module) && walk_scopes(w, &child, level + 1))
            return 1;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

size_t tr_debuginfo_lookup(tr_debuginfo *d, uint64_t vaddr, tr_srcloc *loc, size_t max)
{
    Dwfl_Module *mod = max ? with_dwarf(d) : NULL;
    if (!mod)
        return 0;
    Dwarf_Addr a = vaddr + d->bias;
    Dwfl_Line *l = dwfl_module_getsrc(mod, a);
    int line = 0;
    const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
    if (!file || line <= 0)
        return 0;
    /* from the innermost scope out, each inlined call moves the location
     * out to its call site in the enclosing function */
    Dwarf_Addr cubias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &cubias);
    scope_walk w = {.pc = cu ? a - cubias : 0, .n = 0, .budget = SCOPE_BUDGET};
    if (cu)
        walk_scopes(&w, cu, 0);
    Dwarf_Files *files = NULL;
    size_t nfiles = 0, n = 0;
    for (size_t i = w.n; i-- > 0;) {
        Dwarf_Die *sc = &w.die[i];
        int tag = dwarf_tag(sc);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag != DW_TAG_inlined_subroutine)
            continue;
        /* a chain longer than loc keeps its innermost and outermost frames */
        if (n + 1 < max)
            loc[n++] = (tr_srcloc){inlined_name(sc), file ? base_name(file) : NULL,
                                   line > 0 ? (unsigned)line : 0};
        Dwarf_Attribute at;
        Dwarf_Word cf, cl;
        if (!files && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
            files = NULL, nfiles = 0;
        if (files && dwarf_formudata(dwarf_attr(sc, DW_AT_call_file, &at), &cf) == 0
            && dwarf_formudata(dwarf_attr(sc, DW_AT_call_line, &at), &cl) == 0
            && cf < nfiles && cl > 0 && cl <= INT32_MAX) {
            file = dwarf_filesrc(files, cf, NULL, NULL);
            line = (int)cl;
        } else {
            file = NULL;
            line = 0;
        }
    }
    loc[n++] = (tr_srcloc){NULL, file && line > 0 ? base_name(file) : NULL,
                           file && line > 0 ? (unsigned)line : 0};
    return n;
}
