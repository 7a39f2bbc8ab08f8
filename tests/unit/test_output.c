/* lib/output: modes, links, inputs as outputs, and nothing left behind. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/output.h"
#include "tests/unit/unit.h"

static char dir[1024];

static const char *in_dir(const char *name)
{
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void setup_dir(void)
{
    snprintf(dir, sizeof dir, "%s/output", tr_unit_tmpdir());
    mkdir(dir, 0755);
}

/* 1 when dir holds a temporary file of tr_output */
static int temp_left(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)))
        found |= strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return found;
}

static int write_text(const char *path, const char *text, tr_status *st)
{
    tr_output o;
    tr_error err;
    FILE *f = tr_output_fopen(&o, path, &err);
    if (!f) {
        *st = err.status;
        return -1;
    }
    fputs(text, f);
    *st = tr_output_commit(&o, &err);
    return 0;
}

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 0777 : 0;
}

static void test_modes(void)
{
    setup_dir();
    tr_status st;
    mode_t old = umask(027);
    CU_ASSERT_EQUAL(write_text(in_dir("new.txt"), "new", &st), 0);
    umask(old);
    CU_ASSERT_EQUAL(st, TR_OK);
    CU_ASSERT_EQUAL(mode_of(in_dir("new.txt")), 0640);
    chmod(in_dir("new.txt"), 0600);
    CU_ASSERT_EQUAL(write_text(in_dir("new.txt"), "again", &st), 0);
    CU_ASSERT_EQUAL(mode_of(in_dir("new.txt")), 0600);
    CU_ASSERT_STRING_EQUAL(slurp(in_dir("new.txt")), "again");
    CU_ASSERT_FALSE(temp_left());
}

static void test_abort_and_refusals(void)
{
    setup_dir();
    tr_status st;
    write_text(in_dir("keep.txt"), "keep", &st);
    tr_output o;
    tr_error err;
    FILE *f = tr_output_fopen(&o, in_dir("keep.txt"), &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("lost", f);
    CU_ASSERT_TRUE(temp_left());
    tr_output_abort(&o);
    CU_ASSERT_FALSE(temp_left());
    CU_ASSERT_STRING_EQUAL(slurp(in_dir("keep.txt")), "keep");

    CU_ASSERT_EQUAL(tr_output_begin(&o, "", 0, &err), TR_ERR_USAGE);
    CU_ASSERT_EQUAL(tr_output_begin(&o, dir, 0, &err), TR_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "directory"));

    /* the output is the input: by name, through a symbolic link, through a hard link */
    symlink("keep.txt", in_dir("sym.txt"));
    link(in_dir("keep.txt"), in_dir("hard.txt"));
    const char *inputs[] = {in_dir("other"), in_dir("keep.txt")};
    CU_ASSERT_EQUAL(tr_output_check_inputs(in_dir("keep.txt"), inputs, 2, &err), TR_ERR_USAGE);
    CU_ASSERT_EQUAL(tr_output_check_inputs(in_dir("sym.txt"), inputs, 2, &err), TR_ERR_USAGE);
    CU_ASSERT_EQUAL(tr_output_check_inputs(in_dir("hard.txt"), inputs, 2, &err), TR_ERR_USAGE);
    CU_ASSERT_EQUAL(tr_output_check_inputs(in_dir("fresh.txt"), inputs, 2, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_output_check_inputs("-", inputs, 2, &err), TR_OK);
}

static void test_links_and_streams(void)
{
    setup_dir();
    tr_status st;
    write_text(in_dir("target.txt"), "old", &st);
    chmod(in_dir("target.txt"), 0604);
    symlink("target.txt", in_dir("link.txt"));
    CU_ASSERT_EQUAL(write_text(in_dir("link.txt"), "via link", &st), 0);
    CU_ASSERT_EQUAL(st, TR_OK);
    struct stat lst;
    CU_ASSERT(lstat(in_dir("link.txt"), &lst) == 0 && S_ISLNK(lst.st_mode));
    CU_ASSERT_STRING_EQUAL(slurp(in_dir("target.txt")), "via link");
    CU_ASSERT_EQUAL(mode_of(in_dir("target.txt")), 0604);

    symlink("missing.txt", in_dir("dangling.txt"));
    tr_output o;
    tr_error err;
    CU_ASSERT_EQUAL(tr_output_begin(&o, in_dir("dangling.txt"), 0, &err), TR_ERR_RUNTIME);

    /* a device is written in place, never renamed over */
    CU_ASSERT_EQUAL(tr_output_begin(&o, "/dev/null", 0, &err), TR_OK);
    CU_ASSERT_EQUAL(o.mode, TR_OUTPUT_STREAM);
    CU_ASSERT_EQUAL(tr_output_commit(&o, &err), TR_OK);
    /* a named-file writer (SQLite) gets a spool for a stream, removed at the end */
    CU_ASSERT_EQUAL(tr_output_begin(&o, "/dev/null", TR_OUTPUT_NEED_FILE, &err), TR_OK);
    CU_ASSERT(o.tmp_path[0] != '\0');
    char spool[sizeof o.tmp_path];
    strcpy(spool, o.tmp_path);
    CU_ASSERT_EQUAL(access(spool, F_OK), 0);
    CU_ASSERT_EQUAL(tr_output_commit(&o, &err), TR_OK);
    CU_ASSERT_NOT_EQUAL(access(spool, F_OK), 0);
    CU_ASSERT_FALSE(temp_left());
}

TR_SUITE(output,
         {"modes: the umask's for new files, kept when replacing", test_modes},
         {"abort, empty names, directories, outputs that are inputs", test_abort_and_refusals},
         {"symbolic links followed, devices written in place", test_links_and_streams})
