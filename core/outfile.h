/* core/outfile.h — library-private atomic output files: a file is written
 * whole or not at all.
 *
 * defines: loom__outfile, loom__outfile_open / _write / _pwrite / _commit /
 *          _abort, loom__outfile_temp.
 *
 * The data goes to a temporary file beside the target, "<path>.tmp.<pid>.<k>"
 * (k counts the writers of this process, so two writers never share a name,
 * even for one target; the name is created with O_EXCL and never replaces a
 * file). Commit flushes it to disk (fsync), renames it over the target and
 * syncs the directory; abort, or any failure, removes it. The file at path
 * is therefore either the previous one, untouched, or the complete new one.
 * Every write, flush, fsync, close and rename is checked; an error is
 * LOOM_ERR_IO naming the target, the temporary file, the step that failed
 * and the system's reason. Writes are buffered.
 *
 * A target that exists and is not a regular file (a device such as
 * /dev/full, a FIFO, a directory; symlinks are followed) is refused at open,
 * before anything is written. Open also removes the temporary files of this
 * target left by writers that died (their pid is not alive and the file is
 * over a minute old).
 *
 * A writer is used by one thread at a time. Several writers to one target
 * may run at once: the last to commit wins, whole.
 */
#ifndef LOOM_CORE_OUTFILE_H
#define LOOM_CORE_OUTFILE_H

#include "impl.h"

typedef struct loom__outfile loom__outfile;

/* Create the temporary file for path. On failure *out is NULL. */
loom_status loom__outfile_open(loom_ctx *ctx, const char *path, loom__outfile **out);

/* Append n bytes. After a failure the writer stays failed: later writes
 * return the same status without touching the file, and commit removes it. */
loom_status loom__outfile_write(loom__outfile *f, const void *p, size_t n);

/* Overwrite n bytes at offset, which must lie within what was written
 * (a header filled in at the end). */
loom_status loom__outfile_pwrite(loom__outfile *f, uint64_t offset, const void *p, size_t n);

/* Flush, fsync, close and rename over the target; on failure (now or of an
 * earlier write) remove the temporary file and leave the target as it was.
 * Frees f either way. A failure of an earlier write is returned as it was
 * recorded then, without a new message. */
loom_status loom__outfile_commit(loom__outfile *f);

/* Close and remove the temporary file; the target is untouched. Frees f
 * (NULL is ignored). */
void loom__outfile_abort(loom__outfile *f);

/* The temporary file's name (valid until commit or abort). */
const char *loom__outfile_temp(const loom__outfile *f);

#endif
