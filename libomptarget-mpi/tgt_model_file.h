/* The OMPC_PERF_MODEL file: learnt kernel costs kept across runs.
 *
 * Text, one line per kernel and core count, tab-separated:
 *   kernel <TAB> cores <TAB> mean seconds <TAB> runs
 * Lines starting with '#' and empty lines are skipped.  A bad line is
 * reported and ignored (the file is rewritten at exit without it); the
 * reader never ends the process.  It knows nothing of the runtime's state,
 * so it can be tested (and fuzzed) on its own. */
#ifndef TGT_MODEL_FILE_H
#define TGT_MODEL_FILE_H

#include "ompc_common.h"

#include <stdio.h>

/* A learnt mean above this many seconds is refused: one run of one target
 * region longer than about eleven days is past any job's time limit, so
 * such a value is corruption, and summed over a graph of a billion tasks
 * it still stays far below the range where HEFT's sums become infinite. */
#define TGT_MODEL_MEAN_MAX 1e6
/* Core counts a model line may name (as many as OMPC_*_THREADS allows). */
#define TGT_MODEL_CORES_MAX (1ll << 20)
/* Warnings about bad lines per file; the rest are counted. */
#define TGT_MODEL_WARN_MAX 5
/* Longest line, newline included. */
#define TGT_MODEL_LINE_MAX 4096

typedef struct tgt_model_entry {
    const char *kernel; /* valid during the callback only */
    int64_t cores;      /* 1..TGT_MODEL_CORES_MAX */
    double mean;        /* 0..TGT_MODEL_MEAN_MAX seconds */
    int64_t runs;       /* >= 1 */
} tgt_model_entry_t;

typedef struct tgt_model_reader {
    /* Called for every valid line, in file order. */
    void (*entry)(void *arg, const tgt_model_entry_t *e);
    /* Called with one message per problem ("OMPC_PERF_MODEL=PATH:LINE:
     * reason; line ignored ..."), at most TGT_MODEL_WARN_MAX + 1 times. */
    void (*warn)(void *arg, const char *msg);
    void *arg;
} tgt_model_reader_t;

/* Reads the model from f (path names it in messages) until its end.
 * Returns the number of bad lines.  Any thread; reentrant. */
int64_t tgt_model_file_read(FILE *f, const char *path, const tgt_model_reader_t *rd);

#endif
