/*
 * trace-record: runs a program with the recorder agent injected, then ingests
 * the raw files it wrote into a run database.  See docs/record.md.
 *
 * Exit status: the program's own (128+N when it died of signal N); 2 for a
 * usage error; 126 when the program cannot be executed, 127 when it is not
 * found (as a shell does); 1 when the recorder itself cannot start.  When the
 * program succeeded but the ingest failed, the ingest's status (1 or 3).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/version.h"
#include "record/raw_format.h"

#define PROG "trace-record"

static const char *const known_kinds[] = {"kernel", "runtime", "driver", "memcpy", "memset",
                                          "sync", "nvtx", "overhead", "query"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options] [--] PROGRAM [ARGS...]\n"
            "\n"
            "Runs PROGRAM (a CUDA or PyTorch program, unmodified) with CUPTI tracing injected\n"
            "and writes a run database.  Raw per-process files go to OUTPUT.raw/.\n"
            "\n"
            "  -o, --output FILE       run database to write (default run.db)\n"
            "      --raw-only          keep the raw files only, do not ingest\n"
            "      --kinds LIST        comma list of: kernel,runtime,driver,memcpy,memset,sync,\n"
            "                          nvtx,overhead,query (default: all but overhead and query)\n"
            "      --no-children       record only PROGRAM's process, not its descendants\n"
            "      --buffer-size BYTES CUPTI activity buffer size (default 8M; k, M or G suffix)\n"
            "      --buffer-budget BYTES  memory the buffer pool may grow to (default 256M)\n"
            "      --flush-ms MS       periodic flush interval (default 200)\n"
            "      --delay SECONDS     keep only activity starting SECONDS after launch\n"
            "      --duration SECONDS  ... and for SECONDS after that\n"
            "      --capture-range cudaProfilerApi\n"
            "                          keep only activity between cudaProfilerStart/Stop\n"
            "      --nvtx-capture NAME keep only activity inside NVTX ranges named NAME\n"
            "      --backtrace         record native call stacks of kernel launches\n"
            "  -h, --help              this help\n"
            "      --version           print the version\n"
            "\n"
            "Exit status: PROGRAM's (128+N if killed by signal N); 2 usage error; 126/127\n"
            "PROGRAM cannot be run / not found; 1 recorder failure; ingest's status if\n"
            "PROGRAM succeeded but the ingest failed.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try '" PROG " --help')\n");
    return 2;
}

/* Digits only: strtoull takes a sign (and "-1" as ULLONG_MAX) and leading space. */
static int parse_count(const char *s, unsigned long long *v, char **end)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    *v = strtoull(s, end, 10);
    return errno ? -1 : 0;
}

static int parse_size(const char *s, unsigned long long *out)
{
    char *end;
    unsigned long long v;
    if (parse_count(s, &v, &end) < 0)
        return -1;
    int shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'm' || *end == 'M')
        shift = 20, end++;
    else if (*end == 'g' || *end == 'G')
        shift = 30, end++;
    if (*end || v > (1ull << 30) >> shift)   /* checked before the shift, which could wrap */
        return -1;
    v <<= shift;
    if (v < 65536)
        return -1;
    *out = v;
    return 0;
}

static int parse_seconds(const char *s, unsigned long long *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0 && v <= 1e9))   /* NaN fails both */
        return -1;
    *ns = (unsigned long long)(v * 1e9);
    return 0;
}

static int check_kinds(const char *list)
{
    char buf[256];
    if (strlen(list) >= sizeof buf || !*list)
        return -1;
    strcpy(buf, list);
    for (char *save = NULL, *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        int ok = 0;
        for (size_t i = 0; i < sizeof known_kinds / sizeof known_kinds[0]; i++)
            ok |= strcmp(k, known_kinds[i]) == 0;
        if (!ok)
            return -1;
    }
    return 0;
}

/* Directory of this executable (for the agent and trace-ingest). */
static int self_dir(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return 0;
}

/* The raw directory beside the run database.  Nothing is created above it:
 * a missing parent is a typo in -o, not a request for a directory tree.  An
 * existing X.raw must be a real directory, never a file or a symbolic link,
 * which would send the program's trace somewhere else.  Sets *created when
 * the directory is new, so an empty one can be removed at the end. */
static int make_raw_dir(const char *out, const char *rawdir, int *created)
{
    *created = 0;
    char parent[PATH_MAX];
    const char *slash = strrchr(out, '/');
    if (!slash)
        strcpy(parent, ".");
    else if (slash == out)
        strcpy(parent, "/");
    else
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - out), out);
    struct stat st;
    int e = stat(parent, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (e) {
        fprintf(stderr, PROG ": cannot write %s: directory %s: %s\n", out, parent, strerror(e));
        return -1;
    }
    /* the run database itself cannot be a directory: said before the program runs, not after */
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, PROG ": cannot write %s: it is a directory\n", out);
        return -1;
    }
    if (lstat(rawdir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        fprintf(stderr, PROG ": cannot use %s for the raw files: it is a %s, not a directory\n",
                rawdir, S_ISLNK(st.st_mode) ? "symbolic link" : "file");
        return -1;
    }
    if (mkdir(rawdir, 0755) != 0) {
        fprintf(stderr, PROG ": cannot create %s: %s\n", rawdir, strerror(errno));
        return -1;
    }
    *created = 1;
    return 0;
}

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Raw files of this session in dir, sorted; NULL-terminated, malloc'd. */
static char **session_files(const char *dir, const char *prefix, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t cap = 16;
    char **v = malloc(cap * sizeof *v);
    struct dirent *de;
    while (v && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || len < 4
            || strcmp(de->d_name + len - 4, TR_RAW_FILE_SUFFIX) != 0)
            continue;
        if (*n + 2 > cap) {
            char **nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        size_t plen = strlen(dir) + len + 2;
        if (!(v[*n] = malloc(plen)))
            break;
        snprintf(v[*n], plen, "%s/%s", dir, de->d_name);
        (*n)++;
    }
    closedir(d);
    if (v) {
        qsort(v, *n, sizeof *v, cmp_str);
        v[*n] = NULL;
    }
    return v;
}

static int run_ingest(const char *bindir, const char *out, char **files, size_t n)
{
    char ingest[PATH_MAX + 32];
    snprintf(ingest, sizeof ingest, "%s/trace-ingest", bindir);
    char **argv = calloc(n + 5, sizeof *argv);
    if (!argv)
        return 1;
    argv[0] = ingest;
    argv[1] = "-o";
    argv[2] = (char *)out;
    for (size_t i = 0; i < n; i++)
        argv[3 + i] = files[i];
    pid_t p = fork();
    if (p == 0) {
        execv(ingest, argv);
        fprintf(stderr, PROG ": cannot run %s: %s\n", ingest, strerror(errno));
        _exit(1);
    }
    free(argv);
    int st;
    if (p < 0 || waitpid(p, &st, 0) < 0)
        return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

enum { O_RAW = 256, O_KINDS, O_NOCHILD, O_BUF, O_FLUSH, O_DELAY, O_DUR, O_CAPRANGE, O_NVTXCAP,
       O_BT, O_BUDGET, O_VERSION };
static const struct option longopts[] = {
    {"output", required_argument, NULL, 'o'},   {"raw-only", no_argument, NULL, O_RAW},
    {"kinds", required_argument, NULL, O_KINDS}, {"no-children", no_argument, NULL, O_NOCHILD},
    {"buffer-size", required_argument, NULL, O_BUF}, {"flush-ms", required_argument, NULL, O_FLUSH},
    {"buffer-budget", required_argument, NULL, O_BUDGET},
    {"delay", required_argument, NULL, O_DELAY}, {"duration", required_argument, NULL, O_DUR},
    {"capture-range", required_argument, NULL, O_CAPRANGE},
    {"nvtx-capture", required_argument, NULL, O_NVTXCAP},
    {"backtrace", no_argument, NULL, O_BT},     {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0}};

/* The command line, as read. */
typedef struct {
    const char *out, *kinds, *capture;
    int raw_only, no_children, backtrace;
    unsigned long long bufsize, delay, duration, flush_ms, budget;   /* 0: the agent's default */
    char capbuf[300];
} record_args;

#define EXIT_NOW (-1)   /* --help or --version has been answered */

/* One option from getopt_long(); 0, EXIT_NOW, or the exit status of a usage error. */
static int parse_option(record_args *a, int c, const char *arg)
{
    char *end;
    switch (c) {
    case 'o':
        a->out = arg;
        if (!*arg || !strcmp(arg, "-"))
            return usage_error("bad -o '%s': a run database file name is needed "
                               "(its raw files go beside it)", arg);
        return 0;
    case O_RAW: a->raw_only = 1; return 0;
    case O_KINDS:
        a->kinds = arg;
        return check_kinds(arg) < 0 ? usage_error("bad --kinds '%s'", arg) : 0;
    case O_NOCHILD: a->no_children = 1; return 0;
    case O_BUF:
        return parse_size(arg, &a->bufsize) < 0 ? usage_error("bad --buffer-size '%s' (64k..1G)", arg) : 0;
    case O_BUDGET:
        return parse_size(arg, &a->budget) < 0 ? usage_error("bad --buffer-budget '%s' (64k..1G)", arg) : 0;
    case O_FLUSH:
        return parse_count(arg, &a->flush_ms, &end) < 0 || *end || !a->flush_ms || a->flush_ms > 600000
               ? usage_error("bad --flush-ms '%s'", arg) : 0;
    case O_DELAY:
        return parse_seconds(arg, &a->delay) < 0 ? usage_error("bad --delay '%s'", arg) : 0;
    case O_DUR:
        return parse_seconds(arg, &a->duration) < 0 || !a->duration ? usage_error("bad --duration '%s'", arg) : 0;
    case O_CAPRANGE:
        if (strcmp(arg, "cudaProfilerApi") != 0)
            return usage_error("bad --capture-range '%s' (only cudaProfilerApi)", arg);
        a->capture = "cudaProfilerApi";
        return 0;
    case O_NVTXCAP:
        if (!*arg || strlen(arg) > 250)
            return usage_error("bad --nvtx-capture '%s'", arg);
        snprintf(a->capbuf, sizeof a->capbuf, "nvtx:%s", arg);
        a->capture = a->capbuf;
        return 0;
    case O_BT: a->backtrace = 1; return 0;
    case 'h': usage(stdout); return EXIT_NOW;
    case O_VERSION: printf(PROG " %s\n", TR_VERSION); return EXIT_NOW;
    default: fprintf(stderr, PROG ": try '" PROG " --help'\n"); return 2;
    }
}

/* The agent's absolute path in agent_abs (TRACE_RECORD_AGENT, else beside
 * this program's lib/), and this program's directory in bindir; 0, or 1 with
 * the reason printed. */
static int find_agent(char *bindir, size_t nbindir, char agent_abs[PATH_MAX])
{
    char agent[PATH_MAX + 64];
    if (self_dir(bindir, nbindir) < 0) {
        fprintf(stderr, PROG ": cannot find my own directory\n");
        return 1;
    }
    const char *agent_env = getenv("TRACE_RECORD_AGENT");
    if (agent_env && *agent_env)
        snprintf(agent, sizeof agent, "%s", agent_env);
    else
        snprintf(agent, sizeof agent, "%s/../lib/libtracekit-agent.so", bindir);
    if (!realpath(agent, agent_abs)) {
        fprintf(stderr, PROG ": recorder agent not found at %s\n", agent);
        return 1;
    }
    const char *existing = getenv("CUDA_INJECTION64_PATH");
    if (existing && *existing && strcmp(existing, agent_abs) != 0) {
        fprintf(stderr, PROG ": CUDA_INJECTION64_PATH is already set (%s): another tool is "
                "tracing; refusing to run under it\n", existing);
        return 1;
    }
    return 0;
}

/* OUT.raw, made if need be (*created says so), as an absolute path in rawabs;
 * 0, or 1 with the reason printed. */
static int raw_dir(const char *out, char rawdir[PATH_MAX], char rawabs[PATH_MAX], int *created)
{
    *created = 0;
    if ((size_t)snprintf(rawdir, PATH_MAX, "%s.raw", out) >= PATH_MAX) {
        fprintf(stderr, PROG ": output path too long\n");
        return 1;
    }
    if (make_raw_dir(out, rawdir, created) < 0)
        return 1;
    if (!realpath(rawdir, rawabs)) {
        fprintf(stderr, PROG ": cannot resolve %s: %s\n", rawdir, strerror(errno));
        if (*created)
            rmdir(rawdir);
        return 1;
    }
    return 0;
}

/* An option's value, unless 0 (the agent's default). */
static void setenv_u64(const char *name, unsigned long long v)
{
    char buf[32];
    if (!v)
        return;
    snprintf(buf, sizeof buf, "%llu", v);
    setenv(name, buf, 1);
}

/* What the agent reads in the program's environment: where to write, the
 * session its files are named by, the clock's start, and the options. */
static void agent_environment(const record_args *a, const char *agent_abs, const char *rawabs, uint64_t session)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char sbuf[32], t0buf[32];
    snprintf(sbuf, sizeof sbuf, "0x%016llx", (unsigned long long)session);
    snprintf(t0buf, sizeof t0buf, "%llu",
             (unsigned long long)t0.tv_sec * 1000000000ull + (unsigned long long)t0.tv_nsec);
    setenv("CUDA_INJECTION64_PATH", agent_abs, 1);
    setenv("NVTX_INJECTION64_PATH", agent_abs, 1);
    setenv("TRACE_RECORD_DIR", rawabs, 1);
    setenv("TRACE_RECORD_SESSION", sbuf, 1);
    setenv("TRACE_RECORD_T0", t0buf, 1);
    if (a->kinds)
        setenv("TRACE_RECORD_KINDS", a->kinds, 1);
    setenv_u64("TRACE_RECORD_BUFFER_SIZE", a->bufsize);
    setenv_u64("TRACE_RECORD_POOL_BYTES", a->budget);
    setenv_u64("TRACE_RECORD_FLUSH_MS", a->flush_ms);
    setenv_u64("TRACE_RECORD_DELAY_NS", a->delay);
    setenv_u64("TRACE_RECORD_DURATION_NS", a->duration);
    if (a->capture)
        setenv("TRACE_RECORD_CAPTURE", a->capture, 1);
    if (a->backtrace)
        setenv("TRACE_RECORD_BACKTRACE", "1", 1);
}

/* Runs argv[0] with signals forwarded to it and waits for it.  Its wait
 * status in *wstatus and 0; or -1 with the errno of a failed exec in
 * *exec_errno, or -2 when it could not be started (reason printed). */
static int run_program(char **argv, int no_children, int *wstatus, int *exec_errno)
{
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
        return -2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &sa, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
        return -2;
    }
    if (pid == 0) {
        close(errpipe[0]);
        for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
            signal(forwarded[i], SIG_DFL);
        if (no_children) {
            char nbuf[32];
            snprintf(nbuf, sizeof nbuf, "%d", (int)getpid());
            setenv("TRACE_RECORD_ONLY_PID", nbuf, 1);
        }
        execvp(argv[0], argv);
        int e = errno;
        if (write(errpipe[1], &e, sizeof e) < 0) {
            /* nothing more to report */
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    close(errpipe[1]);
    ssize_t got;
    do
        got = read(errpipe[0], exec_errno, sizeof *exec_errno);
    while (got < 0 && errno == EINTR);
    close(errpipe[0]);
    while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    return got == (ssize_t)sizeof *exec_errno ? -1 : 0;
}

/* The raw files of this session: ingested into the run database unless
 * --raw-only; returns the exit status, the program's (status) unless it
 * succeeded and the ingest failed. */
static int collect(const record_args *a, const char *bindir, const char *rawdir, const char *rawabs,
                   int raw_created, uint64_t session, const char *program, int status)
{
    char prefix[40];
    snprintf(prefix, sizeof prefix, "%016llx.", (unsigned long long)session);
    size_t n = 0;
    char **files = session_files(rawabs, prefix, &n);
    if (!n) {
        /* the agent is loaded by a successful cuInit or a first NVTX call: a cuInit
         * that fails (no driver) never reaches it either */
        fprintf(stderr, PROG ": no trace written: %s made no NVTX call and no successful "
                "cuInit\n", program);
        if (raw_created)
            rmdir(rawabs);   /* only removed when empty */
    } else if (a->raw_only) {
        fprintf(stderr, PROG ": %zu raw file(s) in %s\n", n, rawdir);
    } else {
        int ist = run_ingest(bindir, a->out, files, n);
        if (ist != 0) {
            fprintf(stderr, PROG ": ingest failed (status %d); raw files kept in %s\n", ist, rawdir);
            if (status == 0)
                status = ist;
        }
    }
    for (size_t i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
    return status;
}

int main(int argc, char **argv)
{
    record_args a = {.out = "run.db"};
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1)
        rc = parse_option(&a, c, optarg);
    if (rc)
        return rc == EXIT_NOW ? 0 : rc;
    if (optind >= argc) {
        fprintf(stderr, PROG ": no program to run (try '" PROG " --help')\n");
        return 2;
    }
    char bindir[PATH_MAX], agent_abs[PATH_MAX], rawdir[PATH_MAX], rawabs[PATH_MAX];
    int raw_created;
    if (find_agent(bindir, sizeof bindir, agent_abs) || raw_dir(a.out, rawdir, rawabs, &raw_created))
        return 1;
    uint64_t session = 0;
    if (getrandom(&session, sizeof session, 0) != sizeof session)
        session = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
    session |= 1ull << 63;
    agent_environment(&a, agent_abs, rawabs, session);
    int st = 0, exec_errno = 0;
    int ran = run_program(argv + optind, a.no_children, &st, &exec_errno);
    if (ran == -2)
        return 1;
    if (ran == -1) {
        fprintf(stderr, PROG ": cannot run '%s': %s\n", argv[optind], strerror(exec_errno));
        if (raw_created)
            rmdir(rawabs);   /* only removed when empty */
        return exec_errno == ENOENT ? 127 : 126;
    }
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    if (WIFSIGNALED(st))
        fprintf(stderr, PROG ": %s killed by signal %d (%s)\n", argv[optind], WTERMSIG(st),
                strsignal(WTERMSIG(st)));
    return collect(&a, bindir, rawdir, rawabs, raw_created, session, argv[optind], status);
}
