#include "lib/tree.h"
#include "lib/checked.h"
#include "lib/spill.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Order in which events with identical intervals nest (outermost first). */
static const int nest_rank[TR_KIND_COUNT_] = {
    [TR_KIND_PYTHON] = 0, [TR_KIND_RANGE] = 1, [TR_KIND_OP] = 2,
    [TR_KIND_OPENACC_OTHER] = 2, [TR_KIND_OPENACC_DATA] = 2, [TR_KIND_OPENACC_LAUNCH] = 2,
    [TR_KIND_RUNTIME] = 3, [TR_KIND_DRIVER] = 4, [TR_KIND_SYNC] = 5,
    [TR_KIND_OVERHEAD] = 6, [TR_KIND_MARK] = 7, [TR_KIND_MEMORY] = 8,
};

uint32_t tr_event_source(const tr_trace *t, const tr_event *e)
{
    if (e->thread)
        return t->processes.v[t->threads.v[e->thread].process].source;
    if (e->stream)
        return t->devices.v[t->streams.v[e->stream].device].source;
    return 0;
}

static tr_status oom(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while rebuilding the call tree");
}

/* end - start, saturating: extreme but legal times must not wrap a duration negative */
static int64_t span_of(const tr_event *e)
{
    return tr_sat_sub(e->end, e->start);
}

/* What sort_on_tracks() sorts: the events, and whether by stream (GPU
 * activities) or by thread (CPU events). */
static const tr_event *sort_events;
static int sort_by_stream;

static uint32_t track_of(const tr_event *e)
{
    return sort_by_stream ? e->stream : e->thread;
}

/* A track's events in start order, the longer first, then in kind order (the
 * nesting of identical intervals) and input order. */
static int cmp_on_track(const void *pa, const void *pb)
{
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    const tr_event *a = &sort_events[ia], *b = &sort_events[ib];
    if (track_of(a) != track_of(b))
        return track_of(a) < track_of(b) ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    if (nest_rank[a->kind] != nest_rank[b->kind])
        return nest_rank[a->kind] < nest_rank[b->kind] ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* Correlation index: (source, correlation) -> API event index, an array
 * sorted by key.  A hash map here was random access over every API call of
 * the trace; GPU activities come roughly in launch order, so each search
 * starts from where the last one ended (`hint`) and widens its steps until
 * it has the key between two of them: a few neighbouring slots in the usual
 * case, where a binary search over the whole array touched two dozen slots
 * across it (its top levels are pages that every trim of a spilled index,
 * lib/spill.h, drops, and the next search maps again).  The index lives
 * through the whole tree, the ingest's peak, so it is kept small: in
 * segments of one (source, correlation / 2^32), each slot the low 32 bits
 * of its correlation and its event, 8 bytes where the whole key took 16.
 * CUPTI's ids are 32-bit: a source is one segment. */
typedef struct { int64_t corr; uint32_t source; uint32_t event_plus1; } call_key;
typedef struct { uint32_t corr_lo; uint32_t event_plus1; } corr_slot;
typedef struct { uint32_t source, corr_hi; size_t begin; } corr_segment;
typedef struct {
    corr_slot *s;
    size_t n, hint;
    corr_segment *seg;
    size_t nseg, seg_cap, seg_hint;
} corr_index;

static int cmp_call_key(const void *pa, const void *pb)
{
    const call_key *a = pa, *b = pb;
    if (a->source != b->source)
        return a->source < b->source ? -1 : 1;
    if (a->corr != b->corr)
        return a->corr < b->corr ? -1 : 1;
    return a->event_plus1 < b->event_plus1 ? -1 : a->event_plus1 > b->event_plus1;
}

/* Appends key k, not before the last one, to the index (room for its slot
 * is there); -1 out of memory. */
static int index_push(corr_index *ix, call_key k)
{
    uint32_t hi = (uint32_t)((uint64_t)k.corr >> 32);
    corr_segment *last = ix->nseg ? &ix->seg[ix->nseg - 1] : NULL;
    if (!last || last->source != k.source || last->corr_hi != hi) {
        if (tr_vec_reserve_((void **)&ix->seg, &ix->seg_cap, ix->nseg + 1, sizeof *ix->seg) < 0)
            return -1;
        ix->seg[ix->nseg++] = (corr_segment){k.source, hi, ix->n};
    }
    ix->s[ix->n++] = (corr_slot){(uint32_t)k.corr, k.event_plus1};
    return 0;
}

static int segment_before(const corr_segment *g, uint32_t source, uint32_t hi)
{
    return g->source != source ? g->source < source : g->corr_hi < hi;
}

/* The first slot of s[first..last) whose correlation's low bits are not
 * below lo, last when none: a galloping search from the hint, then a binary
 * one between the last two steps. */
static size_t corr_lower_bound(corr_index *ix, size_t first, size_t last, uint32_t lo_bits)
{
    size_t lo, hi, h = ix->hint >= first && ix->hint < last ? ix->hint : first;
    if (first == last)
        return first;
    if (ix->s[h].corr_lo < lo_bits) {   /* after h: steps forward */
        lo = h + 1;
        hi = lo;
        for (size_t step = 1; hi < last && ix->s[hi].corr_lo < lo_bits; step *= 2) {
            lo = hi + 1;
            hi = last - hi > step ? hi + step : last;
        }
    } else {   /* at h or before: steps back */
        hi = h;
        lo = h;
        for (size_t step = 1; lo > first && ix->s[lo - 1].corr_lo >= lo_bits; step *= 2) {
            hi = lo - 1;
            lo = lo - 1 - first > step ? lo - 1 - step : first;
        }
    }
    while (lo < hi) {   /* the bound is in [lo, hi]: s[lo - 1] is below, s[hi] is not */
        size_t mid = lo + (hi - lo) / 2;
        if (ix->s[mid].corr_lo < lo_bits)
            lo = mid + 1;
        else
            hi = mid;
    }
    ix->hint = lo < last ? lo : last - 1;
    return lo;
}

/* The API event (+ 1) of (source, corr), 0 when none. */
static uint32_t corr_lookup(corr_index *ix, uint32_t source, int64_t corr)
{
    if (corr < 0 || !ix->nseg)
        return 0;
    uint32_t hi = (uint32_t)((uint64_t)corr >> 32);
    size_t g = ix->seg_hint < ix->nseg ? ix->seg_hint : 0;
    if (ix->seg[g].source != source || ix->seg[g].corr_hi != hi) {
        size_t lo = 0, up = ix->nseg;
        while (lo < up) {
            size_t mid = lo + (up - lo) / 2;
            if (segment_before(&ix->seg[mid], source, hi))
                lo = mid + 1;
            else
                up = mid;
        }
        if (lo == ix->nseg || ix->seg[lo].source != source || ix->seg[lo].corr_hi != hi)
            return 0;
        g = lo;
    }
    ix->seg_hint = g;
    size_t first = ix->seg[g].begin, last = g + 1 < ix->nseg ? ix->seg[g + 1].begin : ix->n;
    size_t i = corr_lower_bound(ix, first, last, (uint32_t)corr);
    return i < last && ix->s[i].corr_lo == (uint32_t)corr ? ix->s[i].event_plus1 : 0;
}

static void corr_index_free(corr_index *ix)
{
    tr_spill_free(ix->s);
    free(ix->seg);
    memset(ix, 0, sizeof *ix);
}

/* The sorts below merge an array's ascending runs where there are at most
 * this many, in one pass with a heap of the runs' heads, where an LSD radix
 * sort takes two passes a byte of the key that differs and a second array. */
#define MERGE_RUNS_MAX 32

static uint64_t slot_key(const call_key *s)
{
    return (uint64_t)s->source << 48 | (uint64_t)s->corr;
}

/* The merges below take their runs' next elements from a heap of the runs'
 * heads, ordered by (key, key2) and, for equal keys, the earlier run first:
 * a stable merge. */
typedef struct { uint64_t key, key2; size_t run, at; } run_head;

static int head_before(const run_head *a, const run_head *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    if (a->key2 != b->key2)
        return a->key2 < b->key2;
    return a->run < b->run;
}

static void sift_down(run_head *h, size_t n, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && head_before(&h[l], &h[least]))
            least = l;
        if (r < n && head_before(&h[r], &h[least]))
            least = r;
        if (least == i)
            return;
        run_head t = h[i];
        h[i] = h[least];
        h[least] = t;
        i = least;
    }
}

/* An event's correlation where it is an API call the correlation index
 * lists, else -1. */
static int64_t listed_correlation(const tr_trace *t, const tr_event *e)
{
    return tr_kinds[e->kind].is_api ? tr_correlation(t, e) : -1;
}

/* LSD radix on the slots' keys, 8 bits a pass, skipping bytes that are the
 * same in every key; b is the spare.  Stable.  Returns the array that holds
 * the result. */
static call_key *radix_sort_slots(call_key *a, call_key *b, size_t n)
{
    uint64_t differ = 0, first = slot_key(&a[0]);
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        differ |= slot_key(&a[k]) ^ first;
    }
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t count[257] = {0};
        for (size_t k = 0; k < n; k++) {
            tr_spill_tick();
            count[((slot_key(&a[k]) >> shift) & 0xff) + 1]++;
        }
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t k = 0; k < n; k++) {
            tr_spill_tick();
            b[count[(slot_key(&a[k]) >> shift) & 0xff]++] = a[k];
        }
        call_key *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* Sorts s[0..n) by (source, corr, event): an LSD radix sort on the key when
 * it fits in 64 bits (stable, so events stay in index order), else a
 * comparison sort.  (Slots in a few runs never get here: index_api_calls().) */
static int sort_corr_slots(call_key *s, size_t n)
{
    if (n < 2)   /* s is NULL when the trace has no API call */
        return 0;
    uint32_t max_source = 0;
    int64_t max_corr = 0;
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        max_source = s[k].source > max_source ? s[k].source : max_source;
        max_corr = s[k].corr > max_corr ? s[k].corr : max_corr;
    }
    if (max_source >= (1u << 16) || max_corr >= (INT64_C(1) << 48)) {
        tr_spill_sort(s, n, sizeof *s, cmp_call_key);   /* glibc's qsort would malloc a copy */
        return 0;
    }
    call_key *spare = tr_spill_calloc(n, sizeof *spare);
    if (!spare)
        return -1;
    call_key *a = radix_sort_slots(s, spare, n);
    if (a != s)
        tr_spill_copy(s, a, n * sizeof *s);
    tr_spill_free(spare);
    return 0;
}

typedef struct { size_t event; int64_t frontier, covered; } open_frame;

/* The range of the sort key, gathered while the order is collected. */
typedef struct { int64_t lo, hi; uint32_t max_track; } key_range;

/* GPU activities in a stream's time order, for draw_streams(): collected by
 * attribute_gpu(), which reads every activity anyway. */
typedef struct { uint32_t *order; size_t n; key_range r; } gpu_order;

/* Keys and the event indices they sort, in separate arrays (24 bytes an
 * event for both buffers, not the 32 of a padded key-index pair): the sort
 * of the CPU events sets the peak RSS of the whole ingest. */
typedef struct { uint64_t *key; uint32_t *idx; } keyed;

static keyed radix_sort_keyed(keyed a, keyed b, size_t n, uint64_t differ);

/* LSD radix, 8 bits a pass, skipping bytes that are the same in every key
 * (differ: the bits in which some key differs from the first); b is the
 * spare.  Stable.  Returns the buffer that holds the result.  Every pass's
 * counts come from one read of the keys before the first: a byte's counts
 * do not depend on the order the keys are in.  For arrays that fit in the
 * cache: each pass reads one buffer whole and writes the other. */
static keyed lsd_sort_keyed(keyed a, keyed b, size_t n, uint64_t differ)
{
    uint32_t count[8][257];
    memset(count, 0, sizeof count);
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        uint64_t key = a.key[k];
        for (int d = 0; d < 8; d++)
            count[d][((key >> (8 * d)) & 0xff) + 1]++;
    }
    for (int d = 0; d < 8; d++) {
        int shift = 8 * d;
        if (!((differ >> shift) & 0xff))
            continue;
        uint32_t *at = count[d];
        for (int v = 0; v < 256; v++)
            at[v + 1] += at[v];
        for (size_t k = 0; k < n; k++) {
            tr_spill_tick();
            uint32_t to = at[(a.key[k] >> shift) & 0xff]++;
            b.key[to] = a.key[k];
            b.idx[to] = a.idx[k];
        }
        keyed t = a;
        a = b;
        b = t;
    }
    return a;
}

/* Past this many keys (768 KiB of keys and indices) a sort begins with a
 * pass on its highest digit, RADIX_TOP_BITS wide. */
#define RADIX_IN_CACHE ((size_t)1 << 16)
#define RADIX_TOP_BITS 14

static keyed offset_keyed(keyed a, size_t at)
{
    return (keyed){a.key + at, a.idx + at};
}

/* Merges the ascending runs of a[0..n) (run r from starts[r] to
 * starts[r + 1]) two by two into b and back until one is left, stably;
 * returns the buffer that holds it. */
static keyed merge_keyed_runs(keyed a, keyed b, size_t n, size_t *starts, size_t runs)
{
    while (runs > 1) {
        size_t merged = 0;
        for (size_t r = 0; r < runs; r += 2) {
            size_t i = starts[r], mid = starts[r + 1 < runs ? r + 1 : runs], end = starts[r + 2 < runs ? r + 2 : runs];
            size_t j = mid, to = i;
            while (i < mid && j < end) {
                tr_spill_tick();
                size_t from = a.key[j] < a.key[i] ? j++ : i++;
                b.key[to] = a.key[from];
                b.idx[to++] = a.idx[from];
            }
            for (; i < mid; i++, to++) {
                b.key[to] = a.key[i];
                b.idx[to] = a.idx[i];
            }
            for (; j < end; j++, to++) {
                b.key[to] = a.key[j];
                b.idx[to] = a.idx[j];
            }
            starts[merged++] = starts[r];
        }
        starts[merged] = n;
        runs = merged;
        keyed t = a;
        a = b;
        b = t;
    }
    return a;
}

/* A group of the spread below: often a few ascending runs (a time slice
 * of the threads' events, each thread's in the order it was recorded),
 * merged; else sorted by the bits in which its keys differ. */
#define GROUP_RUNS_MAX 8

static keyed sort_group(keyed g, keyed spare, size_t n)
{
    size_t starts[GROUP_RUNS_MAX + 1], runs = 1;
    uint64_t differ = 0;
    starts[0] = 0;
    for (size_t k = 1; k < n; k++) {
        tr_spill_tick();
        differ |= g.key[k] ^ g.key[0];
        if (g.key[k] < g.key[k - 1] && runs <= GROUP_RUNS_MAX)
            starts[runs++] = k;
    }
    if (runs > GROUP_RUNS_MAX)
        return radix_sort_keyed(g, spare, n, differ);
    starts[runs] = n;
    return merge_keyed_runs(g, spare, n, starts, runs);
}

/* Sorts a[0..n) by key (differ: the bits in which some key differs from
 * the first), stably, with b as the spare; returns the buffer that holds
 * the result, or {NULL, NULL} when memory runs out.  A large array is first
 * spread by its highest 14 differing bits into b, then each of those 16,384
 * groups (500 keys on average at 10^7 events) sorted where it lies, in the
 * cache, with the same stretch of a as its spare, and moved back into b
 * where it ended in a.  So the whole arrays are written once, where an LSD
 * sort of bytes wrote them once a byte (5 times for the 39 bits of 10^7 raw
 * events' keys): every write of a spilled array faults its pages in again,
 * which made that sort 1.4-1.6 s of the first thread's tree.  Groups larger
 * than the cache are spread again, on the bits below. */
static keyed radix_sort_keyed(keyed a, keyed b, size_t n, uint64_t differ)
{
    if (!differ)
        return a;
    if (n <= RADIX_IN_CACHE)
        return lsd_sort_keyed(a, b, n, differ);
    int hi = 64 - __builtin_clzll(differ), lo = __builtin_ctzll(differ);
    int width = hi - lo < RADIX_TOP_BITS ? hi - lo : RADIX_TOP_BITS, shift = hi - width;
    size_t groups = (size_t)1 << width;
    uint64_t mask = groups - 1;
    uint32_t *at = calloc(groups + 1, sizeof *at);
    if (!at)
        return (keyed){NULL, NULL};
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        at[((a.key[k] >> shift) & mask) + 1]++;
    }
    for (size_t v = 0; v < groups; v++)
        at[v + 1] += at[v];
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        uint32_t to = at[(a.key[k] >> shift) & mask]++;
        b.key[to] = a.key[k];
        b.idx[to] = a.idx[k];
    }
    /* at[v] is now where group v + 1 starts */
    size_t from = 0;
    for (size_t v = 0; v < groups; v++) {
        size_t end = at[v], len = end - from;
        if (len > 1) {
            keyed sorted = sort_group(offset_keyed(b, from), offset_keyed(a, from), len);
            if (!sorted.key) {
                free(at);
                return sorted;
            }
            if (sorted.key != b.key + from) {
                tr_spill_copy(b.key + from, sorted.key, len * sizeof *b.key);
                tr_spill_copy(b.idx + from, sorted.idx, len * sizeof *b.idx);
            }
        }
        from = end;
    }
    free(at);
    return b;
}

/* The events the tree's two sorts order: the CPU events of a thread's tree
 * (list_cpu_events()) and the GPU activities (attribute_gpu()). */
static int in_cpu_tree(const tr_event *e)
{
    return !tr_kinds[e->kind].on_gpu && !(e->flags & (TR_FLAG_ASYNC | TR_FLAG_MERGED)) && e->thread;
}

static int on_gpu(const tr_event *e)
{
    return tr_kinds[e->kind].on_gpu;
}

/* What sort_on_tracks() orders by: the start since lo, with the track in
 * the low thread_bits bits where they fit. */
typedef struct { const tr_event *ev; uint64_t lo; int thread_bits; } track_keys;

static inline uint64_t track_key(const track_keys *tk, uint32_t i)
{
    const tr_event *e = &tk->ev[i];
    uint64_t since = (uint64_t)e->start - tk->lo;
    return tk->thread_bits ? since << tk->thread_bits | track_of(e) : since;
}

/* The starts of the ascending runs of order[0..n)'s keys, with n after the
 * last; 0 when there are more than MERGE_RUNS_MAX.  *ties: two neighbours
 * have one key. */
static size_t find_track_runs(const track_keys *tk, const uint32_t *order, size_t n, size_t *starts,
                              int *ties)
{
    size_t runs = 0;
    starts[runs++] = 0;
    uint64_t prev = track_key(tk, order[0]);
    *ties = 0;
    for (size_t k = 1; k < n; k++) {
        tr_spill_tick();
        uint64_t key = track_key(tk, order[k]);
        *ties |= key == prev;
        if (key < prev) {
            if (runs == MERGE_RUNS_MAX)
                return 0;
            starts[runs++] = k;
        }
        prev = key;
    }
    starts[runs] = n;
    return runs;
}

/* The stable sort leaves equal keys in index order: each run of them in
 * order[lo..hi) is finished with cmp_on_track. */
static void finish_ties(uint32_t *order, size_t lo, size_t hi)
{
    if (hi - lo > 1)
        qsort(order + lo, hi - lo, sizeof *order, cmp_on_track);
}

/* Merges the runs of order (event indices, ascending in each run; listed(e)
 * says which events it holds) in place, in one pass: a heap of the runs'
 * heads, each run's next element found in the events themselves, so that
 * neither keys nor a second index array are held, at the ingest's peak (a
 * pairwise merge of (key, index) pairs held 20 bytes an event).  Equal keys
 * come earlier run first, as in a stable sort, and each run of them is
 * finished as it ends. */
static void merge_track_runs(const track_keys *tk, int (*listed)(const tr_event *), uint32_t *order,
                             const size_t *starts, size_t runs)
{
    run_head h[MERGE_RUNS_MAX];
    size_t left[MERGE_RUNS_MAX], nh = 0;
    for (size_t r = 0; r < runs; r++) {
        left[r] = starts[r + 1] - starts[r];
        h[nh++] = (run_head){.key = track_key(tk, order[starts[r]]), .run = r, .at = order[starts[r]]};
    }
    for (size_t i = nh / 2; i-- > 0;)
        sift_down(h, nh, i);
    size_t k = 0, tie_from = 0;
    uint64_t last = 0;
    while (nh) {
        tr_spill_tick();
        if (k && h[0].key != last) {
            finish_ties(order, tie_from, k);
            tie_from = k;
        }
        last = h[0].key;
        order[k++] = (uint32_t)h[0].at;
        if (--left[h[0].run]) {
            while (!listed(&tk->ev[++h[0].at]))
                tr_spill_tick();   /* the events between may be many pages */
            h[0].key = track_key(tk, (uint32_t)h[0].at);
        } else {
            h[0] = h[--nh];
        }
        sift_down(h, nh, 0);
    }
    finish_ties(order, tie_from, k);
}

/* Any other order: a radix sort of (key, index) pairs (radix_sort_keyed()),
 * then the ties finished. */
static tr_status radix_sort_on_tracks(const track_keys *tk, uint32_t *order, size_t n, tr_error *err)
{
    uint64_t *ka = tr_spill_calloc(n, sizeof *ka), *kb = tr_spill_calloc(n, sizeof *kb);
    uint32_t *ib = tr_spill_calloc(n, sizeof *ib);
    keyed sorted = {NULL, NULL};
    if (ka && kb && ib) {
        uint64_t differ = 0;
        for (size_t k = 0; k < n; k++) {
            tr_spill_tick();
            ka[k] = track_key(tk, order[k]);
            differ |= ka[k] ^ ka[0];
        }
        sorted = radix_sort_keyed((keyed){ka, order}, (keyed){kb, ib}, n, differ);
    }
    if (sorted.key) {
        if (sorted.idx != order)   /* the sorted indices are in the spare */
            tr_spill_copy(order, sorted.idx, n * sizeof *order);
        const uint64_t *key = sorted.key;
        for (size_t k = 0; k < n;) {
            tr_spill_tick();
            size_t end = k + 1;
            while (end < n && key[end] == key[k])
                end++;
            finish_ties(order, k, end);
            k = end;
        }
    }
    tr_spill_free(ka);
    tr_spill_free(kb);
    tr_spill_free(ib);
    return sorted.key ? TR_OK : oom(err);
}

/* Sorts order[0..n) so that each thread's events are in cmp_on_track order, the
 * threads interleaved by start time: a sort on (start, thread) does most of
 * the work in a few linear passes (qsort through an index into the events
 * was a tenth of the ingest time); runs of equal keys are then finished with
 * cmp_on_track.  Where the two do not fit in 64 bits (k bits for the largest
 * track, starts 2^(64-k) ns apart: 146 years for tracks up to 3, 52 days up to
 * 4095) the key is the start alone, and cmp_on_track orders the
 * threads within each run of equal starts; every walk over the order needs
 * only each thread's events in cmp_on_track order.  (A qsort through it did
 * that before: one random read of the event array a comparison, which on a
 * spilled array is a page fault each.)  Time first, because a thread's
 * events are spread over the whole event array (nvprof stores each table's
 * rows together, the threads interleaved), so a walk one thread after the
 * other reads every page of the array once a thread, where a walk in time
 * order reads it about once: once the array is in a file (lib/spill.h) each
 * read of a dropped page is a page fault.  order holds, in index order, the
 * events listed(e) says, which a merge in place finds again in the events. */
static tr_status sort_on_tracks(const tr_event *ev, uint32_t *order, size_t n, key_range r,
                                int by_stream, int (*listed)(const tr_event *), tr_error *err)
{
    sort_events = ev;
    sort_by_stream = by_stream;
    if (n < 2)
        return TR_OK;
    /* the track's bits, and the rest for the time: each byte fewer in the
     * keys is a radix pass fewer */
    int thread_bits = r.max_track ? 64 - __builtin_clzll(r.max_track) : 1;
    if ((uint64_t)r.hi - (uint64_t)r.lo >= (1ull << (64 - thread_bits)))
        thread_bits = 0;
    track_keys tk = {ev, (uint64_t)r.lo, thread_bits};
    size_t starts[MERGE_RUNS_MAX + 1];
    int ties;
    size_t runs = find_track_runs(&tk, order, n, starts, &ties);
    if (!runs)
        return radix_sort_on_tracks(&tk, order, n, err);
    if (runs == 1) {   /* in order already */
        for (size_t k = 0; ties && k < n;) {
            tr_spill_tick();
            uint64_t key = track_key(&tk, order[k]);
            size_t end = k + 1;
            while (end < n && track_key(&tk, order[end]) == key)
                end++;
            finish_ties(order, k, end);
            k = end;
        }
        return TR_OK;
    }
    merge_track_runs(&tk, listed, order, starts, runs);
    return TR_OK;
}

/* The open frames of one thread, innermost last. */
typedef TR_VEC(open_frame) frame_stack;

/* 0, or -1 out of memory */
static int close_frame(tr_trace *t, const open_frame *f)
{
    tr_event *e = &t->events.v[f->event];
    return tr_set_cpu_self(t, e, tr_sat_sub(span_of(e), f->covered));
}

/* Adds child e, the next in start order, to the time f's children cover. */
static void cover_child(open_frame *f, const tr_event *e)
{
    if (e->start >= f->frontier) {
        f->covered = tr_sat_add(f->covered, span_of(e));
        f->frontier = e->end;
    } else if (e->end > f->frontier) {
        f->covered = tr_sat_add(f->covered, tr_sat_sub(e->end, f->frontier));
        f->frontier = e->end;
    }
}

/* Nests event e (index i) in its thread's open frames: the frames it is not
 * inside close, the innermost left is its parent, and it opens its own. */
static int nest_event(tr_trace *t, frame_stack *st, tr_event *e, uint32_t i)
{
    tr_event *ev = t->events.v;
    while (st->n) {
        open_frame *f = &st->v[st->n - 1];
        tr_event *p = &ev[f->event];
        if (e->start >= p->end || e->end > p->end) {
            if (close_frame(t, f) < 0)
                return -1;
            st->n--;
            continue;
        }
        e->parent = (int32_t)f->event;
        if (tr_set_child_depth(t, e, p) < 0)
            return -1;
        cover_child(f, e);
        break;
    }
    if (tr_vec_reserve(*st, st->n + 1) < 0)
        return -1;
    st->v[st->n++] = (open_frame){i, e->start, 0};
    return 0;
}

/* What a viewer draws: the chrome trace format wants the complete events of
 * a thread strictly nested, and Perfetto drops an event that ends after the
 * one it starts in.  The tree makes such an event a sibling (docs/semantics.md);
 * for the viewers, of two partially overlapping events the shorter (at equal
 * length the later) is flagged TR_FLAG_UNNESTED, so that the others nest as
 * drawn.  The drawn frames are the open events not flagged: of two overlapping
 * ones the earlier may be flagged after it opened, so they are a stack of
 * their own beside the tree's. */
typedef struct { uint32_t event; int64_t end; } drawn_frame;
typedef TR_VEC(drawn_frame) drawn_stack;

static int draw_event(tr_event *ev, drawn_stack *st, tr_event *e, uint32_t i)
{
    while (st->n && st->v[st->n - 1].end <= e->start)
        st->n--;
    while (st->n && e->end > st->v[st->n - 1].end) {
        tr_event *p = &ev[st->v[st->n - 1].event];
        if (span_of(e) <= span_of(p)) {
            e->flags |= TR_FLAG_UNNESTED;
            return 0;
        }
        p->flags |= TR_FLAG_UNNESTED;
        st->n--;
    }
    if (e->end == e->start)
        return 0;   /* encloses nothing */
    if (tr_vec_reserve(*st, st->n + 1) < 0)
        return -1;
    st->v[st->n++] = (drawn_frame){i, e->end};
    return 0;
}

/* n tracks' stacks, or NULL. */
static void drawn_stacks_free(drawn_stack *drawn, size_t n)
{
    for (size_t k = 0; drawn && k < n; k++)
        tr_spill_free(drawn[k].v);
    free(drawn);
}

/* Walks the order with one stack of open frames a thread: a thread's events
 * come in cmp_on_track order, so each one's parent is the innermost open frame
 * that encloses it.  With draw, also flags the events a viewer cannot nest
 * (the first build, which still has the ops a merge takes out of the tree:
 * the export draws them too). */
static tr_status build_cpu_tree(tr_trace *t, const uint32_t *order, size_t n, int draw, tr_error *err)
{
    tr_event *ev = t->events.v;
    size_t nth = t->threads.n ? t->threads.n : 1;
    frame_stack *stacks = calloc(nth, sizeof *stacks);
    drawn_stack *drawn = draw ? calloc(nth, sizeof *drawn) : NULL;
    int failed = !stacks || (draw && !drawn);
    for (size_t k = 0; k < n && !failed; k++) {
        tr_spill_tick();
        tr_event *e = &ev[order[k]];
        failed = nest_event(t, &stacks[e->thread], e, order[k]) < 0
                 || (drawn && draw_event(ev, &drawn[e->thread], e, order[k]) < 0);
    }
    for (size_t th = 0; stacks && th < t->threads.n; th++) {
        for (size_t d = stacks[th].n; d-- > 0;)
            failed |= close_frame(t, &stacks[th].v[d]) < 0;
        tr_spill_free(stacks[th].v);
    }
    free(stacks);
    drawn_stacks_free(drawn, t->threads.n);
    return failed ? oom(err) : TR_OK;
}

/* The GPU activities of each stream as a viewer draws them: activities that
 * overlap on one stream (the kernels of a CUDA graph, which CUPTI gives the
 * stream of the graph's launch; programmatic dependent launches) are flagged
 * as the CPU events of a thread are.  order: go's, sorted here. */
static tr_status draw_streams(tr_trace *t, gpu_order *go, tr_error *err)
{
    if (go->n < 2)
        return TR_OK;
    tr_status st = sort_on_tracks(t->events.v, go->order, go->n, go->r, 1, on_gpu, err);
    if (st != TR_OK)
        return st;
    tr_event *ev = t->events.v;
    size_t nstreams = t->streams.n ? t->streams.n : 1;
    drawn_stack *drawn = calloc(nstreams, sizeof *drawn);
    int failed = !drawn;
    for (size_t k = 0; k < go->n && !failed; k++) {
        tr_spill_tick();
        tr_event *e = &ev[go->order[k]];
        if (e->stream < nstreams)
            failed = draw_event(ev, &drawn[e->stream], e, go->order[k]) < 0;
    }
    drawn_stacks_free(drawn, nstreams);
    return failed ? oom(err) : TR_OK;
}

/* ---- links: correlation map, thread-less syncs, the CPU tree ---------------- */

/* What the passes over the whole event array gather for the later steps.
 * Each pass over the events costs a page fault a page once the array is in a
 * file (lib/spill.h), so build_links() reads the array twice and collects
 * here what other steps used to read it again for. */
typedef struct {
    corr_index cm;
    /* the API calls the index lists, in event order: how many, and where
     * their runs of ascending (source, correlation) begin and how long they
     * are, unless there are more than MERGE_RUNS_MAX of them (calls_unsorted) */
    size_t ncalls, ncall_runs;
    int calls_unsorted;
    size_t call_run_at[MERGE_RUNS_MAX], call_run_len[MERGE_RUNS_MAX];
    uint32_t last_source;
    int64_t last_corr;
    uint32_t *order;      /* CPU tree events, per thread, parents before children */
    size_t n;
    int64_t *first_corr;  /* per source: its lowest API-call correlation, INT64_MAX none */
    size_t nmem;          /* memory events in the trace */
    size_t nmem_in_tree;  /* of them, in order */
    size_t nops;          /* ops in the trace: none, nothing to merge */
    size_t ngpu;          /* GPU activities in the trace */
} tree_links;

static void links_free(tree_links *l)
{
    corr_index_free(&l->cm);
    tr_spill_free(l->order);
    free(l->first_corr);
    memset(l, 0, sizeof *l);
}

/* Counts listed API call i (source, corr) into its run. */
static void note_call(tree_links *l, uint32_t source, int64_t corr, size_t i)
{
    int next_run = !l->ncalls || source < l->last_source || (source == l->last_source && corr < l->last_corr);
    if (next_run && l->ncall_runs == MERGE_RUNS_MAX)
        l->calls_unsorted = 1;
    else if (next_run && !l->calls_unsorted)
        l->call_run_at[l->ncall_runs++] = i;
    if (!l->calls_unsorted)
        l->call_run_len[l->ncall_runs - 1]++;
    l->ncalls++;
    l->last_source = source;
    l->last_corr = corr;
}

/* Of equal keys, the index keeps the first runtime call in event order, else
 * the first call, since the runtime call is the one the program made:
 * whether s, later in that order, replaces kept. */
static int replaces(const tr_event *ev, const call_key *kept, const call_key *s)
{
    return ev[kept->event_plus1 - 1].kind != TR_KIND_RUNTIME && ev[s->event_plus1 - 1].kind == TR_KIND_RUNTIME;
}

/* The index from the runs of API calls, merged in one pass from the events
 * themselves (a heap of the runs' heads) and written one slot a key: no
 * slot for each call first, and no second array to sort them in, at the
 * ingest's peak (16 bytes a call, twice, before). */
static int merge_calls(const tr_trace *t, const tree_links *l, corr_index *ix)
{
    const tr_event *ev = t->events.v;
    run_head h[MERGE_RUNS_MAX];
    size_t left[MERGE_RUNS_MAX], nh = 0;
    for (size_t r = 0; r < l->ncall_runs; r++) {
        const tr_event *e = &ev[l->call_run_at[r]];
        left[r] = l->call_run_len[r];
        h[nh++] = (run_head){.key = tr_event_source(t, e), .key2 = (uint64_t)listed_correlation(t, e),
                             .run = r, .at = l->call_run_at[r]};
    }
    for (size_t i = nh / 2; i-- > 0;)
        sift_down(h, nh, i);
    call_key kept = {0};
    while (nh) {
        tr_spill_tick();
        call_key s = {(int64_t)h[0].key2, (uint32_t)h[0].key, (uint32_t)h[0].at + 1};
        if (kept.event_plus1 && s.source == kept.source && s.corr == kept.corr) {
            if (replaces(ev, &kept, &s))
                kept = s;
        } else {
            if (kept.event_plus1 && index_push(ix, kept) < 0)
                return -1;
            kept = s;
        }
        if (--left[h[0].run]) {
            int64_t corr;
            while ((corr = listed_correlation(t, &ev[++h[0].at])) < 0)
                tr_spill_tick();
            h[0].key = tr_event_source(t, &ev[h[0].at]);
            h[0].key2 = (uint64_t)corr;
        } else {
            h[0] = h[--nh];
        }
        sift_down(h, nh, 0);
    }
    return kept.event_plus1 ? index_push(ix, kept) : 0;
}

/* Any other order: the slots of every call in event order, sorted, then one
 * kept a key. */
static int sort_calls(const tr_trace *t, size_t ncalls, corr_index *ix)
{
    const tr_event *ev = t->events.v;
    call_key *k = tr_spill_calloc(ncalls, sizeof *k);
    if (!k)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        int64_t corr = listed_correlation(t, &ev[i]);
        if (corr >= 0)
            k[n++] = (call_key){corr, tr_event_source(t, &ev[i]), (uint32_t)i + 1};
    }
    int rc = sort_corr_slots(k, n);
    size_t kept = 0;
    for (size_t j = 1; rc == 0 && j <= n; j++) {
        tr_spill_tick();
        if (j < n && k[j].source == k[kept].source && k[j].corr == k[kept].corr) {
            if (replaces(ev, &k[kept], &k[j]))
                kept = j;
        } else {
            rc = index_push(ix, k[kept]);
            kept = j;
        }
    }
    tr_spill_free(k);
    return rc;
}

/* The correlation index: one slot per (source, correlation) of the API calls
 * reset_and_list_calls() counted, sorted. */
static int index_api_calls(const tr_trace *t, tree_links *l)
{
    memset(&l->cm, 0, sizeof l->cm);
    if (!l->ncalls)
        return 0;
    if (!(l->cm.s = tr_spill_calloc(l->ncalls, sizeof *l->cm.s)))
        return -1;
    return l->calls_unsorted ? sort_calls(t, l->ncalls, &l->cm) : merge_calls(t, l, &l->cm);
}

/* The tree's fields back to where the tree starts from.  Only the fields that
 * differ are stored: a fresh event (tr_add_event()) already has these values,
 * and a page of a spilled event array that a pass only reads is not made
 * dirty, so it costs a read fault, which maps its neighbours too, and not a
 * write fault of its own (docs/ingest.md, "What it costs"). */
static void reset_event(tr_event *e)
{
    if (e->parent != -1)
        e->parent = -1;
    if (e->depth16)
        e->depth16 = 0;
    if (e->cpu_self32 || e->gpu_self32 || e->gpu_total32)
        e->cpu_self32 = e->gpu_self32 = e->gpu_total32 = 0;
    if (e->flags & (TR_FLAG_MERGED | TR_FLAG_UNNESTED))
        e->flags &= (uint8_t)~(TR_FLAG_MERGED | TR_FLAG_UNNESTED);
    if (e->end < e->start)
        e->end = e->start;
}

/* First pass: resets the derived fields (so a rebuild gives the same
 * result), lists the API calls for the correlation index and counts what
 * later steps need counted. */
static tr_status reset_and_list_calls(tr_trace *t, tree_links *l, tr_error *err)
{
    tr_event *ev = t->events.v;
    size_t nsrc = t->sources.n;
    l->first_corr = malloc((nsrc + 1) * sizeof *l->first_corr);
    if (!l->first_corr)
        return oom(err);
    for (size_t i = 0; i <= nsrc; i++)
        l->first_corr[i] = INT64_MAX;
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        tr_event *e = &ev[i];
        reset_event(e);
        l->nmem += e->kind == TR_KIND_MEMORY;
        l->nops += e->kind == TR_KIND_OP;
        l->ngpu += tr_kinds[e->kind].on_gpu;
        int64_t corr = listed_correlation(t, e);
        if (corr < 0)
            continue;
        uint32_t src = tr_event_source(t, e);
        note_call(l, src, corr, i);
        if (src && src < nsrc && corr < l->first_corr[src])
            l->first_corr[src] = corr;
    }
    return TR_OK;
}

/* Second pass: sync waits recorded without a thread take the thread of their
 * API call; the CPU events of a thread go into the order for the tree, and
 * those outside it (a sync whose API call is not in the trace) are their own
 * self time (async ranges have none, as in PyTorch).  0, or -1 out of memory. */
static int list_cpu_events(tr_trace *t, tree_links *l, key_range *r)
{
    tr_event *ev = t->events.v;
    *r = (key_range){INT64_MAX, INT64_MIN, 0};
    l->n = 0;
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        tr_event *e = &ev[i];
        if (e->kind == TR_KIND_SYNC && !e->thread && tr_correlation(t, e) >= 0) {
            uint32_t api = corr_lookup(&l->cm, tr_event_source(t, e), tr_correlation(t, e));
            if (api)
                e->thread = ev[api - 1].thread;
        }
        if (tr_kinds[e->kind].on_gpu || (e->flags & (TR_FLAG_ASYNC | TR_FLAG_MERGED)))
            continue;
        if (!in_cpu_tree(e)) {   /* on no thread */
            if (tr_set_cpu_self(t, e, span_of(e)) < 0)
                return -1;
            continue;
        }
        l->order[l->n++] = (uint32_t)i;
        l->nmem_in_tree += e->kind == TR_KIND_MEMORY;
        r->lo = e->start < r->lo ? e->start : r->lo;
        r->hi = e->start > r->hi ? e->start : r->hi;
        r->max_track = e->thread > r->max_track ? e->thread : r->max_track;
    }
    return 0;
}

/* Maps correlation ids to API calls and nests the CPU events of each thread. */
static tr_status build_links(tr_trace *t, tree_links *l, tr_error *err)
{
    tr_status st = reset_and_list_calls(t, l, err);
    if (st != TR_OK)
        return st;
    l->order = tr_spill_calloc(t->events.n ? t->events.n : 1, sizeof *l->order);
    if (!l->order || index_api_calls(t, l) < 0)
        return oom(err);
    key_range r;
    if (list_cpu_events(t, l, &r) < 0)
        return oom(err);
    st = sort_on_tracks(t->events.v, l->order, l->n, r, 0, in_cpu_tree, err);
    /* the passes so far read the events in order, or in a few streams in
     * order (the merges): read ahead.  The walks from here read them in each
     * thread's start order and jump from each GPU activity to its launching
     * call: at random places, in a file */
    tr_spill_set_sequential(t->events.v, 0);
    if (st == TR_OK)
        st = build_cpu_tree(t, l->order, l->n, 1, err);
    return st;
}

/* ---- PyTorch's redispatch merge (_remove_dup_nodes) ---------------------- */

/* PyTorch does not make memory events children.  Ours are instants (Kineto's
 * "[memory]"); one with a duration would count as a child, since it could
 * hold other events, which unlink_merged() relies on not happening. */
static int memory_instant(const tr_event *e)
{
    return e->kind == TR_KIND_MEMORY && e->end == e->start;
}

/* An op whose parent is an op of the same name with no other child (memory
 * instants aside) is the same call
 * redispatched: PyTorch keeps only the outer one, which then owns the inner
 * one's children and time.  Such ops stay in the trace, flagged
 * TR_FLAG_MERGED, out of the tree and without metrics; outer[i] gets the op
 * each one merged into, + 1.  Ranges (NVTX, record_function) are the user's
 * own and are never merged. */
static tr_status merge_redispatched(tr_trace *t, const tree_links *l, uint32_t **outer_out,
                                    size_t *merged, tr_error *err)
{
    tr_event *ev = t->events.v;
    size_t nev = t->events.n;
    *merged = 0;
    *outer_out = NULL;
    if (!l->nops)   /* only ops merge: a CUDA trace without framework ops skips two passes */
        return TR_OK;
    /* each event's children, counted to 2: only "one child" matters */
    uint8_t *children = tr_spill_calloc(nev ? nev : 1, sizeof *children);
    uint32_t *outer = tr_spill_calloc(nev ? nev : 1, sizeof *outer);
    if (!children || !outer) {
        tr_spill_free(children);
        tr_spill_free(outer);
        return oom(err);
    }
    for (size_t k = 0; k < l->n; k++) {
        tr_spill_tick();
        const tr_event *e = &ev[l->order[k]];
        if (e->parent >= 0 && !memory_instant(e) && children[e->parent] < 2)
            children[e->parent]++;
    }
    for (size_t k = 0; k < l->n; k++) {   /* parents first: a chain folds into its top */
        tr_spill_tick();
        size_t i = l->order[k];
        tr_event *e = &ev[i];
        if (e->parent < 0 || e->kind != TR_KIND_OP)
            continue;
        const tr_event *p = &ev[e->parent];
        if (p->kind == e->kind && p->name == e->name && children[e->parent] == 1) {
            e->flags |= TR_FLAG_MERGED;
            outer[i] = outer[e->parent] ? outer[e->parent] : (uint32_t)e->parent + 1;
            ++*merged;
        }
    }
    tr_spill_free(children);
    if (!*merged)
        tr_spill_free(outer);
    else
        *outer_out = outer;
    return TR_OK;
}

/* The CPU tree without the merged ops, patched where they were: built again
 * from the order without them (as it once was), each event would get the
 * innermost open frame that encloses it.  The open frames are then the first
 * build's less the merged ops, so that frame is the event's first parent, or,
 * where that was merged, the op it merged into (outer): a merged op is its
 * parent's only child, so no other frame of that thread was open above the
 * parent when it started, none that a later event would nest in instead.
 * What changes: the depths below a merged op (set again for every event, in
 * the order, parents first), and the time covered by the children of each
 * op that absorbed one (summed again over its new children, in the order, as
 * the walk would).  A merged op gets its outer op as parent and no time.
 * The order loses the merged ops and stays sorted; the correlation index
 * holds API calls only, which a merge does not touch.  Walking the tree
 * again took a quarter of the tree's time on a PyTorch trace. */
static tr_status unlink_merged(tr_trace *t, tree_links *l, uint32_t *outer, size_t merged,
                               tr_error *err)
{
    tr_event *ev = t->events.v;
    /* an outer op's frame; outer[] of an outer op, unused till now (it is
     * not merged), becomes its frame's index + 1 */
    open_frame *frames = tr_spill_calloc(merged, sizeof *frames);
    if (!frames)
        return oom(err);
    size_t nframes = 0, kept = 0;
    int failed = 0;
    for (size_t k = 0; k < l->n && !failed; k++) {
        tr_spill_tick();
        size_t i = l->order[k];
        tr_event *e = &ev[i];
        if (e->flags & TR_FLAG_MERGED) {
            size_t o = outer[i] - 1;
            if (!outer[o]) {
                frames[nframes] = (open_frame){o, ev[o].start, 0};
                outer[o] = (uint32_t)++nframes;
            }
            e->parent = (int32_t)o;   /* o comes first in the order: its depth is set */
            e->cpu_self32 = 0;
            failed = tr_set_child_depth(t, e, &ev[o]) < 0;
            continue;
        }
        l->order[kept++] = l->order[k];
        if (e->parent < 0)
            continue;
        if (ev[e->parent].flags & TR_FLAG_MERGED)
            e->parent = (int32_t)outer[e->parent] - 1;
        failed = tr_set_child_depth(t, e, &ev[e->parent]) < 0;
        if (outer[e->parent])
            cover_child(&frames[outer[e->parent] - 1], e);
    }
    l->n = kept;
    for (size_t f = 0; f < nframes && !failed; f++) {
        tr_spill_tick();   /* the outer ops lie all over the event array */
        failed = close_frame(t, &frames[f]) < 0;
    }
    tr_spill_free(frames);
    return failed ? oom(err) : TR_OK;
}

/* ---- PyTorch's backward stacks (_set_backward_stacktraces) --------------- */

/* (process, seq, tid) -> the first event in (start, -end) order with that key
 * and no backward function above it.  tid INT64_MIN is "any thread", seq
 * INT64_MIN marks a known (process, tid).  The map grows with its keys,
 * kept at most half full: sized up front for every CPU event (four slots
 * of 32 bytes each), it was 1 GiB at 10^7 Kineto events, most of it never
 * used but all of it faulted in at random places. */
typedef struct { int64_t seq, tid; uint32_t process, event_plus1; } fwd_slot;
typedef struct { fwd_slot *s; size_t cap, n; } fwd_map;

#define FWD_MAP_FIRST 1024

static fwd_slot *fwd_find(const fwd_map *m, uint32_t process, int64_t seq, int64_t tid)
{
    uint64_t h = ((uint64_t)seq * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)tid * 0xff51afd7ed558ccdull)
                 ^ process;
    h ^= h >> 31;
    size_t i = (size_t)h & (m->cap - 1);
    while (m->s[i].event_plus1 && !(m->s[i].process == process && m->s[i].seq == seq
                                    && m->s[i].tid == tid))
        i = (i + 1) & (m->cap - 1);
    return &m->s[i];
}

static int fwd_grow(fwd_map *m)
{
    fwd_map g = {tr_spill_calloc_table(m->cap * 2, sizeof *g.s), m->cap * 2, m->n};
    if (!g.s)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        tr_spill_tick();
        const fwd_slot *o = &m->s[i];
        if (o->event_plus1)
            *fwd_find(&g, o->process, o->seq, o->tid) = *o;
    }
    tr_spill_free(m->s);
    *m = g;
    return 0;
}

static int earlier(const tr_event *ev, size_t a, size_t b)
{
    if (ev[a].start != ev[b].start)
        return ev[a].start < ev[b].start;
    if (ev[a].end != ev[b].end)
        return ev[a].end > ev[b].end;
    return a < b;
}

/* -1 when the map cannot grow. */
static int fwd_offer(fwd_map *m, const tr_event *ev, uint32_t process, int64_t seq, int64_t tid,
                     size_t i)
{
    fwd_slot *s = fwd_find(m, process, seq, tid);
    if (!s->event_plus1) {
        *s = (fwd_slot){seq, tid, process, (uint32_t)i + 1};
        if (++m->n * 2 > m->cap)
            return fwd_grow(m);
    } else if (seq != INT64_MIN && earlier(ev, i, s->event_plus1 - 1)) {
        s->event_plus1 = (uint32_t)i + 1;
    }
    return 0;
}

/* Every event under a backward function b (b included) takes the stack of
 * the forward op with b's sequence number on b's forward thread, as PyTorch
 * does, so backward work shows under the Python lines that caused it. */
static tr_status set_backward_stacks(tr_trace *t, const tree_links *l, tr_error *err)
{
    if (!t->backward.n)
        return TR_OK;
    tr_event *ev = t->events.v;
    size_t nev = t->events.n;
    int64_t *fwd_tid = tr_spill_calloc(nev, sizeof *fwd_tid);
    uint32_t *bw = tr_spill_calloc(nev, sizeof *bw);   /* backward function above, + 1 */
    fwd_map m = {tr_spill_calloc_table(FWD_MAP_FIRST, sizeof *m.s), FWD_MAP_FIRST, 0};
    int ok = fwd_tid && bw && m.s;
    if (ok) {
        for (size_t k = 0; k < t->backward.n; k++)
            fwd_tid[t->backward.v[k].event] = t->backward.v[k].fwd_tid;
        for (size_t th = 1; th < t->threads.n && ok; th++)
            ok = fwd_offer(&m, ev, t->threads.v[th].process, INT64_MIN, t->threads.v[th].tid, 0) == 0;
    }
    for (size_t k = 0; k < l->n && ok; k++) {   /* parents come before their children */
        tr_spill_tick();
        size_t i = l->order[k];
        tr_event *e = &ev[i];
        if (e->flags & TR_FLAG_BACKWARD)
            bw[i] = (uint32_t)i + 1;
        else if (e->parent >= 0)
            bw[i] = bw[e->parent];
        if (bw[i] || e->kind == TR_KIND_MEMORY)
            continue;
        const tr_thread *th = &t->threads.v[e->thread];
        int64_t seq = tr_extra(t, e).seq;
        ok = fwd_offer(&m, ev, th->process, seq, th->tid, i) == 0
             && fwd_offer(&m, ev, th->process, seq, INT64_MIN, i) == 0;
    }
    if (!ok) {
        tr_spill_free(fwd_tid);
        tr_spill_free(bw);
        tr_spill_free(m.s);
        return oom(err);
    }
    for (size_t k = 0; k < l->n; k++) {
        tr_spill_tick();
        size_t i = l->order[k];
        if (!bw[i] || ev[i].kind == TR_KIND_MEMORY)
            continue;
        const tr_event *b = &ev[bw[i] - 1];
        uint32_t process = t->threads.v[b->thread].process;
        int64_t tid = fwd_tid[bw[i] - 1];
        /* a trace whose thread ids are not the profiler's own: match by seq alone;
         * no forward thread (AccumulateGrad): no forward op, so no stack */
        if (tid > 0 && !fwd_find(&m, process, INT64_MIN, tid)->event_plus1)
            tid = INT64_MIN;
        const fwd_slot *s = tid > 0 || tid == INT64_MIN ? fwd_find(&m, process, tr_extra(t, b).seq, tid) : NULL;
        ev[i].stack = s && s->event_plus1 ? ev[s->event_plus1 - 1].stack : 0;
    }
    tr_spill_free(fwd_tid);
    tr_spill_free(bw);
    tr_spill_free(m.s);
    return TR_OK;
}

/* ---- memory events: closed windows --------------------------------------- */

/* A memory event at t belongs to the deepest event of its thread whose closed
 * window [start, end] holds t (PyTorch uses closed windows; its timestamps are
 * whole µs, so many allocations fall exactly on an op's end or on a
 * zero-length op); at equal depth, the later-starting one.  The tree gave the
 * deepest half-open [start, end) holder; only events ending exactly at t can
 * beat it. */
typedef struct { uint32_t thread; int64_t end; size_t event_plus1; } end_slot;

static size_t end_hash(uint32_t thread, int64_t end, size_t cap)
{
    uint64_t h = (uint64_t)end * 0x9e3779b97f4a7c15ull ^ ((uint64_t)thread << 40);
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

static int owns_before(const tr_trace *t, size_t a, int64_t b)
{
    const tr_event *ev = t->events.v;
    if (b < 0)
        return 1;
    int64_t da = tr_depth(t, &ev[a]), db = tr_depth(t, &ev[b]);
    if (da != db)
        return da > db;
    return ev[a].start > ev[b].start;
}

static tr_status attach_memory(tr_trace *t, const tree_links *l, tr_error *err)
{
    tr_event *ev = t->events.v;
    if (!l->nmem_in_tree)
        return TR_OK;
    size_t cap = 64;
    while (cap < l->n * 2)
        cap *= 2;
    end_slot *s = tr_spill_calloc(cap, sizeof *s);
    if (!s)
        return oom(err);
    for (size_t k = 0; k < l->n; k++) {
        tr_spill_tick();
        size_t i = l->order[k];
        const tr_event *e = &ev[i];
        if (e->kind == TR_KIND_MEMORY || e->kind == TR_KIND_MARK)
            continue;
        size_t h = end_hash(e->thread, e->end, cap);
        while (s[h].event_plus1 && !(s[h].thread == e->thread && s[h].end == e->end))
            h = (h + 1) & (cap - 1);
        if (!s[h].event_plus1 || owns_before(t, i, (int64_t)s[h].event_plus1 - 1))
            s[h] = (end_slot){e->thread, e->end, i + 1};
    }
    for (size_t k = 0; k < l->n; k++) {
        tr_spill_tick();
        tr_event *m = &ev[l->order[k]];
        if (m->kind != TR_KIND_MEMORY)
            continue;
        size_t h = end_hash(m->thread, m->start, cap);
        while (s[h].event_plus1 && !(s[h].thread == m->thread && s[h].end == m->start))
            h = (h + 1) & (cap - 1);
        if (s[h].event_plus1 && owns_before(t, s[h].event_plus1 - 1, m->parent)) {
            m->parent = (int32_t)s[h].event_plus1 - 1;
            if (tr_set_child_depth(t, m, &ev[m->parent]) < 0) {
                tr_spill_free(s);
                return oom(err);
            }
        }
    }
    tr_spill_free(s);
    return TR_OK;
}

/* ---- GPU time and the totals --------------------------------------------- */

/* GPU activities hang off their API call; their time goes to the innermost
 * range or op (never a Python frame) that encloses the call. */
static tr_status attribute_gpu(tr_trace *t, tree_links *l, gpu_order *go, tr_error *err)
{
    tr_event *ev = t->events.v;
    /* each source's lowest API-call correlation: CUPTI numbers launches in order,
     * so an activity below it was launched before the capture began (a source
     * without API calls has none: its activities' calls are not found, as
     * trace-analyze says too) */
    const int64_t *first = l->first_corr;
    memset(t->gpu_unlaunched, 0, sizeof t->gpu_unlaunched);
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        tr_event *g = &ev[i];
        if (!tr_kinds[g->kind].on_gpu)
            continue;
        int64_t dur = span_of(g);
        if (tr_set_gpu_self(t, g, dur) < 0 || tr_set_gpu_total(t, g, dur) < 0)
            return oom(err);
        go->order[go->n++] = (uint32_t)i;
        go->r.lo = g->start < go->r.lo ? g->start : go->r.lo;
        go->r.hi = g->start > go->r.hi ? g->start : go->r.hi;
        go->r.max_track = g->stream > go->r.max_track ? g->stream : go->r.max_track;
        int64_t corr = tr_correlation(t, g);
        if (corr < 0) {
            t->gpu_unlaunched[TR_UNLAUNCHED_NO_CORRELATION]++;
            continue;
        }
        uint32_t src = tr_event_source(t, g);
        uint32_t api_plus1 = corr_lookup(&l->cm, src, corr);
        if (!api_plus1) {
            int before = src < t->sources.n && first[src] != INT64_MAX && corr < first[src];
            t->gpu_unlaunched[before ? TR_UNLAUNCHED_BEFORE_CAPTURE : TR_UNLAUNCHED_NOT_FOUND]++;
            continue;
        }
        tr_event *api = &ev[api_plus1 - 1];
        g->parent = (int32_t)api_plus1 - 1;
        if (tr_set_child_depth(t, g, api) < 0)
            return oom(err);
        tr_event *target = api;
        for (int64_t p = api->parent; p >= 0; p = ev[p].parent) {
            if (tr_kinds[ev[p].kind].is_range) {
                target = &ev[p];
                break;
            }
        }
        if (tr_set_gpu_self(t, target, tr_sat_add(tr_gpu_self(t, target), dur)) < 0)
            return oom(err);
    }
    return TR_OK;
}

/* Totals bottom-up, with memory events' own bytes.  In the order a parent
 * precedes all its descendants, so a reverse walk sees every child complete
 * before its parent: an event's total is its children's (added as each was
 * seen) plus its own.  The sums saturate and add non-negative times, so their
 * order does not change them. */
static tr_status sum_totals(tr_trace *t, const tree_links *l, tr_error *err)
{
    tr_event *ev = t->events.v;
    for (size_t k = l->n; k-- > 0;) {
        tr_spill_tick();
        tr_event *e = &ev[l->order[k]];
        /* adding 0 stores nothing: the page stays clean (reset_event()) */
        if (e->gpu_self32
            && tr_set_gpu_total(t, e, tr_sat_add(tr_gpu_total(t, e), tr_gpu_self(t, e))) < 0)
            return oom(err);
        tr_event_mem *m = t->mem ? &t->mem[l->order[k]] : NULL;
        if (m && e->kind == TR_KIND_MEMORY) {
            int64_t bytes = tr_extra(t, e).bytes;
            if (e->flags & TR_FLAG_GPU_MEMORY) {
                m->gpu_self += bytes;
                m->gpu_total += bytes;
            } else {
                m->cpu_self += bytes;
                m->cpu_total += bytes;
            }
        }
        if (e->parent < 0)
            continue;
        tr_event *p = &ev[e->parent];
        if (e->gpu_total32
            && tr_set_gpu_total(t, p, tr_sat_add(tr_gpu_total(t, p), tr_gpu_total(t, e))) < 0)
            return oom(err);
        if (!m)
            continue;
        tr_event_mem *pm = &t->mem[e->parent];
        pm->cpu_total += m->cpu_total;
        pm->gpu_total += m->gpu_total;
        if (e->kind == TR_KIND_MEMORY) {
            pm->cpu_self += m->cpu_self;
            pm->gpu_self += m->gpu_self;
        }
    }
    return TR_OK;
}

tr_status tr_tree_build(tr_trace *t, tr_error *err)
{
    if (t->events.n >= INT32_MAX)
        return tr_fail(err, TR_ERR_RUNTIME, "more than %d events in one trace", INT32_MAX - 1);
    tree_links l = {0};
    uint32_t *outer = NULL;
    size_t merged = 0;
    tr_status st = build_links(t, &l, err);
    if (st == TR_OK)
        st = merge_redispatched(t, &l, &outer, &merged, err);
    if (st == TR_OK && merged)
        st = unlink_merged(t, &l, outer, merged, err);
    t->merged_redispatch = merged;
    if (st == TR_OK)
        st = set_backward_stacks(t, &l, err);
    if (st == TR_OK)
        st = attach_memory(t, &l, err);
    if (st == TR_OK) {
        tr_spill_free(t->mem);
        t->mem = l.nmem ? tr_spill_calloc(t->events.n, sizeof *t->mem) : NULL;
        if (l.nmem && !t->mem)
            st = oom(err);
    }
    gpu_order go = {NULL, 0, {INT64_MAX, INT64_MIN, 0}};
    if (st == TR_OK && !(go.order = tr_spill_calloc(l.ngpu ? l.ngpu : 1, sizeof *go.order)))
        st = oom(err);
    if (st == TR_OK)
        st = attribute_gpu(t, &l, &go, err);
    corr_index_free(&l.cm);   /* the launches are found: the index's memory back before the totals */
    if (st == TR_OK)
        st = sum_totals(t, &l, err);
    tr_spill_free(outer);
    links_free(&l);
    if (st == TR_OK)
        st = draw_streams(t, &go, err);
    tr_spill_free(go.order);
    if (st == TR_OK)
        t->tree_built = 1;
    tr_spill_set_sequential(t->events.v, 1);
    return st;
}
