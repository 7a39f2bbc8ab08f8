/*
 * frames.h - which recorded stack frames the tables and stacks leave out.
 *
 * PyTorch drops the frames of its own autograd entry points from every stack
 * (_filter_stack_entry: autograd/__init__ _make_grads and backward, the
 * backward of torch/tensor, and its test harness), so the user's lines are
 * what remains.  PyTorch 1.13 still tests the pre-1.8 path "torch/tensor",
 * so "torch/_tensor.py(N): backward" survives there; ours drops it too, and
 * `--compat torch` keeps PyTorch's exact list.
 *
 * Pure functions; no ownership.
 */
#ifndef TR_LIB_FRAMES_H
#define TR_LIB_FRAMES_H

#include <stddef.h>

/* Non-zero when `frame` (len bytes) is left out of stacks; `torch113`
 * selects PyTorch 1.13's own list. */
int tr_frame_hidden(const char *frame, size_t len, int torch113);

#endif
