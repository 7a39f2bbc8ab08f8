/*
 * elf_fixture.h - a small hand-made ELF64 object for the tests of the ELF
 * symbol reader and of native frame naming.
 *
 * The object has one load segment (file offsets 0x1000-0x2000 at
 * TR_TEST_TINY_VADDR; the segment's bytes are not in the image, which the
 * reader never needs), a GNU build-id note (de ad be ef 01 02 03 04) and,
 * by address from TR_TEST_TINY_VADDR:
 *   +0x000 f (global, 0x10 bytes) and its local alias __f_alias
 *   +0x100 g (size 0)       +0x200 h (weak, size 0)   +0x300 obj (an object)
 *   +0x380 undef (undefined)  +0x400 ifn (ifunc, 0x20)
 *   +0x600 _Z3fooi (0x10)   +0x700 ver@@V_1 (0x10)    +0x800 k (local, size 0)
 *   +0x900 zero-valued and unterminated-name symbols, which must be ignored
 *
 * Ownership: the caller provides the buffer (TR_TEST_TINY_CAP bytes).
 */
#ifndef TR_TESTS_ELF_FIXTURE_H
#define TR_TESTS_ELF_FIXTURE_H

#include <stddef.h>

#define TR_TEST_TINY_CAP 2048
#define TR_TEST_TINY_VADDR 0x401000ull

/* Fills b and returns the image's length; with_pt_note: the build-id is
 * also reachable through a PT_NOTE program header. */
size_t tr_test_tiny_elf(unsigned char *b, int with_pt_note);

#endif
