#include "lib/frames.h"

#include <string.h>

/* Both substrings present = the frame is PyTorch's own. */
typedef struct { const char *a, *b; int fixed_only; } frame_rule;

static const frame_rule frame_rules[] = {
    {"autograd/__init__", "_make_grads", 0},
    {"autograd/__init__", "backward", 0},
    {"torch/tensor", "backward", 0},
    {"torch/_tensor", "backward", 1},   /* the file's name since PyTorch 1.8 */
    {"_internal/common_utils", "prof_callable", 0},
    {"_internal/common_utils", "prof_func_call", 0},
    {"_internal/common_utils", "prof_meth_call", 0},
};

static int contains(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (k > n)
        return 0;
    for (size_t i = 0; i + k <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, k) == 0)
            return 1;
    return 0;
}

int tr_frame_hidden(const char *frame, size_t len, int torch113)
{
    for (size_t i = 0; i < sizeof frame_rules / sizeof frame_rules[0]; i++) {
        const frame_rule *r = &frame_rules[i];
        if (r->fixed_only && torch113)
            continue;
        if (contains(frame, len, r->a) && contains(frame, len, r->b))
            return 1;
    }
    return 0;
}
