/*
 * fake_app.c - plays a CUDA application and the CUDA driver for recorder tests.
 *
 * Like the driver inside cuInit, it dlopens $CUDA_INJECTION64_PATH and calls
 * InitializeInjection; like the NVTX loader, it dlopens $NVTX_INJECTION64_PATH
 * and calls InitializeInjectionNvtx2.  Then it "runs" kernels through the fake
 * libcupti's hooks.  Counts per process, T threads of N iterations:
 *   kernels T*N; runtime API T*(N+3) (+2 with --profiler); driver API 1;
 *   memcpy T; memset T; sync T; NVTX ranges T*N (+1 "setup" +1 --capture range);
 *   marks 1.  --fork adds a child process with 1 thread of N/2 iterations.
 *   --start-end NAME wraps the run in an nvtxRangeStartA/End range instead of a push/pop.
 *   --catch SIG installs the program's own handler for SIG, which makes it exit 42.
 *   --fault ends the program with a real segmentation fault (a store to address 8).
 *   --late MS sleeps MS milliseconds after the run, then runs 1 x 10 iterations more.
 *   --spawn adds a child process that execs this program (1 thread of N/2 iterations).
 *   --form F makes the --capture push and the --start-end start an NVTX call of form
 *   F: a (default), w, ex-w (Unicode message), registered, registered-w.
 *   --inner-wide makes the per-iteration range an nvtxRangePushW.
 *   -t 0 runs the N iterations on the main thread, inside its capture range.
 *   --poll Q polls a stream Q times (not ready), then once more (ready), then waits on
 *   it with cudaStreamSynchronize: Q + 1 queries and 1 wait.
 *   --internal K adds K kernels launched by CUDA itself (internal launches).
 *   --overhead K adds K CUPTI overhead records (buffer flushes) on the main thread.
 *   --takeover: after the run another CUPTI client takes the buffers, 10 iterations
 *   run, and it stops (disabling the kinds).
 *   --takeover-at MS: after the run, iterations at a steady pace (one a millisecond);
 *   after MS milliseconds of them another CUPTI client takes the buffers (the time is
 *   printed, "takeover-at-ns=" CLOCK_REALTIME), 800 ms more run (four of the recorder's
 *   periodic flushes, so that a loaded machine still has one after the takeover), and
 *   it stops.
 *   --unique-ranges R opens and closes R NVTX ranges of unique ~175-byte names and
 *   prints "rss-growth-kb=N": the growth of the process from R/10 ranges to R.
 *   --domain-cross: a range of another domain opens inside the --capture range and
 *   ends after it (and after the 10 iterations outside): each domain nests apart.
 *   --order O: the order of the two injections: nvtx-first (default), cuda-first, or
 *   threads (both at once from two threads).
 *
 * usage: fake_app [-t THREADS] [-n ITERS] [--fork] [--exit N] [--signal N]
 *                 [--incomplete K] [--sleep MS] [--profiler] [--capture NAME]
 *                 [--start-end NAME] [--catch SIG] [--fault] [--late MS] [--spawn]
 *                 [--form F] [--inner-wide] [--poll Q] [--internal K] [--takeover]
 *                 [--takeover-at MS] [--unique-ranges R] [--order O] [--print-env]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakecupti/fake_cupti.h"

static int iters = 100, incomplete;
static fake_nvtx_form inner_form = FAKE_NVTX_A;
static volatile sig_atomic_t caught;

static void on_caught(int sig)
{
    caught = sig;
}

static int inject(void)
{
    const char *cuda = getenv("CUDA_INJECTION64_PATH");
    if (!cuda || !*cuda)
        return 0;
    void *h = dlopen(cuda, RTLD_NOW);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (!init || init() != 1) {
        fprintf(stderr, "fake_app: InitializeInjection failed: %s\n", dlerror());
        exit(90);
    }
    return 1;
}

/* An NVTX instance's export table: the injection fills these slots (slot 9 of
 * the core module is nvtxRangePushA) when it handles NVTX itself. */
typedef void (*nvtx_fn)(void);
static nvtx_fn core_fns[16], core2_fns[16];
static nvtx_fn *core_tab[16], *core2_tab[16];
static int module_table(int module, nvtx_fn ***out, unsigned *size)
{
    nvtx_fn *fns = module == 1 ? core_fns : core2_fns;
    nvtx_fn **tab = module == 1 ? core_tab : core2_tab;
    if (module != 1 && module != 5)
        return 0;
    for (int i = 0; i < 16; i++)
        tab[i] = &fns[i];
    *out = tab;
    *size = 16;
    return 1;
}
static const struct {
    size_t struct_size;
    int (*get_module_function_table)(int, nvtx_fn ***, unsigned *);
} callbacks = {sizeof callbacks, module_table};
static const void *export_table(uint32_t id)
{
    return id == 1 ? (const void *)&callbacks : NULL;
}

static void inject_nvtx(void)
{
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (!nvtx || !*nvtx)
        return;
    void *h = dlopen(nvtx, RTLD_NOW);
    int (*init)(const void *(*)(uint32_t)) =
        h ? (int (*)(const void *(*)(uint32_t)))dlsym(h, "InitializeInjectionNvtx2") : NULL;
    if (!init) {
        fprintf(stderr, "fake_app: no InitializeInjectionNvtx2: %s\n", dlerror());
        exit(91);
    }
    /* 0 is the agent declining, right only in a process it does not record
     * (--no-children): NVTX then stays off */
    const char *only = getenv("TRACE_RECORD_ONLY_PID");
    int recorded = !only || !*only || atoi(only) == (int)getpid();
    /* and NVTX is left off when --kinds does not name it */
    const char *kinds = getenv("TRACE_RECORD_KINDS");
    if (kinds && *kinds && !strstr(kinds, "nvtx"))
        recorded = 0;
    int r = init(export_table);
    /* forwarded to libcupti, or (CUPTI refusing NVTX) the agent's own handlers */
    if (r != recorded || (recorded && fake_cupti_nvtx_inits != 1 && !core_fns[9])
        || (!recorded && fake_cupti_nvtx_inits)) {
        fprintf(stderr, "fake_app: NVTX injection neither forwarded to libcupti nor handled\n");
        exit(91);
    }
}

static void *worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++) {
        fake_cupti_push_as(inner_form, "iteration");
        uint32_t c = fake_cupti_api(0, 505);   /* __cudaLaunchKernel_v13000 */
        fake_cupti_kernel(c, i % 2 ? "_Z6vecAddPKfS0_Pfi" : "scale_kernel", 7, i >= incomplete);
        fake_cupti_pop();
    }
    /* cudaMemcpy (HtoD) and the cuMemcpyHtoD_v2 it makes: the copy carries both ids */
    uint32_t rt = fake_cupti_api(0, 31);
    fake_cupti_memcpy(fake_cupti_api(1, 276), rt, 1, 4096);
    fake_cupti_memset(fake_cupti_api(0, 49), 1024, 0);    /* cudaMemset */
    fake_cupti_sync(fake_cupti_api(0, 165));              /* cudaDeviceSynchronize */
    return NULL;
}

/* A program at a steady pace for about ms milliseconds: one iteration (a range
 * around a launch) a millisecond, so that CUPTI always holds a buffer. */
static void paced(int ms)
{
    for (int i = 0; i < ms; i++) {
        fake_cupti_push("paced");
        fake_cupti_kernel(fake_cupti_api(0, 505), "paced_kernel", 7, 1);
        fake_cupti_pop();
        usleep(1000);
    }
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* emit_nvtx's names: an op name, a sequence number and shapes, unique per op */
static void unique_ranges(long n)
{
    char name[256];
    long base = 0;
    for (long i = 0; i < n; i++) {
        if (i == n / 10)
            base = rss_kb();
        snprintf(name, sizeof name, "aten::linear, seq = %ld, op_id = %ld, sizes = [[%ld, 4096], "
                 "[4096, 4096], [4096]], input_op_ids = [(%ld, 0), (%ld, 0)], pad = 0123456789",
                 i, i, 8 + i % 512, i - 1, i - 2);
        fake_cupti_push(name);
        fake_cupti_pop();
        if (i % 1000 == 999)
            usleep(1000);   /* about a framework's pace: the writer keeps up, the pool stays small */
    }
    printf("rss-growth-kb=%ld\n", rss_kb() - base);
}

static void *nvtx_thread(void *arg)
{
    (void)arg;
    inject_nvtx();
    return NULL;
}

static void run(int threads, int n)
{
    if (threads == 0) {   /* -t 0: the iterations run on the calling thread itself */
        worker((void *)(intptr_t)n);
        return;
    }
    pthread_t t[64];
    if (threads > 64)
        threads = 64;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)n);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
}

/* What the command line asks for (the top of this file says what each does). */
typedef struct {
    int threads, iters, incomplete, do_fork, code, sig, profiler, sleep_ms, fault, late_ms, spawn,
        poll, internal, takeover, domain_cross, overhead, takeover_ms, inner_wide, catch_sig, print_env;
    long uniq;
    const char *order, *form, *capture, *start_end;
} app_opts;

typedef enum { OPT_FLAG, OPT_INT, OPT_LONG, OPT_STRING } opt_type;

static const struct {
    const char *name;
    opt_type type;
    size_t field;   /* offsetof in app_opts */
} app_options[] = {
    {"-t", OPT_INT, offsetof(app_opts, threads)},
    {"-n", OPT_INT, offsetof(app_opts, iters)},
    {"--fork", OPT_FLAG, offsetof(app_opts, do_fork)},
    {"--exit", OPT_INT, offsetof(app_opts, code)},
    {"--signal", OPT_INT, offsetof(app_opts, sig)},
    {"--fault", OPT_FLAG, offsetof(app_opts, fault)},
    {"--late", OPT_INT, offsetof(app_opts, late_ms)},
    {"--spawn", OPT_FLAG, offsetof(app_opts, spawn)},
    {"--poll", OPT_INT, offsetof(app_opts, poll)},
    {"--internal", OPT_INT, offsetof(app_opts, internal)},
    {"--overhead", OPT_INT, offsetof(app_opts, overhead)},
    {"--domain-cross", OPT_FLAG, offsetof(app_opts, domain_cross)},
    {"--takeover", OPT_FLAG, offsetof(app_opts, takeover)},
    {"--takeover-at", OPT_INT, offsetof(app_opts, takeover_ms)},
    {"--unique-ranges", OPT_LONG, offsetof(app_opts, uniq)},
    {"--order", OPT_STRING, offsetof(app_opts, order)},
    {"--inner-wide", OPT_FLAG, offsetof(app_opts, inner_wide)},
    {"--form", OPT_STRING, offsetof(app_opts, form)},
    {"--incomplete", OPT_INT, offsetof(app_opts, incomplete)},
    {"--sleep", OPT_INT, offsetof(app_opts, sleep_ms)},
    {"--profiler", OPT_FLAG, offsetof(app_opts, profiler)},
    {"--capture", OPT_STRING, offsetof(app_opts, capture)},
    {"--start-end", OPT_STRING, offsetof(app_opts, start_end)},
    {"--catch", OPT_INT, offsetof(app_opts, catch_sig)},
    {"--print-env", OPT_FLAG, offsetof(app_opts, print_env)},
};
#define NOPTIONS (sizeof app_options / sizeof app_options[0])

/* Fills o from argv; 0, or 64 (EX_USAGE) on a bad argument. */
static int parse_args(int argc, char **argv, app_opts *o)
{
    *o = (app_opts){.threads = 1, .iters = 100, .poll = -1, .order = "nvtx-first", .form = "a"};
    for (int i = 1; i < argc; i++) {
        size_t k = 0;
        while (k < NOPTIONS && strcmp(argv[i], app_options[k].name))
            k++;
        if (k == NOPTIONS || (app_options[k].type != OPT_FLAG && i + 1 >= argc)) {
            fprintf(stderr, "fake_app: bad argument %s\n", argv[i]);
            return 64;
        }
        char *field = (char *)o + app_options[k].field;
        switch (app_options[k].type) {
        case OPT_FLAG: *(int *)field = 1; break;
        case OPT_INT: *(int *)field = atoi(argv[++i]); break;
        case OPT_LONG: *(long *)field = atol(argv[++i]); break;
        case OPT_STRING: *(const char **)field = argv[++i]; break;
        }
    }
    return 0;
}

static int form_of(const char *name, fake_nvtx_form *form)
{
    static const struct { const char *name; fake_nvtx_form form; } forms[] = {
        {"a", FAKE_NVTX_A}, {"w", FAKE_NVTX_W}, {"ex-w", FAKE_NVTX_EX_UNICODE},
        {"registered", FAKE_NVTX_REGISTERED}, {"registered-w", FAKE_NVTX_REGISTERED_W}};
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++)
        if (!strcmp(forms[k].name, name)) {
            *form = forms[k].form;
            return 0;
        }
    return -1;
}

static void print_env(void)
{
    const char *vars[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "TRACE_RECORD_DIR",
                          "TRACE_RECORD_SESSION", "TRACE_RECORD_KINDS", "TRACE_RECORD_ONLY_PID"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++)
        printf("%s=%s\n", vars[k], getenv(vars[k]) ? getenv(vars[k]) : "");
}

/* Both injections in the asked order, the "setup" range around the context and one
 * driver call, then the "ready" mark. */
static void start_up(const char *order)
{
    if (!strcmp(order, "cuda-first")) {
        inject();
        inject_nvtx();
    } else if (!strcmp(order, "threads")) {
        pthread_t t;
        pthread_create(&t, NULL, nvtx_thread, NULL);
        inject();
        pthread_join(t, NULL);
    } else {
        inject_nvtx();   /* NVTX before CUDA: the "setup" range opens before cuInit */
    }
    fake_cupti_push("setup");
    if (!strcmp(order, "nvtx-first"))
        inject();
    fake_cupti_context();
    fake_cupti_api(1, 307);   /* one driver API call: cuLaunchKernel */
    fake_cupti_pop();
    fake_cupti_mark("ready");
}

/* The run, inside whatever capture the options ask for, then 10 iterations outside it. */
static void run_captured(const app_opts *o, fake_nvtx_form form)
{
    static const char other_domain[] = "other";
    if (o->profiler)
        fake_cupti_api(0, 171);   /* cudaProfilerStart */
    if (o->capture)
        fake_cupti_push_as(form, o->capture);
    if (o->capture && o->domain_cross)
        fake_cupti_domain_push(other_domain, "crossing");
    uint64_t range = o->start_end ? fake_cupti_range_start_as(form, o->start_end) : 0;
    run(o->threads, iters);
    if (o->start_end)
        fake_cupti_range_end(range);
    if (o->capture)
        fake_cupti_pop();
    if (o->profiler)
        fake_cupti_api(0, 172);   /* cudaProfilerStop */
    if (o->profiler || o->capture || o->start_end)
        run(1, 10);               /* outside the capture range */
    if (o->capture && o->domain_cross)
        fake_cupti_domain_pop(other_domain);
}

/* Internal launches, overhead records, stream polls, unique ranges, takeovers. */
static void run_extras(const app_opts *o)
{
    for (int i = 0; i < o->internal; i++)
        fake_cupti_internal_launch("internal_kernel");
    for (int i = 0; i < o->overhead; i++)
        fake_cupti_overhead();
    if (o->poll >= 0) {
        for (int i = 0; i < o->poll; i++)
            fake_cupti_stream_query(7, 0);
        fake_cupti_stream_query(7, 1);
        fake_cupti_sync_as(fake_cupti_api(0, 131), 3, 7, 0);   /* cudaStreamSynchronize */
    }
    if (o->uniq)
        unique_ranges(o->uniq);
    if (o->takeover) {
        fake_cupti_second_client(1);
        run(1, 10);
        fake_cupti_second_client(0);
    }
    if (o->takeover_ms > 0) {
        paced(o->takeover_ms);
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        fake_cupti_second_client(1);
        printf("takeover-at-ns=%lld\n", (long long)at.tv_sec * 1000000000ll + at.tv_nsec);
        fflush(stdout);
        paced(800);
        fake_cupti_second_client(0);
    }
}

/* --fork and --spawn: child processes of N/2 iterations; returns 93 when the spawned
 * one failed, else 0. */
static int run_children(const app_opts *o)
{
    int failed = 0;
    if (o->do_fork) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            inject();   /* the driver initialises again in the child */
            fake_cupti_context();
            run(1, iters / 2);
            exit(0);
        }
        int st;
        waitpid(p, &st, 0);
    }
    if (o->spawn) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            char n[16];
            snprintf(n, sizeof n, "%d", iters / 2);
            execl("/proc/self/exe", "fake_app", "-n", n, (char *)NULL);
            _exit(127);
        }
        int st = 0;
        if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "fake_app: the spawned child failed (status %#x)\n", st);
            failed = 93;
        }
    }
    return failed;
}

/* --late, --sleep, then the end asked for: a signal or a fault. */
static void finish(const app_opts *o)
{
    if (o->late_ms) {
        usleep((useconds_t)o->late_ms * 1000);
        run(1, 10);
    }
    if (o->sleep_ms)
        usleep((useconds_t)o->sleep_ms * 1000);   /* lets the periodic flush run */
    if (o->sig) {
        fflush(stdout);
        raise(o->sig);
    }
    if (o->fault) {
        fflush(stdout);
        volatile uintptr_t bad = 8;   /* opaque to the compiler: a real fault, not a trap */
        *(volatile int *)bad = 1;
    }
}

int main(int argc, char **argv)
{
    app_opts o;
    fake_nvtx_form form;
    if (parse_args(argc, argv, &o))
        return 64;
    if (form_of(o.form, &form) < 0) {
        fprintf(stderr, "fake_app: bad --form %s\n", o.form);
        return 64;
    }
    if (o.print_env) {
        print_env();
        return o.code;
    }
    iters = o.iters;
    incomplete = o.incomplete;
    if (o.inner_wide)
        inner_form = FAKE_NVTX_W;
    if (o.catch_sig)
        signal(o.catch_sig, on_caught);
    start_up(o.order);
    run_captured(&o, form);
    run_extras(&o);
    int code = run_children(&o);
    finish(&o);
    return caught ? 42 : code ? code : o.code;
}
