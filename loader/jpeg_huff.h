/* loader/jpeg_huff.h — a faster entropy decoder for baseline JPEG, put in
 * place of libjpeg-turbo's own inside a libjpeg decompressor (see
 * loader/jpeg_huff.c). Huffman decoding is lossless: it yields the same
 * coefficients as libjpeg-turbo's, so the pixels are the same bits. */
#ifndef LOOM_LOADER_JPEG_HUFF_H
#define LOOM_LOADER_JPEG_HUFF_H

#include <stdbool.h>

/* On unless LOOM_JPEG_HUFF=0 (read once), or as loom__jpeg_huff_force set
 * it (tests: 1 on, 0 off, -1 the environment again); false when loom was
 * built without jpegint.h. */
bool loom__jpeg_huff_enabled(void);
void loom__jpeg_huff_force(int on);

/* Scans this decoder took since the process started, and of them the ones it
 * gave back to libjpeg-turbo's decoder (tests) */
void loom__jpeg_huff_counts(long *taken, long *given_back);

#if defined(LOOM_HAVE_LIBJPEG) && defined(LOOM_HAVE_JPEGINT)
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t */

#include <jpeglib.h>

/* Call right after jpeg_start_decompress. Returns true when the scan is one
 * this decoder takes (sequential Huffman, 8-bit, every component in one
 * scan, tables an 8-bit file can have, restart markers in turn, a marker
 * after the data): from then on ci's entropy decoder is this one. On
 * anything a valid file does not hold (a code no table has, a run past the
 * block's end, bits needed past the data, data left between the scan's last
 * bits and the marker) it calls longjmp(*bail, 2): the caller then decodes
 * the file again with libjpeg-turbo's decoder, whose result (and warnings)
 * stand. */
bool loom__jpeg_huff_install(j_decompress_ptr ci, jmp_buf *bail);
#define LOOM_JPEG_HUFF 1
#endif

#endif
