#include "lib/progress.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* Redraws at most ten times a second: faster is flicker, and costs the run. */
#define TICK_MS 100
/* A rate or an ETA measured over less than this says little. */
#define SETTLE_S 0.5

struct tr_progress {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    const char *prog, *unit;
    const atomic_size_t *counter;
    char label[512];
    size_t count0, phase_count0;   /* counter at start and at the phase's start */
    uint64_t bytes_total, rchar0, mapped0;
    int rchar_ok;
    double phase_t0;
    double next_draw;              /* CLOCK_MONOTONIC seconds */
    size_t shown;                  /* columns the line occupies now, 0 = none */
};

atomic_uint_least64_t tr_progress_mapped_bytes;

static uint64_t mapped_now(void)
{
    return atomic_load_explicit(&tr_progress_mapped_bytes, memory_order_relaxed);
}

int tr_progress_wanted(void)
{
    const char *e = getenv("TR_PROGRESS");
    if (e && *e)
        return strcmp(e, "0") != 0;
    return isatty(2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Bytes this process has read through read(2) and friends, or -1. */
static int read_rchar(uint64_t *out)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return -1;
    char line[128];
    int ok = -1;
    unsigned long long v;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "rchar: %llu", &v) == 1) {
            *out = v;
            ok = 0;
            break;
        }
    fclose(f);
    return ok;
}

static size_t count_now(const tr_progress *p)
{
    return p->counter ? atomic_load_explicit(p->counter, memory_order_relaxed) : 0;
}

void tr_progress_fmt_count(char *buf, size_t n, uint64_t v)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

void tr_progress_fmt_bytes(char *buf, size_t n, uint64_t b)
{
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)b;
    size_t u = 0;
    while (v >= 1000.0 && u + 1 < sizeof units / sizeof units[0])
        v /= 1000.0, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void fmt_secs(char *buf, size_t n, double s)
{
    if (s < 60)
        snprintf(buf, n, "%.0f s", s < 1 ? 1 : s);
    else if (s < 3600)
        snprintf(buf, n, "%d min %02d s", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%d h %02d min", (int)s / 3600, (int)s % 3600 / 60);
}

static size_t term_width(void)
{
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0)
        return ws.ws_col >= 20 ? ws.ws_col : 80;
    return 200;   /* not a terminal (TR_PROGRESS=1): nothing wraps */
}

/* Overwrites the line on screen with s (NULL clears it); called locked. */
static void draw(tr_progress *p, const char *s)
{
    /* One column short of the width: a full line wraps on some terminals,
     * and a wrapped line can no longer be overwritten with \r. */
    if (!s && !p->shown)
        return;
    size_t width = term_width() - 1, len = s ? strlen(s) : 0;
    if (len > width)
        len = width;
    char buf[1024];
    size_t pad = p->shown > len ? p->shown - len : 0;
    if (len + pad + 2 > sizeof buf)
        pad = sizeof buf - len - 2;
    int k = snprintf(buf, sizeof buf, "\r%.*s%*s", (int)len, s ? s : "", (int)pad, "");
    if (!s && k > 0 && (size_t)k + 1 < sizeof buf)
        buf[k++] = '\r';
    if (k > 0 && write(2, buf, (size_t)k) < 0) {
        /* stderr gone: nothing to tell, and the run goes on */
    }
    p->shown = len;
}

/* Appends to line[] without ever running past its end. */
static void add(char *line, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *line, size_t size, const char *fmt, ...)
{
    size_t l = strlen(line);
    if (l + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + l, size - l, fmt, ap);
    va_end(ap);
}

/* Called locked. */
static void redraw(tr_progress *p)
{
    double dt = now_s() - p->phase_t0;
    size_t c = count_now(p);
    char line[800] = "", num[32], a[32], b[32];
    add(line, sizeof line, "%s: %s", p->prog, p->label);
    if (p->counter && c >= p->count0) {
        tr_progress_fmt_count(num, sizeof num, c - p->count0);
        add(line, sizeof line, ": %s %s", num, p->unit);
        if (dt >= SETTLE_S && c > p->phase_count0) {
            tr_progress_fmt_count(num, sizeof num, (uint64_t)((double)(c - p->phase_count0) / dt));
            add(line, sizeof line, " (%s/s)", num);
        }
    }
    uint64_t rchar;
    uint64_t done = p->bytes_total && p->rchar_ok && read_rchar(&rchar) == 0 && rchar >= p->rchar0
                    ? rchar - p->rchar0 + (mapped_now() - p->mapped0) : 0;
    if (done) {
        /* a reader may read a page twice (SQLite): never past the end */
        if (done > p->bytes_total)
            done = p->bytes_total;
        tr_progress_fmt_bytes(a, sizeof a, done);
        tr_progress_fmt_bytes(b, sizeof b, p->bytes_total);
        add(line, sizeof line, ", %s/%s %d%%", a, b,
            (int)(100.0 * (double)done / (double)p->bytes_total));
        if (dt >= SETTLE_S && done < p->bytes_total && done * 100 >= p->bytes_total) {
            fmt_secs(a, sizeof a, dt * (double)(p->bytes_total - done) / (double)done);
            add(line, sizeof line, ", ETA %s", a);
        }
    } else if (dt >= SETTLE_S) {
        fmt_secs(a, sizeof a, dt);
        add(line, sizeof line, ", %s", a);
    }
    draw(p, line);
}

static struct timespec at(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    return ts;
}

static void *run(void *arg)
{
    tr_progress *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        double now = now_s();
        if (p->label[0] && now >= p->next_draw) {
            redraw(p);
            p->next_draw = now + TICK_MS / 1000.0;
        }
        /* woken early by a new phase, drawn then if a tick has passed */
        struct timespec until = at(p->label[0] && p->next_draw > now ? p->next_draw
                                                                     : now + TICK_MS / 1000.0);
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
    }
    draw(p, NULL);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

tr_progress *tr_progress_start(const char *prog, const atomic_size_t *counter, const char *unit)
{
    tr_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->prog = prog;
    p->unit = unit ? unit : "";
    p->counter = counter;
    p->count0 = p->phase_count0 = count_now(p);
    p->phase_t0 = now_s();
    /* on a terminal a run that ends within a tick shows no line at all; a
     * forced line (TR_PROGRESS=1, the tests) starts with the first phase */
    const char *e = getenv("TR_PROGRESS");
    p->next_draw = p->phase_t0 + (e && strcmp(e, "1") == 0 ? 0 : TICK_MS / 1000.0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* the thread must not take signals meant for the tool's own handlers
     * (lib/output removes temporary files on SIGINT): block them there */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, run, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void tr_progress_phase(tr_progress *p, const char *label, uint64_t bytes_total)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->label, sizeof p->label, "%s", label);
    /* a file name must not move the cursor or add lines */
    for (char *q = p->label; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            *q = '?';
    p->bytes_total = bytes_total;
    p->rchar_ok = bytes_total && read_rchar(&p->rchar0) == 0;
    p->mapped0 = mapped_now();
    p->phase_count0 = count_now(p);
    p->phase_t0 = now_s();
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void tr_progress_puts(tr_progress *p, const char *line)
{
    if (!p) {
        fprintf(stderr, "%s\n", line);
        return;
    }
    pthread_mutex_lock(&p->mu);
    draw(p, NULL);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    pthread_mutex_unlock(&p->mu);
}

void tr_progress_stop(tr_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
