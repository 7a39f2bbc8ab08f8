/*
 * crc32.h - the CRC-32 of zlib, gzip and the raw format (IEEE 802.3,
 * reflected, 0xEDB88320), at the speed of carry-less multiplication where
 * the CPU has it.
 *
 * zlib's crc32() is table-driven, about 1.9 GB/s; reading a recording checks
 * every byte of it, so at 10^7 events (1 GB) that was 4% of an ingest's CPU.
 * Folding 64 bytes at a time with PCLMULQDQ runs about three times faster.
 * The result is zlib's, for every length, alignment and starting value; on a
 * CPU without the instruction (or not x86-64) this is zlib's crc32().
 *
 * Ownership: no state; safe from any thread.
 */
#ifndef TR_LIB_CRC32_H
#define TR_LIB_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* zlib's crc32(crc, p, n): crc is the value so far (0 to start). */
uint32_t tr_crc32(uint32_t crc, const void *p, size_t n);

/* 1 when tr_crc32() folds with PCLMULQDQ on this CPU (for tests). */
int tr_crc32_folds(void);

#endif
